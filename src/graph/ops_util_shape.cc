// Graph frontend: GoMLX's shape compositions (ops_util.h): iota and index tables, triangular and
// diagonal masks, shifting and growing along an axis, consecutive differences, SliceAxis,
// ExpandAndBroadcast and NormalizeIndices.

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "graph/ops_internal.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using ops_internal::CheckNodes;
using ops_internal::NormalizeAxis;

namespace {

/// The static size of x's `axis`; a dynamic axis is a kiln::Error naming `op`.
int64_t AxisSize(const char* op, Node x, int axis) {
  const int64_t d = x.shape().Dim(axis);
  if (d == Shape::kDynamic) kiln::detail::Throw("{}: axis {} of {} must be static", op, axis, x.shape());
  return d;
}

/// Ranges taking every axis of a rank-`rank` value whole except `axis`, which takes `range`.
std::vector<AxisRangeSpec> OnAxis(int rank, int axis, const AxisRangeSpec& range) {
  std::vector<AxisRangeSpec> ranges(static_cast<size_t>(rank), AxisRange());
  ranges[static_cast<size_t>(axis)] = range;
  return ranges;
}

/// `value` (a scalar, or of x's rank with size-1 axes) broadcast to x's dimensions with `axis` of
/// size n; dynamic axes of x stay dynamic (their size taken from x when the program runs).
Node FillBlock(Node x, int axis, int64_t n, Node value) {
  std::vector<DimensionSpec> specs = DimensionSpecsFor(x);
  specs[static_cast<size_t>(axis)] = graph::StaticDim(n);
  std::vector<int> axes;
  if (value.rank() != 0) {
    for (int a = 0; a < value.rank(); ++a) axes.push_back(a);
  }
  return DynamicBroadcastInDim(value, axes, specs);
}

/// Int64 rows and columns of a [rows, columns] grid.
std::pair<Node, Node> Grid(Graph& g, int64_t rows, int64_t columns) {
  const Shape s(DType::Int64, {rows, columns});
  return {Iota(g, s, 0), Iota(g, s, 1)};
}

void CheckDim(const char* op, int64_t dim) {
  if (dim < 0) kiln::detail::Throw("{}: the dimension must be >= 0, got {}", op, dim);
}

}  // namespace

// ---- Iota and index tables -------------------------------------------------------------------

Node IotaFull(Graph& g, const Shape& shape) {
  if (!shape.Ok()) kiln::detail::Throw("IotaFull: invalid shape");
  if (shape.IsDynamic()) kiln::detail::Throw("IotaFull: the shape {} must be static", shape);
  return ReshapeWithShape(Iota(g, Shape(shape.dtype(), {shape.Size()}), 0), shape);
}

Node IndicesForShape(Graph& g, const Shape& shape) {
  if (!shape.Ok() || shape.IsScalar())
    kiln::detail::Throw("IndicesForShape: needs a shape with axes, got {}", shape);
  if (shape.IsDynamic()) kiln::detail::Throw("IndicesForShape: the shape {} must be static", shape);
  const int rank = shape.Rank();
  const int64_t size = shape.Size();
  // Row r of the result is the flat index r divided by each axis' stride, modulo its size.
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1), dims = shape.Dimensions();
  for (int a = rank - 2; a >= 0; --a)
    strides[static_cast<size_t>(a)] = strides[static_cast<size_t>(a) + 1] * dims[static_cast<size_t>(a) + 1];
  Node flat = Iota(g, Shape(DType::Int64, {size, rank}), 0);
  Node div = Const(g, Tensor::FromFlat(Shape(DType::Int64, {1, rank}), strides));
  Node mod = Const(g, Tensor::FromFlat(Shape(DType::Int64, {1, rank}), dims));
  return Rem(Div(flat, div), mod);
}

// ---- Masks and matrices -----------------------------------------------------------------------------

Node LowerTriangular(Graph& g, int64_t dim) {
  CheckDim("LowerTriangular", dim);
  auto [rows, cols] = Grid(g, dim, dim);
  return LessOrEqual(cols, rows);
}

Node UpperTriangular(Graph& g, int64_t dim) {
  CheckDim("UpperTriangular", dim);
  auto [rows, cols] = Grid(g, dim, dim);
  return GreaterOrEqual(cols, rows);
}

Node Diagonal(Graph& g, int64_t dim) {
  CheckDim("Diagonal", dim);
  auto [rows, cols] = Grid(g, dim, dim);
  return Equal(cols, rows);
}

