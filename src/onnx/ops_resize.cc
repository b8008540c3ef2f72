// ONNX's Resize (and Upsample): axis by axis, each output position mapped to a source
// coordinate by the coordinate transformation mode, then the nearest element (a gather) or a
// linear or cubic combination of its neighbours (a constant [out, in] matrix contracted with
// the axis; edges repeat the border element, as ONNX's reference does). tf_crop_and_resize maps
// the output onto the roi and fills outputs mapped outside the input with extrapolation_value.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "kiln/graph/gather.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// The source coordinate of output index x for an axis of `in` elements resized by `scale` to
/// `out` (align_corners divides by in * scale - 1, unrounded, when the scale was given).
double UnclampedCoordinate(const Context& c, const std::string& mode, double x, int64_t in, int64_t out,
                           double scale, const std::array<double, 2>& roi) {
  if (mode == "tf_crop_and_resize") {
    // The output spans [start, end] of the input (fractions of in - 1).
    const double len = static_cast<double>(in) * scale,
                 span = (roi[1] - roi[0]) * static_cast<double>(in - 1);
    return roi[0] * static_cast<double>(in - 1) + (len == 1 ? span / 2 : x * span / (len - 1));
  }
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (mode == "align_corners") {
    const double len = static_cast<double>(in) * scale;
    return out == 1 || len == 1 ? 0 : x * static_cast<double>(in - 1) / (len - 1);
  }
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  c.Fail(fmt::format("coordinate_transformation_mode {} is not supported", mode));
}

/// The source coordinate, clamped to [-2, in + 2]: beyond, every tap reads the border element (or
/// lies outside, for tf_crop_and_resize) as it does there, and the coordinate converts to an index.
double SourceCoordinate(const Context& c, const std::string& mode, double x, int64_t in, int64_t out,
                        double scale, const std::array<double, 2>& roi) {
  const double src = UnclampedCoordinate(c, mode, x, in, out, scale, roi);
  if (std::isnan(src))
    c.Fail(fmt::format("output {} of an axis of {} maps to no source coordinate (scale {}, roi [{}, {}])", x,
                       in, scale, roi[0], roi[1]));
  return std::clamp(src, -2.0, static_cast<double>(in) + 2);
}

/// The source index of the nearest element, by nearest_mode.
int64_t Nearest(const Context& c, const std::string& mode, double x, int64_t in) {
  double i;
  if (mode == "round_prefer_floor") {
    i = x - std::floor(x) == 0.5 ? std::floor(x) : std::round(x);
  } else if (mode == "round_prefer_ceil") {
    i = std::round(x);  // Halves away from zero: up for every coordinate the clamp below keeps.
  } else if (mode == "floor") {
    i = std::floor(x);
  } else if (mode == "ceil") {
    i = std::ceil(x);
  } else {
    c.Fail(fmt::format("nearest_mode {} is not supported", mode));
  }
  return std::clamp<int64_t>(static_cast<int64_t>(i), 0, in - 1);
}

/// The coordinate transformation mode of the node.
std::string CoordinateMode(const Context& c) {
  return c.String("coordinate_transformation_mode", c.opset() < 11 ? "asymmetric" : "half_pixel");
}

