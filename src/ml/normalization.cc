// Normalisation layers: BatchNorm (batch statistics and moving averages), LayerNorm, RMSNorm,
// and DynamicTanh (which replaces a normalisation).

#include "kiln/ml/normalization.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "kiln/ml/initializers.h"
#include "kiln/ml/nn.h"
#include "kiln/model/params.h"

namespace kiln::layers {

namespace {

void CheckX(const std::string& where, Node x) {
  if (!x.Ok()) kiln::detail::Throw("{}: x is an invalid node", where);
  if (!IsFloat(x.dtype())) kiln::detail::Throw("{}: x {} must be float", where, x.shape());
  if (x.rank() < 1) kiln::detail::Throw("{}: x {} needs at least one axis", where, x.shape());
}

/// `axes` non-negative and sorted; kiln::Error naming `where` for one out of range or repeated.
std::vector<int> SortedAxes(const std::string& where, Node x, const std::vector<int>& axes) {
  if (axes.empty()) kiln::detail::Throw("{}: no axes given", where);
  std::vector<int> out;
  for (int a : axes) {
    const int n = a < 0 ? a + x.rank() : a;
    if (n < 0 || n >= x.rank())
      kiln::detail::Throw("{}: axis {} is out of range for x {}", where, a, x.shape());
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    kiln::detail::Throw("{}: the axes repeat an axis of x {}", where, x.shape());
  return out;
}

/// The dimensions of x's `axes`, with x's dtype: the shape of the per-feature variables.
Shape AxesShape(Node x, const std::vector<int>& axes) {
  std::vector<int64_t> dims;
  for (int a : axes) dims.push_back(x.shape().Dim(a));
  return Shape(x.dtype(), dims);
}

Node VariableNode(const model::Scope& scope, const std::string& name, const Shape& shape,
                  const model::Initializer& init, bool trainable = true) {
  model::Variable v = scope.WithInitializer(init).VariableWithShape(name, shape);
  if (!trainable) v.SetTrainable(false);
  return v.NodeValue(*scope.graph());
}

void CheckBound(const std::string& where, const model::Scope& scope) {
  if (scope.graph() == nullptr)
    kiln::detail::Throw("{}: the scope is not bound to a graph being built", where);
}

}  // namespace

Node BatchNormBuilder::Done() {
  const std::string where = "layers::BatchNorm(" + scope_.Path() + ")";
  CheckX(where, x_);
  CheckBound(where, scope_);
  if (!(momentum_ >= 0 && momentum_ <= 1))
    kiln::detail::Throw("{}: momentum {} is not in [0, 1]", where, momentum_);
  if (!(epsilon_ >= 0)) kiln::detail::Throw("{}: epsilon {} must be >= 0", where, epsilon_);
  const int axis = SortedAxes(where, x_, {axis_})[0];
  const Shape features = AxesShape(x_, {axis});
  Node gain = scale_ ? VariableNode(scope_, "gain", features, initializers::Ones()) : Node();
  Node offset = center_ ? VariableNode(scope_, "offset", features, initializers::Zeros()) : Node();
  model::Variable mean = scope_.WithInitializer(initializers::Zeros()).VariableWithShape("mean", features);
  model::Variable variance =
      scope_.WithInitializer(initializers::Ones()).VariableWithShape("variance", features);
  mean.SetTrainable(false);
  variance.SetTrainable(false);
  graph::Graph& g = *scope_.graph();
  if (!model::IsTraining(scope_))
    return nn::BatchNormInference(x_, mean.NodeValue(g), variance.NodeValue(g), gain, offset, epsilon_, axis);

  std::vector<int> reduce;
  for (int a = 0; a < x_.rank(); ++a)
    if (a != axis) reduce.push_back(a);
  std::vector<int64_t> kept(static_cast<size_t>(x_.rank()), 1);
  kept[static_cast<size_t>(axis)] = features.Dim(0);
  Node batch_mean = reduce.empty() ? x_ : graph::ReduceMean(x_, reduce);
  Node centred = x_ - graph::Reshape(batch_mean, kept);
  Node batch_var = reduce.empty() ? centred * centred : graph::ReduceMean(centred * centred, reduce);
  Node y = nn::BatchNormInference(x_, batch_mean, batch_var, gain, offset, epsilon_, axis);
  // The moving statistics follow the batch's without feeding gradients back.
  auto update = [&](const model::Variable& v, Node batch) {
    v.SetNodeValue(v.NodeValue(g) * momentum_ + graph::StopGradient(batch) * (1 - momentum_));
  };
  update(mean, batch_mean);
  update(variance, batch_var);
  return y;
}

Node LayerNormBuilder::Done() {
  const std::string where = "layers::LayerNorm(" + scope_.Path() + ")";
  CheckX(where, x_);
  CheckBound(where, scope_);
  if (!(epsilon_ >= 0)) kiln::detail::Throw("{}: epsilon {} must be >= 0", where, epsilon_);
  const std::vector<int> axes = SortedAxes(where, x_, axes_);
  const Shape params = AxesShape(x_, axes);
  Node gain = scale_ ? VariableNode(scope_, "gain", params, initializers::Ones()) : Node();
  Node offset = center_ ? VariableNode(scope_, "offset", params, initializers::Zeros()) : Node();
  return nn::LayerNorm(x_, axes, gain, offset, epsilon_);
}

Node RMSNormBuilder::Done() {
  const std::string where = "layers::RMSNorm(" + scope_.Path() + ")";
  CheckX(where, x_);
  CheckBound(where, scope_);
  if (!(epsilon_ >= 0)) kiln::detail::Throw("{}: epsilon {} must be >= 0", where, epsilon_);
  const std::vector<int> axes = SortedAxes(where, x_, axes_);
  Node gain = scale_ ? VariableNode(scope_, "gain", AxesShape(x_, axes), initializers::Ones()) : Node();
  return nn::RMSNorm(x_, axes, gain, epsilon_);
}

DynamicTanhBuilder::DynamicTanhBuilder(model::Scope scope, Node x)
    : scope_(std::move(scope)), x_(x), alpha_(model::GetParamOr(scope_, "dynamic_tanh_alpha", 0.5)) {}

Node DynamicTanhBuilder::Done() {
  const std::string where = "layers::DynamicTanh(" + scope_.Path() + ")";
  CheckX(where, x_);
  CheckBound(where, scope_);
  model::Scope scope = scope_.In("dynamic_tanh");
  const int last = x_.rank() - 1;
  Node alpha = VariableNode(scope, "alpha", Shape(x_.dtype(), {}), initializers::Constant(alpha_));
  Node gamma = VariableNode(scope, "gamma", AxesShape(x_, {last}), initializers::Ones());
  Node beta = VariableNode(scope, "beta", AxesShape(x_, {last}), initializers::Zeros());
  // [features] -> [1, ..., 1, features], broadcast over the leading axes.
  std::vector<int64_t> dims(static_cast<size_t>(x_.rank()), 1);
  dims.back() = x_.shape().Dim(last);
  return graph::Tanh(alpha * x_) * graph::Reshape(gamma, dims) + graph::Reshape(beta, dims);
}

}  // namespace kiln::layers
