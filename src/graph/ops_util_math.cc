// Graph frontend: GoMLX's arithmetic compositions (ops_util.h): scalars and fills, one-liners,
// sign indicators, norms and similarities, statistics, masked log-softmax and the total order
// comparisons.

#include <cstdint>
#include <functional>
#include <vector>

#include "graph/ops_internal.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using ops_internal::CheckNodes;

namespace {

/// Throws unless x's dtype is numeric (an integer or float, not Bool or packed); errors name `op`.
void CheckNumeric(const char* op, Node x) {
  CheckNodes(op, {x});
  if (!compute::InDTypeClass(x.dtype(), compute::DTypeClass::Numeric))
    kiln::detail::Throw("{}: needs a numeric dtype, got {}", op, x.shape());
}

/// The axes as given, normalised and sorted (for ReduceAndKeep-style helpers).
std::vector<int> SortedAxes(const char* op, Node x, const std::vector<int>& axes) {
  std::vector<int> r;
  for (int64_t a : ops_internal::NormalizeAxes(op, axes, x.shape(), true)) r.push_back(static_cast<int>(a));
  return r;
}

}  // namespace

// ---- Scalars and fills ------------------------------------------------------------------------

Node ScalarZero(Graph& g, DType dtype) {
  return dtype == DType::Bool ? Scalar(g, dtype, false) : Scalar(g, dtype, 0);
}
Node ScalarOne(Graph& g, DType dtype) {
  return dtype == DType::Bool ? Scalar(g, dtype, true) : Scalar(g, dtype, 1);
}

Node FillScalar(Graph& g, const Shape& shape, double value) {
  return BroadcastToDims(Scalar(g, shape.dtype(), value), shape.Dimensions());
}

Node Infinity(Graph& g, DType dtype, int sign) {
  if (sign == 1) return ops_internal::Highest(g, dtype);
  if (sign == -1) return ops_internal::Lowest(g, dtype);
  kiln::detail::Throw("Infinity: the sign must be 1 or -1, got {}", sign);
}

// ---- One-liners ---------------------------------------------------------------------------------

Node OnePlus(Node x) {
  CheckNodes("OnePlus", {x});
  return Add(ScalarOne(x.graph(), x.dtype()), x);
}
Node OneMinus(Node x) {
  CheckNodes("OneMinus", {x});
  return Sub(ScalarOne(x.graph(), x.dtype()), x);
}
Node MinusOne(Node x) {
  CheckNodes("MinusOne", {x});
  return Sub(x, ScalarOne(x.graph(), x.dtype()));
}

Node MirroredLog1p(Node x) {
  CheckNodes("MirroredLog1p", {x});
  return Mul(Log1p(Abs(x)), Sign(x));
}

Node LogAddExp(Node x, Node y) {
  CheckNodes("LogAddExp", {x, y});
  ops_internal::CheckFloat("LogAddExp", x);
  // max + log1p(exp(-|x - y|)). Where x - y is infinite, one side is infinite and the other is
  // not: the larger is the answer (-inf and 0: 0). Where it is NaN (equal infinities, or a NaN),
  // x + y is (-inf and -inf: -inf; NaN: NaN). GoMLX returns x + y in both cases, -inf for
  // LogAddExp(-inf, 0) where log(e^-inf + e^0) is 0.
  Node delta = Sub(x, y);
  Node finite = IsFinite(delta);
  Node safe = Where(finite, delta, ZerosLike(delta));
  Node max = Max(x, y);
  return Where(finite, Add(max, Log1p(Exp(Neg(Abs(safe))))), Where(IsNaN(delta), Add(x, y), max));
}

Node Softplus(Node x) {
  CheckNodes("Softplus", {x});
  return LogAddExp(x, ZerosLike(x));
}

// ---- Signs and indicators -------------------------------------------------------------------------

