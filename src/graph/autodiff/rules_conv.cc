// Gradient rule of ConvGeneral (XLA's convolution transpose rules), for every layout, stride,
// dilation, padding (negative too) and group count. Both gradients are again ConvGeneral ops:
//  - input: the adjoint convolved with the spatially reversed kernel whose feature roles are
//    swapped; the adjoint is dilated by the forward strides, the forward input dilation becomes
//    the stride, and the padding is what puts each adjoint element back under the taps that
//    produced it. Groups regroup the kernel's feature axes; batch groups then move the group
//    factor from the feature axis back to the batch axis.
//  - kernel: the input convolved with the adjoint as kernel (batch and feature roles of the input
//    swapped, the adjoint dilated by the forward strides, the forward kernel dilation becomes the
//    stride); the high padding drops what the forward windows never reached. Feature groups
//    become batch groups and the other way round.

#include <cstdint>
#include <vector>

#include "core/check.h"
#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using V = std::vector<Node>;

namespace {

/// One spatial axis of a convolution: sizes and attributes (defaults filled in).
struct ConvAxis {
  int64_t in = 0, kernel = 0, out = 0, stride = 1, lhs_dilation = 1, rhs_dilation = 1, low = 0, high = 0;
  /// Size of the input after its dilation.
  int64_t Dilated() const { return (in - 1) * lhs_dilation + 1; }
  /// Positions spanned by one window, minus one.
  int64_t Reach() const { return (kernel - 1) * rhs_dilation; }
  /// Padded input positions after the last window's reach (never read when the stride does not
  /// divide the padded size).
  int64_t Unused() const { return Dilated() + low + high - Reach() - 1 - (out - 1) * stride; }
};

/// The spatial axes of the convolution `c` describes.
std::vector<ConvAxis> Axes(const VJPContext& c) {
  const compute::OpAttributes& at = c.attrs();
  const compute::ConvDims& d = at.conv;
  const auto dim = [](const Shape& s, int64_t a) { return s.Dimensions()[static_cast<size_t>(a)]; };
  std::vector<ConvAxis> axes(d.input_spatial.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    ConvAxis& a = axes[i];
    a.in = dim(c.OperandShape(0), d.input_spatial[i]);
    a.kernel = dim(c.OperandShape(1), d.kernel_spatial[i]);
    a.out = dim(c.node().shape(), d.output_spatial[i]);
    if (a.in == Shape::kDynamic || a.kernel == Shape::kDynamic || a.out == Shape::kDynamic) {
      kiln::detail::Throw("ConvGeneral: the gradient needs static spatial axes; {} has a dynamic one",
                          c.OperandShape(0));
    }
    if (!at.strides.empty()) a.stride = at.strides[i];
    if (!at.input_dilations.empty()) a.lhs_dilation = at.input_dilations[i];
    if (!at.kernel_dilations.empty()) a.rhs_dilation = at.kernel_dilations[i];
    if (!at.padding.empty()) {
      a.low = at.padding[i].low;
      a.high = at.padding[i].high;
    }
  }
  return axes;
}

/// `x` with its axes permuted by `perm`.
Node TransposeTo(Node x, std::vector<int64_t> perm) {
  compute::OpAttributes at;
  at.permutation = std::move(perm);
  return Prim(OpType::Transpose, {x}, std::move(at));
}

/// `x` reshaped to `dims` (same dtype).
Node ReshapeTo(Node x, const std::vector<int64_t>& dims) {
  compute::OpAttributes at;
  at.shape = Shape(x.dtype(), dims);
  return Prim(OpType::Reshape, {x}, std::move(at));
}

/// `x` reversed along `axes`.
Node ReverseAxes(Node x, std::vector<int64_t> axes) {
  compute::OpAttributes at;
  at.axes = std::move(axes);
  return Prim(OpType::Reverse, {x}, std::move(at));
}

/// The kernel of the input gradient for `groups` groups: the forward kernel as [in, out, spatial...]
/// (out = groups * m, group-major) regrouped to [m, groups * in, spatial...] (each group's output
/// features become its input features and the other way round), spatially reversed.
Node RegroupedKernel(Node k, const compute::ConvDims& d, int64_t groups) {
  std::vector<int64_t> perm = {d.kernel_input_feature, d.kernel_output_feature};
  perm.insert(perm.end(), d.kernel_spatial.begin(), d.kernel_spatial.end());
  Node canonical = TransposeTo(k, perm);
  const std::vector<int64_t>& cd = canonical.shape().Dimensions();
  const int64_t in = cd[0], m = cd[1] / groups;
  std::vector<int64_t> split = {in, groups, m}, split_perm = {2, 1, 0}, merged = {m, groups * in}, spatial;
  for (size_t i = 2; i < cd.size(); ++i) {
    split.push_back(cd[i]);
    split_perm.push_back(static_cast<int64_t>(i) + 1);
    merged.push_back(cd[i]);
    spatial.push_back(static_cast<int64_t>(i));
  }
  Node regrouped = ReshapeTo(TransposeTo(ReshapeTo(canonical, split), split_perm), merged);
  return ReverseAxes(regrouped, spatial);
}

/// `x` with the major factor `groups` of axis `from` moved to become the major factor of axis
/// `to` (x[.., (g, i) at from, .., j at to, ..] -> x[.., i at from, .., (g, j) at to, ..]).
Node MoveGroups(Node x, int64_t from, int64_t to, int64_t groups) {
  const std::vector<int64_t>& d = x.shape().Dimensions();
  std::vector<int64_t> split, perm, merged;
  const auto split_index = [from](int64_t a) { return a + (a > from ? 1 : 0); };
  for (int64_t a = 0; a < static_cast<int64_t>(d.size()); ++a) {
    const int64_t n = d[static_cast<size_t>(a)];
    if (a == from) {
      split.push_back(groups);
      split.push_back(n / groups);
      perm.push_back(from + 1);
      merged.push_back(n / groups);
    } else if (a == to) {
      split.push_back(n);
      perm.push_back(from);
      perm.push_back(split_index(a));
      merged.push_back(groups * n);
    } else {
      split.push_back(n);
      perm.push_back(split_index(a));
      merged.push_back(n);
    }
  }
  return ReshapeTo(TransposeTo(ReshapeTo(x, split), perm), merged);
}

/// d(loss)/d(input): a convolution of the adjoint with the reversed, role-swapped kernel.
Node InputGradient(const VJPContext& c, const std::vector<ConvAxis>& axes) {
  const compute::OpAttributes& at = c.attrs();
  const compute::ConvDims& d = at.conv;
  const int64_t groups = at.feature_groups * at.batch_groups;
  compute::OpAttributes bw;
  compute::ConvDims& b = bw.conv;
  b.input_batch = d.output_batch;
  b.input_feature = d.output_feature;
  b.input_spatial = d.output_spatial;
  b.output_batch = d.input_batch;
  b.output_feature = d.input_feature;
  b.output_spatial = d.input_spatial;
  Node kernel;
  if (groups == 1) {
    kernel = ReverseAxes(c.X(1), d.kernel_spatial);
    b.kernel_input_feature = d.kernel_output_feature;
    b.kernel_output_feature = d.kernel_input_feature;
    b.kernel_spatial = d.kernel_spatial;
  } else {
    kernel = RegroupedKernel(c.X(1), d, groups);
    b.kernel_input_feature = 0;
    b.kernel_output_feature = 1;
    for (size_t i = 0; i < axes.size(); ++i) b.kernel_spatial.push_back(static_cast<int64_t>(i) + 2);
  }
  for (const ConvAxis& a : axes) {
    bw.strides.push_back(a.lhs_dilation);
    bw.input_dilations.push_back(a.stride);
    bw.kernel_dilations.push_back(a.rhs_dilation);
    bw.padding.push_back({a.Reach() - a.low, a.Dilated() - 1 - (a.out - 1) * a.stride + a.low, 0});
  }
  bw.feature_groups = groups;
  Node g = Prim(OpType::ConvGeneral, {c.Adjoint(), kernel}, std::move(bw));
  // Batch groups: the backward convolution put group g's batch at features [g*C, (g+1)*C).
  if (at.batch_groups > 1) g = MoveGroups(g, d.input_feature, d.input_batch, at.batch_groups);
  return g;
}

/// d(loss)/d(kernel): a convolution of the input (batch and features swapped) with the adjoint.
Node KernelGradient(const VJPContext& c, const std::vector<ConvAxis>& axes) {
  const compute::OpAttributes& at = c.attrs();
  const compute::ConvDims& d = at.conv;
  compute::OpAttributes bw;
  compute::ConvDims& b = bw.conv;
  b.input_batch = d.input_feature;
  b.input_feature = d.input_batch;
  b.input_spatial = d.input_spatial;
  b.kernel_input_feature = d.output_batch;
  b.kernel_output_feature = d.output_feature;
  b.kernel_spatial = d.output_spatial;
  b.output_batch = d.kernel_input_feature;
  b.output_feature = d.kernel_output_feature;
  b.output_spatial = d.kernel_spatial;
  for (const ConvAxis& a : axes) {
    bw.strides.push_back(a.rhs_dilation);
    bw.input_dilations.push_back(a.lhs_dilation);
    bw.kernel_dilations.push_back(a.stride);
    bw.padding.push_back({a.low, a.high - a.Unused(), 0});
  }
  bw.feature_groups = at.batch_groups;
  bw.batch_groups = at.feature_groups;
  return Prim(OpType::ConvGeneral, {c.X(0), c.Adjoint()}, std::move(bw));
}

// Both gradients; zeros when an operand or the result is empty (no tap reads anything).
V ConvRule(const VJPContext& c) {
  const Shape &xs = c.OperandShape(0), &ks = c.OperandShape(1);
  Node gx, gk;
  if (KnownEmpty(xs) || KnownEmpty(ks) || KnownEmpty(c.node().shape())) {
    // No tap reads anything: both gradients are zero.
    if (c.Needs(0)) gx = ZerosOf(c.graph(), xs);
    if (c.Needs(1)) gk = ZerosOf(c.graph(), ks);
    return {gx, gk};
  }
  const std::vector<ConvAxis> axes = Axes(c);
  if (c.Needs(0)) gx = InputGradient(c, axes);
  if (c.Needs(1)) gk = KernelGradient(c, axes);
  return {gx, gk};
}

}  // namespace

void RegisterConvRules(RuleTable& t) { t.Set(OpType::ConvGeneral, ConvRule); }

}  // namespace kiln::graph::autodiff
