// The feed-forward network builder (layers::Fnn).

#include "kiln/ml/fnn.h"

#include "core/check.h"
#include "kiln/ml/activations.h"
#include "kiln/ml/layers.h"
#include "kiln/ml/normalization.h"

namespace kiln::layers {

FnnBuilder::FnnBuilder(model::Scope scope, Node x) : scope_(std::move(scope)), x_(x) {
  num_hidden_layers_ = static_cast<int>(model::GetParamOr(scope_, "fnn_num_hidden_layers", int64_t{0}));
  hidden_dims_ = model::GetParamOr(scope_, "fnn_num_hidden_nodes", int64_t{10});
  activation_ = model::GetParamOr(scope_, "fnn_activation", "relu");
  dropout_ = model::GetParamOr(scope_, "fnn_dropout_rate", 0.0);
  normalization_ = model::GetParamOr(scope_, "fnn_normalization", "none");
  residual_ = model::GetParamOr(scope_, "fnn_residual", false);
}

Node FnnBuilder::Done() {
  const std::string where = "layers::Fnn(" + scope_.Path() + ")";
  if (!x_.Ok()) kiln::detail::Throw("{}: x is an invalid node", where);
  if (output_dims_.empty()) kiln::detail::Throw("{}: OutputDims must be set", where);
  if (num_hidden_layers_ < 0)
    kiln::detail::Throw("{}: NumHiddenLayers {} is negative", where, num_hidden_layers_);
  if (num_hidden_layers_ > 0 && hidden_dims_ < 1)
    kiln::detail::Throw("{}: HiddenDims {} must be positive", where, hidden_dims_);
  if (normalization_ != "none" && normalization_ != "layer" && normalization_ != "batch" &&
      !normalization_.empty()) {
    kiln::detail::Throw("{}: unknown normalization \"{}\" (use \"layer\", \"batch\" or \"none\")", where,
                        normalization_);
  }
  if (dropout_ < 0 || dropout_ >= 1)
    kiln::detail::Throw("{}: dropout rate {} is not in [0, 1)", where, dropout_);
  const std::function<Node(Node)> activation = activations::FromName(activation_);

  Node h = x_;
  for (int i = 0; i < num_hidden_layers_; ++i) {
    model::Scope layer = scope_.In("fnn_hidden_layer_" + std::to_string(i));
    Node in = h;
    h = layers::Dense(layer, h, use_bias_, hidden_dims_);
    if (normalization_ == "layer") {
      h = layers::LayerNorm(layer.In("normalization"), h).Done();
    } else if (normalization_ == "batch") {
      h = layers::BatchNorm(layer.In("normalization"), h).Done();
    }
    h = activation(h);
    if (dropout_ > 0) h = layers::Dropout(layer.In("dropout"), h, dropout_);
    if (residual_ && in.shape() == h.shape()) h = h + in;
  }
  return layers::DenseWithDims(scope_.In("fnn_output_layer"), h, use_bias_, output_dims_);
}

}  // namespace kiln::layers
