#pragma once
/// Convolutions, pooling, window reductions and image resizing (GoMLX's names).
///
/// Layouts: channels-last by default: x is [batch, spatial..., channels] and a convolution
/// kernel [spatial..., in_channels / groups, out_channels]. ChannelsFirst(): x is
/// [batch, channels, spatial...] and the kernel [in_channels / groups, out_channels, spatial...].
/// One, two or three spatial axes (any number with the low-level functions).

#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/compute/program.h"
#include "kiln/graph/graph.h"

namespace kiln::graph {

// ---- Convolution ------------------------------------------------------------------------------

/// The ConvGeneral primitive (XLA's convolution): `dims` says which axes of input, kernel and
/// output hold batch, features and spatial dimensions. Empty strides/dilations mean ones and
/// empty padding none; input_dilations dilate the input (transposed convolutions),
/// kernel_dilations the kernel (atrous convolutions).
Node ConvGeneral(Node input, Node kernel, const compute::ConvDims& dims,
                 const std::vector<int64_t>& strides = {}, const std::vector<compute::PadAxis>& padding = {},
                 const std::vector<int64_t>& input_dilations = {},
                 const std::vector<int64_t>& kernel_dilations = {}, int64_t feature_groups = 1,
                 int64_t batch_groups = 1);

/// Builds a convolution: Convolve(x, kernel).Strides(2).PadSame().Done(). Defaults: strides 1,
/// no padding (PadValid), no dilations, one group, channels last.
class ConvBuilder {
 public:
  ConvBuilder(Node x, Node kernel) : x_(x), kernel_(kernel) {}
  /// The same stride on every spatial axis, or one per spatial axis.
  ConvBuilder& Strides(int stride);
  ConvBuilder& Strides(const std::vector<int>& strides);
  /// Pads so that each spatial output size is ceil(input / stride) (the extra element, if the
  /// total is odd, goes at the end).
  ConvBuilder& PadSame();
  /// No padding: only windows fully inside the input.
  ConvBuilder& PadValid();
  /// Explicit (low, high) padding per spatial axis.
  ConvBuilder& Padding(const std::vector<compute::PadAxis>& padding);
  /// Kernel dilations (atrous convolution): one for all spatial axes or one per axis.
  ConvBuilder& Dilations(int dilation);
  ConvBuilder& Dilations(const std::vector<int>& dilations);
  /// Input dilations (transposed convolution): one for all spatial axes or one per axis.
  ConvBuilder& InputDilations(int dilation);
  ConvBuilder& InputDilations(const std::vector<int>& dilations);
  /// Splits the channels into `count` groups convolved separately (count == in_channels:
  /// depthwise). The kernel's input channel axis then has in_channels / count entries.
  ConvBuilder& ChannelGroupCount(int count);
  /// Splits the batch into `count` groups, each convolved with its slice of the output channels
  /// (a convolution's kernel gradient).
  ConvBuilder& BatchGroupCount(int count);
  ConvBuilder& ChannelsFirst();
  ConvBuilder& ChannelsLast();
  /// Any layout: XLA's dimension numbers (overrides ChannelsFirst/ChannelsLast).
  ConvBuilder& AxesConfig(const compute::ConvDims& dims);
  /// The convolution; kiln::Error naming Convolve if the configuration does not fit.
  Node Done() const;

