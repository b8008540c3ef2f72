// Kolmogorov-Arnold networks: B-spline bases by the Cox–de Boor recursion, and KAN layers.

#include "kiln/ml/kan.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "kiln/graph/random.h"
#include "kiln/ml/initializers.h"

namespace kiln::layers {

namespace {

/// The last axis of x restricted to [start, end).
Node SliceLast(Node x, int64_t start, int64_t end) {
  std::vector<graph::AxisRangeSpec> ranges(static_cast<size_t>(x.rank() - 1), graph::AxisRange());
  ranges.push_back(graph::AxisRange(start, end));
  return graph::Slice(x, ranges);
}

/// knots[start, end) as a constant of `dtype` with `rank` axes, all of size 1 but the last.
Node KnotsConst(graph::Graph& g, const std::vector<double>& knots, size_t start, size_t end, int rank,
                DType dtype) {
  std::vector<double> part(knots.begin() + static_cast<long>(start), knots.begin() + static_cast<long>(end));
  std::vector<int64_t> dims(static_cast<size_t>(rank - 1), 1);
  dims.push_back(static_cast<int64_t>(part.size()));
  return graph::ConvertDType(graph::Reshape(graph::Const(g, part), dims), dtype);
}

/// A constant initializer (ones or zeros) of the variable's shape.
model::Initializer Filled(double value) {
  return [value](graph::Graph& g, graph::Node&, const Shape& shape) {
    return value == 0 ? graph::Zeros(g, shape) : graph::Ones(g, shape);
  };
}

/// One KAN layer: [batch, in] -> [batch, out].
Node KANLayer(const model::Scope& scope, Node x, int64_t out, int grid, int order, double lo, double hi) {
  graph::Graph& g = x.graph();
  const DType dt = x.dtype();
  const int64_t in = x.shape().Dim(1), bases = grid + order;
  Node w_base = scope.VariableWithShape("w_base", Shape(dt, {in, out})).NodeValue(g);
  Node w_spline =
      scope.WithInitializer(Filled(1)).VariableWithShape("w_spline", Shape(dt, {in, out})).NodeValue(g);
  Node coef = scope.WithInitializer(Filled(0))
                  .VariableWithShape("coefficients", Shape(dt, {in, out, bases}))
                  .NodeValue(g);
  Node base = graph::Dot(x * graph::Sigmoid(x), w_base).Product();  // silu(x)·w_base: [batch, out]
  Node b = BSplineBases(x, grid, order, lo, hi);                    // [batch, in, bases]
  Node scaled = coef * graph::Reshape(w_spline, {in, out, 1});
  Node spline = graph::Dot(b, scaled).General({1, 2}, {}, {0, 2}, {});  // [batch, out]
  return base + spline;
}

/// One PWL-KAN layer: [batch, in] -> [batch, out].
Node PwlLayer(const model::Scope& scope, Node x, int64_t out, int points, double lo, double hi, bool linear) {
  graph::Graph& g = x.graph();
  const DType dt = x.dtype();
  const int64_t in = x.shape().Dim(1), batch = x.shape().Dim(0), n = points;
  const double stddev = 1.0 / std::sqrt(static_cast<double>(in));
  Node cp = scope.WithInitializer(initializers::RandomNormal(0.0, stddev))
                .VariableWithShape("kan_pwl_control_points", Shape(dt, {out, in, n}))
                .NodeValue(g);
  Node bias =
      scope.WithInitializer(Filled(0)).VariableWithShape("kan_pwl_bias", Shape(dt, {out, in})).NodeValue(g);
  // Split points s_k evenly over [lo, hi], and each ramp's room s_last - s_k.
  std::vector<double> splits(static_cast<size_t>(n)), room(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const double t = static_cast<double>(k) / static_cast<double>(n - 1);
    splits[static_cast<size_t>(k)] = lo + (hi - lo) * t;
    room[static_cast<size_t>(k)] = (hi - lo) * (1 - t);
  }
  Node s = KnotsConst(g, splits, 0, splits.size(), 3, dt);  // [1, 1, n]
  Node rel = graph::BroadcastToDims(graph::Reshape(x, {batch, in, 1}), {batch, in, n}) -
             graph::BroadcastToDims(s, {batch, in, n});
  if (linear) {
    // No ramp is clipped above and the first not below: the end slopes continue.
    Node rest = SliceLast(rel, 1, n);
    rel = graph::Concatenate({SliceLast(rel, 0, 1), graph::Max(rest, graph::ZerosLike(rest))}, 2);
  } else {
    Node room_node = graph::BroadcastToDims(KnotsConst(g, room, 0, room.size(), 3, dt), {batch, in, n});
    rel = graph::Clamp(graph::ZerosLike(rel), rel, room_node);
  }
  Node y = graph::Einsum("bin,oin->bo", rel, cp);  // Σ_i Σ_n c_oin·r_n(x_i)
  return y + graph::BroadcastToDims(graph::Reshape(graph::ReduceSum(bias, {1}), {1, out}), {batch, out});
}

/// One GR-KAN layer: [batch, in] -> [batch, out].
Node RationalLayer(const model::Scope& scope, Node x, int64_t out, int p, int q) {
  graph::Graph& g = x.graph();
  const DType dt = x.dtype();
  const int64_t in = x.shape().Dim(1), batch = x.shape().Dim(0);
  // The identity to start with: P(x) = x, Q(x) = 0.
  model::Initializer identity = [p](graph::Graph& gr, graph::Node&, const Shape& shape) {
    std::vector<double> a(static_cast<size_t>(p + 1), 0.0);
    a[1] = 1;
    Node v = graph::ConvertDType(graph::Const(gr, a), shape.dtype());
    return graph::BroadcastToDims(graph::Reshape(v, {1, 1, p + 1}), shape.Dimensions());
  };
  Node num = scope.WithInitializer(identity)
                 .VariableWithShape("numerator_coeffs", Shape(dt, {out, in, p + 1}))
                 .NodeValue(g);
  Node den = scope.WithInitializer(Filled(0))
                 .VariableWithShape("denominator_coeffs", Shape(dt, {out, in, q}))
                 .NodeValue(g);
  Node w = scope.WithInitializer(initializers::RandomNormal(0.0, 1.0 / std::sqrt(static_cast<double>(in))))
               .VariableWithShape("w", Shape(dt, {out, in}))
               .NodeValue(g);
  // Powers x^0 .. x^max(p, q): [batch, in, k].
  Node xe = graph::Reshape(x, {batch, in, 1});
  std::vector<Node> powers{graph::OnesLike(xe), xe};
  for (int k = 2; k <= std::max(p, q); ++k) powers.push_back(powers.back() * xe);
  Node num_pow = graph::Concatenate(std::vector<Node>(powers.begin(), powers.begin() + p + 1), 2);
  Node den_pow = graph::Concatenate(std::vector<Node>(powers.begin() + 1, powers.begin() + q + 1), 2);
  Node px = graph::Einsum("bik,oik->boi", num_pow, num);
  Node qx = graph::Einsum("bik,oik->boi", den_pow, den);
  Node phi = px / (graph::OnesLike(qx) + graph::Abs(qx));  // [batch, out, in]
  return graph::Einsum("boi,oi->bo", phi, w);
}

/// One Discrete-KAN layer: [batch, in] -> [batch, out].
Node DiscreteLayer(const model::Scope& scope, Node x, int64_t out, int points, double lo, double hi,
                   double softness, bool normal) {
  graph::Graph& g = x.graph();
  const DType dt = x.dtype();
  const int64_t in = x.shape().Dim(1), batch = x.shape().Dim(0), k = points;
  // Lines from -s to s over the control points, s ~ 0.1·N(0, 1) per edge.
  model::Initializer lines = [k](graph::Graph& gr, graph::Node& rng, const Shape& shape) {
    Node ramp =
        graph::ConvertDType(graph::Iota(gr, Shape(DType::Float32, shape.Dimensions()), 2), shape.dtype());
    ramp = ramp * graph::ScalarLike(ramp, 2.0 / static_cast<double>(k - 1)) - graph::ScalarLike(ramp, 1.0);
    std::vector<int64_t> slope_dims = shape.Dimensions();
    slope_dims.back() = 1;
    auto [next, slope] = graph::RandomNormal(rng, Shape(shape.dtype(), slope_dims));
    rng = next;
    return ramp * graph::BroadcastToDims(slope * graph::ScalarLike(slope, 0.1), shape.Dimensions());
  };
  Node cp = scope.WithInitializer(lines)
                .VariableWithShape("kan_discrete_control_points", Shape(dt, {out, in, k}))
                .NodeValue(g);
  std::vector<double> splits(static_cast<size_t>(k - 1));
  for (int64_t j = 0; j < k - 1; ++j)
    splits[static_cast<size_t>(j)] =
        k > 2 ? lo + (hi - lo) * static_cast<double>(j) / static_cast<double>(k - 2) : lo;
  const std::vector<int64_t> dims{batch, in, k - 1};
  Node s = graph::BroadcastToDims(KnotsConst(g, splits, 0, splits.size(), 3, dt), dims);
  Node xe = graph::BroadcastToDims(graph::Reshape(x, {batch, in, 1}), dims);
  Node below;  // below[..., j]: the probability that (perturbed) x lies below split point j.
  if (softness > 0 && model::IsTraining(scope)) {
    Node t = s - xe;
    const double width = softness * (hi - lo);
    if (normal) {
      below = (graph::OnesLike(t) + graph::Erf(t * graph::ScalarLike(t, 1.0 / (width * std::sqrt(2.0))))) *
              graph::ScalarLike(t, 0.5);
    } else {
      // In units of the half-base, clipped to the triangle's support [-1, 1] (CDF 0 and 1 beyond).
      Node u = graph::Clip(t * graph::ScalarLike(t, 1.0 / width), -1.0, 1.0);
      Node one = graph::OnesLike(u), half = graph::ScalarLike(u, 0.5);
      below = graph::Where(graph::Less(u, graph::ZerosLike(u)), graph::Square(one + u) * half,
                           one - graph::Square(one - u) * half);
    }
  } else {
    below = graph::ConvertDType(graph::Less(xe, s), dt);
  }
  // The weight of interval j: P(below split j) - P(below split j - 1), with 0 and 1 at the ends.
  Node zeros = graph::Zeros(g, Shape(dt, {batch, in, 1})), ones = graph::Ones(g, Shape(dt, {batch, in, 1}));
  Node w = graph::Concatenate({below, ones}, 2) - graph::Concatenate({zeros, below}, 2);  // [batch, in, k]
  return graph::Einsum("bik,oik->bo", w, cp);
}

}  // namespace

Node BSplineBases(Node x, int grid_size, int order, double lo, double hi) {
  const char* fn = "layers::BSplineBases";
  if (!x.Ok()) kiln::detail::Throw("{}: x is an invalid node", fn);
  if (!IsFloat(x.dtype())) kiln::detail::Throw("{}: x {} must be float", fn, x.shape());
  if (grid_size < 1) kiln::detail::Throw("{}: grid size {} must be at least 1", fn, grid_size);
  if (order < 0) kiln::detail::Throw("{}: spline order {} must be >= 0", fn, order);
  if (!(hi > lo)) kiln::detail::Throw("{}: grid range [{}, {}] is empty", fn, lo, hi);
  graph::Graph& g = x.graph();
  const double h = (hi - lo) / grid_size;
  const size_t n_knots = static_cast<size_t>(grid_size + 2 * order + 1);
  std::vector<double> t(n_knots);
  for (size_t j = 0; j < n_knots; ++j) t[j] = lo + (static_cast<double>(j) - order) * h;
  std::vector<int64_t> dims = x.shape().Dimensions();
  dims.push_back(1);
  Node xe = graph::Reshape(x, dims);
  const int rank = xe.rank();
  const DType dt = x.dtype();
  // Degree 0: the indicator of each knot interval [t_j, t_{j+1}).
  const size_t n = n_knots - 1;
  Node inside = graph::LogicalAnd(graph::GreaterOrEqual(xe, KnotsConst(g, t, 0, n, rank, dt)),
                                  graph::Less(xe, KnotsConst(g, t, 1, n + 1, rank, dt)));
  Node b = graph::ConvertDType(inside, dt);
  // Degree k from k-1 (uniform knots: both denominators are k·h).
  for (int k = 1; k <= order; ++k) {
    const size_t count = n - static_cast<size_t>(k);
    const double inv = 1.0 / (k * h);
    Node left = (xe - KnotsConst(g, t, 0, count, rank, dt)) * graph::ScalarLike(xe, inv);
    Node right =
        (KnotsConst(g, t, static_cast<size_t>(k) + 1, n_knots, rank, dt) - xe) * graph::ScalarLike(xe, inv);
    const int64_t c = static_cast<int64_t>(count);
    b = left * SliceLast(b, 0, c) + right * SliceLast(b, 1, c + 1);
  }
  return b;
}

KANBuilder& KANBuilder::NumHiddenLayers(int n) {
  hidden_layers_ = n;
  return *this;
}
KANBuilder& KANBuilder::HiddenDims(int64_t dims) {
  hidden_dims_ = dims;
  return *this;
}
KANBuilder& KANBuilder::OutputDims(int64_t dims) {
  output_dims_ = dims;
  return *this;
}
KANBuilder& KANBuilder::GridSize(int size) {
  grid_ = size;
  return *this;
}
KANBuilder& KANBuilder::SplineOrder(int order) {
  order_ = order;
  return *this;
}
KANBuilder& KANBuilder::PiecewiseLinear(bool extrapolate_linearly) {
  variant_ = Variant::kPiecewiseLinear;
  pwl_linear_ = extrapolate_linearly;
  return *this;
}
KANBuilder& KANBuilder::NumControlPoints(int n) {
  points_ = n;
  return *this;
}
KANBuilder& KANBuilder::Discrete(double softness, bool normal) {
  variant_ = Variant::kDiscrete;
  softness_ = softness;
  discrete_normal_ = normal;
  return *this;
}
KANBuilder& KANBuilder::Rational(int numerator, int denominator) {
  variant_ = Variant::kRational;
  num_degree_ = numerator;
  den_degree_ = denominator;
  return *this;
}
KANBuilder& KANBuilder::GridRange(double lo, double hi) {
  lo_ = lo;
  hi_ = hi;
  return *this;
}

Node KANBuilder::Done() {
  const std::string where = "layers::KAN(" + scope_.Path() + ")";
  if (!x_.Ok()) kiln::detail::Throw("{}: x is an invalid node", where);
  if (x_.rank() != 2 || !IsFloat(x_.dtype()))
    kiln::detail::Throw("{}: x {} must be float [batch, features]", where, x_.shape());
  if (output_dims_ < 1) kiln::detail::Throw("{}: OutputDims(n) must be set to a positive count", where);
  if (hidden_layers_ < 0) kiln::detail::Throw("{}: NumHiddenLayers({}) is negative", where, hidden_layers_);
  if (hidden_layers_ > 0 && hidden_dims_ < 1)
    kiln::detail::Throw("{}: HiddenDims({}) must be positive", where, hidden_dims_);
  if (grid_ < 1) kiln::detail::Throw("{}: GridSize({}) must be at least 1", where, grid_);
  if (order_ < 0) kiln::detail::Throw("{}: SplineOrder({}) must be >= 0", where, order_);
  if (!(hi_ > lo_)) kiln::detail::Throw("{}: GridRange({}, {}) is empty", where, lo_, hi_);
  if ((variant_ == Variant::kPiecewiseLinear || variant_ == Variant::kDiscrete) && points_ < 2)
    kiln::detail::Throw("{}: NumControlPoints({}) must be at least 2", where, points_);
  if (variant_ == Variant::kDiscrete && !(softness_ >= 0))
    kiln::detail::Throw("{}: Discrete softness {} is negative", where, softness_);
  if (variant_ == Variant::kRational && (num_degree_ < 1 || den_degree_ < 1))
    kiln::detail::Throw("{}: Rational({}, {}) needs degrees of at least 1", where, num_degree_, den_degree_);
  auto layer = [&](const model::Scope& scope, Node in, int64_t out) {
    switch (variant_) {
      case Variant::kPiecewiseLinear:
        return PwlLayer(scope, in, out, points_, lo_, hi_, pwl_linear_);
      case Variant::kRational:
        return RationalLayer(scope, in, out, num_degree_, den_degree_);
      case Variant::kDiscrete:
        return DiscreteLayer(scope, in, out, points_, lo_, hi_, softness_, discrete_normal_);
      case Variant::kBSpline:
        break;
    }
    return KANLayer(scope, in, out, grid_, order_, lo_, hi_);
  };
  Node h = x_;
  for (int i = 0; i < hidden_layers_; ++i)
    h = layer(scope_.In("kan_hidden_" + std::to_string(i)), h, hidden_dims_);
  return layer(scope_.In("kan_output"), h, output_dims_);
}

}  // namespace kiln::layers
