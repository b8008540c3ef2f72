// Gradient rules of the reductions: ReduceSum, ReduceProduct (exact with zeros, at every order), and
// ReduceMax/ReduceMin, which send the gradient to the first extreme element (row-major over the
// reduced axes) only.

#include <algorithm>

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using V = std::vector<Node>;

namespace {

/// `reduced` (the operand reduced over `axes`) broadcast back to `shape` (same dtype as reduced).
Node BroadcastBack(Node reduced, const Shape& shape, const std::vector<int64_t>& axes) {
  compute::OpAttributes at;
  at.shape = shape.WithDType(reduced.dtype());
  for (int a = 0; a < shape.Rank(); ++a)
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) at.axes.push_back(a);
  return Prim(OpType::BroadcastInDim, {reduced}, std::move(at));
}

Node Reduce(OpType op, Node x, const std::vector<int64_t>& axes) {
  compute::OpAttributes at;
  at.axes = axes;
  return Prim(op, {x}, std::move(at));
}

V SumRule(const VJPContext& c) { return {BroadcastBack(c.Adjoint(), c.OperandShape(0), c.attrs().axes)}; }

/// `x` shifted by `d` along its last axis (towards higher indices), filled with ones.
Node ShiftInOnes(Node x, int64_t d) {
  std::vector<compute::PadAxis> pad(static_cast<size_t>(x.rank()));
  pad.back() = {d, -d, 0};
  compute::OpAttributes at;
  at.padding = std::move(pad);
  return Prim(OpType::Pad, {x, ScalarLike(x, 1)}, std::move(at));
}

/// Exclusive running product along the last axis: out[i] = x[0] * ... * x[i-1] (a log-depth
/// scan of multiplications, so it is exact with zeros and differentiable again).
Node ExclusiveProduct(Node x) {
  const int64_t n = x.shape().Dimensions().back();
  Node p = x;
  for (int64_t d = 1; d < n; d *= 2) p = p * ShiftInOnes(p, d);
  return ShiftInOnes(p, 1);
}

// The product of the other elements of each group, as the product of the exclusive running
// products from the left and from the right: exact with zeros, at every order.
V ProductRule(const VJPContext& c) {
  const auto& axes = c.attrs().axes;
  const Shape& s = c.OperandShape(0);
  Node x = c.X(0);
  // Move the reduced axes last and flatten them: [kept..., n].
  std::vector<int64_t> perm, kept_dims;
  int64_t n = 1;
  for (int a = 0; a < s.Rank(); ++a) {
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) {
      perm.push_back(a);
      kept_dims.push_back(s.Dimensions()[static_cast<size_t>(a)]);
    }
  }
  for (int64_t a : axes) {
    perm.push_back(a);
    n *= s.Dimensions()[static_cast<size_t>(a)];
  }
  if (n == 0 || s.Size() == 0) return {Zeros(c.graph(), s)};
  compute::OpAttributes tr;
  tr.permutation = perm;
  Node moved = Prim(OpType::Transpose, {x}, tr);
  std::vector<int64_t> flat_dims = kept_dims;
  flat_dims.push_back(n);
  compute::OpAttributes rs;
  rs.shape = Shape(s.dtype(), flat_dims);
  Node flat = Prim(OpType::Reshape, {moved}, rs);
  std::vector<int64_t> last = {static_cast<int64_t>(flat_dims.size()) - 1};
  compute::OpAttributes rev;
  rev.axes = last;
  Node left = ExclusiveProduct(flat);
  Node right = Prim(OpType::Reverse, {ExclusiveProduct(Prim(OpType::Reverse, {flat}, rev))}, rev);
  Node a = Prim(OpType::BroadcastInDim, {c.Adjoint()}, [&] {
    compute::OpAttributes b;
    b.shape = rs.shape;
    for (size_t i = 0; i < kept_dims.size(); ++i) b.axes.push_back(static_cast<int64_t>(i));
    return b;
  }());
  Node g = a * Conj(left * right);  // Conj: complex operands' conjugate convention.
  // Back to the operand's layout.
  compute::OpAttributes back;
  back.shape = moved.shape().WithDType(s.dtype());
  g = Prim(OpType::Reshape, {g}, back);
  compute::OpAttributes inv;
  inv.permutation.assign(perm.size(), 0);
  for (size_t i = 0; i < perm.size(); ++i)
    inv.permutation[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {Prim(OpType::Transpose, {g}, inv)};
}

// ReduceMax / ReduceMin: the first element (row-major over the reduced axes) equal to the
// result gets the whole gradient; NaN results go to the first NaN.
V ExtremeRule(const VJPContext& c) {
  const auto& axes = c.attrs().axes;
  Node x = c.X(0);
  const Shape& s = x.shape();
  Node yb = BroadcastBack(c.Y(), s, axes);
  Node hit = LogicalOr(Equal(x, yb), LogicalAnd(IsNaN(x), IsNaN(yb)));
  int64_t count = 1;
  for (int64_t a : axes) count *= s.Dimensions()[static_cast<size_t>(a)];
  const DType it = count < (int64_t{1} << 31) ? DType::Int32 : DType::Int64;
  Graph& g = c.graph();
  // Row-major position within the reduced group.
  Node pos = Zeros(g, s.WithDType(it));
  int64_t stride = 1;
  for (size_t k = axes.size(); k-- > 0;) {
    pos = pos + Iota(g, s.WithDType(it), static_cast<int>(axes[k])) * stride;
    stride *= s.Dimensions()[static_cast<size_t>(axes[k])];
  }
  Node first = Reduce(OpType::ReduceMin, Where(hit, pos, ScalarLike(pos, count)), axes);
  Node chosen = Equal(pos, BroadcastBack(first, s, axes));
  Node a = BroadcastBack(c.Adjoint(), s, axes);
  return {Where(chosen, a, ScalarLike(a, 0))};
}

}  // namespace

void RegisterReduceRules(RuleTable& t) {
  t.Set(OpType::ReduceSum, SumRule);
  t.Set(OpType::ReduceProduct, ProductRule);
  t.Set(OpType::ReduceMax, ExtremeRule);
  t.Set(OpType::ReduceMin, ExtremeRule);
  for (OpType op : {OpType::ReduceLogicalAnd, OpType::ReduceLogicalOr, OpType::ReduceLogicalXor,
                    OpType::ReduceBitwiseAnd, OpType::ReduceBitwiseOr, OpType::ReduceBitwiseXor})
    t.None(op, "a Bool or integer reduction");
  t.None(OpType::ArgMax, "an index with an integer result");
  t.None(OpType::ArgMin, "an index with an integer result");
}

}  // namespace kiln::graph::autodiff