 private:
  Node x_, kernel_;
  std::vector<int> strides_, dilations_, input_dilations_;
  std::vector<compute::PadAxis> padding_;
  bool same_ = false, channels_first_ = false, has_axes_ = false;
  compute::ConvDims axes_;
  int channel_groups_ = 1, batch_groups_ = 1;
};
inline ConvBuilder Convolve(Node x, Node kernel) { return ConvBuilder(x, kernel); }

// ---- Window reductions and pooling --------------------------------------------------------------

/// The ReduceWindow primitive: reduces each window (`window` sizes, one per axis of x) with
/// `kind` (Sum, Product, Max, Min). Padding holds the reduction's identity. `dilations` dilate
/// the window, `input_dilations` the input. Empty strides/dilations mean ones.
Node ReduceWindow(Node x, compute::ReduceKind kind, const std::vector<int64_t>& window,
                  const std::vector<int64_t>& strides = {}, const std::vector<compute::PadAxis>& padding = {},
                  const std::vector<int64_t>& dilations = {},
                  const std::vector<int64_t>& input_dilations = {});

/// The SelectAndScatter primitive with a max (min) selection: a result shaped like `operand`,
/// zero except that each window's first maximum (minimum; a NaN is selected first) accumulates
/// the window's `source` value. `source` has the windows' shape. Max pooling's gradient.
Node SelectAndScatterMax(Node operand, Node source, const std::vector<int64_t>& window,
                         const std::vector<int64_t>& strides = {},
                         const std::vector<compute::PadAxis>& padding = {});
Node SelectAndScatterMin(Node operand, Node source, const std::vector<int64_t>& window,
                         const std::vector<int64_t>& strides = {},
                         const std::vector<compute::PadAxis>& padding = {});

/// Builds a pooling over the spatial axes: MaxPool(x).Window(2).Done(). Defaults: strides equal
/// to the window, no padding (PadValid), channels last. Padding never wins a max or min and adds
/// nothing to a sum; MeanPool divides by the number of non-padding elements of each window
/// (floats only).
class PoolBuilder {
 public:
  enum class Kind { kMax, kMin, kSum, kMean };
  PoolBuilder(Node x, Kind kind) : x_(x), kind_(kind) {}
  /// The same window size on every spatial axis, or one per spatial axis.
  PoolBuilder& Window(int size);
  PoolBuilder& Window(const std::vector<int>& sizes);
  PoolBuilder& Strides(int stride);
  PoolBuilder& Strides(const std::vector<int>& strides);
  /// Output sizes ceil(input / stride).
  PoolBuilder& PadSame();
  PoolBuilder& PadValid();
  PoolBuilder& ChannelsFirst();
  PoolBuilder& ChannelsLast();
  Node Done() const;

 private:
  Node x_;
  Kind kind_;
  std::vector<int> window_, strides_;
  bool same_ = false, channels_first_ = false;
};
inline PoolBuilder MaxPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kMax); }
inline PoolBuilder MinPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kMin); }
inline PoolBuilder SumPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kSum); }
inline PoolBuilder MeanPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kMean); }

// ---- Image resizing -----------------------------------------------------------------------------

/// Resizes the spatial axes of a float image to `sizes` (one per spatial axis; -1 keeps the axis):
/// Interpolate(x, {64, 64}).Bilinear().Done(). Defaults: bilinear, half-pixel centers (as
/// tf.image.resize), channels last. Coordinates, per axis of input size n and output size m:
/// align corners: o * (n - 1) / (m - 1); half-pixel centers: (o + 0.5) * n / m - 0.5 (clamped
/// at 0); neither: o * n / m. Nearest picks floor(coordinate) (align corners: rounded; half-pixel:
/// floor((o + 0.5) * n / m)), bilinear mixes the two neighbours. Built as one contraction with a
/// constant weight matrix per axis.
class InterpolateBuilder {
 public:
  InterpolateBuilder(Node x, std::vector<int64_t> sizes) : x_(x), sizes_(std::move(sizes)) {}
  InterpolateBuilder& Nearest();
  InterpolateBuilder& Bilinear();
  /// AlignCorners(true) turns half-pixel centers off, HalfPixelCenters(true) align corners.
  InterpolateBuilder& AlignCorners(bool align);
  InterpolateBuilder& HalfPixelCenters(bool half_pixel);
  InterpolateBuilder& ChannelsFirst();
  InterpolateBuilder& ChannelsLast();
  Node Done() const;

 private:
  Node x_;
  std::vector<int64_t> sizes_;
  bool nearest_ = false, align_corners_ = false, half_pixel_ = true, channels_first_ = false;
};
inline InterpolateBuilder Interpolate(Node x, std::vector<int64_t> sizes) {
  return InterpolateBuilder(x, std::move(sizes));
}

}  // namespace kiln::graph
