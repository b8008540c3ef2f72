#pragma once
/// @file
/// Functions built from the primitives, under GoMLX's names and with its semantics (GoMLX keeps
/// them in its graph package's ops_util): scalars and fills, sign indicators, norms and
/// similarities, statistics, triangular and diagonal masks, shifts along an axis, and the total
/// order comparisons. docs/graphs.md lists every GoMLX graph function with kiln's name.
///
/// Each is a composition: its gradient follows from the primitives' (indicators and comparisons
/// have none), and it runs on every backend.

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "kiln/graph/ops.h"

namespace kiln::graph {

// ---- Scalars and fills ------------------------------------------------------------------------

/// A scalar 0 of `dtype` (false for Bool).
Node ScalarZero(Graph& g, DType dtype);
/// A scalar 1 of `dtype` (true for Bool).
Node ScalarOne(Graph& g, DType dtype);
/// `shape` filled with `value` (converted to shape's dtype exactly, as Scalar).
Node FillScalar(Graph& g, const Shape& shape, double value);
/// +infinity (sign 1) or -infinity (sign -1) for float dtypes; the largest or smallest value for
/// integers. Another sign is a kiln::Error.
Node Infinity(Graph& g, DType dtype, int sign);
/// Values 0, 1, 2... over every element of `shape` in row-major order ([2, 3]: 0 1 2 / 3 4 5).
Node IotaFull(Graph& g, const Shape& shape);
/// The multi-index of each element of `shape`, in row-major order: Int64 [size, rank].
/// [3, 2] gives {{0,0}, {0,1}, {1,0}, {1,1}, {2,0}, {2,1}}. A scalar shape is a kiln::Error.
Node IndicesForShape(Graph& g, const Shape& shape);

// ---- One-liners ---------------------------------------------------------------------------------

Node OnePlus(Node x);   ///< 1 + x.
Node OneMinus(Node x);  ///< 1 - x.
Node MinusOne(Node x);  ///< x - 1.
/// GoMLX's name for Reciprocal: 1 / x.
inline Node Inverse(Node x) { return Reciprocal(x); }
/// sign(x) * log(1 + |x|): a log scale for both signs, continuous at 0.
Node MirroredLog1p(Node x);
/// log(exp(x) + exp(y)) computed stably; infinities and NaN as the sum of exponentials gives
/// them (-inf and -inf: -inf). Broadcasts as the binary ops. Float dtypes.
Node LogAddExp(Node x, Node y);
/// log(1 + exp(x)), computed stably (LogAddExp(x, 0)). Float dtypes.
Node Softplus(Node x);
/// Clamp(min, x, max) with GoMLX's argument order (nodes; Clip with numbers is ClipScalar).
inline Node Clip(Node x, Node min, Node max) { return Clamp(min, x, max); }
/// Min(Max(x, min), max) with the bounds as C++ numbers (GoMLX's ClipScalar).
template <Number T>
Node ClipScalar(Node x, T min, T max) {
  return MinScalar(MaxScalar(x, min), max);
}

// ---- Signs and indicators -------------------------------------------------------------------------

/// 1 where x >= 0 (including -0) and -1 where x < 0; NaN stays NaN. Numeric (unsigned: all 1).
Node SignPlusOrMinus(Node x);
/// 1 where x > 0, else 0, in x's dtype (NaN stays NaN). Numeric.
Node PositiveIndicator(Node x);
/// 1 where x >= 0, else 0, in x's dtype (NaN stays NaN). Numeric.
Node NonNegativeIndicator(Node x);
/// 1 where x < 0, else 0, in x's dtype (NaN stays NaN). Numeric.
Node NegativeIndicator(Node x);
/// 1 where x <= 0, else 0, in x's dtype (NaN stays NaN). Numeric.
Node NonPositiveIndicator(Node x);
Node IsPositive(Node x);     ///< Bool: x > 0.
Node IsNegative(Node x);     ///< Bool: x < 0.
Node IsNonNegative(Node x);  ///< Bool: x >= 0.
Node IsNonPositive(Node x);  ///< Bool: x <= 0.

// ---- Norms and similarity -------------------------------------------------------------------------

/// Sum of |x| over `axes`, which are kept with size 1; with no axes, over every element to a
/// scalar.
Node L1Norm(Node x, const std::vector<int>& axes = {});
/// Sum of x² over `axes` (kept with size 1); with no axes, a scalar over every element.
Node L2NormSquare(Node x, const std::vector<int>& axes = {});
/// sqrt(L2NormSquare(x, axes)). Float dtypes.
Node L2Norm(Node x, const std::vector<int>& axes = {});
/// x divided by its L2 norm over `axis` and `more_axes`; where the norm is 0, x is left as is
/// (divided by 1). Float dtypes.
Node L2Normalize(Node x, int axis, const std::vector<int>& more_axes = {});
/// x / (L2Norm(x, axes) + epsilon).
Node L2NormalizeWithEpsilon(Node x, double epsilon, int axis, const std::vector<int>& more_axes = {});
/// Cosine similarity of lhs and rhs (same shape) along `axis`, which is kept with size 1; 0
/// where either vector is all zeros. Float dtypes.
Node CosineSimilarity(Node lhs, Node rhs, int axis);
/// Cosine similarity of every lhs vector with every rhs vector: vectors lie along
/// `contracting_axis`, and `cross_axis` enumerates them in each operand; the other axes are batch
/// axes. Result: batch axes, then lhs's cross axis, then rhs's ([n, d] and [m, d] give [n, m]).
/// 0 where either vector is all zeros. Same rank; float dtypes.
Node CrossCosineSimilarity(Node lhs, Node rhs, int contracting_axis, int cross_axis);

// ---- Statistics -----------------------------------------------------------------------------------

/// GoMLX's other name for ReduceVariance.
inline Node Variance(Node x, const std::vector<int>& axes = {}) { return ReduceVariance(x, axes); }
/// The population skewness over `axes` (all when empty): mean(((x - mean) / stddev)³). Float.
Node ReduceSkewness(Node x, const std::vector<int>& axes = {});
/// GoMLX's other name for ReduceSkewness.
inline Node Skewness(Node x, const std::vector<int>& axes = {}) { return ReduceSkewness(x, axes); }
/// Applies a masked reduction over `axes` and keeps them as axes of size 1.
Node MaskedReduceAndKeep(Node x, Node mask,
                         const std::function<Node(Node, Node, const std::vector<int>&)>& reduce,
                         const std::vector<int>& axes = {});
/// LogSoftmax over the positions where `mask` is true; masked-out positions get -inf.
Node MaskedLogSoftmax(Node logits, Node mask, const std::vector<int>& axes = {-1});

// ---- Masks and matrices -----------------------------------------------------------------------------

/// Bool [dim, dim]: true on and below the diagonal (column <= row).
Node LowerTriangular(Graph& g, int64_t dim);
/// Bool [dim, dim]: true on and above the diagonal (column >= row).
Node UpperTriangular(Graph& g, int64_t dim);
/// Bool [dim, dim]: true on the diagonal.
Node Diagonal(Graph& g, int64_t dim);
/// [dim, dim] of scalar's dtype: `scalar` on the diagonal, 0 elsewhere.
Node DiagonalWithValue(Node scalar, int64_t dim);
/// Bool [rows, columns]: true where column <= row + k (k > 0 moves the edge up-right).
Node ShapedLowerTriangular(Graph& g, int64_t rows, int64_t columns, int64_t k);
/// x with the elements above diagonal k of its last two axes zeroed (kept: column <= row + k).
Node TakeLowerTriangular(Node x, int64_t k);
/// x with the elements below diagonal k of its last two axes zeroed (kept: column >= row + k).
Node TakeUpperTriangular(Node x, int64_t k);

// ---- Shifting along an axis ----------------------------------------------------------------------

/// Which way Shift moves the values: ShiftDirLeft moves them to lower indices (the first ones
/// fall off, the fill enters at the end); ShiftDirRight to higher indices.
enum ShiftDirection : bool { ShiftDirLeft = false, ShiftDirRight = true };
/// x shifted by `n` positions along `axis` (negative from the end), the emptied positions filled
/// with `fill` (converted to x's dtype exactly). n larger than the axis is a kiln::Error.
Node ShiftWithScalar(Node x, int axis, ShiftDirection dir, int64_t n, double fill);
/// As ShiftWithScalar, filled with `value` (x's dtype) broadcast to the emptied block.
Node ShiftWithValue(Node x, int axis, ShiftDirection dir, int64_t n, Node value);
/// As ShiftWithScalar, filled by repeating the edge value that moves away from the fill: the last
/// element when shifting left, the first when shifting right.
Node Shift(Node x, int axis, ShiftDirection dir, int64_t n);
/// Shifts the last axis left by n (values move to lower indices), filling the end with `fill`.
Node ShiftLeft(Node x, int64_t n, double fill);
/// Shifts the last axis right by n (values move to higher indices), filling the start with `fill`.
Node ShiftRight(Node x, int64_t n, double fill);
/// x with n elements of value `fill` prepended along `axis` (the axis grows by n).
Node GrowLeft(Node x, int axis, int64_t n, double fill);
/// x with n elements of value `fill` appended along `axis`.
Node GrowRight(Node x, int axis, int64_t n, double fill);
/// x[i+1] - x[i] along `axis` (one shorter); with `preserve_shape`, x[0] is kept in front so the
/// shape stays (the inverse of CumSum).
Node ConsecutiveDifference(Node x, int axis, bool preserve_shape);

// ---- Slicing and reshaping helpers ----------------------------------------------------------------

/// [0, to) of an axis (to < 0 counts from the end).
inline AxisRangeSpec AxisRangeFromStart(int64_t to) { return AxisRange(0, to); }
/// [from, end) of an axis (from < 0 counts from the end).
inline AxisRangeSpec AxisRangeToEnd(int64_t from) { return AxisRange(from); }
/// Slices one axis (negative from the end); the others are taken whole.
Node SliceAxis(Node x, int axis, const AxisRangeSpec& range);
/// x with new axes at `expanded_axes` (positions in the result) broadcast to `new_dims`; x's own
/// axes must match new_dims or be 1.
Node ExpandAndBroadcast(Node x, const std::vector<int64_t>& new_dims, const std::vector<int>& expanded_axes);
/// Negative indices into `data`'s axis counted from the end (i + dim); others unchanged.
/// Unsigned indices are returned as they are.
Node NormalizeIndices(Node data, Node indices, int axis);

// ---- Total order comparisons ---------------------------------------------------------------------
// Floats compare by the IEEE total order: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN, so NaN
// equals itself and -0 is less than +0. Other dtypes compare as the plain comparisons.

Node EqualTotalOrder(Node a, Node b);           ///< a == b under the total order (Bool).
Node NotEqualTotalOrder(Node a, Node b);        ///< a != b under the total order (Bool).
Node LessThanTotalOrder(Node a, Node b);        ///< a < b under the total order (Bool).
Node LessOrEqualTotalOrder(Node a, Node b);     ///< a <= b under the total order (Bool).
Node GreaterThanTotalOrder(Node a, Node b);     ///< a > b under the total order (Bool).
Node GreaterOrEqualTotalOrder(Node a, Node b);  ///< a >= b under the total order (Bool).

// ---- Contractions by axis pairs ------------------------------------------------------------------

/// Dot(lhs, rhs).General(...) with GoMLX's argument order.
Node DotGeneral(Node lhs, const std::vector<int>& lhs_contracting, const std::vector<int>& lhs_batch,
                Node rhs, const std::vector<int>& rhs_contracting, const std::vector<int>& rhs_batch);
/// A contraction given as (lhs axis, rhs axis) pairs: `contracting` pairs are summed over,
/// `batch` pairs are batch axes. Result: batch axes, lhs's free axes, rhs's free axes.
Node EinsumAxes(Node lhs, Node rhs, const std::vector<std::array<int, 2>>& contracting,
                const std::vector<std::array<int, 2>>& batch);

}  // namespace kiln::graph
