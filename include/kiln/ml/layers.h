#pragma once
/// @file
/// Layers (kiln::layers): stateful building blocks whose weights are variables of a model::Scope.
///
///   Node h = layers::Dense(scope.In("hidden"), x, /*useBias=*/true, 128);
///   Node c = layers::Convolution(scope.In("conv1"), img).Filters(32).KernelSize(5).PadSame().Done();
///   Node p = layers::MaxPool(c).Window(2).Done();
///   Node d = layers::Dropout(scope.In("dropout"), h, 0.3);  // only while training
///   Node e = layers::Embedding(scope.In("tokens"), ids, 32000, 512);  // ids [b, t] -> [b, t, 512]

#include <concepts>
#include <cstdint>
#include <vector>

#include "kiln/graph/conv.h"
#include "kiln/graph/ops.h"
#include "kiln/model/store.h"

namespace kiln::layers {

using graph::Node;

/// A dense (fully connected) layer: contracts x's last axis with the variable "weights"
/// [in, dims...] and adds "biases" [dims...] when `use_bias`. The result has x's leading axes
/// followed by `dims`.
/// x must be a float node with at least one axis and `dims` non-empty (else kiln::Error naming
/// the scope).
Node DenseWithDims(model::Scope scope, Node x, bool use_bias, const std::vector<int64_t>& dims);
/// DenseWithDims with the output dimensions as arguments: Dense(scope, x, true, 128).
template <std::integral... D>
Node Dense(model::Scope scope, Node x, bool use_bias, D... dims) {
  return DenseWithDims(std::move(scope), x, use_bias, {static_cast<int64_t>(dims)...});
}

/// A convolution layer over 1, 2 or 3 spatial axes, with its kernel "weights" ([spatial...,
/// in/groups, filters]) and "biases" ([filters]) in the scope. Defaults: stride 1, no padding,
/// no dilation, one group, bias on, channels last.
class ConvolutionBuilder {
 public:
  /// A convolution of `x` with its variables under `scope`; layers::Convolution(scope, x) makes one.
  ConvolutionBuilder(model::Scope scope, Node x) : scope_(std::move(scope)), x_(x) {}
  /// Number of output channels (required).
  ConvolutionBuilder& Filters(int64_t n);
  /// The same kernel size for every spatial axis (required, or the vector form).
  ConvolutionBuilder& KernelSize(int size);
  /// One kernel size per spatial axis.
  ConvolutionBuilder& KernelSize(const std::vector<int>& sizes);
  /// The same stride on every spatial axis (default 1).
  ConvolutionBuilder& Strides(int stride);
  /// One stride per spatial axis.
  ConvolutionBuilder& Strides(const std::vector<int>& strides);
  /// The same kernel dilation on every spatial axis (default 1: none).
  ConvolutionBuilder& Dilations(int dilation);
  /// One kernel dilation per spatial axis.
  ConvolutionBuilder& Dilations(const std::vector<int>& dilations);
  /// Output size ceil(input / stride) per spatial axis.
  ConvolutionBuilder& PadSame();
  /// Only windows fully inside the input (the default).
  ConvolutionBuilder& NoPadding();
  /// Whether the layer has "biases" (true by default).
  ConvolutionBuilder& UseBias(bool use);
  /// Channels split into `groups` convolved separately (groups == channels: depthwise).
  ConvolutionBuilder& ChannelGroupCount(int groups);
  /// x is [batch, channels, spatial...].
  ConvolutionBuilder& ChannelsFirst();
  /// x is [batch, spatial..., channels] (the default).
  ConvolutionBuilder& ChannelsLast();
  /// The convolved (and biased) node; kiln::Error naming the layer when x is not
  /// [batch, spatial (1 to 3 axes)..., channels], Filters or KernelSize is missing, the kernel
  /// sizes do not match the spatial axes, or the group count does not divide channels and filters.
  Node Done();

