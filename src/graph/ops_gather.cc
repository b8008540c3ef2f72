// Graph frontend: gathers, scatters and dynamic slices (include/kiln/graph/gather.h).

#include <cstdint>
#include <utility>
#include <vector>

#include "compute/shape_dims.h"
#include "graph/ops_internal.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using compute::OpType;
using ops_internal::CheckNodes;
using ops_internal::DimsString;
using ops_internal::Emit;

namespace {

void CheckIndices(const char* op, Node indices) {
  if (!IsInt(indices.dtype()) || IsPacked(indices.dtype()))
    kiln::detail::Throw("{}: indices must have an integer dtype, got {}", op, indices.shape());
}

/// Leading-axes scatter: indices [..., k] address the first k axes of `operand`; updates are
/// [..., operand.dims[k:]].
Node ScatterLeading(const char* op, Node operand, Node indices, Node updates, compute::ReduceKind kind) {
  CheckNodes(op, {operand, indices, updates});
  CheckIndices(op, indices);
  if (indices.rank() < 1)
    kiln::detail::Throw("{}: indices must have at least one axis (the index vectors), got {}", op,
                        indices.shape());
  const int64_t k = indices.shape().Dimensions().back();
  const int rank = operand.rank();
  if (k > rank)
    kiln::detail::Throw("{}: index vectors of length {} ({}) for {} with only {} axes", op, k,
                        indices.shape(), operand.shape(), rank);
  if (updates.dtype() != operand.dtype())
    kiln::detail::Throw("{}: updates {} must have the dtype of {}", op, updates.shape(), operand.shape());
  std::vector<int64_t> want(indices.shape().Dimensions().begin(), indices.shape().Dimensions().end() - 1);
  const int64_t batch_rank = static_cast<int64_t>(want.size());
  for (int64_t a = k; a < rank; ++a) want.push_back(operand.shape().Dimensions()[static_cast<size_t>(a)]);
  if (updates.shape().Dimensions() != want)
    kiln::detail::Throw("{}: updates {} must have dimensions {} for indices {} and operand {}", op,
                        updates.shape(), DimsString(want), indices.shape(), operand.shape());
  compute::OpAttributes attrs;
  attrs.reduce_kind = kind;
  compute::ScatterDims& s = attrs.scatter;
  s.index_vector_dim = indices.rank() - 1;
  for (int64_t a = 0; a < k; ++a) {
    s.inserted_window_dims.push_back(a);
    s.scatter_dims_to_operand_dims.push_back(a);
  }
  for (int64_t a = batch_rank; a < static_cast<int64_t>(want.size()); ++a) s.update_window_dims.push_back(a);
  return Emit(op, OpType::Scatter, {operand, indices, updates}, std::move(attrs));
}

}  // namespace

Node GatherGeneral(Node operand, Node startIndices, int indexVectorAxis, const std::vector<int>& offsetAxes,
                   const std::vector<int>& collapsedSliceAxes, const std::vector<int>& startIndexMap,
                   const std::vector<int64_t>& sliceSizes) {
  CheckNodes("GatherGeneral", {operand, startIndices});
  compute::OpAttributes attrs;
  attrs.gather.index_vector_dim = indexVectorAxis;
  attrs.gather.offset_dims = ops_internal::ToInt64(offsetAxes);
  attrs.gather.collapsed_slice_dims = ops_internal::ToInt64(collapsedSliceAxes);
  attrs.gather.start_index_map = ops_internal::ToInt64(startIndexMap);
  attrs.gather.slice_sizes = sliceSizes;
  return Emit("GatherGeneral", OpType::Gather, {operand, startIndices}, std::move(attrs));
}

Node Gather(Node params, Node indices) {
  CheckNodes("Gather", {params, indices});
  CheckIndices("Gather", indices);
  if (indices.rank() < 1)
    kiln::detail::Throw("Gather: indices must have at least one axis (the index vectors), got {}",
                        indices.shape());
  const int64_t k = indices.shape().Dimensions().back();
  const int rank = params.rank();
  if (k > rank)
    kiln::detail::Throw("Gather: index vectors of length {} ({}) for {} with only {} axes", k,
                        indices.shape(), params.shape(), rank);
  const int batch_rank = indices.rank() - 1;
  std::vector<int> offset, collapsed, map;
  std::vector<int64_t> sizes;
  for (int a = 0; a < rank; ++a) {
    if (a < k) {
      collapsed.push_back(a);
      map.push_back(a);
      sizes.push_back(1);
    } else {
      offset.push_back(batch_rank + a - static_cast<int>(k));
      sizes.push_back(params.shape().Dimensions()[static_cast<size_t>(a)]);
    }
  }
  if (compute::KnownEmpty(params.shape()) && k > 0) {
    // Nothing to gather from: the shape rules need slice size 1 <= dim on collapsed axes.
    for (int a = 0; a < k; ++a) {
      if (params.shape().Dimensions()[static_cast<size_t>(a)] == 0)
        kiln::detail::Throw("Gather: cannot index axis {} of {}: it is empty", a, params.shape());
    }
  }
  return GatherGeneral(params, indices, batch_rank, offset, collapsed, map, sizes);
}

