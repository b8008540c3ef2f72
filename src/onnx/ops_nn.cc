// ONNX's neural-network operators: convolutions, pooling and normalizations (channels first,
// as ONNX lays them out: [batch, channels, spatial...], kernels [out, in/groups, spatial...]).

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "kiln/graph/conv.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// The [begin, end] padding of each spatial axis for `auto_pad` / `pads`, with windows `k`,
/// strides and dilations, over the spatial sizes of x.
std::vector<std::array<int64_t, 2>> Paddings(const Context& c, Node x, const std::vector<int64_t>& k,
                                             const std::vector<int64_t>& strides,
                                             const std::vector<int64_t>& dilations) {
  const size_t n = k.size();
  const std::string mode = c.String("auto_pad", "NOTSET");
  std::vector<std::array<int64_t, 2>> p(n, {0, 0});
  if (mode == "NOTSET") {
    const std::vector<int64_t> pads = c.IntList("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) c.Fail(fmt::format("pads has {} entries, expected {}", pads.size(), 2 * n));
    for (size_t i = 0; i < n; ++i) p[i] = {pads[i], pads[i + n]};
  } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      const int64_t in = x.shape().Dimensions()[i + 2];
      if (in == Shape::kDynamic) c.Fail("auto_pad SAME needs static spatial sizes");
      const int64_t out = (in + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>((out - 1) * strides[i] + (k[i] - 1) * dilations[i] + 1 - in, 0);
      const int64_t small = total / 2, big = total - small;
      p[i] = mode == "SAME_UPPER" ? std::array<int64_t, 2>{small, big} : std::array<int64_t, 2>{big, small};
    }
  } else if (mode != "VALID") {
    c.Fail(fmt::format("auto_pad {} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", mode));
  }
  return p;
}

std::vector<int> ToInts(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

/// Adds a per-channel bias [C] to y [N, C, ...].
Node AddChannelBias(Node y, Node bias) {
  std::vector<int64_t> dims(static_cast<size_t>(y.rank()), 1);
  dims[1] = bias.shape().Dimensions()[0];
  return y + Reshape(bias, dims);
}

V Conv(const Context& c) {
  Node x = c.In(0), w = c.In(1);
  const int spatial = x.rank() - 2;
  if (spatial < 1 || w.rank() != x.rank())
    c.Fail(fmt::format("x {} and kernel {} must have rank 3 or more", x.shape(), w.shape()));
  std::vector<int64_t> k = c.IntList("kernel_shape");
  if (k.empty()) k.assign(w.shape().Dimensions().begin() + 2, w.shape().Dimensions().end());
  const std::vector<int64_t> strides =
      c.IntList("strides", std::vector<int64_t>(static_cast<size_t>(spatial), 1));
  const std::vector<int64_t> dilations =
      c.IntList("dilations", std::vector<int64_t>(static_cast<size_t>(spatial), 1));
  Node y = Convolve(x, w)
               .ChannelsFirst()
               .Strides(ToInts(strides))
               .Dilations(ToInts(dilations))
               .PaddingPerDim(Paddings(c, x, k, strides, dilations))
               .ChannelGroupCount(static_cast<int>(c.Int("group", 1)))
               .Done();
  if (c.Has(2)) y = AddChannelBias(y, c.In(2));
  return {y};
}

/// ConvTranspose: the gradient of a convolution, as a convolution of x dilated by the strides
/// with the kernel flipped and its channel axes swapped.
V ConvTranspose(const Context& c) {
  Node x = c.In(0), w = c.In(1);
  const int spatial = x.rank() - 2;
  const auto n = static_cast<size_t>(spatial);
  if (spatial < 1 || w.rank() != x.rank())
    c.Fail(fmt::format("x {} and kernel {} must have rank 3 or more", x.shape(), w.shape()));
  const int64_t groups = c.Int("group", 1);
  std::vector<int64_t> k = c.IntList("kernel_shape");
  if (k.empty()) k.assign(w.shape().Dimensions().begin() + 2, w.shape().Dimensions().end());
  const std::vector<int64_t> ones(n, 1), zeros(n, 0);
  const std::vector<int64_t> strides = c.IntList("strides", ones), dilations = c.IntList("dilations", ones);
  const std::vector<int64_t> out_pad = c.IntList("output_padding", zeros);
  const std::vector<int64_t> out_shape = c.IntList("output_shape");
  const std::string mode = c.String("auto_pad", "NOTSET");
  std::vector<int64_t> begin(n, 0), end(n, 0);
  if (!out_shape.empty() || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      const int64_t in = x.shape().Dimensions()[i + 2];
      const int64_t want = out_shape.empty() ? in * strides[i] : out_shape[out_shape.size() - n + i];
      const int64_t total = strides[i] * (in - 1) + out_pad[i] + ((k[i] - 1) * dilations[i] + 1) - want;
      // Halves rounded down (a negative total, an output longer than the kernel covers, adds the
      // extra at the end), as ONNX's reference computes them.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (mode == "SAME_UPPER") {
        begin[i] = half;
        end[i] = total - half;
      } else {
        begin[i] = total - half;
        end[i] = half;
      }
    }
  } else if (mode == "NOTSET") {
    const std::vector<int64_t> pads = c.IntList("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) c.Fail(fmt::format("pads has {} entries, expected {}", pads.size(), 2 * n));
    for (size_t i = 0; i < n; ++i) {
      begin[i] = pads[i];
      end[i] = pads[i + n];
    }
  }
  // Kernel [in, out/g, k...] -> per group [out/g, in/g, k...], flipped spatially.
  const std::vector<int64_t> wd = w.shape().Dimensions();
  const int64_t in_ch = wd[0], out_g = wd[1];
  if (in_ch % groups != 0) c.Fail(fmt::format("group {} does not divide {} input channels", groups, in_ch));
  std::vector<int64_t> split = {groups, in_ch / groups, out_g};
  split.insert(split.end(), wd.begin() + 2, wd.end());
  Node kernel = Reshape(w, split);  // [g, in/g, out/g, k...]
  std::vector<int> perm = {0, 2, 1};
  for (int i = 0; i < spatial; ++i) perm.push_back(3 + i);
  kernel = TransposeAllAxes(kernel, perm);  // [g, out/g, in/g, k...]
  std::vector<int64_t> merged = {groups * out_g, in_ch / groups};
  merged.insert(merged.end(), wd.begin() + 2, wd.end());
  kernel = Reshape(kernel, merged);
  std::vector<int> flip;
  for (int i = 0; i < spatial; ++i) flip.push_back(2 + i);
  kernel = Reverse(kernel, flip);
  std::vector<std::array<int64_t, 2>> pads(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t span = (k[i] - 1) * dilations[i];
    pads[i] = {span - begin[i], span - end[i] + out_pad[i]};
  }
  Node y = Convolve(x, kernel)
               .ChannelsFirst()
               .InputDilations(ToInts(strides))
               .Dilations(ToInts(dilations))
               .PaddingPerDim(pads)
               .ChannelGroupCount(static_cast<int>(groups))
               .Done();
  if (c.Has(2)) y = AddChannelBias(y, c.In(2));
  return {y};
}

