#pragma once
/// @file
/// Activation functions (kiln::activations; not re-exported into kiln::graph), composed from graph
/// ops, so they run on every backend and differentiate through their primitives.
///
///   Node h = activations::Relu(layers::Dense(scope.In("hidden"), x, true, 128));
///   auto act = activations::FromName(model::GetParamOr(scope, "activation", "gelu"));

#include <functional>
#include <string>

#include "kiln/graph/ops.h"

namespace kiln::activations {

using graph::Node;

/// max(x, 0).
Node Relu(Node x);
/// x for x > 0, alpha·x otherwise.
Node LeakyRelu(Node x, double alpha = 0.01);
/// min(max(x, 0), 6).
Node Relu6(Node x);
/// x for x > 0, alpha·(exp(x) - 1) otherwise.
Node Elu(Node x, double alpha = 1.0);
/// Scaled ELU with the self-normalising constants (scale 1.0507009873554805, alpha 1.6732632423543772).
Node Selu(Node x);
/// x·Φ(x), the exact Gaussian error linear unit (Φ through Erf).
Node Gelu(Node x);
/// GELU's tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
Node GeluApproximate(Node x);
/// x·sigmoid(x).
Node Swish(Node x);
/// The same as Swish.
Node Silu(Node x);
/// SwiGLU: the last axis split in halves [a, b], a·swish(b) (the last dimension must be even).
Node SwiGLU(Node x);
/// 1 / (1 + exp(-x)).
Node Sigmoid(Node x);
/// The hyperbolic tangent, in (-1, 1).
Node Tanh(Node x);
/// log(1 + exp(x)), computed stably.
Node Softplus(Node x);
/// clip(x/6 + 1/2, 0, 1).
Node HardSigmoid(Node x);
/// x·HardSigmoid(x).
Node HardSwish(Node x);
/// The identity.
Node Linear(Node x);

/// The activation named `name` ("relu", "leaky_relu", "relu6", "elu", "selu", "gelu",
/// "gelu_approximate", "swish", "silu", "swiglu", "sigmoid", "tanh", "softplus",
/// "hard_sigmoid", "hard_swish", "linear" or "none"); kiln::Error listing them otherwise.
std::function<Node(Node)> FromName(const std::string& name);

}  // namespace kiln::activations
