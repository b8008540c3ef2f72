// Gradient rules of the data-movement ops: Reshape, Transpose, BroadcastInDim (sums back over
// the broadcast axes), Concatenate, Slice, Pad and Reverse.

#include <algorithm>

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using V = std::vector<Node>;

namespace {

V ReshapeRule(const VJPContext& c) {
  compute::OpAttributes at;
  at.shape = c.OperandShape(0);
  return {Prim(OpType::Reshape, {c.Adjoint()}, std::move(at))};
}

V TransposeRule(const VJPContext& c) {
  const auto& p = c.attrs().permutation;
  compute::OpAttributes at;
  at.permutation.assign(p.size(), 0);
  for (size_t i = 0; i < p.size(); ++i) at.permutation[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  return {Prim(OpType::Transpose, {c.Adjoint()}, std::move(at))};
}

// Sums over the new axes and over the size-1 axes that were expanded, then restores the
// operand's shape (its size-1 axes).
V BroadcastRule(const VJPContext& c) {
  const Shape& in = c.OperandShape(0);
  const Shape& out = c.node().shape();
  const auto& axes = c.attrs().axes;  // operand axis i -> output axis axes[i], increasing
  std::vector<int64_t> summed;
  for (int a = 0; a < out.Rank(); ++a) {
    auto it = std::find(axes.begin(), axes.end(), a);
    if (it == axes.end()) {
      summed.push_back(a);
    } else {
      const size_t i = static_cast<size_t>(it - axes.begin());
      if (in.Dimensions()[i] != out.Dimensions()[static_cast<size_t>(a)]) summed.push_back(a);
    }
  }
  Node g = c.Adjoint();
  if (!summed.empty()) {
    compute::OpAttributes at;
    at.axes = summed;
    g = Prim(OpType::ReduceSum, {g}, std::move(at));
  }
  if (g.shape().Dimensions() != in.Dimensions()) {
    compute::OpAttributes at;
    at.shape = in;
    g = Prim(OpType::Reshape, {g}, std::move(at));
  }
  return {g};
}

Node SliceAxis(Node x, int axis, int64_t start, int64_t limit) {
  compute::OpAttributes at;
  const auto& d = x.shape().Dimensions();
  at.starts.assign(d.size(), 0);
  at.limits = d;
  at.strides.assign(d.size(), 1);
  at.starts[static_cast<size_t>(axis)] = start;
  at.limits[static_cast<size_t>(axis)] = limit;
  return Prim(OpType::Slice, {x}, std::move(at));
}

V ConcatenateRule(const VJPContext& c) {
  const int axis = static_cast<int>(c.attrs().axis);
  V grads;
  int64_t offset = 0;
  for (int i = 0; i < c.NumOperands(); ++i) {
    const int64_t n = c.OperandShape(i).Dimensions()[static_cast<size_t>(axis)];
    grads.push_back(c.Needs(i) ? SliceAxis(c.Adjoint(), axis, offset, offset + n) : Node());
    offset += n;
  }
  return grads;
}

Node PadPrim(Node x, std::vector<compute::PadAxis> padding) {
  compute::OpAttributes at;
  at.padding = std::move(padding);
  return Prim(OpType::Pad, {x, ScalarLike(x, 0)}, std::move(at));
}

// The adjoint goes back to the sliced positions; zeros elsewhere.
V SliceRule(const VJPContext& c) {
  const auto& at = c.attrs();
  const Shape& in = c.OperandShape(0);
  const Shape& out = c.node().shape();
  if (out.Size() == 0) return {Zeros(c.graph(), in)};
  std::vector<compute::PadAxis> pad;
  for (int a = 0; a < in.Rank(); ++a) {
    const size_t i = static_cast<size_t>(a);
    const int64_t n = out.Dimensions()[i];
    const int64_t last = at.starts[i] + (n - 1) * at.strides[i];
    pad.push_back({at.starts[i], in.Dimensions()[i] - 1 - last, at.strides[i] - 1});
  }
  return {PadPrim(c.Adjoint(), pad)};
}

// Operand: undo the edge padding (cropped edges come back as zeros), then take every
// (interior + 1)-th element. Fill value: everything else.
V PadRule(const VJPContext& c) {
  const auto& padding = c.attrs().padding;
  const Shape& in = c.OperandShape(0);
  Node a = c.Adjoint();
  std::vector<compute::PadAxis> unpad;
  for (const compute::PadAxis& p : padding) unpad.push_back({-p.low, -p.high, 0});
  Node g;
  if (in.Size() == 0) {
    g = Zeros(c.graph(), in);
  } else {
    Node unpadded = PadPrim(a, unpad);
    compute::OpAttributes at;
    at.starts.assign(static_cast<size_t>(in.Rank()), 0);
    at.limits = unpadded.shape().Dimensions();
    for (const compute::PadAxis& p : padding) at.strides.push_back(p.interior + 1);
    g = Prim(OpType::Slice, {unpadded}, std::move(at));
  }
  Node gfill;
  if (c.Needs(1)) gfill = Sub(ReduceAllSum(a), ReduceAllSum(g));
  return {g, gfill};
}

V ReverseRule(const VJPContext& c) {
  compute::OpAttributes at;
  at.axes = c.attrs().axes;
  return {Prim(OpType::Reverse, {c.Adjoint()}, std::move(at))};
}

}  // namespace

void RegisterMovementRules(RuleTable& t) {
  t.Set(OpType::Reshape, ReshapeRule);
  t.Set(OpType::Transpose, TransposeRule);
  t.Set(OpType::BroadcastInDim, BroadcastRule);
  t.Set(OpType::Concatenate, ConcatenateRule);
  t.Set(OpType::Slice, SliceRule);
  t.Set(OpType::Pad, PadRule);
  t.Set(OpType::Reverse, ReverseRule);
}

}  // namespace kiln::graph::autodiff
