#pragma once
/// @file
/// The graph ops: free functions with GoMLX's names. Each checks shapes and dtypes when called
/// and throws kiln::Error with the stack of the call if they do not fit.
///
/// Broadcasting (GoMLX's rule): a scalar broadcasts to any shape; operands of the same rank
/// broadcast axes of size 1; operands of different ranks are an error (no NumPy-style rank
/// promotion: use ExpandAxes or BroadcastPrefix). Operands must have the same dtype.

#include <array>
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
  /// Which field holds the value: `i` for kBool (0 or 1) and kInt, `u` for kUint, `f` for kFloat.
  enum class Kind {
    /// A bool, in `i`.
    kBool,
    /// A signed integer, in `i`.
    kInt,
    /// An unsigned integer, in `u`.
    kUint,
    /// A floating-point number, in `f`.
    kFloat,
  } kind = Kind::kFloat;  ///< Which field holds the value.
  int64_t i = 0;          ///< A bool (0/1) or signed integer value.
  uint64_t u = 0;         ///< An unsigned integer value.
  double f = 0;           ///< A floating-point value.

  /// Holds `value` in the field of its kind (bool, signed, unsigned or floating point).
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
/// A constant from C++ values (a number, or nested std::vector of numbers), via Tensor::FromValue.
template <TensorValue V>
Node Const(Graph& g, const V& value) {
  return Const(g, Tensor::FromValue(value));
}
/// GoMLX's names for Const of a Tensor (kiln keeps every constant in the program once).
inline Node ConstTensor(Graph& g, const Tensor& value) { return Const(g, value); }
/// As ConstTensor.
inline Node ConstCachedTensor(Graph& g, const Tensor& value) { return Const(g, value); }
/// A constant from C++ values converted to `dtype` (GoMLX's ConstAsDType).
template <TensorValue V>
Node ConstAsDType(Graph& g, DType dtype, const V& value);
/// A constant from C++ values in `base`'s dtype and graph (GoMLX's ConstAs).
template <TensorValue V>
Node ConstAs(Node base, const V& value) {
  return ConstAsDType(base.graph(), base.dtype(), value);
}
/// A new input of `g` named `name` (Graph::Parameter with GoMLX's argument order).
inline Node Parameter(Graph& g, const std::string& name, const Shape& shape) {
  return g.Parameter(shape, name);
}
/// A scalar constant of `dtype`; the value must be exactly representable (else kiln::Error):
/// integer dtypes reject fractions, NaN, infinities, negatives (unsigned) and values out of range;
/// Bool takes only true/false (0/1); float dtypes round to nearest (integers too) but reject
/// finite values beyond their largest value.
Node ScalarOf(Graph& g, DType dtype, ScalarValue value);
/// A scalar constant of `dtype` holding the C++ number `value` (checked as ScalarOf does).
template <Number T>
Node Scalar(Graph& g, DType dtype, T value) {
  return ScalarOf(g, dtype, ScalarValue::Of(value));
}
/// A scalar with `x`'s dtype (in x's graph).
template <Number T>
Node ScalarLike(Node x, T value) {
  return ScalarOf(x.graph(), x.dtype(), ScalarValue::Of(value));
}
/// Zeros of `shape` (false for Bool), a broadcast scalar; a dynamic `shape` is a kiln::Error.
Node Zeros(Graph& g, const Shape& shape);
/// Ones of `shape` (true for Bool), a broadcast scalar; a dynamic `shape` is a kiln::Error.
Node Ones(Graph& g, const Shape& shape);
/// Zeros of x's shape and dtype.
Node ZerosLike(Node x);
/// Ones of x's shape and dtype.
Node OnesLike(Node x);
/// Values 0, 1, 2... along `axis`, repeated over the other axes of `shape`.
Node Iota(Graph& g, const Shape& shape, int axis);

// ---- Unary ----------------------------------------------------------------------------------

// Each takes a node and returns one of the same shape. Numeric means an integer or float dtype
// (not Bool, not packed); a dtype outside the op's class is a kiln::Error.