/// x with `axis` resized to `out` elements by interpolation (`roi`: see ResizeAxis).
Node Interpolate(const Context& c, Node x, int axis, int64_t out, double scale,
                 const std::array<double, 2>& roi) {
  const int64_t in = x.shape().Dimensions()[static_cast<size_t>(axis)];
  const std::string mode = c.String("mode", "nearest");
  const std::string coords = CoordinateMode(c);
  if (mode == "nearest") {
    const std::string nearest = c.String("nearest_mode", c.opset() < 11 ? "floor" : "round_prefer_floor");
    std::vector<int64_t> idx;
    for (int64_t o = 0; o < out; ++o)
      idx.push_back(
          Nearest(c, nearest, SourceCoordinate(c, coords, static_cast<double>(o), in, out, scale, roi), in));
    // Each element repeated r times in order (an integer upsampling): a broadcast along a new
    // axis and a reshape, which fuse with the ops around them, instead of a gather.
    const int64_t r = in > 0 && out % in == 0 ? out / in : 0;
    bool repeats = r > 0 && !x.shape().IsDynamic();
    for (int64_t o = 0; repeats && o < out; ++o) repeats = idx[static_cast<size_t>(o)] == o / r;
    if (repeats) {
      std::vector<int64_t> dims = x.shape().Dimensions(), expanded = dims;
      expanded.insert(expanded.begin() + axis + 1, r);
      dims[static_cast<size_t>(axis)] = out;
      return Reshape(BroadcastToDims(InsertAxes(x, {axis + 1}), expanded), dims);
    }
    return GatherAlongAxis(x, Const(c.graph(), Tensor::FromValue(idx)), axis);
  }
  // Linear and cubic: a constant matrix of weights.
  std::vector<double> m(
      static_cast<size_t>(CheckedProduct(c, out, in, "the Resize weight matrix (output x input elements)")),
      0.0);
  const double a = c.Float("cubic_coeff_a", -0.75f);
  const bool exclude = c.Int("exclude_outside", 0) != 0;
  for (int64_t o = 0; o < out; ++o) {
    const double src = SourceCoordinate(c, coords, static_cast<double>(o), in, out, scale, roi);
    const double base = std::floor(src), t = src - base;
    std::vector<std::pair<int64_t, double>> taps;
    if (mode == "linear") {
      taps = {{0, 1 - t}, {1, t}};
    } else if (mode == "cubic") {
      auto w = [a](double d) {
        d = std::abs(d);
        if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
        if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
        return 0.0;
      };
      taps = {{-1, w(t + 1)}, {0, w(t)}, {1, w(1 - t)}, {2, w(2 - t)}};
    } else {
      c.Fail(fmt::format("mode {} is not nearest, linear or cubic", mode));
    }
    double total = 0;
    for (auto& [off, weight] : taps) {
      const int64_t i = static_cast<int64_t>(base) + off;
      if (exclude && (i < 0 || i >= in)) weight = 0;
      total += weight;
    }
    for (const auto& [off, weight] : taps) {
      const int64_t i = std::clamp<int64_t>(static_cast<int64_t>(base) + off, 0, in - 1);
      // (Every tap outside, with exclude_outside: the output is outside too and gets no weight.)
      m[static_cast<size_t>(o * in + i)] += !exclude ? weight : (total != 0 ? weight / total : 0);
    }
  }
  Node mat = ConvertDType(Reshape(Const(c.graph(), Tensor::FromValue(m)), {out, in}), x.dtype());
  // y[..., o, ...] = sum_i m[o, i] x[..., i, ...]: contract the axis, which comes out last.
  Node y = Dot(x, mat).General({axis}, {}, {1}, {});
  std::vector<int> perm;
  for (int i = 0; i < x.rank(); ++i) perm.push_back(i < axis ? i : (i == axis ? x.rank() - 1 : i - 1));
  return TransposeAllAxes(y, perm);
}

/// x with `axis` resized to `out` elements; `roi` is the axis's [start, end] for
/// tf_crop_and_resize, whose outputs mapped outside the input take extrapolation_value.
Node ResizeAxis(const Context& c, Node x, int axis, int64_t out, double scale,
                const std::array<double, 2>& roi) {
  Node y = Interpolate(c, x, axis, out, scale, roi);
  const std::string coords = CoordinateMode(c);
  if (coords != "tf_crop_and_resize") return y;
  const int64_t in = x.shape().Dimensions()[static_cast<size_t>(axis)];
  std::vector<int64_t> outside(static_cast<size_t>(out));
  bool any = false;
  for (int64_t o = 0; o < out; ++o) {
    const double src = SourceCoordinate(c, coords, static_cast<double>(o), in, out, scale, roi);
    outside[static_cast<size_t>(o)] = src < 0 || src > static_cast<double>(in - 1);
    any = any || outside[static_cast<size_t>(o)] != 0;
  }
  if (!any) return y;
  std::vector<int64_t> dims = y.shape().Dimensions(), at(dims.size(), 1);
  at[static_cast<size_t>(axis)] = out;
  Node mask =
      Greater(Reshape(Const(c.graph(), Tensor::FromValue(outside)), at), Scalar(c.graph(), DType::Int64, 0));
  return Where(BroadcastToDims(mask, dims),
               BroadcastToDims(ScalarLike(y, c.Float("extrapolation_value", 0.0f)), dims), y);
}

