// Graph frontend: convolutions (ConvGeneral, Convolve), window reductions and pooling
// (ReduceWindow, MaxPool...), SelectAndScatter and image resizing (Interpolate, built from
// DotGeneral with constant interpolation weights).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops_internal.h"
#include "kiln/graph/conv.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using compute::OpType;
using compute::PadAxis;
using ops_internal::CheckNodes;
using ops_internal::Emit;

namespace {

/// `values` as one entry per spatial axis: a single value repeats, an empty list gives `fill`.
std::vector<int64_t> Expand(const char* op, const char* what, const std::vector<int>& values, size_t n,
                            int64_t fill) {
  if (values.empty()) return std::vector<int64_t>(n, fill);
  if (values.size() == 1) return std::vector<int64_t>(n, values[0]);
  if (values.size() != n)
    kiln::detail::Throw("{}: {} has {} entries for {} spatial axes", op, what, values.size(), n);
  return {values.begin(), values.end()};
}

/// Padding giving output size ceil(size / stride) for a window spanning `span` elements. On a
/// dynamic axis (size kDynamic) only stride 1 pads independently of the size.
PadAxis SamePadding(const char* op, int64_t size, int64_t span, int64_t stride) {
  if (size == Shape::kDynamic) {
    if (stride != 1) {
      kiln::detail::Throw(
          "{}: PadSame with stride {} on a dynamic spatial axis: the padding depends on its size (use stride "
          "1 "
          "or explicit padding)",
          op, stride);
    }
    const int64_t total = std::max<int64_t>(span - 1, 0);
    return {total / 2, total - total / 2, 0};
  }
  const int64_t out = (size + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + span - size, 0);
  return {total / 2, total - total / 2, 0};
}

/// The spatial axes of a rank-`rank` value: 1..rank-2 (channels last) or 2..rank-1 (first).
std::vector<int64_t> SpatialAxes(int rank, bool channels_first) {
  std::vector<int64_t> axes;
  for (int a = 0; a < rank - 2; ++a) axes.push_back(a + (channels_first ? 2 : 1));
  return axes;
}

void CheckSpatialRank(const char* op, Node x) {
  if (x.rank() < 3 || x.rank() > 5)
    kiln::detail::Throw("{}: x {} must have rank 3 to 5 (batch, 1 to 3 spatial axes, channels)", op,
                        x.shape());
}

}  // namespace

// ---- Convolution ----------------------------------------------------------------------------------

Node ConvGeneral(Node input, Node kernel, const compute::ConvDims& dims, const std::vector<int64_t>& strides,
                 const std::vector<PadAxis>& padding, const std::vector<int64_t>& input_dilations,
                 const std::vector<int64_t>& kernel_dilations, int64_t feature_groups, int64_t batch_groups) {
  CheckNodes("ConvGeneral", {input, kernel});
  compute::OpAttributes attrs;
  attrs.conv = dims;
  attrs.strides = strides;
  attrs.padding = padding;
  attrs.input_dilations = input_dilations;
  attrs.kernel_dilations = kernel_dilations;
  attrs.feature_groups = feature_groups;
  attrs.batch_groups = batch_groups;
  return Emit("ConvGeneral", OpType::ConvGeneral, {input, kernel}, std::move(attrs));
}

ConvBuilder& ConvBuilder::Strides(int stride) { return Strides(std::vector<int>{stride}); }
ConvBuilder& ConvBuilder::Strides(const std::vector<int>& strides) {
  strides_ = strides;
  return *this;
}
ConvBuilder& ConvBuilder::PadSame() {
  same_ = true;
  padding_.clear();
  return *this;
}
ConvBuilder& ConvBuilder::PadValid() {
  same_ = false;
  padding_.clear();
  return *this;
}
ConvBuilder& ConvBuilder::Padding(const std::vector<PadAxis>& padding) {
  same_ = false;
  padding_ = padding;
  return *this;
}
ConvBuilder& ConvBuilder::Dilations(int dilation) { return Dilations(std::vector<int>{dilation}); }
ConvBuilder& ConvBuilder::Dilations(const std::vector<int>& dilations) {
  dilations_ = dilations;
  return *this;
}
ConvBuilder& ConvBuilder::InputDilations(int dilation) { return InputDilations(std::vector<int>{dilation}); }
ConvBuilder& ConvBuilder::InputDilations(const std::vector<int>& dilations) {
  input_dilations_ = dilations;
  return *this;
}
ConvBuilder& ConvBuilder::ChannelGroupCount(int count) {
  channel_groups_ = count;
  return *this;
}
ConvBuilder& ConvBuilder::BatchGroupCount(int count) {
  batch_groups_ = count;
  return *this;
}
ConvBuilder& ConvBuilder::ChannelsFirst() {
  channels_first_ = true;
  has_axes_ = false;
  return *this;
}
ConvBuilder& ConvBuilder::ChannelsLast() {
  channels_first_ = false;
  has_axes_ = false;
  return *this;
}
ConvBuilder& ConvBuilder::AxesConfig(const compute::ConvDims& dims) {
  axes_ = dims;
  has_axes_ = true;
  return *this;
}

