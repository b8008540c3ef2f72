#pragma once
/// @file
/// Functions and closures (GoMLX's NewFunction and NewClosure): a graph function defined once and
/// used several times, declaring its inputs with Parameter; and SortFunc, which sorts with a
/// comparator closure.
///
///   Function norm = NewFunction(g, "norm", [](Graph& fg) {
///     Node v = Parameter(fg, "v", Shape(DType::Float32, {3}));
///     return std::vector<Node>{Sqrt(ReduceSum(Square(v)))};
///   });
///   Node a = norm.Call({x})[0], b = norm.Call({y})[0];
///
/// kiln inlines each call: the definition is traced again with the call's inputs in place of its
/// parameters, so the program is the one the body written at each call site would give (and
/// gradients flow through calls as through any op).

#include <functional>
#include <string>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln::graph {

/// A function's definition: declares its inputs with Parameter(g, name, shape) and returns its
/// outputs.
using FunctionDef = std::function<std::vector<Node>(Graph&)>;

/// A function or closure of a graph.
class Function {
 public:
  /// The function's name ("" for a closure).
  const std::string& Name() const { return name_; }
  /// True for closures (NewClosure): comparators and loop bodies, not called directly.
  bool IsClosure() const { return closure_; }
  /// The parameter shapes the definition declared (a function's, traced when it was made; empty
  /// for a closure until it is used).
  const std::vector<Shape>& ParameterShapes() const { return parameter_shapes_; }
  /// The outputs of the function for `inputs`, one per parameter with the declared shape and
  /// dtype (a kiln::Error naming the function and the parameter otherwise). Closures cannot be
  /// called (GoMLX's rule): they are given to SortFunc, While or If.
  std::vector<Node> Call(const std::vector<Node>& inputs) const;
  /// Traces the definition in `g` with `inputs` for its parameters (the control-flow functions
  /// use this to build closures in their sub-graphs); `elementwise` lets scalar parameters take
  /// inputs of any shape.
  std::vector<Node> Trace(Graph& g, const std::vector<Node>& inputs, bool elementwise = false) const;

 private:
  friend Function NewFunction(Graph& g, const std::string& name, FunctionDef def);
  friend Function NewClosure(Graph& g, FunctionDef def);
  Function(Graph& g, std::string name, FunctionDef def, bool closure)
      : graph_(&g), name_(std::move(name)), def_(std::move(def)), closure_(closure) {}
  Graph* graph_;
  std::string name_;
  FunctionDef def_;
  bool closure_;
  std::vector<Shape> parameter_shapes_;
};

/// A function of graph `g` named `name` (GoMLX's NewFunction). `def` is traced once now, in a
/// scratch graph, to check it and learn its parameters: like GoMLX's functions, it cannot use
/// nodes of `g` (pass them as inputs).
Function NewFunction(Graph& g, const std::string& name, FunctionDef def);

/// A closure of graph `g` (GoMLX's NewClosure), given to SortFunc, While or If. SortFunc traces
/// it in `g`, so it may use g's nodes; While and If trace it in their sub-graphs, where it may
/// not (their operands are its parameters).
Function NewClosure(Graph& g, FunctionDef def);

/// Sorts `inputs` (equal dimensions, any dtypes) along `axis` by `comparator`, a closure of
/// 2 * inputs.size() scalar parameters (lhs_0, rhs_0, lhs_1, rhs_1, ...) returning a scalar Bool,
/// true when lhs comes before rhs (a strict weak order). Returns the inputs in sorted order. The
/// sort is always stable (`is_stable` is accepted for GoMLX's signature). The comparator must be
/// elementwise (it runs on all pairs of an axis at once): the cost is O(n²) comparisons for an
/// axis of n, fine for the short axes comparators serve; Sort and ArgSort are O(n log n).
std::vector<Node> SortFunc(const Function& comparator, int axis, bool is_stable,
                           const std::vector<Node>& inputs);

/// While with closures: `cond` takes the state and returns a scalar Bool, `body` the next state.
std::vector<Node> While(const Function& cond, const Function& body, const std::vector<Node>& initial_state);

/// If with closures of the operands (both return the same shapes).
std::vector<Node> If(Node pred, const Function& true_branch, const Function& false_branch,
                     const std::vector<Node>& operands);

}  // namespace kiln::graph
