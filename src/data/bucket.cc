// Bucketing sizes for static-shape backends.

#include "kiln/data/bucket.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "core/check.h"

namespace kiln::data {

namespace {
constexpr int64_t kMaxBucket = int64_t{1} << 62;
}  // namespace

int64_t BucketPow2(int64_t n) {
  if (n > kMaxBucket) detail::Throw("BucketPow2: {} is beyond the largest bucket, 2^62", n);
  int64_t b = 1;
  while (b < n) b <<= 1;
  return b;
}

int64_t BucketLinear(int64_t n, int64_t step) {
  if (step < 1) detail::Throw("BucketLinear: step {} must be at least 1", step);
  if (n <= 0) return 0;
  if (n > kMaxBucket) detail::Throw("BucketLinear: {} is beyond the largest bucket, 2^62", n);
  return (n + step - 1) / step * step;
}

int64_t BucketExponential(int64_t n, double base) {
  if (!(base > 1.0) || !std::isfinite(base))
    detail::Throw("BucketExponential: base {} must be a number above 1", base);
  if (n > kMaxBucket) detail::Throw("BucketExponential: {} is beyond the largest bucket, 2^62", n);
  double power = 1.0;
  int64_t bucket = 1;
  while (bucket < n) {
    power *= base;
    // Buckets grow by at least one, whatever the base's rounding.
    bucket = std::max(bucket + 1, static_cast<int64_t>(std::ceil(power - 1e-9 * power)));
  }
  return bucket;
}

}  // namespace kiln::data

namespace kiln::data {

namespace {

/// `t` with zeros appended along `axis` up to `size` (row-major bytes copied block by block).
Tensor PadAxis(const Tensor& t, int axis, int64_t size) {
  const std::vector<int64_t>& dims = t.shape().Dimensions();
  const int64_t n = dims[static_cast<size_t>(axis)];
  if (n == size) return t;
  std::vector<int64_t> padded = dims;
  padded[static_cast<size_t>(axis)] = size;
  int64_t outer = 1, inner = DTypeByteSize(t.dtype(), 1);
  for (int a = 0; a < axis; ++a) outer *= dims[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(axis) + 1; a < dims.size(); ++a) inner *= dims[a];
  Tensor out = Tensor::FromShape(Shape(t.dtype(), padded));
  t.ConstBytes([&](std::span<const uint8_t> src) {
    out.MutableBytes([&](std::span<uint8_t> dst) {
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(dst.data() + o * size * inner, src.data() + o * n * inner,
                    static_cast<size_t>(n * inner));
      }
    });
  });
  return out;
}

}  // namespace

BucketedDataset::BucketedDataset(DatasetPtr inner, BucketFn bucket, int axis)
    : inner_(std::move(inner)), bucket_(std::move(bucket)), axis_(axis) {
  if (!inner_) detail::Throw("PadToBuckets: null dataset");
  if (!bucket_) detail::Throw("PadToBuckets(\"{}\"): no bucket function", inner_->Name());
  if (axis_ < 0) detail::Throw("PadToBuckets(\"{}\"): axis {} must be >= 0", inner_->Name(), axis_);
}

std::string BucketedDataset::Name() const { return inner_->Name(); }
void BucketedDataset::Reset() { inner_->Reset(); }
bool BucketedDataset::IsInfinite() const { return inner_->IsInfinite(); }

bool BucketedDataset::Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) {
  if (!inner_->Yield(spec, inputs, labels)) return false;
  if (inputs.empty() || inputs[0].rank() <= axis_) {
    detail::Throw("PadToBuckets(\"{}\"): the first input {} has no axis {}", Name(),
                  inputs.empty() ? std::string("(none)") : inputs[0].shape().ToString(), axis_);
  }
  const int64_t n = inputs[0].shape().Dim(axis_);
  const int64_t size = bucket_(n);
  if (size < n) detail::Throw("PadToBuckets(\"{}\"): the bucket of {} is {}, smaller", Name(), n, size);
  // The mask: the first input's axes 0..axis, true below n along axis.
  std::vector<int64_t> mdims(inputs[0].shape().Dimensions().begin(),
                             inputs[0].shape().Dimensions().begin() + axis_ + 1);
  mdims.back() = size;
  Tensor mask = Tensor::FromShape(Shape(DType::Bool, mdims));
  mask.MutableFlatData<bool>([&](std::span<bool> m) {
    for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<int64_t>(i) % size < n;
  });
  for (std::vector<Tensor>* list : {&inputs, &labels}) {
    for (Tensor& t : *list) {
      if (t.rank() <= axis_) continue;
      if (IsPacked(t.dtype()))
        detail::Throw("PadToBuckets(\"{}\"): {} is of a packed dtype; unpack it first", Name(), t.shape());
      if (t.shape().Dim(axis_) != n) {
        detail::Throw("PadToBuckets(\"{}\"): {} has size {} on axis {}, the first input {}", Name(),
                      t.shape(), t.shape().Dim(axis_), axis_, n);
      }
      t = PadAxis(t, axis_, size);
    }
  }
  inputs.push_back(std::move(mask));
  return true;
}

std::shared_ptr<BucketedDataset> PadToBuckets(DatasetPtr inner, BucketFn bucket, int axis) {
  return std::make_shared<BucketedDataset>(std::move(inner), std::move(bucket), axis);
}

}  // namespace kiln::data
