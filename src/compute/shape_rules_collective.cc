// Shape rules of the collectives (AllReduce, AllGather, ReduceScatter, CollectiveBroadcast,
// ReplicaId): the
// replica count and the axis they work along are checked here, so a program a backend compiles
// can only exchange values the replicas agree on.

#include <limits>
#include <string>

#include "compute/shape_dims.h"
#include "compute/shape_rules.h"
#include "core/check.h"

namespace kiln::compute {

namespace {

/// The largest replica count a program may name (a sanity bound, not a limit of the runtimes).
constexpr int64_t kMaxReplicas = int64_t{1} << 20;

void CheckAxis(OpType op, const Shape& x, int64_t axis) {
  if (x.Rank() == 0) FailShape(op, fmt::format("the operand {} is a scalar; it needs an axis", x));
  if (axis < 0 || axis >= x.Rank()) FailShape(op, fmt::format("axis {} out of range for {}", axis, x));
}

}  // namespace

Shape CollectiveShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs) {
  if (attrs.replicas < 1 || attrs.replicas > kMaxReplicas)
    FailShape(op, fmt::format("replicas={} is not between 1 and {}", attrs.replicas, kMaxReplicas));
  if (op == OpType::ReplicaId) return Shape(DType::Int32);
  const Shape& x = operands.at(0);
  const bool reduces = op == OpType::AllReduce || op == OpType::ReduceScatter;
  if (reduces && attrs.reduce_kind != ReduceKind::Sum && attrs.reduce_kind != ReduceKind::Max &&
      attrs.reduce_kind != ReduceKind::Min)
    FailShape(op, "the reduction must be Sum, Max or Min");
  if (!InDTypeClass(x.dtype(), OpDTypeClass(op)))
    FailShape(op, fmt::format("the dtype {} is not one it takes", x.dtype()));
  // Dynamic axes are allowed (the replicas' concrete sizes are compared when they exchange), but
  // not the one AllGather and ReduceScatter work along.
  std::vector<Axis> dims = AxesOf(x);
  switch (op) {
    case OpType::AllReduce:
      return x;
    case OpType::AllGather: {
      CheckAxis(op, x, attrs.axis);
      Axis& a = dims[static_cast<size_t>(attrs.axis)];
      if (a.size == Shape::kDynamic)
        FailShape(op, fmt::format("axis {} of {} is dynamic; it must be static", attrs.axis, x));
      if (a.size > std::numeric_limits<int64_t>::max() / attrs.replicas)
        FailShape(op, fmt::format("gathering {} from {} replicas overflows", x, attrs.replicas));
      a = Axis{a.size * attrs.replicas, ""};
      return ShapeOf(x.dtype(), dims);
    }
    case OpType::ReduceScatter: {
      CheckAxis(op, x, attrs.axis);
      Axis& a = dims[static_cast<size_t>(attrs.axis)];
      if (a.size == Shape::kDynamic)
        FailShape(op, fmt::format("axis {} of {} is dynamic; it must be static", attrs.axis, x));
      if (a.size % attrs.replicas != 0)
        FailShape(op, fmt::format("axis {} of {} does not split into {} equal blocks", attrs.axis, x,
                                  attrs.replicas));
      a = Axis{a.size / attrs.replicas, ""};
      return ShapeOf(x.dtype(), dims);
    }
    case OpType::CollectiveBroadcast:
      if (attrs.index < 0 || attrs.index >= attrs.replicas)
        FailShape(op,
                  fmt::format("root replica {} is not one of the {} replicas", attrs.index, attrs.replicas));
      return x;
    case OpType::ReplicaId:
      break;
#define KILN_LISTED_Collective
#include "kiln/compute/op_cases.inc"
      break;
  }
  FailShape(op, "not a collective");
}

}  // namespace kiln::compute
