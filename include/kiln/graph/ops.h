#pragma once
/// The graph ops: free functions with GoMLX's names. Each checks shapes and dtypes when called
/// and throws kiln::Error with the stack of the call if they do not fit.
///
/// Broadcasting (GoMLX's rule): a scalar broadcasts to any shape; operands of the same rank
/// broadcast axes of size 1; operands of different ranks are an error (no NumPy-style rank
/// promotion: use ExpandAxes or BroadcastPrefix). Operands must have the same dtype.

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/graph/graph.h"

namespace kiln::graph {

/// A C++ number that mixes with nodes (it takes the node's dtype).
template <typename T>
concept Number = std::is_arithmetic_v<T> && !std::is_same_v<T, char>;

/// A C++ number of any kind, carried to the graph without losing precision.
struct ScalarValue {
  enum class Kind { kBool, kInt, kUint, kFloat } kind = Kind::kFloat;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;

  template <Number T>
  static ScalarValue Of(T value) {
    ScalarValue s;
    if constexpr (std::is_same_v<T, bool>) {
      s.kind = Kind::kBool;
      s.i = value ? 1 : 0;
    } else if constexpr (std::is_floating_point_v<T>) {
      s.kind = Kind::kFloat;
      s.f = static_cast<double>(value);
    } else if constexpr (std::is_signed_v<T>) {
      s.kind = Kind::kInt;
      s.i = static_cast<int64_t>(value);
    } else {
      s.kind = Kind::kUint;
      s.u = static_cast<uint64_t>(value);
    }
    return s;
  }
};

// ---- Constants ------------------------------------------------------------------------------

/// A constant holding `value` (a Tensor, or C++ values as Tensor::FromValue takes).
Node Const(Graph& g, const Tensor& value);
template <TensorValue V>
Node Const(Graph& g, const V& value) {
  return Const(g, Tensor::FromValue(value));
}
/// A scalar constant of `dtype`; the value must be exactly representable (else kiln::Error):
/// integer dtypes reject fractions, NaN, infinities, negatives (unsigned) and values out of range;
/// Bool takes only true/false (0/1); float dtypes round to nearest (integers too) but reject
/// finite values beyond their largest value.
Node ScalarOf(Graph& g, DType dtype, ScalarValue value);
template <Number T>
Node Scalar(Graph& g, DType dtype, T value) {
  return ScalarOf(g, dtype, ScalarValue::Of(value));
}
/// A scalar with `x`'s dtype (in x's graph).
template <Number T>
Node ScalarLike(Node x, T value) {
  return ScalarOf(x.graph(), x.dtype(), ScalarValue::Of(value));
}
Node Zeros(Graph& g, const Shape& shape);
Node Ones(Graph& g, const Shape& shape);
Node ZerosLike(Node x);
Node OnesLike(Node x);
/// Values 0, 1, 2... along `axis`, repeated over the other axes of `shape`.
Node Iota(Graph& g, const Shape& shape, int axis);

// ---- Unary ----------------------------------------------------------------------------------

Node Neg(Node x);
Node Abs(Node x);
Node Sign(Node x);
Node Sqrt(Node x);
Node Rsqrt(Node x);
Node Square(Node x);
Node Reciprocal(Node x);
Node Exp(Node x);
Node Expm1(Node x);
Node Log(Node x);
Node Log1p(Node x);
Node Sin(Node x);
Node Cos(Node x);
Node Tanh(Node x);
Node Sigmoid(Node x);
Node Erf(Node x);
Node Floor(Node x);
Node Ceil(Node x);
/// Rounds half to even.
Node Round(Node x);
Node IsFinite(Node x);
Node IsNaN(Node x);
Node LogicalNot(Node x);
Node BitwiseNot(Node x);
/// Number of set bits (population count).
Node BitCount(Node x);
/// Count of leading zero bits.
Node Clz(Node x);
Node Identity(Node x);
/// The value of x, through which no gradient flows.
Node StopGradient(Node x);

// ---- Binary (broadcasting) --------------------------------------------------------------------

Node Add(Node a, Node b);
Node Sub(Node a, Node b);
Node Mul(Node a, Node b);
/// Integer division truncates toward zero; x/0 is -1 (all bits set) for integers.
Node Div(Node a, Node b);
/// Remainder with the dividend's sign; x%0 is x for integers.
Node Rem(Node a, Node b);
Node Pow(Node a, Node b);
/// Elementwise maximum; NaN propagates.
Node Max(Node a, Node b);
/// Elementwise minimum; NaN propagates.
Node Min(Node a, Node b);
Node Atan2(Node y, Node x);
Node LogicalAnd(Node a, Node b);
Node LogicalOr(Node a, Node b);
Node LogicalXor(Node a, Node b);
Node BitwiseAnd(Node a, Node b);
Node BitwiseOr(Node a, Node b);
Node BitwiseXor(Node a, Node b);
/// Shifts by the bit width or more give 0.
Node ShiftLeft(Node a, Node bits);
/// Shifts by the bit width or more fill with the sign bit.
Node ShiftRightArithmetic(Node a, Node bits);
Node ShiftRightLogical(Node a, Node bits);

template <Number T>
Node AddScalar(Node x, T value) {
  return Add(x, ScalarLike(x, value));
}
template <Number T>
Node SubScalar(Node x, T value) {
  return Sub(x, ScalarLike(x, value));
}
template <Number T>
Node MulScalar(Node x, T value) {
  return Mul(x, ScalarLike(x, value));
}
template <Number T>
Node DivScalar(Node x, T value) {
  return Div(x, ScalarLike(x, value));
}
template <Number T>
Node PowScalar(Node x, T value) {
  return Pow(x, ScalarLike(x, value));
}
template <Number T>
Node MaxScalar(Node x, T value) {
  return Max(x, ScalarLike(x, value));
}
template <Number T>
Node MinScalar(Node x, T value) {
  return Min(x, ScalarLike(x, value));
}
template <Number T>
Node ModScalar(Node x, T value) {
  return Rem(x, ScalarLike(x, value));
}

// ---- Comparisons and selection ----------------------------------------------------------------

Node Equal(Node a, Node b);
Node NotEqual(Node a, Node b);
Node Less(Node a, Node b);
Node LessOrEqual(Node a, Node b);
Node Greater(Node a, Node b);
Node GreaterOrEqual(Node a, Node b);
/// x == 0.
Node IsZero(Node x);
/// Elementwise cond ? onTrue : onFalse; a scalar condition or scalar branches broadcast.
Node Where(Node cond, Node onTrue, Node onFalse);
/// Max(lo, Min(x, hi)), broadcasting.
Node Clamp(Node lo, Node x, Node hi);
/// Clamp with the bounds as C++ numbers.
template <Number T>
Node Clip(Node x, T lo, T hi) {
  return Clamp(ScalarLike(x, lo), x, ScalarLike(x, hi));
}

// ---- Reductions (an empty `axes` reduces every axis) -----------------------------------------

Node ReduceSum(Node x, const std::vector<int>& axes = {});
Node ReduceMean(Node x, const std::vector<int>& axes = {});
/// Maximum; NaN propagates; an empty reduction gives -inf (lowest integer).
Node ReduceMax(Node x, const std::vector<int>& axes = {});
Node ReduceMin(Node x, const std::vector<int>& axes = {});
Node ReduceProduct(Node x, const std::vector<int>& axes = {});
/// GoMLX's name for ReduceProduct.
Node ReduceMultiply(Node x, const std::vector<int>& axes = {});
Node ReduceLogicalAnd(Node x, const std::vector<int>& axes = {});
Node ReduceLogicalOr(Node x, const std::vector<int>& axes = {});
Node ReduceLogicalXor(Node x, const std::vector<int>& axes = {});
Node ReduceBitwiseAnd(Node x, const std::vector<int>& axes = {});
Node ReduceBitwiseOr(Node x, const std::vector<int>& axes = {});
Node ReduceBitwiseXor(Node x, const std::vector<int>& axes = {});
/// log(sum(exp(x))), computed stably.
Node ReduceLogSumExp(Node x, const std::vector<int>& axes = {});
/// Population variance (mean of squared deviations).
Node ReduceVariance(Node x, const std::vector<int>& axes = {});
Node ReduceAllSum(Node x);
Node ReduceAllMean(Node x);
Node ReduceAllMax(Node x);
Node ReduceAllMin(Node x);
Node ReduceAllProduct(Node x);
/// Applies `reduce` over `axes` and keeps them as axes of size 1.
Node ReduceAndKeep(Node x, const std::function<Node(Node, const std::vector<int>&)>& reduce,
                   const std::vector<int>& axes = {});
/// Reductions over the elements where `mask` (Bool, broadcastable to x) is true. A fully masked
/// reduction gives 0 (sum), NaN (mean, float dtypes only), and the lowest/highest value (max/min).
Node MaskedReduceSum(Node x, Node mask, const std::vector<int>& axes = {});
Node MaskedReduceMean(Node x, Node mask, const std::vector<int>& axes = {});
Node MaskedReduceMax(Node x, Node mask, const std::vector<int>& axes = {});
Node MaskedReduceMin(Node x, Node mask, const std::vector<int>& axes = {});
/// Index of the maximum along `axis` (first on ties; NaN counts as the maximum).
Node ArgMax(Node x, int axis, DType dtype = DType::Int32);
Node ArgMin(Node x, int axis, DType dtype = DType::Int32);

// ---- Shape ------------------------------------------------------------------------------------

/// New dimensions for the same elements; one -1 is inferred.
Node Reshape(Node x, const std::vector<int64_t>& dims);
/// Swaps two axes.
Node Transpose(Node x, int axis1, int axis2);
/// Permutes every axis: output axis i is x's axis permutation[i].
Node TransposeAllAxes(Node x, const std::vector<int>& permutation);
/// Inserts axes of size 1 at the given positions of the result (negative from the end).
Node ExpandAxes(Node x, const std::vector<int>& axes);
/// Inserts axes of size 1 before the given axes of x (GoMLX's InsertAxes): position p in
/// [0, rank] puts a new axis before x's axis p (p == rank: after the last); negative p counts
/// from the end, -1 meaning after the last axis (p + rank + 1). Repeated positions insert
/// several axes there. E.g. [2, 3] with {0} -> [1, 2, 3]; {-1} -> [2, 3, 1]; {1, 1} -> [2, 1, 1, 3].
Node InsertAxes(Node x, const std::vector<int>& axes);
/// Removes axes of size 1 (all of them when `axes` is empty).
Node Squeeze(Node x, const std::vector<int>& axes = {});
/// Broadcasts x (same rank, axes of size 1 expand; or a scalar) to `dims`.
Node BroadcastToDims(Node x, const std::vector<int64_t>& dims);
/// Broadcasts x to `shape`'s dimensions (`shape`'s dtype is ignored).
Node BroadcastToShape(Node x, const Shape& shape);
/// Adds leading axes `prefix` (x's values repeated over them).
Node BroadcastPrefix(Node x, const std::vector<int64_t>& prefix);
/// Joins nodes along `axis` (other dimensions equal).
Node Concatenate(const std::vector<Node>& nodes, int axis);
/// Stacks nodes of equal shapes along a new axis.
Node Stack(const std::vector<Node>& nodes, int axis);
/// Splits x along `axis` into `parts` equal pieces.
std::vector<Node> Split(Node x, int axis, int parts);

/// One axis' range for Slice: [start, end) with a stride; negative indices count from the end.
struct AxisRangeSpec {
  int64_t start = 0;
  int64_t end = INT64_MAX;  ///< INT64_MAX: to the end of the axis.
  int64_t stride = 1;
  bool single = false;  ///< AxisElem: one index, axis kept with size 1.
  AxisRangeSpec& Stride(int64_t s) {
    stride = s;
    return *this;
  }
};
/// The whole axis.
inline AxisRangeSpec AxisRange() { return {}; }
/// [start, end) of an axis.
inline AxisRangeSpec AxisRange(int64_t start, int64_t end = INT64_MAX) { return {start, end, 1, false}; }
/// The single element `index` of an axis (the axis stays, with size 1).
inline AxisRangeSpec AxisElem(int64_t index) { return {index, index + 1, 1, true}; }
/// Slices the leading axes per `ranges` (missing trailing axes are taken whole).
Node Slice(Node x, const std::vector<AxisRangeSpec>& ranges);
/// Pads with `fill` (a scalar node of x's dtype): per axis low/high (negative crops) and interior;
/// axes beyond `padding`'s length are not padded.
Node Pad(Node x, Node fill, const std::vector<compute::PadAxis>& padding);
Node Reverse(Node x, const std::vector<int>& axes);
/// Converts values to `dtype` (float to integer saturates, NaN gives 0).
Node ConvertDType(Node x, DType dtype);
/// Reinterprets the bits as `dtype` (same bit width: same shape; otherwise the last axis adapts).
Node Bitcast(Node x, DType dtype);
/// indices [...] -> [..., depth]: 1 at each index, 0 elsewhere, in `dtype`.
Node OneHot(Node indices, int64_t depth, DType dtype);

// ---- Contractions -----------------------------------------------------------------------------

/// Dot(a, b).Product() or Dot(a, b).General(...).
class DotBuilder {
 public:
  DotBuilder(Node a, Node b) : a_(a), b_(b) {}
  /// The usual products: vector·vector (scalar), matrix·vector, matrix·matrix, and batched
  /// [..., m, k]·[..., k, n] with equal batch dimensions.
  Node Product() const;
  /// Contracts a's `a_contracting` axes with b's `b_contracting`; `a_batch`/`b_batch` axes are
  /// batch axes. Result: batch axes, then a's free axes, then b's free axes.
  Node General(const std::vector<int>& a_contracting, const std::vector<int>& a_batch,
               const std::vector<int>& b_contracting, const std::vector<int>& b_batch) const;

