#pragma once
/// @file
/// Ragged2D (GoMLX's name): a [Dim0, ?] matrix whose rows have different lengths, kept as the
/// flat values of all rows and, for each value, the row it belongs to.
///
///   // {{1, 2, 3}, {4}, {}, {5}}
///   Ragged2D r = MakeRagged2D(4, flat /* [1, 2, 3, 4, 5] */, row_ids /* [0, 0, 0, 1, 3] */);
///   Node sums = r.ReduceSumCols();  // [6, 4, 0, 5]
///
/// The row ids must be sorted (values in row order). A common use keeps an extra last row for the
/// padding values of a fixed-size flat array.

#include <cstdint>

#include "kiln/graph/graph.h"

namespace kiln::graph {

/// A ragged matrix: Flat [n] values, RowIDs [n, 1] their rows (integers in [0, Dim0)).
struct Ragged2D {
  int64_t Dim0 = 0;  ///< The number of rows.
  Node Flat;         ///< The values, row after row.
  Node RowIDs;       ///< [n, 1]: the row of each value.

  /// The values' dtype.
  DType dtype() const { return Flat.dtype(); }
  /// The graph the values are in.
  Graph& graph() const { return Flat.graph(); }
  /// [Dim0]: each row's sum (0 for an empty row).
  Node ReduceSumCols() const;
  /// [Dim0]: each row's maximum (the dtype's lowest, -inf for floats, for an empty row).
  Node ReduceMaxCols() const;
  /// [Dim0]: each row's minimum (the dtype's highest, +inf for floats, for an empty row).
  Node ReduceMinCols() const;
  /// The softmax of each row over its values (the missing tail counts as -inf). Float dtypes.
  Ragged2D Softmax() const;
};

/// A Ragged2D of `dim0` rows from `flat` [n] values and their sorted `row_ids` ([n] or [n, 1],
/// an integer dtype). Mismatched sizes or a non-integer row id dtype are a kiln::Error.
Ragged2D MakeRagged2D(int64_t dim0, Node flat, Node row_ids);

}  // namespace kiln::graph