Node ConvBuilder::Done() const {
  const char* op = "Convolve";
  CheckNodes(op, {x_, kernel_});
  compute::ConvDims d = axes_;
  if (!has_axes_) {
    CheckSpatialRank(op, x_);
    if (kernel_.rank() != x_.rank())
      kiln::detail::Throw("Convolve: kernel {} must have the rank of x {}", kernel_.shape(), x_.shape());
    const int rank = x_.rank();
    const std::vector<int64_t> spatial = SpatialAxes(rank, channels_first_);
    d = {};
    d.input_batch = d.output_batch = 0;
    d.input_feature = d.output_feature = channels_first_ ? 1 : rank - 1;
    d.input_spatial = d.output_spatial = spatial;
    if (channels_first_) {
      d.kernel_input_feature = 0;
      d.kernel_output_feature = 1;
      d.kernel_spatial = spatial;
    } else {
      d.kernel_input_feature = rank - 2;
      d.kernel_output_feature = rank - 1;
      for (int a = 0; a < rank - 2; ++a) d.kernel_spatial.push_back(a);
    }
  }
  const size_t n = d.input_spatial.size();
  if (d.kernel_spatial.size() != n || x_.rank() != static_cast<int>(n) + 2 || kernel_.rank() != x_.rank())
    kiln::detail::Throw("Convolve: the axes configuration does not fit x {} and kernel {}", x_.shape(),
                        kernel_.shape());
  for (int64_t a : d.input_spatial) {
    if (a < 0 || a >= x_.rank())
      kiln::detail::Throw("Convolve: spatial axis {} out of range for x {}", a, x_.shape());
  }
  for (int64_t a : d.kernel_spatial) {
    if (a < 0 || a >= kernel_.rank())
      kiln::detail::Throw("Convolve: spatial axis {} out of range for kernel {}", a, kernel_.shape());
  }
  const std::vector<int64_t> strides = Expand(op, "Strides", strides_, n, 1);
  const std::vector<int64_t> dilations = Expand(op, "Dilations", dilations_, n, 1);
  const std::vector<int64_t> input_dilations = Expand(op, "InputDilations", input_dilations_, n, 1);
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || input_dilations[i] < 1)
      kiln::detail::Throw("Convolve: strides and dilations must be >= 1");
  }
  std::vector<PadAxis> padding = padding_;
  if (same_) {
    for (size_t i = 0; i < n; ++i) {
      const int64_t size = x_.shape().Dimensions()[static_cast<size_t>(d.input_spatial[i])];
      const int64_t k = kernel_.shape().Dimensions()[static_cast<size_t>(d.kernel_spatial[i])];
      if (k == Shape::kDynamic)
        kiln::detail::Throw("Convolve: PadSame needs the kernel's spatial axes static, got {}",
                            kernel_.shape());
      const int64_t dilated_size = size == Shape::kDynamic ? size
                                   : size == 0             ? 0
                                                           : (size - 1) * input_dilations[i] + 1;
      padding.push_back(SamePadding(op, dilated_size, k == 0 ? 0 : (k - 1) * dilations[i] + 1, strides[i]));
    }
  } else if (!padding.empty() && padding.size() != n) {
    kiln::detail::Throw("Convolve: Padding has {} entries for {} spatial axes", padding.size(), n);
  }
  if (channel_groups_ < 1 || batch_groups_ < 1)
    kiln::detail::Throw("Convolve: ChannelGroupCount ({}) and BatchGroupCount ({}) must be >= 1",
                        channel_groups_, batch_groups_);
  compute::OpAttributes attrs;
  attrs.conv = d;
  attrs.strides = strides;
  attrs.padding = padding;
  attrs.input_dilations = input_dilations;
  attrs.kernel_dilations = dilations;
  attrs.feature_groups = channel_groups_;
  attrs.batch_groups = batch_groups_;
  return Emit(op, OpType::ConvGeneral, {x_, kernel_}, std::move(attrs));
}

