#pragma once
/// @file
/// Control flow that runs at execution time, with sub-programs built from C++ lambdas: While
/// loops, ForLoop (a static trip count), If, OptimizationBarrier and Composite.
///
/// A sub-program (condition, body, branch) is built in a child graph of its own, whose
/// parameters are the values passed to it: nodes of the enclosing graph cannot be used inside
/// (that is a kiln::Error naming the op that used one). Everything a loop or branch needs goes
/// in its state or operands.
///
///   std::vector<Node> r = While(
///       [](const std::vector<Node>& s) { return Less(s[0], ScalarLike(s[0], 10)); },
///       [](const std::vector<Node>& s) { return std::vector<Node>{s[0] + 1, s[1] * 2}; },
///       {Scalar(g, DType::Int32, 0), Scalar(g, DType::Float32, 1)});

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln::graph {

/// A sub-program body: its parameters in, its outputs out.
using SubFn = std::function<std::vector<Node>(const std::vector<Node>&)>;

/// Builds `fn` in a child graph named `name` whose parameters have `parameter_shapes`; the
/// Program computes what fn returns. Errors inside (e.g. a node of another graph used) are
/// rethrown prefixed with `name`.
std::shared_ptr<const compute::Program> BuildSubprogram(const std::string& name,
                                                        const std::vector<Shape>& parameter_shapes,
                                                        const SubFn& fn);

/// Runs `body` while `cond` (a scalar Bool of the state) holds; returns the final state. The
/// body returns a new state of the same shapes and dtypes. At least one state value.
std::vector<Node> While(const std::function<Node(const std::vector<Node>&)>& cond, const SubFn& body,
                        const std::vector<Node>& initial_state);

/// Runs body(i, state) for i = 0 .. n-1 (i an Int32 scalar), a While with trip_count = n.
std::vector<Node> ForLoop(int64_t n,
                          const std::function<std::vector<Node>(Node, const std::vector<Node>&)>& body,
                          const std::vector<Node>& initial_state);

/// true_fn(operands) when `pred` (a scalar Bool) holds, else false_fn(operands); both must
/// return the same shapes. Only the chosen branch runs.
std::vector<Node> If(Node pred, const SubFn& true_fn, const SubFn& false_fn,
                     const std::vector<Node>& operands);

/// The values unchanged; later passes never merge or move computations across it.
std::vector<Node> OptimizationBarrier(const std::vector<Node>& values);
/// One value through a barrier.
inline Node OptimizationBarrier(Node value) { return OptimizationBarrier(std::vector<Node>{value})[0]; }
/// GoMLX's name for the barrier over several values.
inline std::vector<Node> OptimizationBarriers(const std::vector<Node>& values) {
  return OptimizationBarrier(values);
}
/// `x` unchanged, computed only after every one of `dependencies` (a barrier over all of them).
inline Node SchedulingBarrier(Node x, const std::vector<Node>& dependencies) {
  std::vector<Node> all{x};
  all.insert(all.end(), dependencies.begin(), dependencies.end());
  return OptimizationBarrier(all)[0];
}

/// A named operation defined by `decomposition` (built from the operands' shapes, packed dtypes
/// included) with integer attributes `values`: every backend runs the decomposition, except
/// where it has a kernel of that name for these operands (the cpu backend's
/// "kiln.quantized_matmul"); gradients are the decomposition's. Returns its results.
std::vector<Node> Composite(const std::string& name, const std::vector<int64_t>& values,
                            const std::vector<Node>& operands, const SubFn& decomposition);

}  // namespace kiln::graph
