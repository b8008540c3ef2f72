#pragma once
/// @file
/// Gathers, scatters and dynamic slices (GoMLX's names). Start indices may have any integer
/// dtype. Out-of-range starts are clamped so the slice fits (Gather, GatherSlices, DynamicSlice,
/// DynamicUpdateSlice, as XLA does); a scatter update whose window would fall outside the
/// operand is dropped. Nothing ever reads or writes out of bounds.

#include <cstdint>
#include <vector>

#include "kiln/core/shape.h"
#include "kiln/graph/graph.h"

namespace kiln::graph {

/// Gathers slices of `params`: `indices` [..., k] index the first k axes of params, and the
/// result is [..., params.dims[k:]]. E.g. params [5, 3] and indices [2, 1] give [2, 3] (two rows).
Node Gather(Node params, Node indices);

/// XLA's general gather (low level): `indexVectorAxis` is the axis of `startIndices` holding the
/// index vectors (== its rank: scalar indices), `startIndexMap` maps each vector entry to an
/// operand axis, `sliceSizes` gives the slice size per operand axis, `collapsedSliceAxes`
/// (slice size 1) are dropped and `offsetAxes` are the result axes of the remaining slice axes.
Node GatherGeneral(Node operand, Node startIndices, int indexVectorAxis, const std::vector<int>& offsetAxes,
                   const std::vector<int>& collapsedSliceAxes, const std::vector<int>& startIndexMap,
                   const std::vector<int64_t>& sliceSizes);

/// Slices of `sizes` along `slicedAxes` of `input` at `startIndices` [..., len(slicedAxes)];
/// the result is [..., input dims with the sliced axes' dims replaced by `sizes`].
Node GatherSlices(Node input, const std::vector<int>& slicedAxes, Node startIndices,
                  const std::vector<int64_t>& sizes);

/// Sums `updates` into zeros of `shape` at `indices`: indices [..., k] address the first k axes
/// of `shape`; updates are [..., shape.dims[k:]]. Duplicate indices add up.
Node Scatter(Node indices, Node updates, const Shape& shape);
/// `operand` with `updates` added at `indices` (as Scatter; duplicates add up).
Node ScatterAdd(Node operand, Node indices, Node updates);
/// `operand` with the maximum of each element and the updates scattered onto it.
Node ScatterMax(Node operand, Node indices, Node updates);
/// `operand` with the minimum of each element and the updates scattered onto it.
Node ScatterMin(Node operand, Node indices, Node updates);
/// `operand` with its elements at `indices` replaced by `updates` (duplicates: the last wins).
Node ScatterUpdate(Node operand, Node indices, Node updates);

// GoMLX's forms with its sorting hints: `sorted`, `unique` and `indicesAreSorted` only promise
// something about the indices (kiln's kernels need no promise), so the results are the same.

/// Gather with GoMLX's `indicesAreSorted` hint.
inline Node Gather(Node params, Node indices, bool /*indicesAreSorted*/) { return Gather(params, indices); }
/// GatherSlices with GoMLX's `indicesAreSorted` hint.
inline Node GatherSlices(Node input, const std::vector<int>& slicedAxes, Node startIndices,
                         const std::vector<int64_t>& sizes, bool /*indicesAreSorted*/) {
  return GatherSlices(input, slicedAxes, startIndices, sizes);
}
/// Scatter with GoMLX's hints.
inline Node Scatter(Node indices, Node updates, const Shape& shape, bool /*sorted*/, bool /*unique*/) {
  return Scatter(indices, updates, shape);
}
/// ScatterAdd with GoMLX's hints.
inline Node ScatterAdd(Node operand, Node indices, Node updates, bool /*sorted*/, bool /*unique*/) {
  return ScatterAdd(operand, indices, updates);
}
/// GoMLX's newer name for ScatterAdd.
inline Node ScatterSum(Node operand, Node indices, Node updates, bool /*sorted*/ = false,
                       bool /*unique*/ = false) {
  return ScatterAdd(operand, indices, updates);
}
/// ScatterMax with GoMLX's hints.
inline Node ScatterMax(Node operand, Node indices, Node updates, bool /*sorted*/, bool /*unique*/) {
  return ScatterMax(operand, indices, updates);
}
/// ScatterMin with GoMLX's hints.
inline Node ScatterMin(Node operand, Node indices, Node updates, bool /*sorted*/, bool /*unique*/) {
  return ScatterMin(operand, indices, updates);
}
/// ScatterUpdate with GoMLX's hints.
inline Node ScatterUpdate(Node operand, Node indices, Node updates, bool /*sorted*/, bool /*unique*/) {
  return ScatterUpdate(operand, indices, updates);
}

/// The slice of `sizes` of `x` starting at `startIndices` (one integer scalar node per axis).
Node DynamicSlice(Node x, const std::vector<Node>& startIndices, const std::vector<int64_t>& sizes);
/// `x` with `update` written at `startIndices` (one integer scalar node per axis).
Node DynamicUpdateSlice(Node x, Node update, const std::vector<Node>& startIndices);

}  // namespace kiln::graph
