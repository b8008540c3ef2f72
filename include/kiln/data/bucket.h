#pragma once
/// @file
/// Bucketing, for backends with static shapes only: rounding a size up to one of a few sizes, so
/// that inputs of any size compile a handful of programs instead of one per size.

#include <any>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The smallest power of two >= n (1 for n <= 1). kiln::Error above 2^62.
int64_t BucketPow2(int64_t n);
/// n rounded up to a multiple of `step` (>= 1): BucketLinear(37, 16) == 48; 0 stays 0.
int64_t BucketLinear(int64_t n, int64_t step);
/// The smallest bucket >= n among ceil(base^k), k = 0, 1, 2... (`base` > 1; 1 for n <= 1):
/// BucketExponential(37, 1.5) == 39 (1.5^9 = 38.4); kiln::Error beyond 2^62.
int64_t BucketExponential(int64_t n, double base);

/// A size -> bucket function (one of the above, bound: `[](int64_t n) { return BucketPow2(n); }`).
using BucketFn = std::function<int64_t(int64_t)>;

/// Pads every batch of another dataset along `axis` up to its bucket, so a static-only backend
/// compiles one program per bucket: each input and label of rank > `axis` gets zeros appended
/// along that axis, and a Bool mask is appended to the inputs: shaped as the first input's axes
/// 0..axis, true at the real positions. Labels of rank <= `axis` pass unchanged.
class BucketedDataset : public Dataset {
 public:
  /// Wraps `inner`; `bucket(n)` must return a size >= n (else kiln::Error naming the dataset).
  BucketedDataset(DatasetPtr inner, BucketFn bucket, int axis);
  std::string Name() const override;
  bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) override;
  void Reset() override;
  bool IsInfinite() const override;

 private:
  DatasetPtr inner_;
  BucketFn bucket_;
  int axis_;
};

/// A BucketedDataset over `inner` (axis 0 pads the batch; 1 pads, say, the sequence).
std::shared_ptr<BucketedDataset> PadToBuckets(DatasetPtr inner, BucketFn bucket, int axis = 0);

}  // namespace kiln::data
