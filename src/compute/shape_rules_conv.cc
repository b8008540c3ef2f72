// Shape rules: ConvGeneral, ReduceWindow, SelectAndScatter (XLA's / StableHLO's semantics).
// Empty strides, dilations or padding mean all ones or no padding.

#include <fmt/ranges.h>

#include <string>

#include "compute/shape_rules.h"
#include "core/check.h"
#include "core/checked.h"

namespace kiln::compute {

namespace {

void CheckNumeric(OpType op, DType d) {
  if (!InDTypeClass(d, DTypeClass::Numeric))
    FailShape(op, fmt::format("operand dtype {} is not a numeric dtype (integer or float)", d));
}

/// `values` of an attribute with one entry per window axis (empty: all `fill`); each at least `min`.
std::vector<int64_t> PerAxis(OpType op, const char* what, const std::vector<int64_t>& values, size_t n,
                             int64_t fill, int64_t min) {
  if (values.empty()) return std::vector<int64_t>(n, fill);
  if (values.size() != n) FailShape(op, fmt::format("{} has {} entries for {} axes", what, values.size(), n));
  for (int64_t v : values) {
    if (v < min) FailShape(op, fmt::format("{} [{}] must be >= {}", what, fmt::join(values, ", "), min));
  }
  return values;
}

std::vector<PadAxis> PerAxisPadding(OpType op, const std::vector<PadAxis>& padding, size_t n) {
  if (padding.empty()) return std::vector<PadAxis>(n);
  if (padding.size() != n)
    FailShape(op, fmt::format("padding has {} entries for {} axes", padding.size(), n));
  for (const PadAxis& p : padding) {
    if (p.interior != 0) FailShape(op, "interior padding is not used by window ops (use input dilations)");
  }
  return padding;
}

/// Output size of one window axis: the input of size `n` dilated by `base_dilation`, padded by
/// `pad`, scanned by a window of `window` taps dilated by `window_dilation` with `stride`.
int64_t WindowedSize(OpType op, int axis, int64_t n, int64_t window, int64_t stride, const PadAxis& pad,
                     int64_t base_dilation, int64_t window_dilation) {
  const std::string what = fmt::format("{}: axis {}", OpName(op), axis);
  const int64_t dilated =
      n == 0 ? 0 : detail::CheckedAdd(detail::CheckedMul(n - 1, base_dilation, what), 1, what);
  const int64_t padded = detail::CheckedAdd(detail::CheckedAdd(dilated, pad.low, what), pad.high, what);
  if (padded < 0)
    FailShape(op, fmt::format("axis {}: size {} after dilation and padding ({}, {}) is negative", axis,
                              padded, pad.low, pad.high));
  if (window < 0) FailShape(op, fmt::format("axis {}: negative window size {}", axis, window));
  const int64_t span =
      window == 0 ? 0 : detail::CheckedAdd(detail::CheckedMul(window - 1, window_dilation, what), 1, what);
  if (padded < span) return 0;
  return (padded - span) / stride + 1;
}

void CheckLayoutAxes(OpType op, const char* what, const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank)
      FailShape(op, fmt::format("{} axes [{}]: axis {} out of range for rank {}", what, fmt::join(axes, ", "),
                                a, rank));
    if (seen[static_cast<size_t>(a)])
      FailShape(op, fmt::format("{} axes [{}]: axis {} repeated", what, fmt::join(axes, ", "), a));
    seen[static_cast<size_t>(a)] = true;
  }
}

}  // namespace

