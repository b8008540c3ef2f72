// The gradient table: every family's rows, and the rows of the value table marked smooth.

#include <algorithm>
#include <functional>

#include "grad_internal.h"

namespace kiln::conformance {

namespace internal {

GradList::GradList(std::vector<GradCase>& out, const std::string& family)
    : out_(out), rng_(std::hash<std::string>{}(family)) {}

GradCase& GradList::Add(const std::string& name, graph::GraphFn build, std::vector<Tensor> inputs) {
  GradCase c;
  c.name = name;
  c.build = std::move(build);
  c.inputs = std::move(inputs);
  out_.push_back(std::move(c));
  return out_.back();
}

Tensor GradList::Rand(std::vector<int64_t> dims, double lo, double hi) {
  Shape s(DType::Float64, dims);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(s.Size()));
  for (double& x : v) x = u(rng_);
  return Tensor::FromFlat(s, v);
}

Tensor GradList::Distinct(std::vector<int64_t> dims, double lo, double hi) {
  // A shuffled grid with random jitter: neighbours are at least half a grid step apart.
  Shape s(DType::Float64, dims);
  const size_t n = static_cast<size_t>(s.Size());
  std::vector<double> v(n);
  const double step = n > 0 ? (hi - lo) / static_cast<double>(n) : 0;
  std::uniform_real_distribution<double> jitter(0.25, 0.75);
  for (size_t i = 0; i < n; ++i) v[i] = lo + step * (static_cast<double>(i) + jitter(rng_));
  std::shuffle(v.begin(), v.end(), rng_);
  return Tensor::FromFlat(s, v);
}

Tensor I32(std::vector<int64_t> dims, const std::vector<int32_t>& values) {
  return Tensor::FromFlat(Shape(DType::Int32, dims), values);
}

}  // namespace internal

const std::vector<GradCase>& GradCases() {
  static const std::vector<GradCase> cases = [] {
    std::vector<GradCase> out;
    internal::AddElementwiseGrads(out);
    internal::AddReduceGrads(out);
    internal::AddMovementGrads(out);
    internal::AddDotGrads(out);
    internal::AddConvGrads(out);
    internal::AddWindowGrads(out);
    internal::AddIndexingGrads(out);
    internal::AddSortScanGrads(out);
    internal::AddControlGrads(out);
    internal::AddCompositeGrads(out);
    internal::AddUtilGrads(out);
    internal::AddComplexGrads(out);
    internal::AddSmoothRowGrads(out);
    return out;
  }();
  return cases;
}

}  // namespace kiln::conformance
