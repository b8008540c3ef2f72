// Activation functions, composed from graph ops.

#include "kiln/ml/activations.h"

#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

#include "core/check.h"

namespace kiln::activations {

Node Relu(Node x) { return graph::Max(x, graph::ScalarLike(x, 0)); }

Node LeakyRelu(Node x, double alpha) {
  return graph::Where(graph::Greater(x, graph::ScalarLike(x, 0)), x, x * graph::ScalarLike(x, alpha));
}

Node Relu6(Node x) { return graph::Min(graph::Max(x, graph::ScalarLike(x, 0)), graph::ScalarLike(x, 6)); }

Node Elu(Node x, double alpha) {
  // expm1 of min(x, 0): the unused branch never overflows.
  Node neg = graph::Expm1(graph::Min(x, graph::ScalarLike(x, 0))) * graph::ScalarLike(x, alpha);
  return graph::Where(graph::Greater(x, graph::ScalarLike(x, 0)), x, neg);
}

Node Selu(Node x) {
  constexpr double kScale = 1.0507009873554805, kAlpha = 1.6732632423543772;
  return Elu(x, kAlpha) * graph::ScalarLike(x, kScale);
}

Node Gelu(Node x) {
  return x * (graph::Erf(x * graph::ScalarLike(x, 1 / std::numbers::sqrt2)) + graph::ScalarLike(x, 1)) *
         graph::ScalarLike(x, 0.5);
}

Node GeluApproximate(Node x) {
  const double c = std::sqrt(2 / std::numbers::pi);
  Node inner = (x + x * x * x * graph::ScalarLike(x, 0.044715)) * graph::ScalarLike(x, c);
  return x * (graph::Tanh(inner) + graph::ScalarLike(x, 1)) * graph::ScalarLike(x, 0.5);
}

Node Swish(Node x) { return x * graph::Sigmoid(x); }
Node Silu(Node x) { return Swish(x); }

Node SwiGLU(Node x) {
  if (x.rank() == 0 || x.shape().Dimensions().back() % 2 != 0)
    kiln::detail::Throw("SwiGLU: the last axis of {} must have an even size", x.shape());
  std::vector<Node> halves = graph::Split(x, -1, 2);
  return halves[0] * Swish(halves[1]);
}

Node Sigmoid(Node x) { return graph::Sigmoid(x); }
Node Tanh(Node x) { return graph::Tanh(x); }

Node Softplus(Node x) {
  // max(x, 0) + log1p(exp(-|x|)).
  return Relu(x) + graph::Log1p(graph::Exp(graph::Neg(graph::Abs(x))));
}

Node HardSigmoid(Node x) {
  return graph::Clip(x * graph::ScalarLike(x, 1.0 / 6) + graph::ScalarLike(x, 0.5), 0.0, 1.0);
}

Node HardSwish(Node x) { return x * HardSigmoid(x); }

Node Linear(Node x) { return x; }

std::function<Node(Node)> FromName(const std::string& name) {
  static const std::vector<std::pair<std::string, std::function<Node(Node)>>> table = {
      {"relu", Relu},
      {"leaky_relu", [](Node x) { return LeakyRelu(x); }},
      {"relu6", Relu6},
      {"elu", [](Node x) { return Elu(x); }},
      {"selu", Selu},
      {"gelu", Gelu},
      {"gelu_approximate", GeluApproximate},
      {"swish", Swish},
      {"silu", Silu},
      {"swiglu", SwiGLU},
      {"sigmoid", Sigmoid},
      {"tanh", Tanh},
      {"softplus", Softplus},
      {"hard_sigmoid", HardSigmoid},
      {"hard_swish", HardSwish},
      {"linear", Linear},
      {"none", Linear},
  };
  std::string names;
  for (const auto& [n, fn] : table) {
    if (n == name) return fn;
    names += (names.empty() ? "" : ", ") + n;
  }
  kiln::detail::Throw("activations::FromName: unknown activation \"{}\" (valid: {})", name, names);
}

}  // namespace kiln::activations