Node GatherSlices(Node input, const std::vector<int>& slicedAxes, Node startIndices,
                  const std::vector<int64_t>& sizes) {
  const char* op = "GatherSlices";
  CheckNodes(op, {input, startIndices});
  CheckIndices(op, startIndices);
  if (slicedAxes.size() != sizes.size())
    kiln::detail::Throw("{}: {} sliced axes but {} sizes", op, slicedAxes.size(), sizes.size());
  if (startIndices.rank() < 1 ||
      startIndices.shape().Dimensions().back() != static_cast<int64_t>(slicedAxes.size()))
    kiln::detail::Throw("{}: startIndices {} must end with an axis of size {} (one start per sliced axis)",
                        op, startIndices.shape(), slicedAxes.size());
  const std::vector<int64_t> axes = ops_internal::NormalizeAxes(op, slicedAxes, input.shape(), false);
  std::vector<int64_t> slice = input.shape().Dimensions();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t dim = slice[static_cast<size_t>(axes[i])];
    if (sizes[i] < 0 || sizes[i] > dim)
      kiln::detail::Throw("{}: size {} for axis {} of {} is out of range [0, {}]", op, sizes[i], axes[i],
                          input.shape(), dim);
    slice[static_cast<size_t>(axes[i])] = sizes[i];
  }
  const int batch_rank = startIndices.rank() - 1;
  std::vector<int> offset, map;
  for (int a = 0; a < input.rank(); ++a) offset.push_back(batch_rank + a);
  for (int64_t a : axes) map.push_back(static_cast<int>(a));
  compute::OpAttributes attrs;
  attrs.gather.index_vector_dim = batch_rank;
  attrs.gather.offset_dims = ops_internal::ToInt64(offset);
  attrs.gather.start_index_map = ops_internal::ToInt64(map);
  attrs.gather.slice_sizes = slice;
  return Emit(op, OpType::Gather, {input, startIndices}, std::move(attrs));
}

Node Scatter(Node indices, Node updates, const Shape& shape) {
  CheckNodes("Scatter", {indices, updates});
  if (shape.dtype() != updates.dtype())
    kiln::detail::Throw("Scatter: shape {} must have the dtype of updates {}", shape, updates.shape());
  return ScatterLeading("Scatter", Zeros(updates.graph(), shape), indices, updates, compute::ReduceKind::Sum);
}

Node ScatterAdd(Node operand, Node indices, Node updates) {
  return ScatterLeading("ScatterAdd", operand, indices, updates, compute::ReduceKind::Sum);
}

Node ScatterMax(Node operand, Node indices, Node updates) {
  return ScatterLeading("ScatterMax", operand, indices, updates, compute::ReduceKind::Max);
}

Node ScatterMin(Node operand, Node indices, Node updates) {
  return ScatterLeading("ScatterMin", operand, indices, updates, compute::ReduceKind::Min);
}

Node ScatterUpdate(Node operand, Node indices, Node updates) {
  return ScatterLeading("ScatterUpdate", operand, indices, updates, compute::ReduceKind::Set);
}

Node DynamicSlice(Node x, const std::vector<Node>& startIndices, const std::vector<int64_t>& sizes) {
  std::vector<Node> operands = {x};
  operands.insert(operands.end(), startIndices.begin(), startIndices.end());
  CheckNodes("DynamicSlice", operands);
  if (static_cast<int>(startIndices.size()) != x.rank() || static_cast<int>(sizes.size()) != x.rank())
    kiln::detail::Throw("DynamicSlice: needs one start index and one size per axis of {}, got {} and {}",
                        x.shape(), startIndices.size(), sizes.size());
  compute::OpAttributes attrs;
  attrs.sizes = sizes;
  return Emit("DynamicSlice", OpType::DynamicSlice, operands, std::move(attrs));
}

Node DynamicUpdateSlice(Node x, Node update, const std::vector<Node>& startIndices) {
  std::vector<Node> operands = {x, update};
  operands.insert(operands.end(), startIndices.begin(), startIndices.end());
  CheckNodes("DynamicUpdateSlice", operands);
  if (static_cast<int>(startIndices.size()) != x.rank())
    kiln::detail::Throw("DynamicUpdateSlice: needs one start index per axis of {}, got {}", x.shape(),
                        startIndices.size());
  return Emit("DynamicUpdateSlice", OpType::DynamicUpdateSlice, operands);
}

}  // namespace kiln::graph
