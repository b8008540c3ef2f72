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

/// PadSame's padding for a window spanning `span` elements.
PadAxis SamePadding(int64_t span) {
  // GoMLX's rule: (span - 1) / 2 before and span / 2 after, whatever the stride and size, so each
  // output element's window is centred on its input position (the output size is ceil(n / stride)).
  if (span <= 0) return {0, 0, 0};
  return {(span - 1) / 2, span / 2, 0};
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
ConvBuilder& ConvBuilder::PaddingPerDim(const std::vector<std::array<int64_t, 2>>& paddings) {
  std::vector<PadAxis> padding;
  for (const auto& p : paddings) padding.push_back({p[0], p[1], 0});
  return Padding(padding);
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
      // GoMLX's (and ONNX's, PyTorch's) channels-first kernel: [out, in / groups, spatial...].
      d.kernel_output_feature = 0;
      d.kernel_input_feature = 1;
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
      const int64_t k = kernel_.shape().Dimensions()[static_cast<size_t>(d.kernel_spatial[i])];
      if (k == Shape::kDynamic)
        kiln::detail::Throw("Convolve: PadSame needs the kernel's spatial axes static, got {}",
                            kernel_.shape());
      padding.push_back(SamePadding(k == 0 ? 0 : (k - 1) * dilations[i] + 1));
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
  padding_.clear();
  return *this;
}
PoolBuilder& PoolBuilder::PadValid() {
  same_ = false;
  padding_.clear();
  return *this;
}
PoolBuilder& PoolBuilder::PaddingPerDim(const std::vector<std::array<int64_t, 2>>& paddings) {
  same_ = false;
  padding_.clear();
  for (const auto& p : paddings) padding_.push_back({p[0], p[1], 0});
  return *this;
}
PoolBuilder& PoolBuilder::FullShape() {
  full_shape_ = true;
  return *this;
}
PoolBuilder& PoolBuilder::ChannelsFirst() {
  channels_first_ = true;
  full_shape_ = false;
  return *this;
}
PoolBuilder& PoolBuilder::ChannelsLast() {
  channels_first_ = false;
  full_shape_ = false;
  return *this;
}

Node PoolBuilder::Done() const {
  static const char* const kNames[] = {"MaxPool", "MinPool", "SumPool", "MeanPool", "ConcatPool"};
  const char* op = kNames[static_cast<int>(kind_)];
  CheckNodes(op, {x_});
  if (kind_ == Kind::kConcat) return Concat(op);
  if (full_shape_) {
    if (x_.rank() < 1) kiln::detail::Throw("{}: FullShape needs x with an axis, got {}", op, x_.shape());
  } else {
    CheckSpatialRank(op, x_);
  }
  if (kind_ == Kind::kMean) ops_internal::CheckFloat(op, x_);
  const int rank = x_.rank();
  std::vector<int64_t> spatial = SpatialAxes(rank, channels_first_);
  if (full_shape_) {
    spatial.clear();
    for (int a = 0; a < rank; ++a) spatial.push_back(a);
  }
  const size_t n = spatial.size();
  if (window_.empty()) kiln::detail::Throw("{}: no window size given (call Window)", op);
  const std::vector<int64_t> win = Expand(op, "Window", window_, n, 1);
  const std::vector<int64_t> str = !strides_.empty() ? Expand(op, "Strides", strides_, n, 1)
                                   : same_           ? std::vector<int64_t>(n, 1)
                                                     : win;
  for (size_t i = 0; i < n; ++i) {
    if (win[i] < 1 || str[i] < 1) kiln::detail::Throw("{}: window sizes and strides must be >= 1", op);
  }
  if (!padding_.empty() && padding_.size() != n)
    kiln::detail::Throw("{}: PaddingPerDim has {} entries for {} pooled axes", op, padding_.size(), n);
  std::vector<int64_t> window(static_cast<size_t>(rank), 1), strides(static_cast<size_t>(rank), 1);
  std::vector<PadAxis> padding(static_cast<size_t>(rank));
  for (size_t i = 0; i < n; ++i) {
    const auto a = static_cast<size_t>(spatial[i]);
    window[a] = win[i];
    strides[a] = str[i];
    if (same_) padding[a] = SamePadding(win[i]);
    if (!padding_.empty()) padding[a] = padding_[i];
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

Node PoolBuilder::Concat(const char* op) const {
  if (full_shape_)
    kiln::detail::Throw("{}: FullShape is not available (the channels axis receives the windows)", op);
  CheckSpatialRank(op, x_);
  const int rank = x_.rank();
  const size_t n = static_cast<size_t>(rank - 2);
  if (window_.empty()) kiln::detail::Throw("{}: no window size given (call Window)", op);
  const std::vector<int64_t> win = Expand(op, "Window", window_, n, 1);
  const int64_t channels = x_.shape().Dim(channels_first_ ? 1 : rank - 1);
  if (channels == Shape::kDynamic)
    kiln::detail::Throw("{}: the channels axis of {} must be static", op, x_.shape());
  int64_t out = channels;
  for (int64_t w : win) {
    if (w < 1) kiln::detail::Throw("{}: window sizes must be >= 1", op);
    out *= w;
  }
  // A one-hot kernel [window..., channels, out] (channels last) sending each (window position,
  // channel) to its own output channel; channels first orders the outputs channel-major.
  Graph& g = x_.graph();
  std::vector<int64_t> order_dims;
  if (!channels_first_) {
    order_dims = win;
    order_dims.push_back(channels);
  } else {
    order_dims.push_back(channels);
    order_dims.insert(order_dims.end(), win.begin(), win.end());
  }
  Node order = Reshape(Iota(g, Shape(DType::Int32, {out}), 0), order_dims);
  Node kernel = OneHot(order, out, x_.dtype());  // [order_dims..., out]
  ConvBuilder conv = Convolve(x_, kernel);
  if (channels_first_) {
    // [channels, window..., out] -> GoMLX's channels-first kernel [out, channels, window...].
    std::vector<int> perm{static_cast<int>(n) + 1, 0};
    for (int a = 1; a <= static_cast<int>(n); ++a) perm.push_back(a);
    conv = Convolve(x_, TransposeAllAxes(kernel, perm)).ChannelsFirst();
  }
  std::vector<int> strides;
  if (!strides_.empty()) {
    strides = strides_;
  } else if (same_) {
    strides.assign(n, 1);
  } else {
    for (int64_t w : win) strides.push_back(static_cast<int>(w));
  }
  conv.Strides(strides);
  if (same_) conv.PadSame();
  if (!padding_.empty()) conv.Padding(padding_);
  return conv.Done();
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
