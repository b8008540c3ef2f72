// Graph frontend: sorting, top-k and cumulative sums (include/kiln/graph/sort.h). Sort, TopK and
// the like are ArgSort followed by a gather along the axis (TakeAlongAxis).

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "compute/shape_dims.h"
#include "graph/ops_internal.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops.h"
#include "kiln/graph/sort.h"

namespace kiln::graph {

using compute::OpType;
using ops_internal::CheckNodes;
using ops_internal::Emit;
using ops_internal::NormalizeAxis;

namespace {

/// ArgSort with the error naming `op`.
Node ArgSortNamed(const char* op, Node x, int axis, bool descending) {
  CheckNodes(op, {x});
  compute::OpAttributes attrs;
  attrs.axis = NormalizeAxis(op, axis, x.rank(), x.shape());
  attrs.reverse = descending;
  return Emit(op, OpType::ArgSort, {x}, std::move(attrs));
}

Node TakeAlongAxisNamed(const char* op, Node x, Node indices, int axis) {
  CheckNodes(op, {x, indices});
  if (!IsInt(indices.dtype()) || IsPacked(indices.dtype()))
    kiln::detail::Throw("{}: indices must have an integer dtype, got {}", op, indices.shape());
  const int a = NormalizeAxis(op, axis, x.rank(), x.shape());
  if (indices.rank() != x.rank())
    kiln::detail::Throw("{}: indices {} must have the rank of {}", op, indices.shape(), x.shape());
  for (int i = 0; i < x.rank(); ++i) {
    if (i != a && indices.shape().Dim(i) != x.shape().Dim(i))
      kiln::detail::Throw("{}: indices {} and {} differ on axis {} (only axis {} may)", op, indices.shape(),
                          x.shape(), i, a);
  }
  // Nothing to take (e.g. sorting along an empty axis): an empty result, no Gather of nothing.
  if (compute::KnownEmpty(indices.shape())) return Zeros(x.graph(), indices.shape().WithDType(x.dtype()));
  bool wide = false;
  for (int64_t d : x.shape().Dimensions()) wide = wide || d > std::numeric_limits<int32_t>::max();
  const DType index_dtype = wide ? DType::Int64 : DType::Int32;
  const Shape index_shape = indices.shape().WithDType(index_dtype);
  std::vector<Node> parts;
  for (int i = 0; i < x.rank(); ++i) {
    Node part = i == a ? (indices.dtype() == index_dtype ? indices : ConvertDType(indices, index_dtype))
                       : Iota(x.graph(), index_shape, i);
    parts.push_back(ExpandAxes(part, {-1}));
  }
  return Gather(x, Concatenate(parts, -1));
}

/// TopK (descending) and BottomK.
ValuesAndIndices Extremes(const char* op, Node x, int64_t k, int axis, bool descending) {
  CheckNodes(op, {x});
  const int a = NormalizeAxis(op, axis, x.rank(), x.shape());
  const int64_t dim = x.shape().Dim(a);
  if (k < 0 || (dim != Shape::kDynamic && k > dim))
    kiln::detail::Throw("{}: k = {} is out of range [0, {}] for axis {} of {}", op, k, dim, a, x.shape());
  Node order = ArgSortNamed(op, x, a, descending);
  std::vector<AxisRangeSpec> ranges(static_cast<size_t>(a), AxisRange());
  ranges.push_back(AxisRange(0, k));
  Node indices = Slice(order, ranges);
  return {TakeAlongAxisNamed(op, x, indices, a), indices};
}

}  // namespace

Node ArgSort(Node x, int axis, bool ascending) { return ArgSortNamed("ArgSort", x, axis, !ascending); }

Node TakeAlongAxis(Node x, Node indices, int axis) {
  return TakeAlongAxisNamed("TakeAlongAxis", x, indices, axis);
}

Node Sort(Node x, int axis, bool ascending) {
  return TakeAlongAxisNamed("Sort", x, ArgSortNamed("Sort", x, axis, !ascending), axis);
}

ValuesAndIndices SortWithIndices(Node x, int axis, bool ascending) {
  Node indices = ArgSortNamed("SortWithIndices", x, axis, !ascending);
  return {TakeAlongAxisNamed("SortWithIndices", x, indices, axis), indices};
}

std::vector<Node> SortMany(const std::vector<Node>& operands, int axis, bool ascending) {
  if (operands.empty()) kiln::detail::Throw("SortMany: needs at least one operand");
  CheckNodes("SortMany", operands);
  for (const Node& n : operands) {
    if (n.shape().Dimensions() != operands[0].shape().Dimensions())
      kiln::detail::Throw("SortMany: operand {} must have the dimensions of the first, {}", n.shape(),
                          operands[0].shape());
  }
  Node order = ArgSortNamed("SortMany", operands[0], axis, !ascending);
  std::vector<Node> result;
  for (const Node& n : operands) result.push_back(TakeAlongAxisNamed("SortMany", n, order, axis));
  return result;
}

ValuesAndIndices TopK(Node x, int64_t k, int axis) { return Extremes("TopK", x, k, axis, true); }

ValuesAndIndices BottomK(Node x, int64_t k, int axis) { return Extremes("BottomK", x, k, axis, false); }

Node TopKMask(Node x, int64_t k, int axis) {
  const char* op = "TopKMask";
  CheckNodes(op, {x});
  const int a = NormalizeAxis(op, axis, x.rank(), x.shape());
  if (k < 0) kiln::detail::Throw("{}: k = {} is negative", op, k);
  // Each position's rank in the descending order (the inverse of the sorting permutation).
  Node order = ArgSortNamed(op, x, a, true);
  Node rank = ArgSortNamed(op, order, a, false);
  return Less(rank, ScalarLike(rank, k));
}

Node CumSum(Node x, int axis, bool reverse) {
  CheckNodes("CumSum", {x});
  compute::OpAttributes attrs;
  attrs.axis = NormalizeAxis("CumSum", axis, x.rank(), x.shape());
  attrs.reverse = reverse;
  return Emit("CumSum", OpType::CumSum, {x}, std::move(attrs));
}

}  // namespace kiln::graph