Node SignPlusOrMinus(Node x) {
  CheckNumeric("SignPlusOrMinus", x);
  if (IsUnsigned(x.dtype())) return OnesLike(x);                 // Never negative.
  if (IsFloat(x.dtype())) return Sign(AddScalar(Sign(x), 0.5));  // -0 -> +1; NaN stays.
  return Where(IsNonNegative(x), OnesLike(x), Neg(OnesLike(x)));
}

namespace {

/// x compared with zero by `compare` (Bool); errors name `op`.
Node ComparedWithZero(const char* op, Node x, Node (*compare)(Node, Node)) {
  CheckNumeric(op, x);
  return compare(x, ZerosLike(x));
}

/// 1 where x compared with zero holds, else 0, in x's dtype; NaN stays NaN; no gradient.
Node Indicator(const char* op, Node x, Node (*compare)(Node, Node)) {
  Node r = ConvertDType(ComparedWithZero(op, x, compare), x.dtype());
  if (IsFloat(x.dtype())) r = Where(IsNaN(x), x, r);
  return StopGradient(r);
}

}  // namespace

Node PositiveIndicator(Node x) { return Indicator("PositiveIndicator", x, Greater); }
Node NonNegativeIndicator(Node x) { return Indicator("NonNegativeIndicator", x, GreaterOrEqual); }
Node NegativeIndicator(Node x) { return Indicator("NegativeIndicator", x, Less); }
Node NonPositiveIndicator(Node x) { return Indicator("NonPositiveIndicator", x, LessOrEqual); }
Node IsPositive(Node x) { return ComparedWithZero("IsPositive", x, Greater); }
Node IsNegative(Node x) { return ComparedWithZero("IsNegative", x, Less); }
Node IsNonNegative(Node x) { return ComparedWithZero("IsNonNegative", x, GreaterOrEqual); }
Node IsNonPositive(Node x) { return ComparedWithZero("IsNonPositive", x, LessOrEqual); }

// ---- Norms and similarity -------------------------------------------------------------------------

namespace {
/// Sums f(x) over `axes` kept with size 1, or over everything to a scalar when `axes` is empty.
Node SumOf(Node fx, const std::vector<int>& axes) {
  if (axes.empty()) return ReduceAllSum(fx);
  return ReduceAndKeep(fx, ReduceSum, axes);
}
std::vector<int> Joined(int axis, const std::vector<int>& more) {
  std::vector<int> axes{axis};
  axes.insert(axes.end(), more.begin(), more.end());
  return axes;
}
}  // namespace

Node L1Norm(Node x, const std::vector<int>& axes) {
  CheckNumeric("L1Norm", x);
  return SumOf(Abs(x), axes);
}
Node L2NormSquare(Node x, const std::vector<int>& axes) {
  CheckNumeric("L2NormSquare", x);
  return SumOf(Square(x), axes);
}
Node L2Norm(Node x, const std::vector<int>& axes) {
  CheckNodes("L2Norm", {x});
  ops_internal::CheckFloat("L2Norm", x);
  return Sqrt(L2NormSquare(x, axes));
}

Node L2Normalize(Node x, int axis, const std::vector<int>& more_axes) {
  CheckNodes("L2Normalize", {x});
  ops_internal::CheckFloat("L2Normalize", x);
  Node sq = L2NormSquare(x, Joined(axis, more_axes));
  Node denominator = Sqrt(Where(IsZero(sq), OnesLike(sq), sq));
  return Div(x, denominator);
}

Node L2NormalizeWithEpsilon(Node x, double epsilon, int axis, const std::vector<int>& more_axes) {
  CheckNodes("L2NormalizeWithEpsilon", {x});
  ops_internal::CheckFloat("L2NormalizeWithEpsilon", x);
  return Div(x, AddScalar(L2Norm(x, Joined(axis, more_axes)), epsilon));
}

