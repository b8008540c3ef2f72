// Graph frontend: Ragged2D, a ragged matrix as flat values and row ids; its reductions are
// scatters into the rows, and its softmax gathers the row statistics back to the values.

#include "kiln/graph/ragged.h"

#include "core/check.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

Ragged2D MakeRagged2D(int64_t dim0, Node flat, Node row_ids) {
  if (!flat.Ok() || !row_ids.Ok()) kiln::detail::Throw("MakeRagged2D: invalid node");
  if (dim0 < 0) kiln::detail::Throw("MakeRagged2D: dim0 must be >= 0, got {}", dim0);
  const bool ids_ok = row_ids.rank() == 1 || (row_ids.rank() == 2 && row_ids.shape().Dim(1) == 1);
  if (flat.rank() != 1 || !ids_ok || row_ids.shape().Dim(0) != flat.shape().Dim(0))
    kiln::detail::Throw("MakeRagged2D: needs flat [n] and row ids [n] or [n, 1], got {} and {}", flat.shape(),
                        row_ids.shape());
  if (!IsInt(row_ids.dtype()) || IsPacked(row_ids.dtype()))
    kiln::detail::Throw("MakeRagged2D: row ids must have an integer dtype, got {}", row_ids.shape());
  if (row_ids.rank() == 1) row_ids = InsertAxes(row_ids, {-1});
  return Ragged2D{dim0, flat, row_ids};
}

Node Ragged2D::ReduceSumCols() const {
  return ScatterAdd(Zeros(graph(), Shape(dtype(), {Dim0})), RowIDs, Flat);
}

Node Ragged2D::ReduceMaxCols() const {
  return ScatterMax(BroadcastToDims(Infinity(graph(), dtype(), -1), {Dim0}), RowIDs, Flat);
}

Node Ragged2D::ReduceMinCols() const {
  return ScatterMin(BroadcastToDims(Infinity(graph(), dtype(), 1), {Dim0}), RowIDs, Flat);
}

Ragged2D Ragged2D::Softmax() const {
  if (!IsFloat(dtype())) kiln::detail::Throw("Ragged2D::Softmax: needs a float dtype, got {}", Flat.shape());
  Node max = Gather(StopGradient(ReduceMaxCols()), RowIDs);
  Node numerators = Exp(Sub(Flat, max));
  Node denominators = Gather(Ragged2D{Dim0, numerators, RowIDs}.ReduceSumCols(), RowIDs);
  return Ragged2D{Dim0, Div(numerators, denominators), RowIDs};
}

}  // namespace kiln::graph
