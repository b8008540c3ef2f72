#pragma once
/// @file
/// Normalisation layers (kiln::layers) with their parameters in a model::Scope: BatchNorm,
/// LayerNorm and RMSNorm. The computations are kiln::nn's.
///
///   Node h = layers::BatchNorm(scope.In("bn"), x).Axis(-1).Momentum(0.99).Done();
///   Node n = layers::LayerNorm(scope.In("ln"), x).Axes({-1}).Epsilon(1e-5).Done();
///   Node r = layers::RMSNorm(scope.In("rms"), x).Done();
///
/// Variables: "gain" (ones) and "offset" (zeros), shaped as the normalised axes' dimensions;
/// BatchNorm also keeps "mean" (zeros) and "variance" (ones), not trainable.

#include <vector>

#include "kiln/graph/ops.h"
#include "kiln/model/store.h"

namespace kiln::layers {

using graph::Node;

/// Batch normalisation (Ioffe & Szegedy 2015) over every axis but the feature axis. While
/// training (model::IsTraining) x is normalised with the batch's mean and (biased) variance,
/// and the moving statistics are updated: moving = momentum·moving + (1 - momentum)·batch
/// (Keras's rule). Otherwise x is normalised with the moving statistics.
/// Defaults: Axis(-1), Momentum(0.99), Epsilon(1e-3), Center(true), Scale(true).
class BatchNormBuilder {
 public:
  /// Batch normalisation of `x` with its variables under `scope` ("gain", "offset" and the
  /// moving "mean" and "variance"); the scope must be bound to a graph being built.
  BatchNormBuilder(model::Scope scope, Node x) : scope_(std::move(scope)), x_(x) {}
  /// The feature axis (negative from the end).
  BatchNormBuilder& Axis(int axis) {
    axis_ = axis;
    return *this;
  }
  /// Weight of the old moving statistics in their update, in [0, 1].
  BatchNormBuilder& Momentum(double momentum) {
    momentum_ = momentum;
    return *this;
  }
  /// Added to the variance before its square root (>= 0).
  BatchNormBuilder& Epsilon(double epsilon) {
    epsilon_ = epsilon;
    return *this;
  }
  /// Whether to add the learned "offset".
  BatchNormBuilder& Center(bool center) {
    center_ = center;
    return *this;
  }
  /// Whether to multiply by the learned "gain".
  BatchNormBuilder& Scale(bool scale) {
    scale_ = scale;
    return *this;
  }
  /// The normalised node; kiln::Error naming the layer when x is not float with at least one
  /// axis, an axis is out of range or repeated, or the momentum is not in [0, 1] or epsilon is negative.
  Node Done();

 private:
  model::Scope scope_;
  Node x_;
  int axis_ = -1;
  double momentum_ = 0.99, epsilon_ = 1e-3;
  bool center_ = true, scale_ = true;
};
/// Starts a batch normalisation layer: BatchNorm(scope, x).Done().
inline BatchNormBuilder BatchNorm(model::Scope scope, Node x) {
  return BatchNormBuilder(std::move(scope), x);
}

/// Layer normalisation (Ba et al. 2016) over `axes` of each example (nn::LayerNorm), with
/// learned "gain" and "offset". Defaults: Axes({-1}), Epsilon(1e-5), Center(true), Scale(true).
class LayerNormBuilder {
 public:
  /// Layer normalisation of `x` with its variables under `scope`.
  LayerNormBuilder(model::Scope scope, Node x) : scope_(std::move(scope)), x_(x) {}
  /// The axes normalised together (negative from the end; non-empty).
  LayerNormBuilder& Axes(std::vector<int> axes) {
    axes_ = std::move(axes);
    return *this;
  }
  /// Added to the variance before its square root (>= 0).
  LayerNormBuilder& Epsilon(double epsilon) {
    epsilon_ = epsilon;
    return *this;
  }
  /// Whether to add the learned "offset".
  LayerNormBuilder& Center(bool center) {
    center_ = center;
    return *this;
  }
  /// Whether to multiply by the learned "gain".
  LayerNormBuilder& Scale(bool scale) {
    scale_ = scale;
    return *this;
  }
  /// The normalised node; kiln::Error naming the layer when x is not float with at least one
  /// axis, an axis is out of range or repeated, or epsilon is negative.
  Node Done();

 private:
  model::Scope scope_;
  Node x_;
  std::vector<int> axes_ = {-1};
  double epsilon_ = 1e-5;
  bool center_ = true, scale_ = true;
};
/// Starts a layer normalisation layer: LayerNorm(scope, x).Done().
inline LayerNormBuilder LayerNorm(model::Scope scope, Node x) {
  return LayerNormBuilder(std::move(scope), x);
}

/// RMS normalisation over `axes` (nn::RMSNorm) with a learned "gain".
/// Defaults: Axes({-1}), Epsilon(1e-6), Scale(true).
class RMSNormBuilder {
 public:
  /// RMS normalisation of `x` with its "gain" under `scope`.
  RMSNormBuilder(model::Scope scope, Node x) : scope_(std::move(scope)), x_(x) {}
  /// The axes normalised together (negative from the end; non-empty).
  RMSNormBuilder& Axes(std::vector<int> axes) {
    axes_ = std::move(axes);
    return *this;
  }
  /// Added to the mean square before its square root (>= 0).
  RMSNormBuilder& Epsilon(double epsilon) {
    epsilon_ = epsilon;
    return *this;
  }
  /// Whether to multiply by the learned "gain".
  RMSNormBuilder& Scale(bool scale) {
    scale_ = scale;
    return *this;
  }
  /// The normalised node; kiln::Error naming the layer when x is not float with at least one
  /// axis, an axis is out of range or repeated, or epsilon is negative.
  Node Done();

 private:
  model::Scope scope_;
  Node x_;
  std::vector<int> axes_ = {-1};
  double epsilon_ = 1e-6;
  bool scale_ = true;
};
/// Starts an RMS normalisation layer: RMSNorm(scope, x).Done().
inline RMSNormBuilder RMSNorm(model::Scope scope, Node x) { return RMSNormBuilder(std::move(scope), x); }

/// Dynamic Tanh (DyT, "Transformers without Normalization"), GoMLX's layers.DynamicTanh: a
/// drop-in replacement for LayerNorm that computes no statistics,
/// DyT(x) = tanh(alpha·x)·gamma + beta, with a learned scalar "alpha" and per-feature "gamma"
/// (ones) and "beta" (zeros) over the last axis, under the sub-scope "dynamic_tanh".
class DynamicTanhBuilder {
 public:
  /// DyT of `x` under `scope`; alpha starts at the scope's "dynamic_tanh_alpha" hyperparameter
  /// (0.5 when unset).
  DynamicTanhBuilder(model::Scope scope, Node x);
  /// The initial value of alpha.
  DynamicTanhBuilder& WithAlpha(double alpha) {
    alpha_ = alpha;
    return *this;
  }
  /// The node, shaped as x; kiln::Error naming the layer when x is not float with an axis.
  Node Done();

 private:
  model::Scope scope_;
  Node x_;
  double alpha_;
};
/// Starts a Dynamic Tanh layer: DynamicTanh(scope, x).Done().
inline DynamicTanhBuilder DynamicTanh(model::Scope scope, Node x) {
  return DynamicTanhBuilder(std::move(scope), x);
}

}  // namespace kiln::layers