// ---- Windows ----------------------------------------------------------------------------------------

Node ReduceWindow(Node x, compute::ReduceKind kind, const std::vector<int64_t>& window,
                  const std::vector<int64_t>& strides, const std::vector<PadAxis>& padding,
                  const std::vector<int64_t>& dilations, const std::vector<int64_t>& input_dilations) {
  CheckNodes("ReduceWindow", {x});
  compute::OpAttributes attrs;
  attrs.reduce_kind = kind;
  attrs.window = window;
  attrs.strides = strides;
  attrs.padding = padding;
  attrs.kernel_dilations = dilations;
  attrs.input_dilations = input_dilations;
  return Emit("ReduceWindow", OpType::ReduceWindow, {x}, std::move(attrs));
}

namespace {

Node SelectAndScatter(const char* op, compute::ReduceKind kind, Node operand, Node source,
                      const std::vector<int64_t>& window, const std::vector<int64_t>& strides,
                      const std::vector<PadAxis>& padding) {
  CheckNodes(op, {operand, source});
  compute::OpAttributes attrs;
  attrs.reduce_kind = kind;
  attrs.window = window;
  attrs.strides = strides;
  attrs.padding = padding;
  return Emit(op, OpType::SelectAndScatter, {operand, source}, std::move(attrs));
}

}  // namespace

Node SelectAndScatterMax(Node operand, Node source, const std::vector<int64_t>& window,
                         const std::vector<int64_t>& strides, const std::vector<PadAxis>& padding) {
  return SelectAndScatter("SelectAndScatterMax", compute::ReduceKind::Max, operand, source, window, strides,
                          padding);
}
Node SelectAndScatterMin(Node operand, Node source, const std::vector<int64_t>& window,
                         const std::vector<int64_t>& strides, const std::vector<PadAxis>& padding) {
  return SelectAndScatter("SelectAndScatterMin", compute::ReduceKind::Min, operand, source, window, strides,
                          padding);
}

PoolBuilder& PoolBuilder::Window(int size) { return Window(std::vector<int>{size}); }
PoolBuilder& PoolBuilder::Window(const std::vector<int>& sizes) {
  window_ = sizes;
  return *this;
}
PoolBuilder& PoolBuilder::Strides(int stride) { return Strides(std::vector<int>{stride}); }
PoolBuilder& PoolBuilder::Strides(const std::vector<int>& strides) {
  strides_ = strides;
  return *this;
}
PoolBuilder& PoolBuilder::PadSame() {
  same_ = true;
  return *this;
}
PoolBuilder& PoolBuilder::PadValid() {
  same_ = false;
  return *this;
}
PoolBuilder& PoolBuilder::ChannelsFirst() {
  channels_first_ = true;
  return *this;
}
PoolBuilder& PoolBuilder::ChannelsLast() {
  channels_first_ = false;
  return *this;
}

Node PoolBuilder::Done() const {
  static const char* const kNames[] = {"MaxPool", "MinPool", "SumPool", "MeanPool"};
  const char* op = kNames[static_cast<int>(kind_)];
  CheckNodes(op, {x_});
  CheckSpatialRank(op, x_);
  if (kind_ == Kind::kMean) ops_internal::CheckFloat(op, x_);
  const int rank = x_.rank();
  const size_t n = static_cast<size_t>(rank - 2);
  if (window_.empty()) kiln::detail::Throw("{}: no window size given (call Window)", op);
  const std::vector<int64_t> win = Expand(op, "Window", window_, n, 1);
  const std::vector<int64_t> str = strides_.empty() ? win : Expand(op, "Strides", strides_, n, 1);
  for (size_t i = 0; i < n; ++i) {
    if (win[i] < 1 || str[i] < 1) kiln::detail::Throw("{}: window sizes and strides must be >= 1", op);
  }
  const std::vector<int64_t> spatial = SpatialAxes(rank, channels_first_);
  std::vector<int64_t> window(static_cast<size_t>(rank), 1), strides(static_cast<size_t>(rank), 1);
  std::vector<PadAxis> padding(static_cast<size_t>(rank));
  for (size_t i = 0; i < n; ++i) {
    const auto a = static_cast<size_t>(spatial[i]);
    window[a] = win[i];
    strides[a] = str[i];
    if (same_) padding[a] = SamePadding("Pool", x_.shape().Dimensions()[a], win[i], str[i]);
  }
  compute::ReduceKind kind = compute::ReduceKind::Sum;
  if (kind_ == Kind::kMax) kind = compute::ReduceKind::Max;
  if (kind_ == Kind::kMin) kind = compute::ReduceKind::Min;
  compute::OpAttributes attrs;
  attrs.reduce_kind = kind;
  attrs.window = window;
  attrs.strides = strides;
  attrs.padding = padding;
  Node pooled = Emit(op, OpType::ReduceWindow, {x_}, attrs);
  if (kind_ != Kind::kMean) return pooled;
  // The number of non-padding elements of each window: the same window sum over ones.
  Node counts = Emit(op, OpType::ReduceWindow, {OnesLike(x_)}, std::move(attrs));
  return Div(pooled, counts);
}

