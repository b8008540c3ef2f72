#pragma once
/// @file
/// A feed-forward network (kiln::layers::Fnn, GoMLX's fnn): hidden dense layers with an
/// activation, optional normalisation, dropout and residual connections, then a linear output
/// layer.
///
///   Node y = layers::Fnn(scope.In("mlp"), x).NumHiddenLayers(2).HiddenDims(64)
///                .Activation("gelu").Normalization("layer").Residual(true).OutputDims(1).Done();
///
/// Each hidden layer i lives in the sub-scope "fnn_hidden_layer_<i>" ("weights", "biases", and
/// the normalisation's "gain"/"offset" under "normalization") and computes
///   h = Dropout(activation(Normalize(Dense(in)))) (+ in, when Residual and the shapes match);
/// the output layer is a Dense in "fnn_output_layer", without activation.
///
/// The defaults come from the scope's hyperparameters (GoMLX's keys): "fnn_num_hidden_layers"
/// (0), "fnn_num_hidden_nodes" (10), "fnn_activation" ("relu"), "fnn_dropout_rate" (0),
/// "fnn_normalization" ("none"; or "layer", "batch"), "fnn_residual" (false).

#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/graph/ops.h"
#include "kiln/model/store.h"

namespace kiln::layers {

using graph::Node;

/// The options of one feed-forward network; layers::Fnn(scope, x) makes one, Done() builds it.
class FnnBuilder {
 public:
  /// Reads the defaults from `scope`'s hyperparameters.
  FnnBuilder(model::Scope scope, Node x);
  /// Number of hidden layers (0: the output layer alone, a linear model).
  FnnBuilder& NumHiddenLayers(int n) {
    num_hidden_layers_ = n;
    return *this;
  }
  /// Width of every hidden layer.
  FnnBuilder& HiddenDims(int64_t dims) {
    hidden_dims_ = dims;
    return *this;
  }
  /// An activations::FromName name.
  FnnBuilder& Activation(std::string name) {
    activation_ = std::move(name);
    return *this;
  }
  /// Dropout rate after each hidden layer's activation (0: none).
  FnnBuilder& Dropout(double rate) {
    dropout_ = rate;
    return *this;
  }
  /// "layer", "batch" or "none".
  FnnBuilder& Normalization(std::string name) {
    normalization_ = std::move(name);
    return *this;
  }
  /// Adds each hidden layer's input to its output when their shapes match.
  FnnBuilder& Residual(bool residual) {
    residual_ = residual;
    return *this;
  }
  /// The output layer's dimensions (required): x [batch..., in] -> [batch..., dims...].
  template <std::integral... D>
  FnnBuilder& OutputDims(D... dims) {
    output_dims_ = {static_cast<int64_t>(dims)...};
    return *this;
  }
  /// OutputDims with the dimensions as a vector.
  FnnBuilder& OutputDimsList(std::vector<int64_t> dims) {
    output_dims_ = std::move(dims);
    return *this;
  }
  /// Whether every dense layer has "biases" (true by default).
  FnnBuilder& UseBias(bool use) {
    use_bias_ = use;
    return *this;
  }
  /// The network's output; kiln::Error naming Fnn when x is invalid, OutputDims is unset, a count
  /// is out of range, the normalization is unknown or the dropout rate is not in [0, 1).
  Node Done();

 private:
  model::Scope scope_;
  Node x_;
  int num_hidden_layers_ = 0;
  int64_t hidden_dims_ = 10;
  std::string activation_ = "relu";
  double dropout_ = 0;
  std::string normalization_ = "none";
  bool residual_ = false;
  std::vector<int64_t> output_dims_;
  bool use_bias_ = true;
};
/// Starts a feed-forward network on `x` with its variables under `scope`.
inline FnnBuilder Fnn(model::Scope scope, Node x) { return FnnBuilder(std::move(scope), x); }

}  // namespace kiln::layers