V Resize(const Context& c) {
  Node x = c.In(0);
  const int rank = x.rank();
  const std::vector<int64_t> in_dims = StaticDims(c, x, "Resize");
  // Opset 18's attributes: antialiasing is not supported; `axes` names the axes the scales, sizes
  // and roi are given for (the others are kept).
  if (c.Int("antialias", 0) != 0) c.Fail("antialias=1 is not supported");
  const std::string policy = c.String("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    c.Fail(fmt::format("keep_aspect_ratio_policy {} is not stretch, not_larger or not_smaller", policy));
  std::vector<int> axes;
  if (c.HasAttr("axes")) {
    for (int64_t a : c.IntList("axes")) {
      const int axis = Axis(c, a, rank);
      if (std::find(axes.begin(), axes.end(), axis) != axes.end())
        c.Fail(fmt::format("axes lists axis {} twice", a));
      axes.push_back(axis);
    }
  } else {
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  }
  const auto k = static_cast<int>(axes.size());
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  const bool upsample = c.node().op_type() == "Upsample";
  if (upsample && c.opset() < 9) {
    for (float s : c.FloatList("scales")) scales.push_back(s);
  } else {
    const int scales_input = (c.opset() < 11 || upsample) ? 1 : 2;
    if (c.Has(scales_input)) {
      const Tensor& t = KnownInput(c, scales_input, "scales");
      if (t.Size() > 0) scales = t.ToDoubles();
    }
    if (scales.empty() && c.Has(3)) sizes = c.Ints(3, "sizes");
  }
  // tf_crop_and_resize's region of interest: [starts..., ends...] of the axes, as fractions.
  std::vector<double> roi;
  const bool crop = c.String("coordinate_transformation_mode", "") == "tf_crop_and_resize";
  if (crop) {
    if (upsample || c.opset() < 11 || !c.Has(1)) c.Fail("tf_crop_and_resize needs the roi input");
    roi = KnownInput(c, 1, "roi").ToDoubles();
    if (static_cast<int>(roi.size()) != 2 * k)
      c.Fail(fmt::format("roi has {} entries, not {} (a start and an end per axis)", roi.size(), 2 * k));
    for (double v : roi)
      if (!std::isfinite(v)) c.Fail(fmt::format("roi holds {}: its entries must be finite", v));
  }
  if (scales.empty() && sizes.empty()) c.Fail("neither scales nor sizes is given");
  if ((!scales.empty() && static_cast<int>(scales.size()) != k) ||
      (!sizes.empty() && static_cast<int>(sizes.size()) != k))
    c.Fail(fmt::format("scales or sizes must have {} entries", k));
  // Each axis's output size and scale (the axes not resized keep theirs).
  std::vector<int64_t> outs = in_dims;
  std::vector<double> axis_scales(static_cast<size_t>(rank), 1.0);
  std::vector<std::array<double, 2>> spans(static_cast<size_t>(rank), std::array<double, 2>{0, 1});
  for (int i = 0; i < k; ++i) {
    const auto a = static_cast<size_t>(axes[static_cast<size_t>(i)]);
    if (crop) spans[a] = {roi[static_cast<size_t>(i)], roi[static_cast<size_t>(i + k)]};
    if (!scales.empty()) {
      const double s = scales[static_cast<size_t>(i)];
      const double want = std::floor(static_cast<double>(in_dims[a]) * s);
      if (!(std::isfinite(s) && s > 0 && want <= static_cast<double>(kMaxHostElements)))
        c.Fail(fmt::format("scale {} of axis {} must be positive and resize its {} elements to at most {}", s,
                           a, in_dims[a], kMaxHostElements));
      outs[a] = static_cast<int64_t>(want);
      axis_scales[a] = s;
    } else {
      outs[a] = sizes[static_cast<size_t>(i)];
      if (outs[a] < 0 || outs[a] > kMaxHostElements)
        c.Fail(fmt::format("size {} of axis {} is outside [0, {}]", outs[a], a, kMaxHostElements));
      if (in_dims[a] > 0) axis_scales[a] = static_cast<double>(outs[a]) / static_cast<double>(in_dims[a]);
    }
  }
  if (!sizes.empty() && policy != "stretch") {
    // One scale for all the axes (the smallest or largest of the sizes' ones); the sizes follow,
    // rounded half up.
    double scale = policy == "not_larger" ? HUGE_VAL : 0;
    for (int a : axes) {
      if (in_dims[static_cast<size_t>(a)] == 0)
        c.Fail(fmt::format("keep_aspect_ratio_policy {} needs the resized axes non-empty", policy));
      const double s = axis_scales[static_cast<size_t>(a)];
      scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
    }
    for (int a : axes) {
      const auto i = static_cast<size_t>(a);
      const double want = std::floor(scale * static_cast<double>(in_dims[i]) + 0.5);
      if (!(want <= static_cast<double>(kMaxHostElements)))
        c.Fail(fmt::format("axis {} would get {} elements, more than {}", a, want, kMaxHostElements));
      outs[i] = static_cast<int64_t>(want);
      axis_scales[i] = scale;
    }
  }
  Node y = x;
  for (int a = 0; a < rank; ++a) {
    const auto i = static_cast<size_t>(a);
    const int64_t in = in_dims[i], out = outs[i];
    const std::array<double, 2>& span = spans[i];
    if (out == in && axis_scales[i] == 1.0 && span[0] == 0 && span[1] == 1) continue;
    if (in == 0) {
      if (out > 0) c.Fail(fmt::format("axis {} has no elements to resize to {}", a, out));
      continue;
    }
    y = ResizeAxis(c, y, a, out, axis_scales[i], span);
  }
  return {y};
}

}  // namespace

void AddResizeConverters(std::map<std::string, Converter>& m) {
  m["Resize"] = Resize;
  m["Upsample"] = Resize;
}

}  // namespace kiln::onnx::internal