Node Neg(Node x);         ///< -x (numeric; unsigned integers wrap).
Node Abs(Node x);         ///< |x| (numeric).
Node Sign(Node x);        ///< -1, 0 or 1 (numeric); floats keep NaN and the sign of zeros.
Node Sqrt(Node x);        ///< Square root (float dtypes).
Node Rsqrt(Node x);       ///< 1 / sqrt(x) (float dtypes).
Node Square(Node x);      ///< x * x (numeric).
Node Reciprocal(Node x);  ///< 1 / x (numeric).
Node Exp(Node x);         ///< e^x (float dtypes).
Node Expm1(Node x);       ///< e^x - 1, accurate near 0 (float dtypes).
Node Log(Node x);         ///< Natural logarithm (float dtypes).
Node Log1p(Node x);       ///< log(1 + x), accurate near 0 (float dtypes).
Node Sin(Node x);         ///< Sine, x in radians (float dtypes).
Node Cos(Node x);         ///< Cosine, x in radians (float dtypes).
Node Tan(Node x);         ///< Tangent, x in radians (float dtypes).
Node Asin(Node x);        ///< Arcsine in [-pi/2, pi/2]; NaN outside [-1, 1] (float dtypes).
Node Acos(Node x);        ///< Arccosine in [0, pi]; NaN outside [-1, 1] (float dtypes).
Node Atan(Node x);        ///< Arctangent in (-pi/2, pi/2) (float dtypes).
Node Sinh(Node x);        ///< Hyperbolic sine (float dtypes).
Node Cosh(Node x);        ///< Hyperbolic cosine (float dtypes).
Node Tanh(Node x);        ///< Hyperbolic tangent (float dtypes).
Node Asinh(Node x);       ///< Inverse hyperbolic sine (float dtypes).
Node Acosh(Node x);       ///< Inverse hyperbolic cosine, x >= 1; NaN below 1 (float dtypes).
Node Atanh(Node x);       ///< Inverse hyperbolic tangent, |x| < 1; +-inf at +-1 (float dtypes).
Node Sigmoid(Node x);     ///< The logistic function 1 / (1 + e^-x) (float dtypes).
Node Erf(Node x);         ///< The error function (float dtypes).
Node Floor(Node x);       ///< Largest integer value <= x (float dtypes).
Node Ceil(Node x);        ///< Smallest integer value >= x (float dtypes).
/// Rounds half to even.
Node Round(Node x);
Node IsFinite(Node x);    ///< Bool: true where x is neither infinite nor NaN (float dtypes).
Node IsNaN(Node x);       ///< Bool: true where x is NaN (float dtypes).
Node LogicalNot(Node x);  ///< !x (Bool).
Node BitwiseNot(Node x);  ///< ~x (integer dtypes, not packed).
/// Number of set bits (population count).
Node BitCount(Node x);
/// Count of leading zero bits.
Node Clz(Node x);
/// x itself (the same node): a no-op kept for GoMLX's API.
Node Identity(Node x);
/// The value of x, through which no gradient flows.
Node StopGradient(Node x);

// ---- Binary (broadcasting) --------------------------------------------------------------------

// Each takes two nodes of one dtype that broadcast (see the file's comment) and returns the
// broadcast shape; a dtype outside the op's class is a kiln::Error.

Node Add(Node a, Node b);  ///< a + b (numeric; integers wrap).
Node Sub(Node a, Node b);  ///< a - b (numeric; integers wrap).
Node Mul(Node a, Node b);  ///< a * b (numeric; integers wrap).
/// Integer division truncates toward zero; x/0 is -1 (all bits set) for integers.
Node Div(Node a, Node b);
/// Remainder with the dividend's sign; x%0 is x for integers.
Node Rem(Node a, Node b);
/// a raised to the power b (numeric). Integers: exact, wrapping on overflow; a negative
/// exponent gives 1/a^-b truncated (1 for a = 1, +-1 for a = -1, else 0).
Node Pow(Node a, Node b);
/// Elementwise maximum; NaN propagates.
Node Max(Node a, Node b);
/// Elementwise minimum; NaN propagates.
Node Min(Node a, Node b);
/// The angle of the point (x, y) in radians, in [-pi, pi] (float dtypes).
Node Atan2(Node y, Node x);
Node LogicalAnd(Node a, Node b);  ///< a && b (Bool).
Node LogicalOr(Node a, Node b);   ///< a || b (Bool).
Node LogicalXor(Node a, Node b);  ///< a != b (Bool).
Node BitwiseAnd(Node a, Node b);  ///< a & b (integer dtypes, not packed).
Node BitwiseOr(Node a, Node b);   ///< a | b (integer dtypes, not packed).
Node BitwiseXor(Node a, Node b);  ///< a ^ b (integer dtypes, not packed).
/// a << bits; `bits` is converted to a's dtype; shifts by the bit width or more give 0.
/// (ShiftLeft shifts values along an axis: ops_util.h.)
Node BitwiseShiftLeft(Node a, Node bits);
/// a >> bits, filling with the sign bit; by the bit width or more gives 0 or -1 (the sign).
Node BitwiseShiftRightArithmetic(Node a, Node bits);
/// a >> bits shifting in zero bits (a's bits read as unsigned); by the bit width or more gives 0.
Node BitwiseShiftRightLogical(Node a, Node bits);
/// Aliases GoMLX keeps for the logical ops.
inline Node And(Node a, Node b) { return LogicalAnd(a, b); }  ///< LogicalAnd(a, b).
inline Node Or(Node a, Node b) { return LogicalOr(a, b); }    ///< LogicalOr(a, b).
inline Node Not(Node x) { return LogicalNot(x); }             ///< LogicalNot(x).
/// GoMLX's name for Rem: the remainder with the dividend's sign.
inline Node Mod(Node a, Node b) { return Rem(a, b); }
/// GoMLX's name for Sigmoid.
inline Node Logistic(Node x) { return Sigmoid(x); }
/// GoMLX's other spelling of Log1p.
inline Node Log1P(Node x) { return Log1p(x); }

