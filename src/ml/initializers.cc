// Variable initializers: constants, uniform/normal/truncated-normal draws, variance scaling
// (Glorot, He) and orthogonal matrices, all built from graph ops on the store's random state.

#include "kiln/ml/initializers.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops.h"
#include "kiln/graph/random.h"

namespace kiln::initializers {

using graph::Node;

namespace {

/// The dtype random values are computed in: Float64 for Float64 variables, else Float32.
DType ComputeDType(const Shape& shape) {
  return shape.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
}

void CheckFloat(const char* name, const Shape& shape) {
  if (!IsFloat(shape.dtype()))
    kiln::detail::Throw("initializers::{}: variable {} must have a float dtype", name, shape);
}

Node ToDType(Node v, const Shape& shape) {
  return v.dtype() == shape.dtype() ? v : graph::ConvertDType(v, shape.dtype());
}

/// Uniform [0, 1) values of `shape`'s dimensions in the compute dtype; advances `rng`.
Node Uniform01(Node& rng, const Shape& shape) {
  auto [next, u] = graph::RandomUniform(rng, Shape(ComputeDType(shape), shape.Dimensions()));
  rng = next;
  return u;
}

/// erf⁻¹(x) for |x| <= erf(2/√2) by Giles's single-precision polynomial in w = -log(1 - x²)
/// ("Approximating the erfinv function", 2010): on this range w < 5, so only its central
/// branch is needed.
Node ErfInvCentral(Node x) {
  Node w = graph::Neg(graph::Log1p(graph::Neg(x * x))) - 2.5;
  static constexpr double kCoeffs[] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06,
                                       -4.39150654e-06, 0.00021858087,  -0.00125372503,
                                       -0.00417768164,  0.246640727,    1.50140941};
  Node p = graph::ScalarLike(x, kCoeffs[0]);
  for (size_t i = 1; i < std::size(kCoeffs); ++i) p = p * w + kCoeffs[i];
  return p * x;
}

/// Standard normal values restricted to (-2, 2), of `shape`'s dimensions; advances `rng`.
Node TruncatedStandardNormal(Node& rng, const Shape& shape) {
  const double erf2 = std::erf(std::sqrt(2.0));  // P(|z| < 2) = erf(2 / √2)
  Node u = Uniform01(rng, shape);
  Node x = (u * 2.0 - 1.0) * erf2;
  return ErfInvCentral(x) * std::sqrt(2.0);
}

/// Columns Orthogonal orthonormalises per loop iteration.
constexpr int64_t kOrthogonalBlock = 32;

/// aᵀ·b for matrices a [n, p] and b [n, q]: [p, q].
Node TransposedDot(Node a, Node b) { return graph::Dot(a, b).General({0}, {}, {0}, {}); }

/// The standard deviation of a standard normal truncated to [-2, 2].
constexpr double kTruncatedStddev = 0.87962566103423978;

}  // namespace

Fans ComputeFans(const Shape& shape) {
  const auto& d = shape.Dimensions();
  const int rank = shape.Rank();
  if (rank == 0) return {1, 1};
  if (rank == 1) return {d[0], d[0]};
  int64_t receptive = 1;
  for (int a = 0; a + 2 < rank; ++a) receptive *= d[static_cast<size_t>(a)];
  return {receptive * d[static_cast<size_t>(rank - 2)], receptive * d[static_cast<size_t>(rank - 1)]};
}

Initializer Zeros() { return Constant(0.0); }
Initializer Ones() { return Constant(1.0); }

Initializer Constant(double value) {
  return [value](graph::Graph& g, Node&, const Shape& shape) -> Node {
    Node c = IsFloat(shape.dtype()) ? graph::Scalar(g, shape.dtype(), value)
                                    : graph::Scalar(g, shape.dtype(), std::round(value));
    return graph::BroadcastToDims(c, shape.Dimensions());
  };
}

Initializer RandomUniform(double min, double max) {
  if (!(min < max)) kiln::detail::Throw("initializers::RandomUniform: min {} must be below max {}", min, max);
  return [min, max](graph::Graph&, Node& rng, const Shape& shape) -> Node {
    CheckFloat("RandomUniform", shape);
    return ToDType(Uniform01(rng, shape) * (max - min) + min, shape);
  };
}

Initializer RandomNormal(double mean, double stddev) {
  if (!(stddev >= 0)) kiln::detail::Throw("initializers::RandomNormal: stddev {} must be >= 0", stddev);
  return [mean, stddev](graph::Graph&, Node& rng, const Shape& shape) -> Node {
    CheckFloat("RandomNormal", shape);
    auto [next, z] = graph::RandomNormal(rng, Shape(ComputeDType(shape), shape.Dimensions()));
    rng = next;
    return ToDType(z * stddev + mean, shape);
  };
}

Initializer TruncatedNormal(double stddev, double mean) {
  if (!(stddev >= 0)) kiln::detail::Throw("initializers::TruncatedNormal: stddev {} must be >= 0", stddev);
  return [mean, stddev](graph::Graph&, Node& rng, const Shape& shape) -> Node {
    CheckFloat("TruncatedNormal", shape);
    return ToDType(TruncatedStandardNormal(rng, shape) * stddev + mean, shape);
  };
}

