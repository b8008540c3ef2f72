#pragma once
/// @file
/// Convolutions, pooling, window reductions and image resizing (GoMLX's names).
///
/// Layouts: channels-last by default: x is [batch, spatial..., channels] and a convolution
/// kernel [spatial..., in_channels / groups, out_channels]. ChannelsFirst(): x is
/// [batch, channels, spatial...] and the kernel [out_channels, in_channels / groups, spatial...].
/// One, two or three spatial axes (any number with the low-level functions).

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/compute/program.h"
#include "kiln/graph/graph.h"

namespace kiln::images {
/// Where an image's channels axis is (GoMLX's images.ChannelsAxisConfig): the builders'
/// ChannelsAxis(images::ChannelsFirst) is ChannelsFirst().
enum ChannelsAxisConfig { ChannelsFirst, ChannelsLast };
}  // namespace kiln::images

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
  /// The input `x` and the `kernel` (layouts in the file's comment); Convolve(x, kernel) makes one.
  ConvBuilder(Node x, Node kernel) : x_(x), kernel_(kernel) {}
  /// The same stride on every spatial axis.
  ConvBuilder& Strides(int stride);
  /// One stride per spatial axis.
  ConvBuilder& Strides(const std::vector<int>& strides);
  /// GoMLX's names for the stride setters.
  ConvBuilder& StridePerAxis(const std::vector<int>& strides) { return Strides(strides); }
  ConvBuilder& StridePerDim(const std::vector<int>& strides) {
    return Strides(strides);
  }  ///< As StridePerAxis.
  /// Pads each spatial axis by (span - 1) / 2 before and span / 2 after, span being the dilated
  /// kernel size, whatever the stride (GoMLX's rule): the output size is ceil(input / stride).
  ConvBuilder& PadSame();
  /// GoMLX's name for PadValid.
  ConvBuilder& NoPadding() { return PadValid(); }
  /// Explicit (low, high) padding per spatial axis, GoMLX's form of Padding.
  ConvBuilder& PaddingPerDim(const std::vector<std::array<int64_t, 2>>& paddings);
  /// No padding: only windows fully inside the input.
  ConvBuilder& PadValid();
  /// Explicit (low, high) padding per spatial axis.
  ConvBuilder& Padding(const std::vector<compute::PadAxis>& padding);
  /// Kernel dilation (atrous convolution), the same on every spatial axis.
  ConvBuilder& Dilations(int dilation);
  /// Kernel dilations, one per spatial axis.
  ConvBuilder& Dilations(const std::vector<int>& dilations);
  /// GoMLX's names for per-axis kernel dilations.
  ConvBuilder& DilationPerAxis(const std::vector<int>& dilations) { return Dilations(dilations); }
  ConvBuilder& DilationPerDim(const std::vector<int>& dilations) {
    return Dilations(dilations);
  }  ///< As above.
  /// Input dilation (transposed convolution), the same on every spatial axis.
  ConvBuilder& InputDilations(int dilation);
  /// Input dilations, one per spatial axis.
  ConvBuilder& InputDilations(const std::vector<int>& dilations);
  /// GoMLX's name for per-axis input dilations.
  ConvBuilder& InputDilationPerAxis(const std::vector<int>& dilations) { return InputDilations(dilations); }
  /// Splits the channels into `count` groups convolved separately (count == in_channels:
  /// depthwise). The kernel's input channel axis then has in_channels / count entries.
  ConvBuilder& ChannelGroupCount(int count);
  /// GoMLX's other name for ChannelGroupCount.
  ConvBuilder& FeatureGroupCount(int count) { return ChannelGroupCount(count); }
  /// Splits the batch into `count` groups, each convolved with its slice of the output channels
  /// (a convolution's kernel gradient).
  ConvBuilder& BatchGroupCount(int count);
  /// x is [batch, channels, spatial...], the kernel [out_channels, in_channels / groups, spatial...].
  ConvBuilder& ChannelsFirst();
  /// x is [batch, spatial..., channels], the kernel [spatial..., in_channels / groups, out_channels]
  /// (the default).
  ConvBuilder& ChannelsLast();
  /// ChannelsFirst() or ChannelsLast() as GoMLX's config says.
  ConvBuilder& ChannelsAxis(images::ChannelsAxisConfig config) {
    return config == images::ChannelsFirst ? ChannelsFirst() : ChannelsLast();
  }
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
/// Starts a convolution of `x` with `kernel`; finish with Done().
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
/// SelectAndScatterMax with a min selection: each window's first minimum (a NaN first) takes
/// the window's `source` value. Min pooling's gradient.
Node SelectAndScatterMin(Node operand, Node source, const std::vector<int64_t>& window,
                         const std::vector<int64_t>& strides = {},
                         const std::vector<compute::PadAxis>& padding = {});

