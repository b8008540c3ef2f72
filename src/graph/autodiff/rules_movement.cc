// Gradient rules of the data-movement ops: Reshape, Transpose, BroadcastInDim (sums back over
// the broadcast axes), Concatenate, Slice, Pad and Reverse.

#include <algorithm>

#include "core/check.h"
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

/// x reversed along `axis`.
Node ReverseAxis(Node x, int axis) {
  compute::OpAttributes at;
  at.axes = {axis};
  return Prim(OpType::Reverse, {x}, std::move(at));
}

// Each operand's part of the adjoint. Parts before a dynamic-sized operand sit at static offsets
// from the start, parts after it at static offsets from the end (sliced from the reversed
// adjoint); the dynamic one is what lies between. At most one operand may be dynamic there.
V ConcatenateRule(const VJPContext& c) {
  const int axis = static_cast<int>(c.attrs().axis);
  const int count = c.NumOperands();
  std::vector<int64_t> sizes;
  int dynamic = -1;
  for (int i = 0; i < count; ++i) {
    sizes.push_back(c.OperandShape(i).Dimensions()[static_cast<size_t>(axis)]);
    if (sizes.back() != Shape::kDynamic) continue;
    if (dynamic >= 0) {
      kiln::detail::Throw(
          "Concatenate: the gradient needs at most one operand dynamic on the concatenated axis {}; {} and "
          "{} are",
          axis, c.OperandShape(dynamic), c.OperandShape(i));
    }
    dynamic = i;
  }
  const int64_t kEnd = Shape::kDynamic;  // A slice limit: to the end of a dynamic axis.
  V grads;
  int64_t before = 0;  // Elements of the operands before i.
  for (int i = 0; i < count; ++i) {
    int64_t after = 0;  // Elements of the operands after i (static when i >= dynamic).
    for (int j = i + 1; j < count && (dynamic < 0 || i >= dynamic); ++j)
      after += sizes[static_cast<size_t>(j)];
    const int64_t n = sizes[static_cast<size_t>(i)];
    Node part;
    if (c.Needs(i)) {
      const Node a = c.Adjoint();
      if (dynamic < 0 || i < dynamic) {
        part = SliceAxis(a, axis, before, before + n);
      } else if (i > dynamic) {
        part = ReverseAxis(SliceAxis(ReverseAxis(a, axis), axis, after, after + n), axis);
      } else {
        part = ReverseAxis(SliceAxis(ReverseAxis(SliceAxis(a, axis, before, kEnd), axis), axis, after, kEnd),
                           axis);
      }
    }
    grads.push_back(part);
    if (i < dynamic || dynamic < 0) before += n;
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
  if (KnownEmpty(out)) return {Zeros(c.graph(), in)};
  if (in.IsDynamic()) {
    // The adjoint written into zeros at the slice's start: the sizes need not be known.
    for (int a = 0; a < in.Rank(); ++a) {
      if (at.strides[static_cast<size_t>(a)] != 1)
        kiln::detail::Throw("Slice: the gradient of a strided slice of {} needs static axes", in);
    }
    std::vector<Node> starts;
    for (int64_t s : at.starts) starts.push_back(Scalar(c.graph(), DType::Int64, s));
    return {Prim(OpType::DynamicUpdateSlice, [&] {
      std::vector<Node> ops = {Zeros(c.graph(), in), c.Adjoint()};
      ops.insert(ops.end(), starts.begin(), starts.end());
      return ops;
    }())};
  }
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
  if (KnownEmpty(in)) {
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
