#pragma once
// Helpers of the gradient table (grad_cases_*.cc): random Float64 inputs and the row list.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "internal.h"
#include "kiln/conformance/gradients.h"

namespace kiln::conformance::internal {

/// Collects gradient rows of one family; random inputs come from a generator seeded by the
/// family's name, so each family's values do not depend on the others.
class GradList {
 public:
  GradList(std::vector<GradCase>& out, const std::string& family);
  /// Adds a row named "<name>".
  GradCase& Add(const std::string& name, graph::GraphFn build, std::vector<Tensor> inputs);
  /// A Float64 tensor of uniform values in [lo, hi).
  Tensor Rand(std::vector<int64_t> dims, double lo = -1, double hi = 1);
  /// A Float64 tensor of uniform values in [lo, hi) whose elements are pairwise at least `gap`
  /// apart (no ties: for max, min, sorting).
  Tensor Distinct(std::vector<int64_t> dims, double lo = -1, double hi = 1);
  std::mt19937_64& rng() { return rng_; }

 private:
  std::vector<GradCase>& out_;
  std::mt19937_64 rng_;
};

/// An Int32 tensor (indices).
Tensor I32(std::vector<int64_t> dims, const std::vector<int32_t>& values);

// One function per family (grad_cases_*.cc).
void AddElementwiseGrads(std::vector<GradCase>& out);
void AddReduceGrads(std::vector<GradCase>& out);
void AddMovementGrads(std::vector<GradCase>& out);
void AddDotGrads(std::vector<GradCase>& out);
void AddConvGrads(std::vector<GradCase>& out);
void AddWindowGrads(std::vector<GradCase>& out);
void AddIndexingGrads(std::vector<GradCase>& out);
void AddSortScanGrads(std::vector<GradCase>& out);
void AddControlGrads(std::vector<GradCase>& out);
void AddCompositeGrads(std::vector<GradCase>& out);
void AddSmoothRowGrads(std::vector<GradCase>& out);
void AddUtilGrads(std::vector<GradCase>& out);
void AddComplexGrads(std::vector<GradCase>& out);

}  // namespace kiln::conformance::internal
