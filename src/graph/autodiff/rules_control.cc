// Gradient rules of the control ops: OptimizationBarrier (the identity per value), If (an If on
// the same predicate whose branches are the vector-Jacobian products of the forward branches),
// Composite (a Composite "<name>.vjp" whose decomposition is the forward one's VJP)
// and While with a static trip count (ForLoop): a recording loop re-runs the body and stores
// each iteration's state in stacked [n, ...] buffers, then a backward loop applies the body's
// vector-Jacobian product from the last iteration to the first. A While with a data-dependent
// trip count has no gradient (the rule throws, naming While).

#include <algorithm>
#include <string>

#include "core/check.h"
#include "graph/autodiff/subprogram.h"
#include "graph/autodiff/vjp.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/gradient.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using V = std::vector<Node>;

namespace {

// Each result's adjoint goes to the matching operand.
V BarrierRule(const VJPContext& c) {
  V grads;
  for (int i = 0; i < c.NumOperands(); ++i)
    grads.push_back(c.Needs(i) ? c.Adjoints().at(static_cast<size_t>(i)) : Node());
  return grads;
}

// An If on the same predicate over (values..., adjoints of the float results that received
// one...) whose branches are the VJPs of the forward branches; the predicate gets nothing.
V IfRule(const VJPContext& c) {
  const compute::Instruction& inst = c.inst();
  const int num_values = c.NumOperands() - 1;
  V operands = {c.X(0)};
  std::vector<bool> wanted, with_adjoint;
  for (int i = 0; i < num_values; ++i) {
    operands.push_back(c.X(i + 1));
    wanted.push_back(c.Needs(i + 1));
  }
  for (size_t k = 0; k < inst.tuple_shapes.size(); ++k) {
    const Node& a = c.Adjoints().at(k);
    with_adjoint.push_back(a.Ok() && Differentiable(inst.tuple_shapes[k].dtype()));
    if (with_adjoint.back()) operands.push_back(a);
  }
  V grads(static_cast<size_t>(c.NumOperands()));
  if (operands.size() == static_cast<size_t>(num_values) + 1) return grads;
  auto t = BuildVJPProgram("If true branch gradient", *inst.subprograms.at(0), with_adjoint, wanted);
  auto f = BuildVJPProgram("If false branch gradient", *inst.subprograms.at(1), with_adjoint, wanted);
  const V r = c.graph().AddTupleOp(OpType::If, operands, {}, {t, f});
  size_t next = 0;
  for (int i = 0; i < num_values; ++i)
    if (wanted[static_cast<size_t>(i)]) grads[static_cast<size_t>(i) + 1] = r.at(next++);
  return grads;
}

// A Composite named "<name>.vjp" over (operands..., adjoints of the float results that received
// one...) whose decomposition is the vector-Jacobian product of the forward decomposition.
V CompositeRule(const VJPContext& c) {
  const compute::Instruction& inst = c.inst();
  V operands;
  std::vector<bool> wanted, with_adjoint;
  for (int i = 0; i < c.NumOperands(); ++i) {
    operands.push_back(c.X(i));
    wanted.push_back(c.Needs(i) && Differentiable(c.X(i).dtype()));
  }
  for (size_t k = 0; k < inst.tuple_shapes.size(); ++k) {
    const Node& a = c.Adjoints().at(k);
    with_adjoint.push_back(a.Ok() && Differentiable(inst.tuple_shapes[k].dtype()));
    if (with_adjoint.back()) operands.push_back(a);
  }
  V grads(static_cast<size_t>(c.NumOperands()));
  if (operands.size() == static_cast<size_t>(c.NumOperands())) return grads;
  if (std::find(wanted.begin(), wanted.end(), true) == wanted.end()) return grads;
  const std::string name = inst.attrs.name + ".vjp";
  auto body = BuildVJPProgram(name, *inst.subprograms.at(0), with_adjoint, wanted);
  compute::OpAttributes attrs;
  attrs.name = name;
  attrs.values = inst.attrs.values;
  const V r = c.graph().AddTupleOp(OpType::Composite, operands, attrs, {body});
  size_t next = 0;
  for (int i = 0; i < c.NumOperands(); ++i)
    if (wanted[static_cast<size_t>(i)]) grads[static_cast<size_t>(i)] = r.at(next++);
  return grads;
}

// `s` with a new leading axis of size n.
Shape Stacked(const Shape& s, int64_t n) {
  std::vector<int64_t> dims = s.Dimensions();
  dims.insert(dims.begin(), n);
  return Shape(s.dtype(), dims);
}

// Start indices (j, 0, 0, ...) for a stack of `rank` axes.
V StackIndex(Node j, int rank) {
  V starts = {j};
  for (int a = 1; a < rank; ++a) starts.push_back(Scalar(j.graph(), DType::Int32, 0));
  return starts;
}

// `stack` with x written at position j of its leading axis.
Node StoreAt(Node stack, Node x, Node j) {
  Node slab = Reshape(x, Stacked(x.shape(), 1).Dimensions());
  return DynamicUpdateSlice(stack, slab, StackIndex(j, stack.rank()));
}

// Position j of the leading axis of `stack`.
Node LoadAt(Node stack, Node j) {
  std::vector<int64_t> sizes = stack.shape().Dimensions();
  sizes[0] = 1;
  Node slab = DynamicSlice(stack, StackIndex(j, stack.rank()), sizes);
  return Reshape(slab, std::vector<int64_t>(sizes.begin() + 1, sizes.end()));
}

// Which state values a loop's gradient tracks: the ones the body changes (stored per
// iteration) and the float ones (carrying adjoints).
struct LoopPlan {
  std::vector<int> recorded, invariant, floats;
};

LoopPlan PlanLoop(const compute::Program& body, const std::vector<Shape>& shapes) {
  LoopPlan plan;
  for (int e = 0; e < static_cast<int>(shapes.size()); ++e) {
    (PassesThrough(body, e) ? plan.invariant : plan.recorded).push_back(e);
    if (Differentiable(shapes[static_cast<size_t>(e)].dtype())) plan.floats.push_back(e);
  }
  return plan;
}

// Re-runs the loop from `initial`, returning for each recorded state value the [n, ...] stack
// of its value at the start of every iteration.
V RecordStates(const compute::Program& body, const LoopPlan& plan, int64_t n, const V& initial) {
  const size_t k = initial.size();
  if (plan.recorded.empty()) return {};
  V init = initial;
  for (int e : plan.recorded)
    init.push_back(Zeros(initial[0].graph(), Stacked(initial[static_cast<size_t>(e)].shape(), n)));
  V out = ForLoop(
      n,
      [&](Node j, const V& s) {
        const V state(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(k));
        V next = InlineProgram(j.graph(), body, state);
        for (size_t m = 0; m < plan.recorded.size(); ++m)
          next.push_back(StoreAt(s[k + m], state[static_cast<size_t>(plan.recorded[m])], j));
        return next;
      },
      init);
  return V(out.begin() + static_cast<std::ptrdiff_t>(k), out.end());
}

// Runs the body's VJP n times, from the last iteration to the first, on the state read from
// `stacks` (recorded values) and `invariants`; returns the adjoints of the initial float state.
V BackwardLoop(const compute::Program& body, const LoopPlan& plan, int64_t n, const V& adjoints,
               const V& stacks, const V& invariants) {
  const size_t k = plan.recorded.size() + plan.invariant.size();
  const size_t nf = plan.floats.size(), nr = plan.recorded.size();
  V init = adjoints;
  init.insert(init.end(), stacks.begin(), stacks.end());
  init.insert(init.end(), invariants.begin(), invariants.end());
  V out = ForLoop(
      n,
      [&](Node j, const V& s) {
        Graph& g = j.graph();
        Node iteration = Sub(Scalar(g, DType::Int32, n - 1), j);
        V state(k);
        for (size_t m = 0; m < nr; ++m)
          state[static_cast<size_t>(plan.recorded[m])] = LoadAt(s[nf + m], iteration);
        for (size_t q = 0; q < plan.invariant.size(); ++q)
          state[static_cast<size_t>(plan.invariant[q])] = s[nf + nr + q];
        const V outs = InlineProgram(g, body, state);
        V ys, targets;
        for (int e : plan.floats) {
          ys.push_back(outs[static_cast<size_t>(e)]);
          targets.push_back(state[static_cast<size_t>(e)]);
        }
        V next = VJP(ys, V(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(nf)), targets);
        next.insert(next.end(), s.begin() + static_cast<std::ptrdiff_t>(nf), s.end());
        return next;
      },
      init);
  return V(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(nf));
}

// Reverse mode through a While with a static trip count n (ForLoop); throws for a
// data-dependent one.
V WhileRule(const VJPContext& c) {
  const int64_t n = c.attrs().trip_count;
  if (n < 0) {
    kiln::detail::Throw(
        "While: no gradient through a While loop whose trip count is data-dependent (decided by its "
        "condition at run time); use ForLoop (a static trip count) for a loop to be differentiated");
  }
  const int k = c.NumOperands();
  V grads(static_cast<size_t>(k));
  if (n == 0) {
    for (int e = 0; e < k; ++e)
      if (c.Needs(e)) grads[static_cast<size_t>(e)] = c.Adjoints().at(static_cast<size_t>(e));
    return grads;
  }
  const compute::Program& body = *c.inst().subprograms.at(1);
  const LoopPlan plan = PlanLoop(body, c.inst().tuple_shapes);
  if (plan.floats.empty()) return grads;
  V initial, invariants, adjoints;
  for (int e = 0; e < k; ++e) initial.push_back(c.X(e));
  for (int e : plan.invariant) invariants.push_back(initial[static_cast<size_t>(e)]);
  for (int e : plan.floats) {
    const Node& a = c.Adjoints().at(static_cast<size_t>(e));
    adjoints.push_back(a.Ok() ? a : Zeros(c.graph(), c.OperandShape(e)));
  }
  const V stacks = RecordStates(body, plan, n, initial);
  const V result = BackwardLoop(body, plan, n, adjoints, stacks, invariants);
  for (size_t q = 0; q < plan.floats.size(); ++q) {
    const int e = plan.floats[q];
    if (c.Needs(e)) grads[static_cast<size_t>(e)] = result[q];
  }
  return grads;
}

}  // namespace

void RegisterControlRules(RuleTable& t) {
  t.Set(OpType::While, WhileRule);
  t.Set(OpType::If, IfRule);
  t.Set(OpType::OptimizationBarrier, BarrierRule);
  t.Set(OpType::Composite, CompositeRule);
}

}  // namespace kiln::graph::autodiff
