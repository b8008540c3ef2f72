// Gradient rules of the collectives, for a loss that is the sum of every replica's own loss: an
// operand feeds every replica's result, so its adjoint gathers the adjoints of all replicas.
// AllReduce Sum sends back the sum of the adjoints; Max and Min send it to the replicas whose value
// was the result (split evenly between ties); AllGather sends back this replica's block of the
// sum (ReduceScatter), ReduceScatter the gathered adjoints; CollectiveBroadcast sends the sum to
// the root replica and zero to the others.

#include "core/check.h"
#include "graph/autodiff/vjp.h"
#include "kiln/graph/collective.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using compute::ReduceKind;
using V = std::vector<Node>;

namespace {

Node SumOverReplicas(Node adjoint) { return AllReduce(adjoint, ReduceOp::Sum); }

V AllReduceRule(const VJPContext& c) {
  const Node total = SumOverReplicas(c.Adjoint());
  if (c.attrs().reduce_kind == ReduceKind::Sum) return {total};
  // Max, Min: where this replica's value is the result, an even share among the replicas that tie.
  const Node x = c.X(0), y = c.Y();
  const Node hit = ConvertDType(Equal(x, y), x.dtype());
  const Node ties = SumOverReplicas(hit);
  return {hit * total / Max(ties, OnesLike(ties))};
}

V AllGatherRule(const VJPContext& c) {
  return {ReduceScatter(c.Adjoint(), static_cast<int>(c.attrs().axis))};
}

V ReduceScatterRule(const VJPContext& c) {
  if (c.attrs().reduce_kind != ReduceKind::Sum)
    kiln::detail::Throw("ReduceScatter: no gradient for a Max or Min reduction (use AllReduce)");
  return {AllGather(c.Adjoint(), static_cast<int>(c.attrs().axis))};
}

V BroadcastRule(const VJPContext& c) {
  const Node total = SumOverReplicas(c.Adjoint());
  Graph& g = c.graph();
  const Node is_root = Equal(ReplicaId(g), Scalar(g, DType::Int32, static_cast<int32_t>(c.attrs().index)));
  return {Where(is_root, total, ZerosLike(total))};
}

}  // namespace

void RegisterCollectiveRules(RuleTable& t) {
  t.Set(OpType::AllReduce, AllReduceRule);
  t.Set(OpType::AllGather, AllGatherRule);
  t.Set(OpType::ReduceScatter, ReduceScatterRule);
  t.Set(OpType::CollectiveBroadcast, BroadcastRule);
  t.None(OpType::ReplicaId, "an integer replica id");
}

}  // namespace kiln::graph::autodiff
