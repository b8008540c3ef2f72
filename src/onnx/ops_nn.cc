// ONNX's neural-network operators: convolutions, pooling and normalizations (channels first,
// as ONNX lays them out: [batch, channels, spatial...], kernels [out, in/groups, spatial...]).

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>

#include "kiln/graph/conv.h"
#include "kiln/graph/gather.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

/// The [begin, end] padding of each spatial axis for `auto_pad` / `pads`, with windows `k`,
/// strides and dilations, over the spatial sizes of x.
std::vector<std::array<int64_t, 2>> Paddings(const Context& c, Node x, const std::vector<int64_t>& k,
                                             const std::vector<int64_t>& strides,
                                             const std::vector<int64_t>& dilations) {
  const size_t n = k.size();
  if (x.rank() < 2 || n != static_cast<size_t>(x.rank() - 2) || strides.size() != n || dilations.size() != n)
    c.Fail(
        fmt::format("x {} needs one kernel size, stride and dilation per spatial axis, got [{}], [{}], [{}]",
                    x.shape(), fmt::join(k, ", "), fmt::join(strides, ", "), fmt::join(dilations, ", ")));
  for (size_t i = 0; i < n; ++i)
    if (k[i] < 1 || strides[i] < 1 || dilations[i] < 1 || k[i] > kMaxHostElements ||
        strides[i] > kMaxHostElements || dilations[i] > kMaxHostElements)
      c.Fail(fmt::format("kernel size {}, stride {} and dilation {} of spatial axis {} must be in [1, {}]",
                         k[i], strides[i], dilations[i], i, kMaxHostElements));
  const std::string mode = c.String("auto_pad", "NOTSET");
  std::vector<std::array<int64_t, 2>> p(n, {0, 0});
  if (mode == "NOTSET") {
    const std::vector<int64_t> pads = c.IntList("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) c.Fail(fmt::format("pads has {} entries, expected {}", pads.size(), 2 * n));
    for (int64_t v : pads)
      if (v < -kMaxHostElements || v > kMaxHostElements) c.Fail(fmt::format("pad {} is out of range", v));
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

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

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

/// MaxPool's Indices output: for each window the flat index (over the whole input, [N, C, ...]
/// row-major, or the spatial part column-major with storage_order 1) of its first maximum. The
/// windows are gathered as patches [N, C, windows, window size] from x padded with -inf.
Node MaxPoolIndices(const Context& c, Node x, const std::vector<int64_t>& k,
                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                    const std::vector<compute::PadAxis>& padding) {
  const std::vector<int64_t>& dims = x.shape().Dimensions();
  const size_t n = k.size();
  std::vector<int64_t> in(dims.begin() + 2, dims.end()), padded(n), out(n);
  int64_t in_size = 1, window = 1, windows = 1, padded_size = 1;
  for (size_t i = 0; i < n; ++i) {
    padded[i] = in[i] + padding[i + 2].low + padding[i + 2].high;
    out[i] = (padded[i] - dilations[i] * (k[i] - 1) - 1) / strides[i] + 1;
    in_size =
        CheckedProduct(c, in_size, in[i], "the input's spatial size", std::numeric_limits<int64_t>::max());
    window = CheckedProduct(c, window, k[i], "the window size");
    windows = CheckedProduct(c, windows, out[i], "the number of windows");
    padded_size =
        CheckedProduct(c, padded_size, padded[i], "the padded size", std::numeric_limits<int64_t>::max());
  }
  CheckedProduct(c, windows, window, "the pooling windows' elements to index");
  // For each (window, offset): its flat position in the padded input, and in the input (-1 in
  // the padding), as storage_order says.
  const bool column_major = c.Int("storage_order", 0) != 0;
  std::vector<int64_t> at_padded, at_input;
  std::vector<int64_t> o(n, 0), kk(n, 0);
  for (int64_t w = 0; w < windows; ++w) {
    for (int64_t j = 0; j < window; ++j) {
      int64_t rest_w = w, rest_j = j;
      for (size_t i = n; i-- > 0;) {
        o[i] = rest_w % out[i], rest_w /= out[i];
        kk[i] = rest_j % k[i], rest_j /= k[i];
      }
      int64_t fp = 0, fi = 0;
      bool inside = true;
      for (size_t i = 0; i < n; ++i) {
        const int64_t pos = o[i] * strides[i] + kk[i] * dilations[i];
        fp = fp * padded[i] + pos;
        const int64_t orig = pos - padding[i + 2].low;
        inside = inside && orig >= 0 && orig < in[i];
      }
      if (inside) {
        for (size_t step = 0; step < n; ++step) {
          const size_t i = column_major ? n - 1 - step : step;
          fi = fi * in[i] + (o[i] * strides[i] + kk[i] * dilations[i] - padding[i + 2].low);
        }
      }
      at_padded.push_back(fp);
      at_input.push_back(inside ? fi : -1);
    }
  }
  Graph& g = c.graph();
  Node xp = Pad(x, Infinity(g, x.dtype(), -1), padding);
  xp = Reshape(xp, {dims[0], dims[1], padded_size});
  Node patches =
      Reshape(GatherAlongAxis(xp, Int64Const(g, at_padded, {static_cast<int64_t>(at_padded.size())}), 2),
              {dims[0], dims[1], windows, window});
  Node best = ConvertDType(ArgMax(patches, 3), DType::Int64);  // [N, C, windows]
  Node flat = best + Reshape(Iota(g, Shape(DType::Int64, {windows}), 0) * window, {1, 1, windows});
  Node spatial = GatherAlongAxis(Int64Const(g, at_input, {static_cast<int64_t>(at_input.size())}),
                                 Reshape(flat, {dims[0] * dims[1] * windows}), 0);
  Node nc = Iota(g, Shape(DType::Int64, {dims[0], dims[1], windows}), 0) * dims[1] +
            Iota(g, Shape(DType::Int64, {dims[0], dims[1], windows}), 1);
  std::vector<int64_t> shape = {dims[0], dims[1]};
  shape.insert(shape.end(), out.begin(), out.end());
  return Reshape(nc * in_size + Reshape(spatial, {dims[0], dims[1], windows}), shape);
}

/// MaxPool and AveragePool (kMax false): windows `kernel_shape` over the spatial axes, with
/// strides, paddings (auto_pad), dilations and ceil_mode; MaxPool's optional Indices output.
template <bool kMax>
V Pool(const Context& c) {
  Node x = c.In(0);
  const int spatial = x.rank() - 2;
  const std::vector<int64_t> k = c.IntList("kernel_shape");
  if (spatial < 1 || static_cast<int>(k.size()) != spatial)
    c.Fail(fmt::format("kernel_shape must have one entry per spatial axis of x {}", x.shape()));
  const bool ceil_mode = c.Int("ceil_mode", 0) != 0;
  const std::vector<int64_t> ones(static_cast<size_t>(spatial), 1);
  const std::vector<int64_t> dilations = c.IntList("dilations", ones);
  const bool indices = kMax && c.node().output_size() > 1 && !c.node().output(1).empty();
  const std::vector<int64_t> strides = c.IntList("strides", ones);
  auto pads = Paddings(c, x, k, strides, dilations);
  const bool include_pad = !kMax && c.Int("count_include_pad", 0) != 0;
  if (ceil_mode || dilations != ones || indices) {
    // The general window reduction: dilated windows, and with ceil_mode the last partial window
    // (padding at the end, where a window starts inside the input or its padding).
    std::vector<int64_t> window = {1, 1}, steps = {1, 1}, dil = {1, 1};
    std::vector<compute::PadAxis> padding(2), extra_only(2);
    for (size_t i = 0; i < static_cast<size_t>(spatial); ++i) {
      const int64_t in = x.shape().Dimensions()[i + 2];
      if (in == Shape::kDynamic) c.Fail("ceil_mode, dilations and indices need static spatial sizes");
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
      extra_only.push_back(compute::PadAxis{0, extra, 0});
    }
    if (kMax) {
      Node y = ReduceWindow(x, compute::ReduceKind::Max, window, steps, padding, dil);
      if (!indices) return {y};
      return {y, MaxPoolIndices(c, x, k, strides, dilations, padding)};
    }
    // The mean over each window's elements: those of x, and with count_include_pad the explicit
    // padding too (never the extra end padding of ceil_mode).
    Node sum = ReduceWindow(x, compute::ReduceKind::Sum, window, steps, padding, dil);
    std::vector<compute::PadAxis> explicit_pads = padding;
    for (size_t i = 0; i < padding.size(); ++i) explicit_pads[i].high -= extra_only[i].high;
    Node count = include_pad
                     ? ReduceWindow(Pad(OnesLike(x), ScalarLike(x, 1), explicit_pads),
                                    compute::ReduceKind::Sum, window, steps, extra_only, dil)
                     : ReduceWindow(OnesLike(x), compute::ReduceKind::Sum, window, steps, padding, dil);
    return {sum / count};
  }
  if (include_pad) {
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

/// MaxUnpool: zeros of the unpooled shape with each value of x placed at its MaxPool index (flat
/// over the whole output). The shape is output_shape (input 2) when given, else what the pooling
/// window, strides and pads imply.
V MaxUnpool(const Context& c) {
  Node x = c.In(0), idx = c.In(1);
  const int spatial = x.rank() - 2;
  const std::vector<int64_t> k = c.IntList("kernel_shape");
  if (spatial < 1 || static_cast<int>(k.size()) != spatial ||
      idx.shape().Dimensions() != x.shape().Dimensions())
    c.Fail(fmt::format(
        "x {} and indices {} must be [N, C, spatial...] alike, with kernel_shape per spatial axis", x.shape(),
        idx.shape()));
  if (x.shape().IsDynamic()) c.Fail(fmt::format("x must have a static shape, got {}", x.shape()));
  // The indices address the shape the pooling window, strides and pads imply; output_shape
  // (input 2) may add elements at the end of each spatial axis.
  const std::vector<int64_t> ones(static_cast<size_t>(spatial), 1);
  const std::vector<int64_t> strides = c.IntList("strides", ones);
  const std::vector<int64_t> pads = c.IntList("pads", std::vector<int64_t>(2 * k.size(), 0));
  if (pads.size() != 2 * k.size() || strides.size() != k.size())
    c.Fail("pads and strides must have one entry per spatial axis (pads two)");
  for (size_t i = 0; i < k.size(); ++i)
    if (k[i] < 1 || strides[i] < 1 || k[i] > kMaxHostElements || strides[i] > kMaxHostElements ||
        std::abs(pads[i]) > kMaxHostElements || std::abs(pads[i + k.size()]) > kMaxHostElements)
      c.Fail(fmt::format("kernel size {}, stride {} and pads of spatial axis {} must be in range", k[i],
                         strides[i], i));
  std::vector<int64_t> shape = {x.shape().Dimensions()[0], x.shape().Dimensions()[1]};
  for (size_t i = 0; i < k.size(); ++i)
    shape.push_back(CheckedProduct(c, x.shape().Dimensions()[i + 2] - 1, strides[i], "the unpooled size") +
                    k[i] - pads[i] - pads[i + k.size()]);
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 0) c.Fail(fmt::format("the unpooled shape [{}] has a negative size", fmt::join(shape, ", ")));
    total = CheckedProduct(c, total, d, "the unpooled size", std::numeric_limits<int64_t>::max());
  }
  std::vector<compute::PadAxis> grow(shape.size());
  if (c.Has(2)) {
    const std::vector<int64_t> want = c.Ints(2, "output_shape");
    if (want.size() != shape.size())
      c.Fail(fmt::format("output_shape has {} entries, x has rank {}", want.size(), x.rank()));
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] < shape[i] || (i < 2 && want[i] != shape[i]))
        c.Fail(fmt::format("output_shape [{}] is smaller than the unpooled shape [{}]", fmt::join(want, ", "),
                           fmt::join(shape, ", ")));
      grow[i].high = want[i] - shape[i];
    }
  }
  const int64_t count = x.shape().Size();
  Node flat_idx = Reshape(ConvertDType(idx, DType::Int64), {count, 1});
  Node y = Reshape(Scatter(flat_idx, Reshape(x, {count}), Shape(x.dtype(), {total})), shape);
  return {Pad(y, ScalarLike(y, 0), grow)};
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

/// BatchNormalization: x normalised per channel (axis 1) with the given mean and variance, or
/// in training mode (opset 14+) with the batch's own statistics, which also update the running
/// mean and variance (outputs 1 and 2: running * momentum + batch * (1 - momentum)).
V BatchNormalization(const Context& c) {
  Node x = c.In(0), scale = c.In(1), bias = c.In(2), mean = c.In(3), var = c.In(4);
  if (x.rank() < 2) c.Fail(fmt::format("x must be [batch, channels, ...], got {}", x.shape()));
  const double eps = c.Float("epsilon", 1e-5f);
  std::vector<int64_t> dims(static_cast<size_t>(x.rank()), 1);
  dims[1] = x.shape().Dimensions()[1];
  // Before opset 9, `spatial` 0 gives each element of [C, spatial...] statistics of its own.
  const bool per_element = c.opset() < 9 && c.Int("spatial", 1) == 0;
  auto per_channel = [&](Node v) {
    if (!per_element) return Reshape(v, dims);
    std::vector<int64_t> d = {1};
    d.insert(d.end(), v.shape().Dimensions().begin(), v.shape().Dimensions().end());
    return Reshape(v, d);
  };
  const bool training = c.opset() >= 14 && c.Int("training_mode", 0) != 0;
  if (!training) {
    // Known statistics: one scale and one shift per channel (constants the compiler folds, as
    // ONNX Runtime does), so each element is multiplied and added once.
    if (c.Constant(1) && c.Constant(2) && c.Constant(3) && c.Constant(4)) {
      Node s = Rsqrt(per_channel(var) + eps) * per_channel(scale);
      return {x * s + (per_channel(bias) - per_channel(mean) * s)};
    }
    Node y = (x - per_channel(mean)) * Rsqrt(per_channel(var) + eps) * per_channel(scale) + per_channel(bias);
    return {y};
  }
  std::vector<int> axes;
  for (int a = 0; a < x.rank(); ++a)
    if (a != 1) axes.push_back(a);
  Node batch_mean = ReduceMean(x, axes), batch_var = ReduceVariance(x, axes);  // [C], population.
  Node y = (x - per_channel(batch_mean)) * Rsqrt(per_channel(batch_var) + eps) * per_channel(scale) +
           per_channel(bias);
  const double momentum = c.Float("momentum", 0.9f);
  return {y, mean * momentum + batch_mean * (1 - momentum), var * momentum + batch_var * (1 - momentum)};
}

/// MeanVarianceNormalization: (x - mean) / (sqrt(variance) + 1e-9) over `axes` (default 0, 2, 3).
V MeanVarianceNormalization(const Context& c) {
  Node x = c.In(0);
  std::vector<int> axes;
  for (int64_t a : c.IntList("axes", {0, 2, 3})) axes.push_back(Axis(c, a, x.rank()));
  Node centered = x - ReduceAndKeep(x, ReduceMean, axes);
  Node var = ReduceAndKeep(centered * centered, ReduceMean, axes);
  return {centered / (Sqrt(var) + 1e-9)};
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
  m["MaxUnpool"] = MaxUnpool;
  m["GlobalMaxPool"] = GlobalPool<true>;
  m["GlobalAveragePool"] = GlobalPool<false>;
  m["BatchNormalization"] = BatchNormalization;
  m["MeanVarianceNormalization"] = MeanVarianceNormalization;
  m["InstanceNormalization"] = InstanceNormalization;
  m["LayerNormalization"] = LayerNormalization;
}

}  // namespace kiln::onnx::internal
