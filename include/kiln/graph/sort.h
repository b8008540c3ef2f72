#pragma once
/// @file
/// Sorting, top-k and cumulative sums (GoMLX's names).

#include <cstdint>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln::graph {

/// Sorted values and the positions (Int32, along the sorted axis) they came from.
struct ValuesAndIndices {
  Node values;   ///< The values, in sorted order.
  Node indices;  ///< Int32: where along the axis each value was in the input.
};

/// The stable permutation (Int32) sorting `x` along `axis`: ascending with NaN last, or (with
/// `ascending` false) descending with NaN first; equal values (-0 and +0 too) keep their order.
Node ArgSort(Node x, int axis, bool ascending = true);
/// `x` sorted along `axis` (as ArgSort; GoMLX's Sort(x, axis, ascending)).
Node Sort(Node x, int axis, bool ascending = true);
/// The sorted values and the ArgSort permutation.
ValuesAndIndices SortWithIndices(Node x, int axis, bool ascending = true);
/// Sorts every operand along `axis` by the values of the first (all have its dimensions).
std::vector<Node> SortMany(const std::vector<Node>& operands, int axis, bool ascending = true);
/// Values of `x` at `indices` along `axis`: indices have x's dimensions except on `axis`.
Node TakeAlongAxis(Node x, Node indices, int axis);
/// The k largest values along `axis`, largest first (ties: the lower index first), and their indices.
ValuesAndIndices TopK(Node x, int64_t k, int axis = -1);
/// Bool, x's shape: true at the positions of the k largest values along `axis` (ties: the lower
/// index first, as TopK); k beyond the axis' size marks it all. Works on dynamic axes.
Node TopKMask(Node x, int64_t k, int axis = -1);
/// The k smallest values along `axis`, smallest first (ties: the lower index first), and their indices.
ValuesAndIndices BottomK(Node x, int64_t k, int axis = -1);

/// Inclusive running sum along `axis` (from the end when `reverse`); integers wrap.
Node CumSum(Node x, int axis, bool reverse = false);

}  // namespace kiln::graph