namespace {
/// lhs and rhs with every all-zero vector along `axis` replaced by ones (so norms are not 0), and
/// the masks of those vectors (kept axis of size 1).
struct ZeroSafe {
  Node lhs, rhs, lhs_zero, rhs_zero;
};
ZeroSafe ReplaceZeroVectors(Node lhs, Node rhs, int axis) {
  ZeroSafe r;
  r.lhs_zero = ReduceAndKeep(IsZero(lhs), ReduceLogicalAnd, {axis});
  r.rhs_zero = ReduceAndKeep(IsZero(rhs), ReduceLogicalAnd, {axis});
  r.lhs = Where(r.lhs_zero, OnesLike(lhs), lhs);
  r.rhs = Where(r.rhs_zero, OnesLike(rhs), rhs);
  return r;
}
}  // namespace

Node CosineSimilarity(Node lhs, Node rhs, int axis) {
  CheckNodes("CosineSimilarity", {lhs, rhs});
  ops_internal::CheckFloat("CosineSimilarity", lhs);
  if (lhs.shape() != rhs.shape())
    kiln::detail::Throw(
        "CosineSimilarity: lhs {} and rhs {} must have the same shape (CrossCosineSimilarity compares every "
        "pair)",
        lhs.shape(), rhs.shape());
  const int a = ops_internal::NormalizeAxis("CosineSimilarity", axis, lhs.rank(), lhs.shape());
  ZeroSafe z = ReplaceZeroVectors(lhs, rhs, a);
  Node dot = ReduceAndKeep(Mul(z.lhs, z.rhs), ReduceSum, {a});
  Node similarity = Div(dot, Mul(L2Norm(z.lhs, {a}), L2Norm(z.rhs, {a})));
  return Where(LogicalOr(z.lhs_zero, z.rhs_zero), ZerosLike(similarity), similarity);
}

Node CrossCosineSimilarity(Node lhs, Node rhs, int contracting_axis, int cross_axis) {
  const char* op = "CrossCosineSimilarity";
  CheckNodes(op, {lhs, rhs});
  ops_internal::CheckFloat(op, lhs);
  if (lhs.rank() != rhs.rank() || lhs.rank() < 2)
    kiln::detail::Throw("{}: lhs {} and rhs {} must have the same rank, at least 2", op, lhs.shape(),
                        rhs.shape());
  const int c = ops_internal::NormalizeAxis(op, contracting_axis, lhs.rank(), lhs.shape());
  const int x = ops_internal::NormalizeAxis(op, cross_axis, lhs.rank(), lhs.shape());
  if (c == x) kiln::detail::Throw("{}: the contracting and cross axes must differ, both are {}", op, c);
  std::vector<std::array<int, 2>> batch;
  for (int a = 0; a < lhs.rank(); ++a) {
    if (a != c && a != x) batch.push_back({a, a});
  }
  const std::vector<std::array<int, 2>> contracting{{c, c}};
  ZeroSafe z = ReplaceZeroVectors(lhs, rhs, c);
  Node dot = EinsumAxes(z.lhs, z.rhs, contracting, batch);
  Node norms = EinsumAxes(L2Norm(z.lhs, {c}), L2Norm(z.rhs, {c}), contracting, batch);
  Node similarity = Div(dot, norms);
  // Pairs where either vector is all zeros: 0.
  Node nonzero = EinsumAxes(ConvertDType(LogicalNot(z.lhs_zero), lhs.dtype()),
                            ConvertDType(LogicalNot(z.rhs_zero), lhs.dtype()), contracting, batch);
  return Where(IsZero(nonzero), ZerosLike(similarity), similarity);
}

// ---- Statistics -----------------------------------------------------------------------------------

Node ReduceSkewness(Node x, const std::vector<int>& axes) {
  CheckNodes("ReduceSkewness", {x});
  ops_internal::CheckFloat("ReduceSkewness", x);
  const std::vector<int> ax = SortedAxes("ReduceSkewness", x, axes);
  Node mean = ReduceAndKeep(x, ReduceMean, ax);
  Node diff = Sub(x, mean);
  Node stddev = Sqrt(ReduceAndKeep(Square(diff), ReduceMean, ax));
  Node normalized = Div(diff, stddev);
  return ReduceMean(Mul(Square(normalized), normalized), ax);
}

