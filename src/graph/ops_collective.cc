// The collective ops' frontend (graph/collective.h): each emits its primitive with the graph's
// replica count; Mean is a Sum divided by the replicas.

#include "graph/ops_internal.h"
#include "kiln/graph/collective.h"

namespace kiln::graph {

using compute::OpType;
using compute::ReduceKind;

namespace {

ReduceKind KindOf(const char* op, ReduceOp r, DType dtype) {
  switch (r) {
    case ReduceOp::Sum:
      return ReduceKind::Sum;
    case ReduceOp::Mean:
      if (!IsFloat(dtype)) kiln::detail::Throw("{}: Mean needs a float operand, got {}", op, dtype);
      return ReduceKind::Sum;
    case ReduceOp::Max:
      return ReduceKind::Max;
    case ReduceOp::Min:
      return ReduceKind::Min;
  }
  kiln::detail::Throw("{}: invalid reduction", op);
}

compute::OpAttributes Attrs(const Node& x) {
  compute::OpAttributes at;
  at.replicas = x.graph().Replicas();
  return at;
}

/// `sum` divided by the replica count when `r` is Mean.
Node MeanOf(Node sum, ReduceOp r) {
  const int replicas = sum.graph().Replicas();
  return r == ReduceOp::Mean && replicas > 1 ? DivScalar(sum, static_cast<double>(replicas)) : sum;
}

}  // namespace

Node AllReduce(Node x, ReduceOp op) {
  ops_internal::CheckNodes("AllReduce", {x});
  compute::OpAttributes at = Attrs(x);
  at.reduce_kind = KindOf("AllReduce", op, x.dtype());
  return MeanOf(ops_internal::Emit("AllReduce", OpType::AllReduce, {x}, std::move(at)), op);
}

Node AllGather(Node x, int axis) {
  ops_internal::CheckNodes("AllGather", {x});
  compute::OpAttributes at = Attrs(x);
  at.axis = ops_internal::NormalizeAxis("AllGather", axis, x.rank(), x.shape());
  return ops_internal::Emit("AllGather", OpType::AllGather, {x}, std::move(at));
}

Node ReduceScatter(Node x, int axis, ReduceOp op) {
  ops_internal::CheckNodes("ReduceScatter", {x});
  compute::OpAttributes at = Attrs(x);
  at.axis = ops_internal::NormalizeAxis("ReduceScatter", axis, x.rank(), x.shape());
  at.reduce_kind = KindOf("ReduceScatter", op, x.dtype());
  return MeanOf(ops_internal::Emit("ReduceScatter", OpType::ReduceScatter, {x}, std::move(at)), op);
}

Node CollectiveBroadcast(Node x, int root) {
  ops_internal::CheckNodes("CollectiveBroadcast", {x});
  compute::OpAttributes at = Attrs(x);
  at.index = root;
  return ops_internal::Emit("CollectiveBroadcast", OpType::CollectiveBroadcast, {x}, std::move(at));
}

Node ReplicaId(Graph& g) {
  compute::OpAttributes at;
  at.replicas = g.Replicas();
  return ops_internal::EmitLeaf("ReplicaId", g, OpType::ReplicaId, std::move(at));
}

}  // namespace kiln::graph