Initializer VarianceScaling(double scale, FanMode mode, Distribution distribution) {
  if (!(scale > 0)) kiln::detail::Throw("initializers::VarianceScaling: scale {} must be > 0", scale);
  return [scale, mode, distribution](graph::Graph&, Node& rng, const Shape& shape) -> Node {
    CheckFloat("VarianceScaling", shape);
    const Fans fans = ComputeFans(shape);
    double n = mode == FanMode::kFanIn ? static_cast<double>(fans.in)
               : mode == FanMode::kFanOut
                   ? static_cast<double>(fans.out)
                   : (static_cast<double>(fans.in) + static_cast<double>(fans.out)) / 2;
    n = std::max(n, 1.0);
    const double variance = scale / n;
    Node v;
    switch (distribution) {
      case Distribution::kUniform: {
        const double limit = std::sqrt(3 * variance);
        v = Uniform01(rng, shape) * (2 * limit) - limit;
        break;
      }
      case Distribution::kTruncatedNormal:
        v = TruncatedStandardNormal(rng, shape) * (std::sqrt(variance) / kTruncatedStddev);
        break;
      case Distribution::kNormal: {
        auto [next, z] = graph::RandomNormal(rng, Shape(ComputeDType(shape), shape.Dimensions()));
        rng = next;
        v = z * std::sqrt(variance);
        break;
      }
    }
    return ToDType(v, shape);
  };
}

Initializer GlorotUniform() { return VarianceScaling(1.0, FanMode::kFanAvg, Distribution::kUniform); }
Initializer GlorotNormal() { return VarianceScaling(1.0, FanMode::kFanAvg, Distribution::kTruncatedNormal); }
Initializer HeUniform() { return VarianceScaling(2.0, FanMode::kFanIn, Distribution::kUniform); }
Initializer HeNormal() { return VarianceScaling(2.0, FanMode::kFanIn, Distribution::kTruncatedNormal); }

Initializer Orthogonal(double gain) {
  return [gain](graph::Graph& g, Node& rng, const Shape& shape) -> Node {
    CheckFloat("Orthogonal", shape);
    if (shape.Rank() < 2)
      kiln::detail::Throw("initializers::Orthogonal: variable {} needs rank >= 2 ([fan_in, fan_out])", shape);
    const int64_t cols = shape.Dimensions().back();
    const int64_t rows = shape.Size() / std::max<int64_t>(cols, 1);
    if (shape.Size() == 0) return graph::Zeros(g, shape);
    // Orthonormalise the k = min(rows, cols) columns of an [n, k] normal matrix, n = max, by
    // blocks of b columns: each block is projected off the finished ones with matrix products,
    // then orthonormalised column by column (Gram-Schmidt, twice, both times). The last block
    // may be padded with extra columns, dropped at the end.
    const bool transposed = rows < cols;
    const int64_t n = std::max(rows, cols), k = std::min(rows, cols);
    const int64_t b = std::min<int64_t>(k, kOrthogonalBlock), blocks = (k + b - 1) / b;
    auto [next, a] = graph::RandomNormal(rng, Shape(DType::Float64, {n, blocks * b}));
    rng = next;
    Node q0 = graph::Zeros(g, Shape(DType::Float64, {n, blocks * b}));
    std::vector<Node> out = graph::ForLoop(
        blocks,
        [n, b](Node i, const std::vector<Node>& s) {
          Node zero = graph::Scalar(i.graph(), DType::Int32, 0);
          Node start = i * static_cast<int32_t>(b);
          Node block = graph::DynamicSlice(s[0], {zero, start}, {n, b});
          // The columns of Q from this block on are still zero, so projecting on all of Q
          // projects on the finished ones.
          for (int pass = 0; pass < 2; ++pass)
            block = block - graph::Dot(s[1], TransposedDot(s[1], block)).Product();
          std::vector<Node> done;
          for (int64_t j = 0; j < b; ++j) {
            Node v = graph::Slice(block, {graph::AxisRange(), graph::AxisRange(j, j + 1)});
            if (!done.empty()) {
              Node u = graph::Concatenate(done, 1);
              for (int pass = 0; pass < 2; ++pass) v = v - graph::Dot(u, TransposedDot(u, v)).Product();
            }
            // A padding column past the rank is ~0: keep it finite (it is dropped anyway).
            done.push_back(v * graph::Rsqrt(graph::MaxScalar(graph::ReduceAllSum(v * v), 1e-300)));
          }
          Node finished = done.size() == 1 ? done[0] : graph::Concatenate(done, 1);
          return std::vector<Node>{s[0], graph::DynamicUpdateSlice(s[1], finished, {zero, start})};
        },
        {a, q0});
    Node qk = blocks * b == k ? out[1] : graph::Slice(out[1], {graph::AxisRange(), graph::AxisRange(0, k)});
    Node q = transposed ? graph::Transpose(qk, 0, 1) : qk;
    q = graph::Reshape(q * gain, shape.Dimensions());
    return ToDType(q, shape);
  };
}

}  // namespace kiln::initializers