// The binary ops with a C++ number as the second operand, converted to x's dtype (exactly, as
// ScalarLike: a value x's dtype cannot hold is a kiln::Error).

/// x + value.
template <Number T>
Node AddScalar(Node x, T value) {
  return Add(x, ScalarLike(x, value));
}
/// x - value.
template <Number T>
Node SubScalar(Node x, T value) {
  return Sub(x, ScalarLike(x, value));
}
/// x * value.
template <Number T>
Node MulScalar(Node x, T value) {
  return Mul(x, ScalarLike(x, value));
}
/// x / value (as Div).
template <Number T>
Node DivScalar(Node x, T value) {
  return Div(x, ScalarLike(x, value));
}
/// x raised to the power value.
template <Number T>
Node PowScalar(Node x, T value) {
  return Pow(x, ScalarLike(x, value));
}
/// Max(x, value).
template <Number T>
Node MaxScalar(Node x, T value) {
  return Max(x, ScalarLike(x, value));
}
/// Min(x, value).
template <Number T>
Node MinScalar(Node x, T value) {
  return Min(x, ScalarLike(x, value));
}
/// Rem(x, value): the remainder with x's sign (GoMLX's name).
template <Number T>
Node ModScalar(Node x, T value) {
  return Rem(x, ScalarLike(x, value));
}
/// x << n, n a C++ number in x's dtype.
template <Number T>
Node BitwiseShiftLeftScalar(Node x, T n) {
  return BitwiseShiftLeft(x, ScalarLike(x, n));
}
/// x >> n (arithmetic), n a C++ number in x's dtype.
template <Number T>
Node BitwiseShiftRightArithmeticScalar(Node x, T n) {
  return BitwiseShiftRightArithmetic(x, ScalarLike(x, n));
}
/// x >> n (logical), n a C++ number in x's dtype.
template <Number T>
Node BitwiseShiftRightLogicalScalar(Node x, T n) {
  return BitwiseShiftRightLogical(x, ScalarLike(x, n));
}

// ---- Comparisons and selection ----------------------------------------------------------------

// Comparisons broadcast as the binary ops and return Bool; NaN compares unequal to everything.

Node Equal(Node a, Node b);           ///< a == b (any unpacked dtype, Bool included).
Node NotEqual(Node a, Node b);        ///< a != b (any unpacked dtype, Bool included).
Node Less(Node a, Node b);            ///< a < b (numeric).
Node LessOrEqual(Node a, Node b);     ///< a <= b (numeric).
Node Greater(Node a, Node b);         ///< a > b (numeric).
Node GreaterOrEqual(Node a, Node b);  ///< a >= b (numeric).
/// GoMLX's name for Less.
inline Node LessThan(Node a, Node b) { return Less(a, b); }
/// GoMLX's name for Greater.
inline Node GreaterThan(Node a, Node b) { return Greater(a, b); }
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
// The reduced axes are removed from the result (ReduceAndKeep keeps them); negative axes count
// from the end; an axis out of range or repeated is a kiln::Error.

