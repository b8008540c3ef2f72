#pragma once
/// @file
/// Kolmogorov-Arnold networks (KAN) with B-spline edges, or piecewise-linear (PWL-KAN), rational
/// (GR-KAN) or piecewise-constant (Discrete-KAN) ones.
///
/// Each layer maps [batch, in] to [batch, out]; every edge (i -> j) carries its own learned
/// function φ_ij(x) = w_base_ij·silu(x) + w_spline_ij·Σ_k c_ijk·B_k(x), and output j is
/// Σ_i φ_ij(x_i). The B_k are the B-splines of degree `order` over a uniform grid of `grid_size`
/// intervals on [lo, hi], extended by `order` knots on each side (grid_size + order bases);
/// outside [lo, hi] the spline part fades to zero and the silu part remains.
///
///   Node y = layers::KAN(scope.In("kan"), x).NumHiddenLayers(1).HiddenDims(8).OutputDims(1)
///                .GridSize(8).SplineOrder(3).Done();

#include <cstdint>

#include "kiln/graph/ops.h"
#include "kiln/model/store.h"

namespace kiln::layers {

using graph::Node;

/// The B-spline bases of degree `order` at x (float, any shape) over the uniform grid of
/// `grid_size` intervals on [lo, hi] extended by `order` knots each side, by the Cox–de Boor
/// recursion: x's shape plus an axis of grid_size + order bases. Inside [lo, hi] they sum to 1.
Node BSplineBases(Node x, int grid_size, int order, double lo = -1.0, double hi = 1.0);

/// Builds a KAN: NumHiddenLayers hidden layers of HiddenDims units, then an output layer of
/// OutputDims units, on x [batch, features]. Variables per layer (sub-scopes "kan_hidden_0"...,
/// "kan_output"): "w_base" [in, out] (He-uniform), "w_spline" [in, out] (ones) and "coefficients"
/// [in, out, grid_size + order] (zeros: the network starts as a silu MLP without biases).
class KANBuilder {
 public:
  /// A KAN on `x` with its variables under `scope`; layers::KAN(scope, x) makes one.
  KANBuilder(model::Scope scope, Node x) : scope_(std::move(scope)), x_(x) {}
  /// Number of hidden layers (default 0: a single KAN layer).
  KANBuilder& NumHiddenLayers(int n);
  /// Units of each hidden layer (default 10).
  KANBuilder& HiddenDims(int64_t dims);
  /// Units of the output layer (required).
  KANBuilder& OutputDims(int64_t dims);
  /// Grid intervals (default 5).
  KANBuilder& GridSize(int size);
  /// Degree of the splines (default 3: cubic).
  KANBuilder& SplineOrder(int order);
  /// The grid's range (default [-1, 1]); for PiecewiseLinear, where its split points lie.
  KANBuilder& GridRange(double lo, double hi);
  /// PWL-KAN (GoMLX's PiecewiseLinear variant) instead of B-splines: every edge learns a
  /// piecewise-linear function φ_ij(x) = b_ij + Σ_n c_ijn·r_n(x) over NumControlPoints split
  /// points s_n spread evenly over GridRange, with ramps r_n(x) = clamp(x - s_n, 0, s_last - s_n)
  /// (the function is constant outside the range) or, with `extrapolate_linearly`, ramps not
  /// clipped above and r_0 not clipped below (it continues with its end slopes). Variables per layer:
  /// "kan_pwl_control_points" [out, in, points] (normal, stddev 1/√in) and "kan_pwl_bias"
  /// [out, in] (zeros).
  KANBuilder& PiecewiseLinear(bool extrapolate_linearly = false);
  /// Split points of a PiecewiseLinear KAN (default 20, as GoMLX; at least 2).
  KANBuilder& NumControlPoints(int n);
  /// GR-KAN (GoMLX's Rational variant, "version B", Yang & Wang 2024): every edge learns a
  /// rational function φ_ij(x) = w_ij · P_ij(x) / (1 + |Q_ij(x)|), P of degree `numerator`
  /// (coefficients a_0..a_p) and Q of degree `denominator` without constant term (b_1..b_q).
  /// Variables per layer: "numerator_coeffs" [out, in, p + 1] and "denominator_coeffs"
  /// [out, in, q], starting as the identity (P(x) = x, Q = 0), and "w" [out, in] (normal, stddev
  /// 1/√in). Degrees at least 1.
  KANBuilder& Rational(int numerator = 5, int denominator = 4);
  /// Discrete-KAN (GoMLX's Discrete variant): every edge learns a piecewise-constant function,
  /// the value c_ijk of the interval k of x among NumControlPoints - 1 split points spread evenly
  /// over GridRange. While training (model::IsTraining) with `softness` > 0, x is perturbed by a
  /// triangular (or, with `normal`, a normal) distribution whose half-base (or standard
  /// deviation) is softness · (range width), and the output is the expectation,
  /// Σ_k c_ijk · P(x + noise in interval k), so gradients reach the control points and the input;
  /// otherwise the hard step function. GoMLX's softness schedules and trainable split points are
  /// not offered. Variables per layer: "kan_discrete_control_points" [out, in, points], starting
  /// as lines from -s to s with s ~ 0.1·N(0, 1) per edge.
  KANBuilder& Discrete(double softness = 0.1, bool normal = false);
  /// The network's output [batch, OutputDims]; kiln::Error naming KAN when x is not float
  /// [batch, features], OutputDims is unset, or a count or the grid range is out of range.
  Node Done();

 private:
  model::Scope scope_;
  Node x_;
  int hidden_layers_ = 0, grid_ = 5, order_ = 3;
  int64_t hidden_dims_ = 10, output_dims_ = 0;
  double lo_ = -1.0, hi_ = 1.0;
  // The edge function: the last of PiecewiseLinear, Rational and Discrete called, else B-splines.
  enum class Variant { kBSpline, kPiecewiseLinear, kRational, kDiscrete } variant_ = Variant::kBSpline;
  bool pwl_linear_ = false, discrete_normal_ = false;
  double softness_ = 0.1;
  int points_ = 20, num_degree_ = 5, den_degree_ = 4;
};
/// Starts a KAN on `x`: KAN(scope, x).OutputDims(1).Done().
inline KANBuilder KAN(model::Scope scope, Node x) { return KANBuilder(std::move(scope), x); }

}  // namespace kiln::layers
