#pragma once
/// @file
/// Stateless neural-network functions (kiln::nn): the computations behind the layers, with
/// their weights passed in as nodes instead of read from a model::Scope. Composed from graph
/// ops, so they run on every backend and differentiate through their primitives.
///
///   Node y = nn::Dense(x, w, b, activations::Gelu);           // gelu(x·w + b)
///   Node n = nn::LayerNorm(x, {-1}, gamma, beta);             // over the last axis
///   Node d = nn::Dropout(h, rng_state, 0.1, /*training=*/true);  // rng_state advanced
///
/// Scale and offset parameters (gamma, beta) may be given in two forms: with x's rank (any
/// dimensions that broadcast to x), or with just the dimensions of the normalised axes in
/// order (e.g. [features] for axes {-1}). An invalid Node (Node()) leaves the term out.

#include <functional>
#include <vector>

#include "kiln/graph/ops.h"

namespace kiln::nn {

using graph::Node;

/// activation(x·weights + bias): x [..., in], weights [in, out...], bias [out...] (or an
/// invalid Node for none); the result is [..., out...]. No activation when `activation` is empty.
Node Dense(Node x, Node weights, Node bias = Node(), const std::function<Node(Node)>& activation = {});

/// (x - mean) / sqrt(variance + epsilon) · gamma + beta, with the mean and (biased) variance
/// taken over `axes` of x (negative from the end), as torch.nn.functional.layer_norm for the
/// trailing axes.
Node LayerNorm(Node x, const std::vector<int>& axes = {-1}, Node gamma = Node(), Node beta = Node(),
               double epsilon = 1e-5);

/// x / sqrt(mean(x²) + epsilon) · gamma, the mean over `axes` (Zhang & Sennrich 2019).
Node RMSNorm(Node x, const std::vector<int>& axes = {-1}, Node gamma = Node(), double epsilon = 1e-6);

/// Batch normalisation with given statistics (inference): (x - mean) / sqrt(variance + epsilon)
/// · gamma + beta, where mean, variance, gamma and beta are [features] vectors for the axis
/// `feature_axis` of x (negative from the end), as torch.nn.functional.batch_norm with
/// training=False (feature_axis = 1 there).
Node BatchNormInference(Node x, Node mean, Node variance, Node gamma = Node(), Node beta = Node(),
                        double epsilon = 1e-3, int feature_axis = -1);

/// exp(x) / sum(exp(x)) along `axis` (graph::Softmax).
inline Node Softmax(Node x, int axis = -1) { return graph::Softmax(x, {axis}); }
/// log(Softmax(x)) along `axis`, computed stably (graph::LogSoftmax).
inline Node LogSoftmax(Node x, int axis = -1) { return graph::LogSoftmax(x, {axis}); }
/// Softmax over the positions where `mask` is true (graph::MaskedSoftmax).
inline Node MaskedSoftmax(Node x, Node mask, int axis = -1) { return graph::MaskedSoftmax(x, mask, {axis}); }

/// cap · tanh(x / cap): a smooth clip of x to (-cap, cap) (logit soft-capping); cap > 0.
Node Softcap(Node x, double cap);

/// Inverted dropout: when `training`, each element of x is zeroed with probability `rate` and
/// the others scaled by 1 / (1 - rate), with uniform numbers drawn from `rng_state`, which is
/// replaced by the advanced state; otherwise x (and rng_state untouched). rate in [0, 1).
Node Dropout(Node x, Node& rng_state, double rate, bool training);

}  // namespace kiln::nn

// Attention (nn::ScaledDotProductAttention, nn::ApplyRoPE) belongs to the same namespace.
#include "kiln/ml/attention.h"  // IWYU pragma: export