/// Sum over `axes`; an empty reduction gives 0 (numeric).
Node ReduceSum(Node x, const std::vector<int>& axes = {});
/// Mean over `axes` (float dtypes).
Node ReduceMean(Node x, const std::vector<int>& axes = {});
/// Maximum; NaN propagates; an empty reduction gives -inf (lowest integer).
Node ReduceMax(Node x, const std::vector<int>& axes = {});
/// Minimum; NaN propagates; an empty reduction gives +inf (highest integer).
Node ReduceMin(Node x, const std::vector<int>& axes = {});
/// Product over `axes`; an empty reduction gives 1 (numeric).
Node ReduceProduct(Node x, const std::vector<int>& axes = {});
/// GoMLX's name for ReduceProduct.
Node ReduceMultiply(Node x, const std::vector<int>& axes = {});
/// True where every element is true (Bool; empty: true).
Node ReduceLogicalAnd(Node x, const std::vector<int>& axes = {});
/// True where some element is true (Bool; empty: false).
Node ReduceLogicalOr(Node x, const std::vector<int>& axes = {});
/// True where an odd number of elements is true (Bool; empty: false).
Node ReduceLogicalXor(Node x, const std::vector<int>& axes = {});
/// Bitwise and of the elements (integer dtypes; empty: all bits set).
Node ReduceBitwiseAnd(Node x, const std::vector<int>& axes = {});
/// Bitwise or of the elements (integer dtypes; empty: 0).
Node ReduceBitwiseOr(Node x, const std::vector<int>& axes = {});
/// Bitwise xor of the elements (integer dtypes; empty: 0).
Node ReduceBitwiseXor(Node x, const std::vector<int>& axes = {});
/// log(sum(exp(x))), computed stably.
Node ReduceLogSumExp(Node x, const std::vector<int>& axes = {});
/// Population variance (mean of squared deviations).
Node ReduceVariance(Node x, const std::vector<int>& axes = {});
Node ReduceAllSum(Node x);      ///< Sum of every element, a scalar (ReduceSum over all axes).
Node ReduceAllMean(Node x);     ///< Mean of every element, a scalar (float dtypes).
Node ReduceAllMax(Node x);      ///< Maximum of every element, a scalar (NaN propagates).
Node ReduceAllMin(Node x);      ///< Minimum of every element, a scalar (NaN propagates).
Node ReduceAllProduct(Node x);  ///< Product of every element, a scalar.
/// GoMLX's name for ReduceAllProduct.
inline Node ReduceAllMultiply(Node x) { return ReduceAllProduct(x); }
/// True where every element is true (x converted to Bool: nonzero is true) over `axes` (all when
/// empty); no gradient flows.
Node LogicalAll(Node x, const std::vector<int>& axes = {});
/// True where some element is true (x converted to Bool) over `axes` (all when empty).
Node LogicalAny(Node x, const std::vector<int>& axes = {});
/// Applies `reduce` over `axes` and keeps them as axes of size 1.
Node ReduceAndKeep(Node x, const std::function<Node(Node, const std::vector<int>&)>& reduce,
                   const std::vector<int>& axes = {});
/// Reductions over the elements where `mask` (Bool, broadcastable to x) is true. A fully masked
/// reduction gives 0 (sum), NaN (mean, float dtypes only), and the lowest/highest value (max/min).
Node MaskedReduceSum(Node x, Node mask, const std::vector<int>& axes = {});
/// Mean of the elements where `mask` is true (float dtypes; NaN where none is).
Node MaskedReduceMean(Node x, Node mask, const std::vector<int>& axes = {});
/// Maximum of the elements where `mask` is true (the dtype's lowest value where none is).
Node MaskedReduceMax(Node x, Node mask, const std::vector<int>& axes = {});
/// Minimum of the elements where `mask` is true (the dtype's highest value where none is).
Node MaskedReduceMin(Node x, Node mask, const std::vector<int>& axes = {});
/// The masked reductions over every element, to a scalar.
inline Node MaskedReduceAllSum(Node x, Node mask) { return MaskedReduceSum(x, mask); }
inline Node MaskedReduceAllMean(Node x, Node mask) { return MaskedReduceMean(x, mask); }  ///< Scalar mean.
inline Node MaskedReduceAllMax(Node x, Node mask) { return MaskedReduceMax(x, mask); }    ///< Scalar max.
inline Node MaskedReduceAllMin(Node x, Node mask) { return MaskedReduceMin(x, mask); }    ///< Scalar min.
/// Index of the maximum along `axis` (first on ties; NaN counts as the maximum).
Node ArgMax(Node x, int axis, DType dtype = DType::Int32);
/// Index of the minimum along `axis`, in `dtype` (first on ties; NaN counts as the minimum).
Node ArgMin(Node x, int axis, DType dtype = DType::Int32);
/// exp(x) / sum(exp(x)) over `axes`, computed stably (shifted by the max). Float dtypes.
Node Softmax(Node x, const std::vector<int>& axes = {-1});
/// log(Softmax(x)), computed stably.
Node LogSoftmax(Node x, const std::vector<int>& axes = {-1});
/// Softmax over the positions where `mask` (Bool, broadcastable to x) is true; masked-out
/// positions get 0, and a fully masked row gives zeros.
Node MaskedSoftmax(Node x, Node mask, const std::vector<int>& axes = {-1});