Node DiagonalWithValue(Node scalar, int64_t dim) {
  CheckNodes("DiagonalWithValue", {scalar});
  if (scalar.rank() != 0) kiln::detail::Throw("DiagonalWithValue: needs a scalar, got {}", scalar.shape());
  Node matrix = BroadcastToDims(scalar, {dim, dim});
  return Where(Diagonal(scalar.graph(), dim), matrix, ZerosLike(matrix));
}

Node ShapedLowerTriangular(Graph& g, int64_t rows, int64_t columns, int64_t k) {
  CheckDim("ShapedLowerTriangular", rows);
  CheckDim("ShapedLowerTriangular", columns);
  auto [r, c] = Grid(g, rows, columns);
  return LessOrEqual(c, AddScalar(r, k));
}

namespace {
Node TakeTriangle(const char* op, Node x, int64_t k, bool lower) {
  CheckNodes(op, {x});
  if (x.rank() < 2) kiln::detail::Throw("{}: x {} needs rank 2 or more", op, x.shape());
  const int64_t rows = AxisSize(op, x, x.rank() - 2), cols = AxisSize(op, x, x.rank() - 1);
  // Lower keeps column <= row + k; upper keeps column >= row + k, the complement of column <= row + k - 1.
  Node mask = ShapedLowerTriangular(x.graph(), rows, cols, lower ? k : k - 1);
  if (!lower) mask = LogicalNot(mask);
  mask = ExpandLeftToRank(mask, x.rank());
  return Where(BroadcastToShape(mask, x.shape()), x, ZerosLike(x));
}
}  // namespace

Node TakeLowerTriangular(Node x, int64_t k) { return TakeTriangle("TakeLowerTriangular", x, k, true); }
Node TakeUpperTriangular(Node x, int64_t k) { return TakeTriangle("TakeUpperTriangular", x, k, false); }

// ---- Shifting along an axis ----------------------------------------------------------------------

namespace {

/// The shift: the kept part of x next to `value` broadcast over the emptied block. Only the
/// shifted axis must be static; others may be dynamic.
Node ShiftImpl(const char* op, Node x, int axis, ShiftDirection dir, int64_t n, Node value) {
  CheckNodes(op, {x, value});
  if (x.rank() == 0) kiln::detail::Throw("{}: cannot shift a scalar", op);
  if (value.dtype() != x.dtype())
    kiln::detail::Throw("{}: the fill value {} must have x's dtype ({})", op, value.shape(), x.shape());
  const int a = NormalizeAxis(op, axis, x.rank(), x.shape());
  const int64_t dim = AxisSize(op, x, a);
  if (n < 0 || n > dim)
    kiln::detail::Throw("{}: cannot shift by {} positions along axis {} of {} (0 to {})", op, n, a, x.shape(),
                        dim);
  if (n == 0) return x;
  Node fill = FillBlock(x, a, n, value);
  if (dir == ShiftDirLeft) return Concatenate({SliceAxis(x, a, AxisRange(n)), fill}, a);
  return Concatenate({fill, SliceAxis(x, a, AxisRange(0, dim - n))}, a);
}

}  // namespace

Node ShiftWithScalar(Node x, int axis, ShiftDirection dir, int64_t n, double fill) {
  CheckNodes("ShiftWithScalar", {x});
  return ShiftImpl("ShiftWithScalar", x, axis, dir, n, Scalar(x.graph(), x.dtype(), fill));
}

Node ShiftWithValue(Node x, int axis, ShiftDirection dir, int64_t n, Node value) {
  return ShiftImpl("ShiftWithValue", x, axis, dir, n, value);
}

Node Shift(Node x, int axis, ShiftDirection dir, int64_t n) {
  CheckNodes("Shift", {x});
  if (x.rank() == 0) kiln::detail::Throw("Shift: cannot shift a scalar");
  const int a = NormalizeAxis("Shift", axis, x.rank(), x.shape());
  const int64_t dim = AxisSize("Shift", x, a);
  if (dim == 0) return ShiftWithScalar(x, a, dir, n, 0);
  // The edge that moves away from the fill is repeated: the last element shifting left.
  Node edge = SliceAxis(x, a, dir == ShiftDirLeft ? AxisRange(dim - 1) : AxisRange(0, 1));
  return ShiftImpl("Shift", x, a, dir, n, edge);
}