 private:
  Node a_, b_;
};
inline DotBuilder Dot(Node a, Node b) { return DotBuilder(a, b); }
/// Dot product of two vectors (or of the last axes, batched over the leading ones).
Node DotProduct(Node a, Node b);
/// NumPy's matmul: [..., m, k]·[..., k, n], batch axes broadcast (a vector is promoted).
Node MatMul(Node a, Node b);
/// Einstein summation over two operands: Einsum("bij,bjk->bik", a, b).
Node Einsum(const std::string& equation, Node a, Node b);

// ---- Operators ---------------------------------------------------------------------------------

inline Node operator+(Node a, Node b) { return Add(a, b); }
inline Node operator-(Node a, Node b) { return Sub(a, b); }
inline Node operator*(Node a, Node b) { return Mul(a, b); }
inline Node operator/(Node a, Node b) { return Div(a, b); }
inline Node operator-(Node a) { return Neg(a); }
template <Number T>
Node operator+(Node a, T b) {
  return Add(a, ScalarLike(a, b));
}
template <Number T>
Node operator+(T a, Node b) {
  return Add(ScalarLike(b, a), b);
}
template <Number T>
Node operator-(Node a, T b) {
  return Sub(a, ScalarLike(a, b));
}
template <Number T>
Node operator-(T a, Node b) {
  return Sub(ScalarLike(b, a), b);
}
template <Number T>
Node operator*(Node a, T b) {
  return Mul(a, ScalarLike(a, b));
}
template <Number T>
Node operator*(T a, Node b) {
  return Mul(ScalarLike(b, a), b);
}
template <Number T>
Node operator/(Node a, T b) {
  return Div(a, ScalarLike(a, b));
}
template <Number T>
Node operator/(T a, Node b) {
  return Div(ScalarLike(b, a), b);
}

}  // namespace kiln::graph