Node MaskedReduceAndKeep(Node x, Node mask,
                         const std::function<Node(Node, Node, const std::vector<int>&)>& reduce,
                         const std::vector<int>& axes) {
  CheckNodes("MaskedReduceAndKeep", {x, mask});
  const std::vector<int> ax = SortedAxes("MaskedReduceAndKeep", x, axes);
  Node reduced = reduce(x, mask, ax);
  std::vector<int64_t> ax64(ax.begin(), ax.end());
  return ops_internal::ReshapeTo("MaskedReduceAndKeep", reduced, ops_internal::KeepDims(x.shape(), ax64));
}

Node MaskedLogSoftmax(Node logits, Node mask, const std::vector<int>& axes) {
  CheckNodes("MaskedLogSoftmax", {logits, mask});
  ops_internal::CheckFloat("MaskedLogSoftmax", logits);
  const std::vector<int> ax = SortedAxes("MaskedLogSoftmax", logits, axes);
  Node full_mask = BroadcastToShape(mask, logits.shape());
  Node max = StopGradient(MaskedReduceAndKeep(logits, full_mask, MaskedReduceMax, ax));
  // A fully masked row has max -inf: shift by 0 there (its outputs are -inf anyway).
  max = Where(IsFinite(max), max, ZerosLike(max));
  Node shifted = Sub(logits, max);
  Node safe = Where(full_mask, shifted, ZerosLike(shifted));
  Node log_sum = Log(MaskedReduceAndKeep(Exp(safe), full_mask, MaskedReduceSum, ax));
  return Where(full_mask, Sub(shifted, log_sum), Infinity(logits.graph(), logits.dtype(), -1));
}

// ---- Total order comparisons ---------------------------------------------------------------------

namespace {

/// A signed integer key whose order is the float total order: the bits as a signed integer, with
/// every bit but the sign flipped for negative values. Non-floats are their own keys.
Node TotalOrderKey(Node x) {
  if (!IsFloat(x.dtype())) return x;
  const DType int_type = x.dtype() == DType::Float64   ? DType::Int64
                         : x.dtype() == DType::Float32 ? DType::Int32
                                                       : DType::Int16;
  const int bits = x.dtype() == DType::Float64 ? 64 : x.dtype() == DType::Float32 ? 32 : 16;
  Node i = Bitcast(x, int_type);
  Node sign = BitwiseShiftRightArithmeticScalar(i, bits - 1);     // 0 or -1 (all ones).
  Node magnitude_mask = BitwiseShiftRightLogicalScalar(sign, 1);  // 0 or 0x7f...f.
  return BitwiseXor(i, magnitude_mask);
}

Node TotalOrder(const char* op, Node (*compare)(Node, Node), Node a, Node b) {
  CheckNodes(op, {a, b});
  if (a.dtype() != b.dtype())
    kiln::detail::Throw("{}: operands {} and {} must have the same dtype", op, a.shape(), b.shape());
  return compare(TotalOrderKey(a), TotalOrderKey(b));
}

}  // namespace

Node EqualTotalOrder(Node a, Node b) { return TotalOrder("EqualTotalOrder", Equal, a, b); }
Node NotEqualTotalOrder(Node a, Node b) { return TotalOrder("NotEqualTotalOrder", NotEqual, a, b); }
Node LessThanTotalOrder(Node a, Node b) { return TotalOrder("LessThanTotalOrder", Less, a, b); }
Node LessOrEqualTotalOrder(Node a, Node b) { return TotalOrder("LessOrEqualTotalOrder", LessOrEqual, a, b); }
Node GreaterThanTotalOrder(Node a, Node b) { return TotalOrder("GreaterThanTotalOrder", Greater, a, b); }
Node GreaterOrEqualTotalOrder(Node a, Node b) {
  return TotalOrder("GreaterOrEqualTotalOrder", GreaterOrEqual, a, b);
}

}  // namespace kiln::graph