Node ShiftLeft(Node x, int64_t n, double fill) { return ShiftWithScalar(x, -1, ShiftDirLeft, n, fill); }
Node ShiftRight(Node x, int64_t n, double fill) { return ShiftWithScalar(x, -1, ShiftDirRight, n, fill); }

namespace {
Node Grow(const char* op, Node x, int axis, int64_t n, double fill, bool left) {
  CheckNodes(op, {x});
  if (x.rank() == 0) kiln::detail::Throw("{}: cannot grow a scalar", op);
  const int a = NormalizeAxis(op, axis, x.rank(), x.shape());
  if (n < 0) kiln::detail::Throw("{}: n must be >= 0, got {}", op, n);
  Node block = FillBlock(x, a, n, Scalar(x.graph(), x.dtype(), fill));
  return left ? Concatenate({block, x}, a) : Concatenate({x, block}, a);
}
}  // namespace

Node GrowLeft(Node x, int axis, int64_t n, double fill) { return Grow("GrowLeft", x, axis, n, fill, true); }
Node GrowRight(Node x, int axis, int64_t n, double fill) {
  return Grow("GrowRight", x, axis, n, fill, false);
}

Node ConsecutiveDifference(Node x, int axis, bool preserve_shape) {
  const char* op = "ConsecutiveDifference";
  CheckNodes(op, {x});
  if (x.rank() == 0) kiln::detail::Throw("{}: needs an axis, got a scalar", op);
  const int a = NormalizeAxis(op, axis, x.rank(), x.shape());
  if (AxisSize(op, x, a) == 0) kiln::detail::Throw("{}: axis {} of {} is empty", op, a, x.shape());
  Node diff = Sub(SliceAxis(x, a, AxisRangeToEnd(1)), SliceAxis(x, a, AxisRangeFromStart(-1)));
  if (preserve_shape) diff = Concatenate({SliceAxis(x, a, AxisElem(0)), diff}, a);
  return diff;
}

// ---- Slicing and reshaping helpers ----------------------------------------------------------------

Node SliceAxis(Node x, int axis, const AxisRangeSpec& range) {
  CheckNodes("SliceAxis", {x});
  const int a = NormalizeAxis("SliceAxis", axis, x.rank(), x.shape());
  return Slice(x, OnAxis(x.rank(), a, range));
}

Node ExpandAndBroadcast(Node x, const std::vector<int64_t>& new_dims, const std::vector<int>& expanded_axes) {
  const char* op = "ExpandAndBroadcast";
  CheckNodes(op, {x});
  const int rank = static_cast<int>(new_dims.size());
  if (x.rank() + static_cast<int>(expanded_axes.size()) != rank)
    kiln::detail::Throw("{}: {} has rank {} and {} expanded axes, which does not make the {} axes of {}", op,
                        x.shape(), x.rank(), expanded_axes.size(), rank, ops_internal::DimsString(new_dims));
  std::set<int> expanded;
  for (int e : expanded_axes) {
    const int a = e < 0 ? e + rank : e;
    if (a < 0 || a >= rank || !expanded.insert(a).second)
      kiln::detail::Throw("{}: expanded axis {} is out of range for rank {} or repeated", op, e, rank);
  }
  std::vector<int64_t> kept_dims;
  int in = 0;
  for (int a = 0; a < rank; ++a) {
    if (expanded.count(a)) {
      kept_dims.push_back(1);
      continue;
    }
    const int64_t d = x.shape().Dim(in++);
    if (d != 1 && d != new_dims[static_cast<size_t>(a)])
      kiln::detail::Throw("{}: axis {} of {} ({}) must be 1 or the new dimension {}", op, in - 1, x.shape(),
                          d, new_dims[static_cast<size_t>(a)]);
    kept_dims.push_back(d);
  }
  return BroadcastToDims(Reshape(x, kept_dims), new_dims);
}

Node NormalizeIndices(Node data, Node indices, int axis) {
  const char* op = "NormalizeIndices";
  CheckNodes(op, {data, indices});
  if (!IsInt(indices.dtype()) || IsPacked(indices.dtype()))
    kiln::detail::Throw("{}: indices {} must have an integer dtype", op, indices.shape());
  if (IsUnsigned(indices.dtype())) return indices;
  const int a = NormalizeAxis(op, axis, data.rank(), data.shape());
  Node dim = Scalar(data.graph(), indices.dtype(), AxisSize(op, data, a));
  return Where(IsNegative(indices), Add(indices, dim), indices);
}

}  // namespace kiln::graph
