#pragma once
/// @file
/// Automatic differentiation: reverse-mode gradients built at graph-building time, as ordinary
/// ops appended to the same graph (so they compile, run on any backend, and can themselves be
/// differentiated).
///
///   Node loss = ReduceAllSum(Square(x) + x * y);
///   std::vector<Node> g = Gradient(loss, {x, y});   // {2x + y, x}
///
/// Each primitive's gradient rule lives in one registry keyed by op type (src/graph/autodiff/);
/// composite functions (Softmax, Einsum, pooling...) get theirs from their primitives.

#include <functional>
#include <string>
#include <vector>

#include "kiln/compute/program.h"
#include "kiln/graph/graph.h"

namespace kiln::graph {

/// The gradient of the scalar float node `loss` with respect to each of `targets` (nodes of the
/// same graph: parameters, variables' values or intermediate nodes), each of its target's
/// shape. A target the loss does not depend on (or depends on only through ops without a
/// gradient, such as comparisons, ArgMax, integer ops or StopGradient) gets zeros.
///
/// kiln::Error when the loss is not a scalar or not float, when a target belongs to another
/// graph or is not float, or when the gradient reaches an op that has none (a While loop
/// without a static trip count, a Bitcast, a product ReduceWindow): the message names the op.
///
/// Max/Min (elementwise and reductions, pooling) send the gradient to one element on ties: the
/// first operand of Max/Min, the first maximal element (row-major) of a reduction, and the
/// element SelectAndScatter selects in a window.
std::vector<Node> Gradient(Node loss, const std::vector<Node>& targets);

/// The vector-Jacobian product: the gradient of sum_i <outputs[i], adjoints[i]> with respect to
/// each target (adjoints[i] has outputs[i]'s shape; an invalid Node counts as zeros).
/// Gradient(loss, targets) is VJP({loss}, {1}, targets).
std::vector<Node> VJP(const std::vector<Node>& outputs, const std::vector<Node>& adjoints,
                      const std::vector<Node>& targets);

/// The identity on `x` whose gradient is `fn(x, adjoint)` (adjoint: the gradient with respect to
/// the result; fn returns the gradient with respect to x, of x's shape) instead of the identity.
/// E.g. gradient clipping: IdentityWithCustomGradient(x, [](Node, Node v) { return Clip(v, -1, 1); }).
Node IdentityWithCustomGradient(Node x, const std::function<Node(Node x, Node adjoint)>& fn);

/// Gradient checkpointing (rematerialisation): returns x unchanged, marked so that the nodes
/// built on it afterwards are not kept alive for the backward pass but recomputed there from
/// this checkpoint, when the gradient reaches them. Trades compute for memory in deep models:
///
///   for (int i = 0; i < layers; ++i) { x = Checkpoint(x); x = Block(x); }
///   x = StopCheckpoint(x);
///
/// The value goes through an OptimizationBarrier, so later passes cannot merge the recomputed
/// copies back into the forward ones.
Node Checkpoint(Node x);
/// Ends a checkpointed block: returns x unchanged, kept for the backward pass, and the nodes
/// built on it are kept as usual.
Node StopCheckpoint(Node x);

/// Whether primitive `op` has a gradient rule (true also for ops whose derivative is zero, such
/// as Floor or StopGradient); false with `why` set for ops without a gradient.
bool HasGradientRule(compute::OpType op, std::string* why = nullptr);

}  // namespace kiln::graph