template <bool kMax>
V Pool(const Context& c) {
  Node x = c.In(0);
  const int spatial = x.rank() - 2;
  const std::vector<int64_t> k = c.IntList("kernel_shape");
  if (static_cast<int>(k.size()) != spatial) c.Fail("kernel_shape must have one entry per spatial axis");
  const bool ceil_mode = c.Int("ceil_mode", 0) != 0;
  const std::vector<int64_t> ones(static_cast<size_t>(spatial), 1);
  const std::vector<int64_t> dilations = c.IntList("dilations", ones);
  if (kMax && c.node().output_size() > 1 && !c.node().output(1).empty())
    c.Fail("the Indices output is not supported");
  const std::vector<int64_t> strides = c.IntList("strides", ones);
  auto pads = Paddings(c, x, k, strides, dilations);
  if (kMax && (ceil_mode || dilations != ones)) {
    // The general window reduction: dilated windows, and with ceil_mode the last partial window
    // (padding with -inf at the end, where a window starts inside the input or its padding).
    std::vector<int64_t> window = {1, 1}, steps = {1, 1}, dil = {1, 1};
    std::vector<compute::PadAxis> padding(2);
    for (size_t i = 0; i < static_cast<size_t>(spatial); ++i) {
      const int64_t in = x.shape().Dimensions()[i + 2];
      if (in == Shape::kDynamic) c.Fail("ceil_mode and dilations need static spatial sizes");
      const int64_t span = dilations[i] * (k[i] - 1) + 1, padded = in + pads[i][0] + pads[i][1];
      int64_t extra = 0;
      if (ceil_mode) {
        int64_t out = (padded - span + strides[i] - 1) / strides[i] + 1;
        if ((out - 1) * strides[i] >= in + pads[i][0]) --out;  // A window must start inside.
        extra = std::max<int64_t>((out - 1) * strides[i] + span - padded, 0);
      }
      window.push_back(k[i]);
      steps.push_back(strides[i]);
      dil.push_back(dilations[i]);
      padding.push_back(compute::PadAxis{pads[i][0], pads[i][1] + extra, 0});
    }
    return {ReduceWindow(x, compute::ReduceKind::Max, window, steps, padding, dil)};
  }
  if (ceil_mode) c.Fail("ceil_mode 1 is supported for MaxPool only");
  if (dilations != ones) c.Fail("dilated pooling is supported for MaxPool only");
  if (!kMax && c.Int("count_include_pad", 0) != 0) {
    // Padding counts as zeros in the mean: the sum over each full window.
    Node sum =
        SumPool(x).ChannelsFirst().Window(ToInts(k)).Strides(ToInts(strides)).PaddingPerDim(pads).Done();
    int64_t size = 1;
    for (int64_t v : k) size *= v;
    return {sum / static_cast<double>(size)};
  }
  PoolBuilder b = kMax ? MaxPool(x) : MeanPool(x);
  return {b.ChannelsFirst().Window(ToInts(k)).Strides(ToInts(strides)).PaddingPerDim(pads).Done()};
}