/// Builds a pooling over the spatial axes: MaxPool(x).Window(2).Done(). Defaults: strides equal
/// to the window, no padding (PadValid), channels last. Padding never wins a max or min and adds
/// nothing to a sum; MeanPool divides by the number of non-padding elements of each window
/// (floats only).
class PoolBuilder {
 public:
  /// How each window is reduced.
  enum class Kind {
    kMax,     ///< The window's maximum.
    kMin,     ///< The window's minimum.
    kSum,     ///< The window's sum.
    kMean,    ///< The window's mean over its non-padding elements (float dtypes).
    kConcat,  ///< The window's elements concatenated into channels (ConcatPool).
  };
  /// Pools `x` with `kind`; MaxPool(x), MinPool, SumPool and MeanPool make one.
  PoolBuilder(Node x, Kind kind) : x_(x), kind_(kind) {}
  /// The same window size on every spatial axis (required: Done() without a window throws).
  PoolBuilder& Window(int size);
  /// One window size per spatial axis.
  PoolBuilder& Window(const std::vector<int>& sizes);
  /// GoMLX's name for per-axis window sizes.
  PoolBuilder& WindowPerAxis(const std::vector<int>& sizes) { return Window(sizes); }
  /// The same stride on every spatial axis (default: the window size).
  PoolBuilder& Strides(int stride);
  /// One stride per spatial axis.
  PoolBuilder& Strides(const std::vector<int>& strides);
  /// GoMLX's name for per-axis strides.
  PoolBuilder& StridePerAxis(const std::vector<int>& strides) { return Strides(strides); }
  /// Pads by (window - 1) / 2 before and window / 2 after (GoMLX's rule); the strides then
  /// default to 1, so the output keeps the input's size unless strides are given (ceil(n / s)).
  PoolBuilder& PadSame();
  /// No padding: only windows fully inside the input (the default).
  PoolBuilder& PadValid();
  /// GoMLX's name for PadValid.
  PoolBuilder& NoPadding() { return PadValid(); }
  /// Explicit (low, high) padding per pooled axis.
  PoolBuilder& PaddingPerDim(const std::vector<std::array<int64_t, 2>>& paddings);
  /// Pools over every axis, batch and channels included (no axis is special).
  PoolBuilder& FullShape();
  /// x is [batch, channels, spatial...].
  PoolBuilder& ChannelsFirst();
  /// x is [batch, spatial..., channels] (the default).
  PoolBuilder& ChannelsLast();
  /// ChannelsFirst() or ChannelsLast() as GoMLX's config says.
  PoolBuilder& ChannelsAxis(images::ChannelsAxisConfig config) {
    return config == images::ChannelsFirst ? ChannelsFirst() : ChannelsLast();
  }
  /// The pooled node; kiln::Error naming the pool (MaxPool...) when x has no spatial axis, no
  /// window was given, a size or stride is below 1, or MeanPool's x is not a float.
  Node Done() const;

 private:
  Node x_;
  Kind kind_;
  /// ConcatPool's Done: a convolution with a one-hot kernel.
  Node Concat(const char* op) const;
  std::vector<int> window_, strides_;
  std::vector<compute::PadAxis> padding_;
  bool same_ = false, channels_first_ = false, full_shape_ = false;
};
/// Starts a max pooling of `x`; finish with .Window(n).Done().
inline PoolBuilder MaxPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kMax); }
/// Starts a min pooling of `x`; finish with .Window(n).Done().
inline PoolBuilder MinPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kMin); }
/// Starts a sum pooling of `x`; finish with .Window(n).Done().
inline PoolBuilder SumPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kSum); }
/// Starts a mean pooling of `x` (float dtypes); finish with .Window(n).Done().
inline PoolBuilder MeanPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kMean); }
/// Pools by concatenating each window's elements into the channels: x [b, h, w, c] with
/// Window(3) gives [b, h', w', 9c], channel (i * 3 + j) * c + k holding window element (i, j),
/// channel k (channels first: k * 9 + i * 3 + j). FullShape is not available.
inline PoolBuilder ConcatPool(Node x) { return PoolBuilder(x, PoolBuilder::Kind::kConcat); }

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
  /// Resizes `x` to `sizes`; Interpolate(x, sizes) makes one.
  InterpolateBuilder(Node x, std::vector<int64_t> sizes) : x_(x), sizes_(std::move(sizes)) {}
  /// Nearest-neighbour sampling.
  InterpolateBuilder& Nearest();
  /// Linear interpolation between the two neighbours on each axis (the default).
  InterpolateBuilder& Bilinear();
  /// AlignCorners(true) turns half-pixel centers off, HalfPixelCenters(true) align corners.
  InterpolateBuilder& AlignCorners(bool align);
  /// GoMLX's spelling of AlignCorners.
  InterpolateBuilder& AlignCorner(bool align) { return AlignCorners(align); }
  /// Half-pixel centers on or off (on by default); on turns AlignCorners off.
  InterpolateBuilder& HalfPixelCenters(bool half_pixel);
  /// x is [batch, channels, spatial...].
  InterpolateBuilder& ChannelsFirst();
  /// x is [batch, spatial..., channels] (the default).
  InterpolateBuilder& ChannelsLast();
  /// The resized node; kiln::Error naming Interpolate when x is not a float image with spatial
  /// axes or `sizes` does not have one entry (>= 1, or -1) per spatial axis.
  Node Done() const;

 private:
  Node x_;
  std::vector<int64_t> sizes_;
  bool nearest_ = false, align_corners_ = false, half_pixel_ = true, channels_first_ = false;
};
/// Starts resizing `x`'s spatial axes to `sizes`; finish with Done().
inline InterpolateBuilder Interpolate(Node x, std::vector<int64_t> sizes) {
  return InterpolateBuilder(x, std::move(sizes));
}

}  // namespace kiln::graph