 private:
  model::Scope scope_;
  Node x_;
  int64_t filters_ = 0;
  std::vector<int> kernel_, strides_, dilations_;
  bool same_ = false, bias_ = true, channels_first_ = false;
  int groups_ = 1;
};
/// Starts a convolution layer: Convolution(scope, x).Filters(32).KernelSize(3).Done().
inline ConvolutionBuilder Convolution(model::Scope scope, Node x) {
  return ConvolutionBuilder(std::move(scope), x);
}

/// Pooling builders over the spatial axes (Window(n) for every spatial axis; strides default to
/// the window; no padding by default, so 28 becomes 14 with Window(2)).
inline graph::PoolBuilder MaxPool(Node x) { return graph::MaxPool(x); }
/// Mean pooling (graph::MeanPool): each window's mean over its non-padding elements.
inline graph::PoolBuilder AvgPool(Node x) { return graph::MeanPool(x); }
/// Sum pooling (graph::SumPool).
inline graph::PoolBuilder SumPool(Node x) { return graph::SumPool(x); }
/// Mean / max over all spatial axes: [batch, spatial..., channels] -> [batch, channels] (channels
/// last) or [batch, channels, spatial...] -> [batch, channels] when `channels_first`.
Node GlobalAvgPool(Node x, bool channels_first = false);
/// Maximum over all spatial axes (as GlobalAvgPool, with the max).
Node GlobalMaxPool(Node x, bool channels_first = false);

/// Inverted dropout: while training (model::IsTraining), each element is zeroed with
/// probability `rate` and the others scaled by 1/(1-rate), with random numbers from the store's
/// random-number state; otherwise the identity.
Node Dropout(model::Scope scope, Node x, double rate);

/// Stochastic depth (Huang et al. 2016), for residual branches: while training, each example
/// (each index of axis 0) is zeroed whole with probability `rate` and the others scaled by
/// 1/(1-rate), with random numbers from the store's random-number state; otherwise the identity.
Node DropPath(model::Scope scope, Node x, double rate);

/// DropBlock (Ghiasi et al. 2018; GoMLX's layers.DropBlock), dropout for feature maps: while
/// training (model::IsTraining), whole blocks of neighbouring spatial positions are zeroed, across
/// all channels, where plain dropout of single pixels would be undone by their neighbours. Seeds
/// are drawn with probability Probability / (pixels per block) from the store's random-number
/// state; every position within a block of a seed (a stride-1, same-padded window) is dropped, so
/// about Probability of the positions are dropped where the blocks do not overlap. The values
/// kept are not rescaled (as GoMLX). Otherwise, or with Probability 0, the identity.
///
///   Node y = layers::DropBlock(scope.In("dropblock"), x).Probability(0.1).BlockSize(3).Done();
class DropBlockBuilder {
 public:
  /// A DropBlock of `x`, its defaults from the scope's hyperparameters "dropblock_prob" (0) and
  /// "dropblock_size" (3).
  DropBlockBuilder(model::Scope scope, Node x);
  /// The fraction of positions to drop, in [0, 1).
  DropBlockBuilder& Probability(double prob);
  /// The same block size on every spatial axis.
  DropBlockBuilder& BlockSize(int size);
  /// One block size per spatial axis.
  DropBlockBuilder& BlockSizes(const std::vector<int>& sizes);
  /// x is [batch, spatial..., channels] (the default).
  DropBlockBuilder& ChannelsLast();
  /// x is [batch, channels, spatial...].
  DropBlockBuilder& ChannelsFirst();
  /// Every axis is spatial (no batch or channels axis): blocks span all of x.
  DropBlockBuilder& FullShape();
  /// The result, x's shape and dtype (float or Bool: dropped positions false); kiln::Error
  /// naming DropBlock when the probability is outside [0, 1), a block size is below 1, the
  /// block sizes do not match the spatial axes, or x has no spatial axis.
  Node Done() const;

 private:
  model::Scope scope_;
  Node x_;
  double prob_ = 0;
  std::vector<int> sizes_;
  int size_ = 3;
  enum class Layout { kChannelsLast, kChannelsFirst, kFull } layout_ = Layout::kChannelsLast;
};
/// Starts a DropBlock of `x`; finish with .Done().
inline DropBlockBuilder DropBlock(model::Scope scope, Node x) {
  return DropBlockBuilder(std::move(scope), x);
}

/// A lookup table: the variable "embeddings" [vocab_size, dims] (of `dtype`; initialised by the
/// scope's initializer if it has one, else uniform in ±0.05), and for `ids` of any integer dtype
/// and shape, the rows they select: [ids dims..., dims]. An id outside [0, vocab_size) gives a
/// row of zeros (and no gradient), so -1 can mark padding.
Node Embedding(model::Scope scope, Node ids, int64_t vocab_size, int64_t dims, DType dtype = DType::Float32);

}  // namespace kiln::layers