template <bool kMax>
V GlobalPool(const Context& c) {
  Node x = c.In(0);
  std::vector<int> axes;
  for (int a = 2; a < x.rank(); ++a) axes.push_back(a);
  Node y = kMax ? ReduceMax(x, axes) : ReduceMean(x, axes);
  for (int a : axes) y = InsertAxes(y, {a});
  return {y};
}

/// x's statistics over `axes` (kept as size 1): the mean, 1 / sqrt(variance + eps), and x
/// normalised with them.
struct Normalized {
  Node mean, inv_std, y;
};
Normalized Normalize(Node x, const std::vector<int>& axes, double eps) {
  auto mean_of = [&axes](Node v) {
    return ReduceAndKeep(
        v, [](Node u, const std::vector<int>& a) { return ReduceMean(u, a); }, axes);
  };
  Normalized r;
  r.mean = mean_of(x);
  Node centred = x - r.mean;
  r.inv_std = Rsqrt(mean_of(centred * centred) + eps);
  r.y = centred * r.inv_std;
  return r;
}

V BatchNormalization(const Context& c) {
  if (c.Int("training_mode", 0) != 0) c.Fail("training_mode 1 is not supported (inference only)");
  Node x = c.In(0), scale = c.In(1), bias = c.In(2), mean = c.In(3), var = c.In(4);
  const double eps = c.Float("epsilon", 1e-5f);
  std::vector<int64_t> dims(static_cast<size_t>(x.rank()), 1);
  dims[1] = x.shape().Dimensions()[1];
  auto per_channel = [&](Node v) { return Reshape(v, dims); };
  Node y = (x - per_channel(mean)) * Rsqrt(per_channel(var) + eps) * per_channel(scale) + per_channel(bias);
  return {y};
}

V InstanceNormalization(const Context& c) {
  Node x = c.In(0);
  std::vector<int> axes;
  for (int a = 2; a < x.rank(); ++a) axes.push_back(a);
  Node y = Normalize(x, axes, c.Float("epsilon", 1e-5f)).y;
  std::vector<int64_t> dims(static_cast<size_t>(x.rank()), 1);
  dims[1] = x.shape().Dimensions()[1];
  return {y * Reshape(c.In(1), dims) + Reshape(c.In(2), dims)};
}

V LayerNormalization(const Context& c) {
  Node x = c.In(0);
  const int axis = Axis(c, c.Int("axis", -1), x.rank());
  std::vector<int> axes;
  for (int a = axis; a < x.rank(); ++a) axes.push_back(a);
  const Normalized n = Normalize(x, axes, c.Float("epsilon", 1e-5f));
  auto [normed, scale] = SameRank(n.y, c.In(1));
  Node y = normed * scale;
  if (c.Has(2)) {
    auto [p, q] = SameRank(y, c.In(2));
    y = p + q;
  }
  return {y, n.mean, n.inv_std};
}

/// Local response normalization across channels: x / (bias + alpha / size * sum of the squares
/// over `size` neighbouring channels)^beta.
V LRN(const Context& c) {
  Node x = c.In(0);
  const int64_t size = c.Int("size", 0);
  if (size < 1) c.Fail("size must be positive");
  if (x.rank() < 3) c.Fail(fmt::format("input {} needs a channel axis and spatial axes", x.shape()));
  const double alpha = c.Float("alpha", 1e-4f), beta = c.Float("beta", 0.75f), bias = c.Float("bias", 1.0f);
  std::vector<int64_t> window(static_cast<size_t>(x.rank()), 1);
  window[1] = size;
  std::vector<compute::PadAxis> padding(static_cast<size_t>(x.rank()));
  padding[1] = compute::PadAxis{(size - 1) / 2, size - 1 - (size - 1) / 2, 0};
  Node sum = ReduceWindow(x * x, compute::ReduceKind::Sum, window, {}, padding);
  return {x / Pow(sum * (alpha / static_cast<double>(size)) + bias, ScalarLike(x, beta))};
}

}  // namespace

void AddNNConverters(std::map<std::string, Converter>& m) {
  m["Conv"] = Conv;
  m["LRN"] = LRN;
  m["ConvTranspose"] = ConvTranspose;
  m["MaxPool"] = Pool<true>;
  m["AveragePool"] = Pool<false>;
  m["GlobalMaxPool"] = GlobalPool<true>;
  m["GlobalAveragePool"] = GlobalPool<false>;
  m["BatchNormalization"] = BatchNormalization;
  m["InstanceNormalization"] = InstanceNormalization;
  m["LayerNormalization"] = LayerNormalization;
}

}  // namespace kiln::onnx::internal
