// Graph frontend: reductions (the primitives, means, log-sum-exp, variance, masked and kept-axes
// reductions), ArgMax/ArgMin and the softmax family.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "graph/ops_internal.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using compute::OpType;
using ops_internal::CheckNodes;
using ops_internal::Emit;

namespace ops_internal {

Node Reduce(const char* op, OpType type, Node x, const std::vector<int64_t>& axes) {
  compute::OpAttributes attrs;
  attrs.axes = axes;
  return Emit(op, type, {x}, std::move(attrs));
}

Node BroadcastBack(const char* op, Node reduced, Shape x_shape, const std::vector<int64_t>& axes) {
  if (reduced.shape().Dimensions() == x_shape.Dimensions()) return reduced;
  compute::OpAttributes attrs;
  for (int a = 0; a < x_shape.Rank(); ++a) {
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) attrs.axes.push_back(a);
  }
  attrs.shape = x_shape.WithDType(reduced.dtype());
  return Emit(op, OpType::BroadcastInDim, {reduced}, std::move(attrs));
}

}  // namespace ops_internal

namespace {

/// Validates x, normalises `axes` (empty: all) and emits the reduction primitive under `op`.
Node ReduceNamed(const char* op, OpType type, Node x, const std::vector<int>& axes) {
  CheckNodes(op, {x});
  return ops_internal::Reduce(op, type, x, ops_internal::NormalizeAxes(op, axes, x.shape(), true));
}

/// Number of elements reduced over `axes` of `shape`.
int64_t CountOver(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t count = 1;
  for (int64_t a : axes) count *= shape.Dimensions()[static_cast<size_t>(a)];
  return count;
}

/// `sum` divided by `count` (a C++ number) in sum's dtype.
Node DivideByCount(const char* op, Node sum, int64_t count) {
  // Float16 cannot hold counts above 65504: multiply by the (rounded) reciprocal instead.
  if (sum.dtype() == DType::Float16 && count > 65504)
    return ops_internal::Binary(op, OpType::Mul, sum, ScalarLike(sum, 1.0 / static_cast<double>(count)));
  return ops_internal::Binary(op, OpType::Div, sum, ScalarLike(sum, count));
}

/// Validates a masked reduction's operands: x numeric, mask Bool, same graph.
void CheckMasked(const char* op, Node x, Node mask) {
  CheckNodes(op, {x, mask});
  if (x.dtype() == DType::Bool || IsPacked(x.dtype()))
    kiln::detail::Throw("{}: needs a numeric dtype (integer or float), got {}", op, x.shape());
  if (mask.dtype() != DType::Bool) kiln::detail::Throw("{}: the mask must be Bool, got {}", op, mask.shape());
}

/// `mask` broadcast to x's dims (a scalar, or of x's rank with size-1 axes).
Node MaskFor(const char* op, Node x, Node mask) {
  CheckMasked(op, x, mask);
  return ops_internal::BroadcastTo(op, mask, x.shape());
}

/// Reduction `type` of Where(mask, x, fill) over `axes` (empty: all).
Node MaskedReduce(const char* op, OpType type, Node x, Node mask, Node fill, const std::vector<int>& axes) {
  const std::vector<int64_t> norm = ops_internal::NormalizeAxes(op, axes, x.shape(), true);
  Node m = MaskFor(op, x, mask);
  return ops_internal::Reduce(op, type, Where(m, x, fill), norm);
}

/// The normalised axes back as ints (for calling the public reductions).
std::vector<int> AsInts(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

}  // namespace

Node ReduceSum(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceSum", OpType::ReduceSum, x, axes);
}

Node ReduceMean(Node x, const std::vector<int>& axes) {
  CheckNodes("ReduceMean", {x});
  ops_internal::CheckFloat("ReduceMean", x);
  const std::vector<int64_t> norm = ops_internal::NormalizeAxes("ReduceMean", axes, x.shape(), true);
  Node sum = ops_internal::Reduce("ReduceMean", OpType::ReduceSum, x, norm);
  bool dynamic = false;
  for (int64_t a : norm) dynamic = dynamic || x.shape().Dim(static_cast<int>(a)) == Shape::kDynamic;
  if (dynamic) {
    // The count is known when the program runs: the product of the reduced axes' sizes.
    Node count = ScalarLike(sum, 1);
    for (int64_t a : norm)
      count = Mul(count, ConvertDType(DimensionSize(x, static_cast<int>(a)), sum.dtype()));
    return ops_internal::Binary("ReduceMean", OpType::Div, sum, count);
  }
  return DivideByCount("ReduceMean", sum, CountOver(x.shape(), norm));
}

Node ReduceMax(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceMax", OpType::ReduceMax, x, axes);
}
Node ReduceMin(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceMin", OpType::ReduceMin, x, axes);
}
Node ReduceProduct(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceProduct", OpType::ReduceProduct, x, axes);
}
Node ReduceMultiply(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceMultiply", OpType::ReduceProduct, x, axes);
}
Node ReduceLogicalAnd(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceLogicalAnd", OpType::ReduceLogicalAnd, x, axes);
}
Node ReduceLogicalOr(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceLogicalOr", OpType::ReduceLogicalOr, x, axes);
}
Node LogicalAll(Node x, const std::vector<int>& axes) {
  CheckNodes("LogicalAll", {x});
  Node b = StopGradient(x.dtype() == DType::Bool ? x : NotEqual(x, ZerosLike(x)));
  return ReduceNamed("LogicalAll", OpType::ReduceLogicalAnd, b, axes);
}
Node LogicalAny(Node x, const std::vector<int>& axes) {
  CheckNodes("LogicalAny", {x});
  Node b = StopGradient(x.dtype() == DType::Bool ? x : NotEqual(x, ZerosLike(x)));
  return ReduceNamed("LogicalAny", OpType::ReduceLogicalOr, b, axes);
}
Node ReduceLogicalXor(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceLogicalXor", OpType::ReduceLogicalXor, x, axes);
}
Node ReduceBitwiseAnd(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceBitwiseAnd", OpType::ReduceBitwiseAnd, x, axes);
}
Node ReduceBitwiseOr(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceBitwiseOr", OpType::ReduceBitwiseOr, x, axes);
}
Node ReduceBitwiseXor(Node x, const std::vector<int>& axes) {
  return ReduceNamed("ReduceBitwiseXor", OpType::ReduceBitwiseXor, x, axes);
}

Node ReduceLogSumExp(Node x, const std::vector<int>& axes) {
  const char* op = "ReduceLogSumExp";
  CheckNodes(op, {x});
  ops_internal::CheckFloat(op, x);
  const std::vector<int64_t> norm = ops_internal::NormalizeAxes(op, axes, x.shape(), true);
  // Shift by the maximum for stability; a non-finite maximum (all -inf, +inf, NaN) shifts by 0 so
  // that the result is -inf, +inf or NaN as the plain formula gives, never inf - inf.
  Node max = ops_internal::Reduce(op, OpType::ReduceMax, x, norm);
  Node shift = StopGradient(Where(IsFinite(max), max, ScalarLike(max, 0)));
  Node shifted =
      ops_internal::Binary(op, OpType::Sub, x, ops_internal::BroadcastBack(op, shift, x.shape(), norm));
  Node sum = ops_internal::Reduce(op, OpType::ReduceSum, Exp(shifted), norm);
  return ops_internal::Binary(op, OpType::Add, Log(sum), shift);
}

Node ReduceVariance(Node x, const std::vector<int>& axes) {
  const char* op = "ReduceVariance";
  CheckNodes(op, {x});
  ops_internal::CheckFloat(op, x);
  const std::vector<int64_t> norm = ops_internal::NormalizeAxes(op, axes, x.shape(), true);
  Node mean = ReduceMean(x, AsInts(norm));
  Node dev = ops_internal::Binary(op, OpType::Sub, x, ops_internal::BroadcastBack(op, mean, x.shape(), norm));
  return ReduceMean(Square(dev), AsInts(norm));
}

Node ReduceAllSum(Node x) { return ReduceNamed("ReduceAllSum", OpType::ReduceSum, x, {}); }
Node ReduceAllMean(Node x) { return ReduceMean(x, {}); }
Node ReduceAllMax(Node x) { return ReduceNamed("ReduceAllMax", OpType::ReduceMax, x, {}); }
Node ReduceAllMin(Node x) { return ReduceNamed("ReduceAllMin", OpType::ReduceMin, x, {}); }
Node ReduceAllProduct(Node x) { return ReduceNamed("ReduceAllProduct", OpType::ReduceProduct, x, {}); }

Node ReduceAndKeep(Node x, const std::function<Node(Node, const std::vector<int>&)>& reduce,
                   const std::vector<int>& axes) {
  const char* op = "ReduceAndKeep";
  CheckNodes(op, {x});
  if (!reduce) kiln::detail::Throw("{}: no reduce function given", op);
  const std::vector<int64_t> norm = ops_internal::NormalizeAxes(op, axes, x.shape(), true);
  Node reduced = reduce(x, AsInts(norm));
  CheckNodes(op, {x, reduced});
  if (reduced.rank() != x.rank() - static_cast<int>(norm.size())) {
    kiln::detail::Throw("{}: reducing {} over axes [{}] returned {}, which is not a reduction of those axes",
                        op, x.shape(), fmt::join(norm, ", "), reduced.shape());
  }
  return ops_internal::ReshapeTo(op, reduced, ops_internal::KeepDims(x.shape(), norm));
}

Node MaskedReduceSum(Node x, Node mask, const std::vector<int>& axes) {
  CheckMasked("MaskedReduceSum", x, mask);  // Before the fill value is made.
  return MaskedReduce("MaskedReduceSum", OpType::ReduceSum, x, mask, ScalarLike(x, 0), axes);
}

Node MaskedReduceMean(Node x, Node mask, const std::vector<int>& axes) {
  const char* op = "MaskedReduceMean";
  CheckMasked(op, x, mask);
  ops_internal::CheckFloat(op, x);
  const std::vector<int64_t> norm = ops_internal::NormalizeAxes(op, axes, x.shape(), true);
  Node m = MaskFor(op, x, mask);
  Node sum = ops_internal::Reduce(op, OpType::ReduceSum, Where(m, x, ScalarLike(x, 0)), norm);
  Node count = ops_internal::Reduce(op, OpType::ReduceSum, ConvertDType(m, x.dtype()), norm);
  return ops_internal::Binary(op, OpType::Div, sum, count);
}

Node MaskedReduceMax(Node x, Node mask, const std::vector<int>& axes) {
  CheckMasked("MaskedReduceMax", x, mask);
  return MaskedReduce("MaskedReduceMax", OpType::ReduceMax, x, mask,
                      ops_internal::Lowest(x.graph(), x.dtype()), axes);
}

Node MaskedReduceMin(Node x, Node mask, const std::vector<int>& axes) {
  CheckMasked("MaskedReduceMin", x, mask);
  return MaskedReduce("MaskedReduceMin", OpType::ReduceMin, x, mask,
                      ops_internal::Highest(x.graph(), x.dtype()), axes);
}

namespace {

/// ArgMax/ArgMin over a normalised `axis`.
Node ArgReduce(const char* op, OpType type, Node x, int axis, DType dtype) {
  CheckNodes(op, {x});
  compute::OpAttributes attrs;
  attrs.axis = ops_internal::NormalizeAxis(op, axis, x.rank(), x.shape());
  attrs.dtype = dtype;
  return Emit(op, type, {x}, std::move(attrs));
}

}  // namespace

Node ArgMax(Node x, int axis, DType dtype) { return ArgReduce("ArgMax", OpType::ArgMax, x, axis, dtype); }
Node ArgMin(Node x, int axis, DType dtype) { return ArgReduce("ArgMin", OpType::ArgMin, x, axis, dtype); }

// ---- The softmax family: shifted by the (gradient-stopped) maximum ----------------------------

namespace {

/// Validated softmax axes (as ints for ReduceAndKeep).
std::vector<int> SoftmaxAxes(const char* op, Node x, const std::vector<int>& axes) {
  CheckNodes(op, {x});
  ops_internal::CheckFloat(op, x);
  return AsInts(ops_internal::NormalizeAxes(op, axes, x.shape(), true));
}

Node KeptMax(Node x, const std::vector<int>& axes) {
  return StopGradient(ReduceAndKeep(
      x, [](Node v, const std::vector<int>& ax) { return ReduceMax(v, ax); }, axes));
}

Node KeptSum(Node x, const std::vector<int>& axes) {
  return ReduceAndKeep(
      x, [](Node v, const std::vector<int>& ax) { return ReduceSum(v, ax); }, axes);
}

}  // namespace

Node Softmax(Node x, const std::vector<int>& axes) {
  const std::vector<int> ax = SoftmaxAxes("Softmax", x, axes);
  Node e = Exp(Sub(x, KeptMax(x, ax)));
  return Div(e, KeptSum(e, ax));
}

Node LogSoftmax(Node x, const std::vector<int>& axes) {
  const std::vector<int> ax = SoftmaxAxes("LogSoftmax", x, axes);
  Node shifted = Sub(x, KeptMax(x, ax));
  return Sub(shifted, Log(KeptSum(Exp(shifted), ax)));
}

Node MaskedSoftmax(Node x, Node mask, const std::vector<int>& axes) {
  const char* op = "MaskedSoftmax";
  const std::vector<int> ax = SoftmaxAxes(op, x, axes);
  CheckNodes(op, {x, mask});
  if (mask.dtype() != DType::Bool) kiln::detail::Throw("{}: mask must be Bool, got {}", op, mask.shape());
  if (!mask.shape().IsScalar() && mask.rank() != x.rank())
    kiln::detail::Throw("{}: mask {} must be a scalar or have the rank of {}", op, mask.shape(), x.shape());
  mask = ops_internal::BroadcastTo(op, mask, x.shape());
  // The max over the unmasked positions; none (or only -inf): shift by 0 instead.
  Node max = KeptMax(Where(mask, x, ops_internal::Lowest(x.graph(), x.dtype())), ax);
  max = Where(IsFinite(max), max, ScalarLike(max, 0));
  Node e = Where(mask, Exp(Sub(x, max)), ScalarLike(x, 0));
  Node sum = KeptSum(e, ax);
  return Div(e, Where(IsZero(sum), ScalarLike(sum, 1), sum));
}

}  // namespace kiln::graph