Shape ConvolutionShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  const Shape &x = in[0], &k = in[1];
  if (x.dtype() != k.dtype())
    FailShape(op, fmt::format("input and kernel have different dtypes, {} and {}", x.dtype(), k.dtype()));
  CheckNumeric(op, x.dtype());
  const ConvDims& c = at.conv;
  const size_t n = c.input_spatial.size();
  const int rank = x.Rank();
  if (rank < 2) FailShape(op, fmt::format("input {} needs a batch and a feature axis", x));
  if (static_cast<size_t>(rank) != n + 2)
    FailShape(op, fmt::format("input {} of rank {} needs {} spatial axes, got {}", x, rank, rank - 2, n));
  if (k.Rank() != rank) FailShape(op, fmt::format("kernel {} must have the input's rank {}", k, rank));
  if (c.kernel_spatial.size() != n || c.output_spatial.size() != n)
    FailShape(op, fmt::format("input, kernel and output spatial axis lists differ in length ({}, {}, {})", n,
                              c.kernel_spatial.size(), c.output_spatial.size()));
  std::vector<int64_t> axes = {c.input_batch, c.input_feature};
  axes.insert(axes.end(), c.input_spatial.begin(), c.input_spatial.end());
  CheckLayoutAxes(op, "input", axes, rank);
  axes = {c.kernel_input_feature, c.kernel_output_feature};
  axes.insert(axes.end(), c.kernel_spatial.begin(), c.kernel_spatial.end());
  CheckLayoutAxes(op, "kernel", axes, rank);
  axes = {c.output_batch, c.output_feature};
  axes.insert(axes.end(), c.output_spatial.begin(), c.output_spatial.end());
  CheckLayoutAxes(op, "output", axes, rank);

  const int64_t fg = at.feature_groups, bg = at.batch_groups;
  if (fg < 1 || bg < 1)
    FailShape(op, fmt::format("feature_groups ({}) and batch_groups ({}) must be >= 1", fg, bg));
  if (fg > 1 && bg > 1)
    FailShape(op, fmt::format("feature_groups ({}) and batch_groups ({}) cannot both be > 1", fg, bg));
  const auto dim = [](const Shape& s, int64_t a) { return s.Dimensions()[static_cast<size_t>(a)]; };
  const int64_t batch = dim(x, c.input_batch), features = dim(x, c.input_feature);
  const int64_t kin = dim(k, c.kernel_input_feature), kout = dim(k, c.kernel_output_feature);
  if (features != kin * fg)
    FailShape(
        op, fmt::format("input features {} (input {}) must equal the kernel's input features {} (kernel {}) "
                        "times feature_groups {}",
                        features, x, kin, k, fg));
  if (kout % fg != 0)
    FailShape(op, fmt::format("kernel output features {} not divisible by feature_groups {}", kout, fg));
  if (kout % bg != 0)
    FailShape(op, fmt::format("kernel output features {} not divisible by batch_groups {}", kout, bg));
  if (batch % bg != 0)
    FailShape(op, fmt::format("input batch {} not divisible by batch_groups {}", batch, bg));

  const std::vector<int64_t> strides = PerAxis(op, "strides", at.strides, n, 1, 1);
  const std::vector<int64_t> lhs_dil = PerAxis(op, "input_dilations", at.input_dilations, n, 1, 1);
  const std::vector<int64_t> rhs_dil = PerAxis(op, "kernel_dilations", at.kernel_dilations, n, 1, 1);
  const std::vector<PadAxis> padding = PerAxisPadding(op, at.padding, n);
  std::vector<int64_t> dims(static_cast<size_t>(rank), 0);
  dims[static_cast<size_t>(c.output_batch)] = batch / bg;
  dims[static_cast<size_t>(c.output_feature)] = kout;
  for (size_t i = 0; i < n; ++i) {
    dims[static_cast<size_t>(c.output_spatial[i])] =
        WindowedSize(op, static_cast<int>(i), dim(x, c.input_spatial[i]), dim(k, c.kernel_spatial[i]),
                     strides[i], padding[i], lhs_dil[i], rhs_dil[i]);
  }
  return Shape(x.dtype(), dims);
}

Shape WindowShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  const Shape& x = in[0];
  CheckNumeric(op, x.dtype());
  const size_t n = static_cast<size_t>(x.Rank());
  if (at.window.size() != n)
    FailShape(op, fmt::format("window [{}] needs one size per axis of {}", fmt::join(at.window, ", "), x));
  for (int64_t w : at.window) {
    if (w < 1) FailShape(op, fmt::format("window sizes [{}] must be >= 1", fmt::join(at.window, ", ")));
  }
  const std::vector<int64_t> strides = PerAxis(op, "strides", at.strides, n, 1, 1);
  const std::vector<PadAxis> padding = PerAxisPadding(op, at.padding, n);
  std::vector<int64_t> base(n, 1), wdil(n, 1);
  if (op == OpType::ReduceWindow) {
    if (at.reduce_kind == ReduceKind::Set) FailShape(op, "reduce_kind must be Sum, Product, Max or Min");
    base = PerAxis(op, "input_dilations", at.input_dilations, n, 1, 1);
    wdil = PerAxis(op, "kernel_dilations", at.kernel_dilations, n, 1, 1);
  } else {
    if (at.reduce_kind != ReduceKind::Max && at.reduce_kind != ReduceKind::Min)
      FailShape(op, "reduce_kind (the selection) must be Max or Min");
    for (const PadAxis& p : padding) {
      if (p.low < 0 || p.high < 0) FailShape(op, "negative padding is not supported");
    }
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < n; ++i) {
    dims.push_back(WindowedSize(op, static_cast<int>(i), x.Dimensions()[i], at.window[i], strides[i],
                                padding[i], base[i], wdil[i]));
  }
  if (op == OpType::ReduceWindow) return Shape(x.dtype(), dims);
  const Shape& source = in[1];
  if (source.dtype() != x.dtype())
    FailShape(op,
              fmt::format("operand and source have different dtypes, {} and {}", x.dtype(), source.dtype()));
  if (source.Dimensions() != dims)
    FailShape(op, fmt::format("source {} must have the windows' shape [{}] of operand {}", source,
                              fmt::join(dims, ", "), x));
  return x;
}

}  // namespace kiln::compute