// ---- Shape ------------------------------------------------------------------------------------

/// New dimensions for the same elements; one -1 is inferred.
Node Reshape(Node x, const std::vector<int64_t>& dims);
/// Reshape to `shape`'s dimensions (and dynamic axis names); its dtype must be x's.
Node ReshapeWithShape(Node x, const Shape& shape);
/// Swaps two axes.
Node Transpose(Node x, int axis1, int axis2);
/// Permutes every axis: output axis i is x's axis permutation[i].
Node TransposeAllAxes(Node x, const std::vector<int>& permutation);
/// GoMLX's other name for TransposeAllAxes.
inline Node TransposeAllDims(Node x, const std::vector<int>& permutation) {
  return TransposeAllAxes(x, permutation);
}
/// Inserts axes of size 1 at the given positions of the result (negative from the end).
Node ExpandAxes(Node x, const std::vector<int>& axes);
/// Inserts axes of size 1 before the given axes of x (GoMLX's InsertAxes): position p in
/// [0, rank] puts a new axis before x's axis p (p == rank: after the last); negative p counts
/// from the end, -1 meaning after the last axis (p + rank + 1). Repeated positions insert
/// several axes there. E.g. [2, 3] with {0} -> [1, 2, 3]; {-1} -> [2, 3, 1]; {1, 1} -> [2, 1, 1, 3].
Node InsertAxes(Node x, const std::vector<int>& axes);
/// GoMLX's ExpandDims: InsertAxes.
inline Node ExpandDims(Node x, const std::vector<int>& axes) { return InsertAxes(x, axes); }
/// x with size-1 axes added in front up to `rank` axes (GoMLX's ExpandLeftToRank): [3] to rank 3
/// is [1, 1, 3]. A rank below x's is a kiln::Error.
Node ExpandLeftToRank(Node x, int rank);
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
  int64_t start = 0;        ///< First index taken (negative: from the end).
  int64_t end = INT64_MAX;  ///< INT64_MAX: to the end of the axis.
  int64_t stride = 1;       ///< Step between taken indices (> 0).
  bool single = false;      ///< AxisElem: one index, axis kept with size 1.
  /// Takes every `s`-th index of the range; returns *this for chaining: AxisRange(0, 8).Stride(2).
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
/// Reverses the order of the elements along each of `axes`.
Node Reverse(Node x, const std::vector<int>& axes);
/// Converts values to `dtype` (float to integer saturates, NaN gives 0).
Node ConvertDType(Node x, DType dtype);
/// GoMLX's other name for ConvertDType.
inline Node ConvertType(Node x, DType dtype) { return ConvertDType(x, dtype); }
/// Reinterprets the bits as `dtype` (same bit width: same shape; otherwise the last axis adapts).
Node Bitcast(Node x, DType dtype);
/// indices [...] -> [..., depth]: 1 at each index, 0 elsewhere, in `dtype`.
Node OneHot(Node indices, int64_t depth, DType dtype);

// ---- Contractions -----------------------------------------------------------------------------

