// Graph frontend: Function and closures (function.h) traced with their call's inputs in place of
// their parameters, SortFunc's all-pairs rank sort, and While/If over closures.

#include "kiln/graph/function.h"

#include <utility>

#include "core/check.h"
#include "graph/ops_internal.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/ops.h"
#include "kiln/graph/sort.h"

namespace kiln::graph {

std::vector<Node> Function::Trace(Graph& g, const std::vector<Node>& inputs, bool elementwise) const {
  const std::string what = closure_ ? "closure" : name_;
  g.PushCallFrame(Graph::CallFrame{what, inputs, 0, elementwise});
  std::vector<Node> outputs;
  try {
    outputs = def_(g);
  } catch (...) {
    g.PopCallFrame();
    throw;
  }
  const Graph::CallFrame frame = g.PopCallFrame();
  if (frame.next != inputs.size())
    kiln::detail::Throw(
        "function \"{}\": its definition declares {} parameters, but it was called with {} inputs", what,
        frame.next, inputs.size());
  return outputs;
}

std::vector<Node> Function::Call(const std::vector<Node>& inputs) const {
  if (closure_)
    kiln::detail::Throw(
        "a closure cannot be called directly: give it to SortFunc, While or If (NewFunction makes "
        "callable functions)");
  if (inputs.size() != parameter_shapes_.size())
    kiln::detail::Throw("function \"{}\" takes {} inputs, called with {}", name_, parameter_shapes_.size(),
                        inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].Ok()) kiln::detail::Throw("function \"{}\": input {} is an invalid node", name_, i);
    if (&inputs[i].graph() != graph_)
      kiln::detail::Throw("function \"{}\": input {} belongs to graph \"{}\", not to the function's \"{}\"",
                          name_, i, inputs[i].graph().name(), graph_->name());
  }
  return Trace(*graph_, inputs);
}

Function NewFunction(Graph& g, const std::string& name, FunctionDef def) {
  if (!def) kiln::detail::Throw("NewFunction(\"{}\"): no definition given", name);
  Function f(g, name, std::move(def), false);
  // Traced once in a graph of its own: checks the definition and records its parameters.
  Graph scratch(name);
  f.def_(scratch);
  for (int i = 0; i < scratch.NumParameters(); ++i)
    f.parameter_shapes_.push_back(scratch.ParameterNode(i).shape());
  return f;
}

Function NewClosure(Graph& g, FunctionDef def) {
  if (!def) kiln::detail::Throw("NewClosure: no definition given");
  return Function(g, "", std::move(def), true);
}

std::vector<Node> SortFunc(const Function& comparator, int axis, bool /*is_stable*/,
                           const std::vector<Node>& inputs) {
  const char* op = "SortFunc";
  if (!comparator.IsClosure()) kiln::detail::Throw("{}: the comparator must be a closure (NewClosure)", op);
  if (inputs.empty()) kiln::detail::Throw("{}: needs at least one input", op);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].Ok()) kiln::detail::Throw("{}: input {} is an invalid node", op, k);
    if (inputs[k].shape().Dimensions() != inputs[0].shape().Dimensions())
      kiln::detail::Throw("{}: input {} {} must have the dimensions of input 0 {}", op, k, inputs[k].shape(),
                          inputs[0].shape());
  }
  const Node x0 = inputs[0];
  const int rank = x0.rank();
  if (rank == 0) kiln::detail::Throw("{}: cannot sort a scalar", op);
  const int a = ops_internal::NormalizeAxis(op, axis, rank, x0.shape());
  const int64_t n = x0.shape().Dim(a);
  if (n == Shape::kDynamic)
    kiln::detail::Throw("{}: the sorted axis {} of {} must be static", op, a, x0.shape());
  if (n <= 1) return inputs;
  Graph& g = x0.graph();

  // Every pair (i, j) of the axis: lhs values at i (axis a), rhs values at j (a new axis a + 1).
  // Other axes may be dynamic: the pairs take their sizes from the inputs when the program runs.
  std::vector<DimensionSpec> pair_specs = DimensionSpecsFor(x0);
  pair_specs.insert(pair_specs.begin() + a + 1, StaticDim(n));
  std::vector<int> all_axes;
  for (int d = 0; d <= rank; ++d) all_axes.push_back(d);
  auto pairs = [&](Node x) { return DynamicBroadcastInDim(x, all_axes, pair_specs); };
  std::vector<Node> params;
  for (const Node& x : inputs) {
    params.push_back(pairs(InsertAxes(x, {a + 1})));  // x[i] along a.
    params.push_back(pairs(InsertAxes(x, {a})));      // x[j] along a + 1.
  }
  const Shape pair_shape = params[0].shape();
  std::vector<Node> out = comparator.Trace(g, params, /*elementwise=*/true);
  if (out.size() != 1 || out[0].dtype() != DType::Bool)
    kiln::detail::Throw("{}: the comparator must return one Bool, got {} outputs{}", op, out.size(),
                        out.empty() ? "" : " of " + out[0].shape().ToString());
  Node before = out[0];  // before[i, j]: i comes before j.
  if (before.shape().Dimensions() != pair_shape.Dimensions())
    kiln::detail::Throw("{}: the comparator must be elementwise; it returned {} for pairs of {}", op,
                        before.shape(), pair_shape.WithDType(DType::Bool));
  // The rank of j: how many i come before it, plus the equivalent i at lower positions (stable).
  Node after = TransposeAllAxes(before, [&] {  // after[i, j] = before[j, i].
    std::vector<int> perm;
    for (int d = 0; d <= rank; ++d) perm.push_back(d == a ? a + 1 : d == a + 1 ? a : d);
    return perm;
  }());
  auto iota = [&](int along) { return DynamicIota(g, DType::Int32, along, pair_specs); };
  Node lower = Less(iota(a), iota(a + 1));  // i < j.
  Node ahead = LogicalOr(before, LogicalAnd(lower, LogicalNot(LogicalOr(before, after))));
  Node rank_of = ReduceSum(ConvertDType(ahead, DType::Int32), {a});  // Along j (now at axis a).
  // The permutation: position r takes the j whose rank is r.
  Node is_r = Equal(pairs(InsertAxes(rank_of, {a})), iota(a));
  Node perm = ReduceSum(Where(is_r, iota(a + 1), ZerosLike(iota(a))), {a + 1});
  std::vector<Node> sorted;
  for (const Node& x : inputs) sorted.push_back(TakeAlongAxis(x, perm, a));
  return sorted;
}

std::vector<Node> While(const Function& cond, const Function& body, const std::vector<Node>& initial_state) {
  return While(
      [&cond](const std::vector<Node>& s) {
        std::vector<Node> r = cond.Trace(s.at(0).graph(), s);
        if (r.size() != 1)
          kiln::detail::Throw("While: the condition closure must return one value, got {}", r.size());
        return r[0];
      },
      [&body](const std::vector<Node>& s) { return body.Trace(s.at(0).graph(), s); }, initial_state);
}

std::vector<Node> If(Node pred, const Function& true_branch, const Function& false_branch,
                     const std::vector<Node>& operands) {
  if (operands.empty())
    kiln::detail::Throw("If: closures need at least one operand (their parameters are the operands)");
  return If(
      pred, [&true_branch](const std::vector<Node>& s) { return true_branch.Trace(s.at(0).graph(), s); },
      [&false_branch](const std::vector<Node>& s) { return false_branch.Trace(s.at(0).graph(), s); },
      operands);
}

}  // namespace kiln::graph