// ---- Interpolation ------------------------------------------------------------------------------

InterpolateBuilder& InterpolateBuilder::Nearest() {
  nearest_ = true;
  return *this;
}
InterpolateBuilder& InterpolateBuilder::Bilinear() {
  nearest_ = false;
  return *this;
}
InterpolateBuilder& InterpolateBuilder::AlignCorners(bool align) {
  align_corners_ = align;
  if (align) half_pixel_ = false;
  return *this;
}
InterpolateBuilder& InterpolateBuilder::HalfPixelCenters(bool half_pixel) {
  half_pixel_ = half_pixel;
  if (half_pixel) align_corners_ = false;
  return *this;
}
InterpolateBuilder& InterpolateBuilder::ChannelsFirst() {
  channels_first_ = true;
  return *this;
}
InterpolateBuilder& InterpolateBuilder::ChannelsLast() {
  channels_first_ = false;
  return *this;
}

namespace {

/// The [out, in] resampling weights of one axis.
std::vector<double> InterpolationWeights(int64_t in, int64_t out, bool nearest, bool align, bool half_pixel) {
  std::vector<double> w(static_cast<size_t>(out * in), 0.0);
  const double scale = align ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                             : static_cast<double>(in) / static_cast<double>(out);
  for (int64_t o = 0; o < out; ++o) {
    double* row = w.data() + o * in;
    const double od = static_cast<double>(o);
    if (nearest) {
      double src = align ? std::round(od * scale) : std::floor((half_pixel ? od + 0.5 : od) * scale);
      const int64_t i = std::clamp<int64_t>(static_cast<int64_t>(src), 0, in - 1);
      row[i] = 1.0;
      continue;
    }
    double src = half_pixel ? (od + 0.5) * scale - 0.5 : od * scale;
    src = std::clamp(src, 0.0, static_cast<double>(in - 1));
    const auto lo = static_cast<int64_t>(std::floor(src));
    const int64_t hi = std::min<int64_t>(lo + 1, in - 1);
    const double frac = src - static_cast<double>(lo);
    row[lo] += 1.0 - frac;
    row[hi] += frac;
  }
  return w;
}

}  // namespace

Node InterpolateBuilder::Done() const {
  const char* op = "Interpolate";
  CheckNodes(op, {x_});
  CheckSpatialRank(op, x_);
  ops_internal::CheckFloat(op, x_);
  const int rank = x_.rank();
  const std::vector<int64_t> spatial = SpatialAxes(rank, channels_first_);
  if (sizes_.size() != spatial.size())
    kiln::detail::Throw("Interpolate: {} sizes given for the {} spatial axes of {}", sizes_.size(),
                        spatial.size(), x_.shape());
  Node y = x_;
  for (size_t i = 0; i < spatial.size(); ++i) {
    const int axis = static_cast<int>(spatial[i]);
    const int64_t in = x_.shape().Dimensions()[static_cast<size_t>(axis)];
    const int64_t out = sizes_[i] == -1 ? in : sizes_[i];
    if (out < 1 || in < 1)
      kiln::detail::Throw("Interpolate: cannot resize axis {} of {} to size {}", axis, x_.shape(), sizes_[i]);
    if (out == in) {
      // Same size: every coordinate convention maps o to o exactly.
      continue;
    }
    const Tensor weights =
        Tensor::FromFlat(Shape(DType::Float64, {out, in}),
                         InterpolationWeights(in, out, nearest_, align_corners_, half_pixel_));
    Node w = ConvertDType(Const(x_.graph(), weights), x_.dtype());
    Node z = Dot(y, w).General({axis}, {}, {1}, {});  // x's other axes, then the new axis last.
    std::vector<int> perm;
    for (int a = 0; a < rank; ++a) perm.push_back(a < axis ? a : (a == axis ? rank - 1 : a - 1));
    y = TransposeAllAxes(z, perm);
  }
  return y;
}

}  // namespace kiln::graph