/// Dot(a, b).Product() or Dot(a, b).General(...).
class DotBuilder {
 public:
  /// The operands; Dot(a, b) is the usual way to make one.
  DotBuilder(Node a, Node b) : a_(a), b_(b) {}
  /// The usual products: vector·vector (scalar), matrix·vector, matrix·matrix, and batched
  /// [..., m, k]·[..., k, n] with equal batch dimensions.
  Node Product() const;
  /// Contracts a's `a_contracting` axes with b's `b_contracting`; `a_batch`/`b_batch` axes are
  /// batch axes. Result: batch axes, then a's free axes, then b's free axes.
  Node General(const std::vector<int>& a_contracting, const std::vector<int>& a_batch,
               const std::vector<int>& b_contracting, const std::vector<int>& b_batch) const;
  /// NumPy's matmul, as the free MatMul.
  Node MatMul() const;
  /// Einstein summation over the two operands, as the free Einsum.
  Node Einsum(const std::string& equation) const;
  /// A contraction given as (a axis, b axis) pairs, as the free EinsumAxes.
  Node EinsumAxes(const std::vector<std::array<int, 2>>& contracting,
                  const std::vector<std::array<int, 2>>& batch) const;
  /// Accumulates in `dtype`: the operands are converted to it before the product (and the result
  /// back to the operands' dtype, unless WithOutputDType says otherwise). Half-precision operands
  /// already accumulate in at least float32 on every backend.
  DotBuilder& WithAccumulatorDType(DType dtype) {
    accumulator_ = dtype;
    return *this;
  }
  /// The result's dtype (the operands' by default).
  DotBuilder& WithOutputDType(DType dtype) {
    output_ = dtype;
    return *this;
  }

 private:
  /// Runs `product` on the operands converted to the accumulator dtype, then converts the result.
  Node Finish(const std::function<Node(Node, Node)>& product) const;
  Node a_, b_;
  DType accumulator_ = DType::Invalid, output_ = DType::Invalid;
};
/// Converts `value`'s C++ values to a constant of `dtype`.
template <TensorValue V>
Node ConstAsDType(Graph& g, DType dtype, const V& value) {
  Node c = Const(g, value);
  return c.dtype() == dtype ? c : ConvertDType(c, dtype);
}
/// Starts a dot product of `a` and `b`: finish with .Product() or .General(...).
inline DotBuilder Dot(Node a, Node b) { return DotBuilder(a, b); }
/// Dot product of two vectors (or of the last axes, batched over the leading ones).
Node DotProduct(Node a, Node b);
/// NumPy's matmul: [..., m, k]·[..., k, n], batch axes broadcast (a vector is promoted).
Node MatMul(Node a, Node b);
/// Einstein summation over two operands: Einsum("bij,bjk->bik", a, b).
Node Einsum(const std::string& equation, Node a, Node b);

// ---- Operators ---------------------------------------------------------------------------------
// Arithmetic operators on nodes; a C++ number on either side takes the node's dtype (ScalarLike).

inline Node operator+(Node a, Node b) { return Add(a, b); }  ///< Add(a, b).
inline Node operator-(Node a, Node b) { return Sub(a, b); }  ///< Sub(a, b).
inline Node operator*(Node a, Node b) { return Mul(a, b); }  ///< Mul(a, b).
inline Node operator/(Node a, Node b) { return Div(a, b); }  ///< Div(a, b).
inline Node operator-(Node a) { return Neg(a); }             ///< Neg(a).
/// Add(a, b) with b in a's dtype.
template <Number T>
Node operator+(Node a, T b) {
  return Add(a, ScalarLike(a, b));
}
/// Add(a, b) with a in b's dtype.
template <Number T>
Node operator+(T a, Node b) {
  return Add(ScalarLike(b, a), b);
}
/// Sub(a, b) with b in a's dtype.
template <Number T>
Node operator-(Node a, T b) {
  return Sub(a, ScalarLike(a, b));
}
/// Sub(a, b) with a in b's dtype.
template <Number T>
Node operator-(T a, Node b) {
  return Sub(ScalarLike(b, a), b);
}
/// Mul(a, b) with b in a's dtype.
template <Number T>
Node operator*(Node a, T b) {
  return Mul(a, ScalarLike(a, b));
}
/// Mul(a, b) with a in b's dtype.
template <Number T>
Node operator*(T a, Node b) {
  return Mul(ScalarLike(b, a), b);
}
/// Div(a, b) with b in a's dtype.
template <Number T>
Node operator/(Node a, T b) {
  return Div(a, ScalarLike(a, b));
}
/// Div(a, b) with a in b's dtype.
template <Number T>
Node operator/(T a, Node b) {
  return Div(ScalarLike(b, a), b);
}

}  // namespace kiln::graph

// Compositions with GoMLX names (OnePlus, L2Norm, Shift, the total order comparisons...).
#include "kiln/graph/ops_util.h"  // IWYU pragma: export
// Complex numbers and Fourier transforms (Complex, Real, Imag, Conj, FFT...).
#include "kiln/graph/ops_complex.h"  // IWYU pragma: export
