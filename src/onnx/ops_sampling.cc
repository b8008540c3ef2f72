// ONNX's sampling operators: GridSample and RoiAlign.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kiln/graph/gather.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// One neighbour along one spatial axis: its (clamped) integer index, its weight, and whether
/// it lies inside the input (an invalid Node when it always does).
struct Tap {
  Node index, weight, inside;
};

/// x reflected by the nearer border until it lies in [lo, hi], as ONNX's reference reflects.
Node Reflect(Node x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return ScalarLike(x, lo) + ZerosLike(x);
  auto fold = [&](Node d, double near, double far) {
    Node n = Floor(d / range);  // d >= 0 where it is used: int() truncation is floor.
    Node r = d - n * range;
    Node even = IsZero(Rem(n, ScalarLike(n, 2)));
    return Where(even, ScalarLike(x, near) + (near < far ? r : -r),
                 ScalarLike(x, far) + (near < far ? -r : r));
  };
  Node below = fold(ScalarLike(x, lo) - x, lo, hi);
  Node above = fold(x - hi, hi, lo);
  return Where(Less(x, ScalarLike(x, lo)), below, Where(Greater(x, ScalarLike(x, hi)), above, x));
}

/// x rounded toward zero (Python's int()).
Node Trunc(Node x) { return Where(Less(x, ScalarLike(x, 0)), Ceil(x), Floor(x)); }

/// GridSample(X [N, C, D1..Dk], grid [N, O1..Ok, k]) -> [N, C, O1..Ok]: each output position
/// reads X at the grid's normalized coordinates (x first: the grid's last axis lists the spatial
/// axes in reverse), mapped to pixels by align_corners, moved inside by padding_mode (border,
/// reflection; zeros reads 0 outside) and interpolated from the nearest pixel (rounded half to
/// even), the 2^k (linear) or 4^k (cubic, Keys with a = -0.75) neighbours, each a gather.
V GridSample(const Context& c) {
  Node x = c.In(0), grid = c.In(1);
  const int rank = x.rank(), nd = rank - 2;
  // 2^nd (linear) or 4^nd (cubic) gathers: 1-D to 3-D, as ONNX Runtime (2-D and 3-D).
  if (nd < 1 || nd > 3)
    c.Fail(fmt::format("X {} has {} spatial axes; GridSample supports 1 to 3", x.shape(), nd));
  if (grid.rank() != rank || grid.shape().Dimensions().back() != nd)
    c.Fail(fmt::format("X {} and grid {} do not fit: grid must be [N, out..., {}]", x.shape(), grid.shape(),
                       nd));
  StaticDims(c, x, "GridSample's input");
  StaticDims(c, grid, "GridSample's grid");
  if (!IsFloat(x.dtype()) || !IsFloat(grid.dtype()))
    c.Fail(fmt::format("X ({}) and grid ({}) must be floats", x.dtype(), grid.dtype()));
  const std::vector<int64_t> xd = x.shape().Dimensions(), gd = grid.shape().Dimensions();
  if (gd[0] != xd[0]) c.Fail(fmt::format("X {} and grid {} differ in batch", x.shape(), grid.shape()));
  std::string mode = c.String("mode", c.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    c.Fail(fmt::format("mode {} is not supported (bilinear/linear, nearest, bicubic/cubic)", mode));
  const std::string padding = c.String("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    c.Fail(fmt::format("padding_mode {} is not zeros, border or reflection", padding));
  const bool align = c.Int("align_corners", 0) != 0;
  const DType ft =
      x.dtype() == DType::Float64 || grid.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const Node g = ConvertDType(grid, ft);
  const std::vector<int64_t> out_dims(gd.begin(), gd.end() - 1);  // [N, O1..Ok]

  // The taps of each spatial axis.
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(nd));
  for (int d = 0; d < nd; ++d) {
    const int64_t len = xd[static_cast<size_t>(d + 2)];
    const double lo = align ? 0.0 : -0.5,
                 hi = align ? static_cast<double>(len - 1) : static_cast<double>(len) - 0.5;
    Node n = Squeeze(SliceAxis(g, -1, AxisElem(nd - 1 - d)), {-1});
    // Normalized [-1, 1] to pixel coordinates.
    Node p = align ? (n + 1.0) * (0.5 * static_cast<double>(len - 1))
                   : ((n + 1.0) * static_cast<double>(len) - 1.0) * 0.5;
    if (mode == "nearest") {
      // PyTorch rounds half to even in 2-D (nearbyint) but half away from zero in 3-D.
      p = nd == 3 ? Where(Less(p, ScalarLike(p, 0)), Ceil(p - 0.5), Floor(p + 0.5)) : Round(p);
    }
    if (padding == "border") {
      Node outside = LogicalOr(Less(p, ScalarLike(p, lo)), Greater(p, ScalarLike(p, hi)));
      p = Where(outside, Clip(p, 0.0, static_cast<double>(len - 1)), p);
    } else if (padding == "reflection") {
      p = Reflect(p, lo, hi);
    }
    // The neighbours: offsets from floor(p) with their weights.
    std::vector<std::pair<int, Node>> near;
    if (mode == "nearest") {
      p = Trunc(p);
      near = {{0, OnesLike(p)}};
    } else {
      Node base = Floor(p), t = p - base;
      if (mode == "linear") {
        near = {{0, 1.0 - t}, {1, t}};
      } else {
        constexpr double a = -0.75;
        auto far = [&](Node s) { return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a; };  // 1 <= s < 2
        auto close = [&](Node s) { return ((a + 2) * s - (a + 3)) * s * s + 1.0; };    // 0 <= s <= 1
        near = {{-1, far(t + 1.0)}, {0, close(t)}, {1, close(1.0 - t)}, {2, far(2.0 - t)}};
      }
      p = base;
    }
    for (auto& [off, w] : near) {
      Node i = p + static_cast<double>(off);
      Tap tap;
      tap.weight = w;
      if (padding == "zeros") {
        tap.inside = LogicalAnd(GreaterOrEqual(i, ScalarLike(i, 0)),
                                LessOrEqual(i, ScalarLike(i, static_cast<double>(len - 1))));
      } else if (padding == "reflection") {
        i = Trunc(Reflect(i, lo, hi));
      }
      tap.index = ConvertDType(Clip(i, 0.0, static_cast<double>(len - 1)), DType::Int32);
      taps[static_cast<size_t>(d)].push_back(tap);
    }
  }

  // Every combination of the axes' taps: its index vector (batch, then the spatial indices),
  // its weight and whether it is inside.
  Graph& gr = c.graph();
  Node batch = Iota(gr, Shape(DType::Int32, out_dims), 0);
  std::vector<Node> indices, weights, insides;
  std::vector<size_t> pick(static_cast<size_t>(nd), 0);
  while (true) {
    std::vector<Node> idx = {batch};
    Node w, in;
    for (size_t d = 0; d < pick.size(); ++d) {
      const Tap& t = taps[d][pick[d]];
      idx.push_back(t.index);
      w = w.Ok() ? w * t.weight : t.weight;
      if (t.inside.Ok()) in = in.Ok() ? LogicalAnd(in, t.inside) : t.inside;
    }
    indices.push_back(Stack(idx, -1));
    weights.push_back(w);
    if (in.Ok()) insides.push_back(in);
    size_t d = pick.size();
    while (d > 0 && ++pick[d - 1] == taps[d - 1].size()) pick[--d] = 0;
    if (d == 0) break;
  }
  const int tap_axis = nd + 1;  // After [N, O1..Ok].
  // X as [N, D1..Dk, C]: a gather of [N, O..., T, 1 + k] index vectors gives [N, O..., T, C].
  std::vector<int> perm = {0};
  for (int d = 0; d < nd; ++d) perm.push_back(d + 2);
  perm.push_back(1);
  Node values = Gather(TransposeAllAxes(x, perm), Stack(indices, tap_axis));
  if (!insides.empty()) values = Where(ExpandAxes(Stack(insides, tap_axis), {-1}), values, ZerosLike(values));
  Node w = ConvertDType(ExpandAxes(Stack(weights, tap_axis), {-1}), x.dtype());
  Node y = ReduceSum(values * w, {tap_axis});  // [N, O..., C]
  std::vector<int> back = {0, rank - 1};
  for (int d = 0; d < nd; ++d) back.push_back(d + 1);
  return {TransposeAllAxes(y, back)};
}

/// RoiAlign(X [N, C, H, W], rois [R, 4] as (x1, y1, x2, y2), batch_indices [R]) -> [R, C,
/// output_height, output_width]: each ROI (scaled by spatial_scale, shifted by half a pixel in
/// half_pixel mode) is cut into bins, each bin sampled on a grid of sampling_ratio^2 points
/// (ceil(roi size / bins) per axis when it is 0, which needs the rois at import), each point
/// bilinearly interpolated from its 4 neighbours (gathers; points beyond a pixel outside the map
/// give 0). avg averages a bin's points; max takes, as ONNX's reference does, the largest of the
/// weighted neighbours w_i * x_i over the bin's points (not the max of the interpolated values).
V RoiAlign(const Context& c) {
  Node x = c.In(0), rois = c.In(1), batch = c.In(2);
  if (x.rank() != 4 || rois.rank() != 2 || rois.shape().Dimensions()[1] != 4 || batch.rank() != 1)
    c.Fail(fmt::format("X {}, rois {} and batch_indices {} must be [N, C, H, W], [R, 4] and [R]", x.shape(),
                       rois.shape(), batch.shape()));
  StaticDims(c, x, "RoiAlign's input");
  const int64_t num = rois.shape().Dimensions()[0];
  if (num == Shape::kDynamic || batch.shape().Dimensions()[0] != num)
    c.Fail(
        fmt::format("rois {} and batch_indices {} need the same static count", rois.shape(), batch.shape()));
  if (!IsFloat(x.dtype()) || !IsFloat(rois.dtype()))
    c.Fail(fmt::format("X ({}) and rois ({}) must be floats", x.dtype(), rois.dtype()));
  const std::string mode = c.String("mode", "avg");
  if (mode != "avg" && mode != "max") c.Fail(fmt::format("mode {} is not avg or max", mode));
  const std::string coords =
      c.String("coordinate_transformation_mode", c.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (coords != "half_pixel" && coords != "output_half_pixel")
    c.Fail(fmt::format("coordinate_transformation_mode {} is not half_pixel or output_half_pixel", coords));
  const bool half = coords == "half_pixel";
  const int64_t out_h = c.Int("output_height", 1), out_w = c.Int("output_width", 1);
  const int64_t ratio = c.Int("sampling_ratio", 0);
  const float scale = c.Float("spatial_scale", 1.0f);
  if (out_h < 1 || out_w < 1) c.Fail(fmt::format("output size {}x{} is not positive", out_h, out_w));
  if (ratio < 0) c.Fail(fmt::format("sampling_ratio {} is negative", ratio));
  // The host's per-ROI vectors and the [R, out_h, out_w, ...] sample tensors.
  CheckedProduct(c, CheckedProduct(c, num, out_h, "RoiAlign's ROIs times output height"), out_w,
                 "RoiAlign's output bins");
  const int64_t height = x.shape().Dimensions()[2], width = x.shape().Dimensions()[3];
  const float offset = half ? 0.5f : 0.0f;
  Graph& g = c.graph();
  if (num == 0) return {Zeros(g, Shape(x.dtype(), {0, x.shape().Dimensions()[1], out_h, out_w}))};

  // The sampling grid of each ROI per axis: sampling_ratio, or from the ROI's size (computed in
  // float as the reference does).
  std::vector<double> grid_h(static_cast<size_t>(num), static_cast<double>(ratio));
  std::vector<double> grid_w = grid_h;
  if (ratio == 0) {
    if (!c.Constant(1))
      c.Fail(
          "rois must be known when the model is imported when sampling_ratio is 0 (the sampling grid "
          "depends on them)");
    const std::vector<double> r = c.Constant(1)->ToDoubles();
    for (size_t i = 0; i < static_cast<size_t>(num); ++i) {
      auto size = [&](size_t a, int64_t bins) {
        float extent = (static_cast<float>(r[4 * i + a + 2]) * scale - offset) -
                       (static_cast<float>(r[4 * i + a]) * scale - offset);
        if (!half) extent = std::max(extent, 1.0f);
        return std::max(0.0, std::ceil(static_cast<double>(extent / static_cast<float>(bins))));
      };
      grid_w[i] = size(0, out_w);
      grid_h[i] = size(1, out_h);
    }
  }
  const double max_h = std::max(1.0, *std::max_element(grid_h.begin(), grid_h.end()));
  const double max_w = std::max(1.0, *std::max_element(grid_w.begin(), grid_w.end()));
  if (max_h * max_w > 65536)
    c.Fail(fmt::format("the sampling grid of {}x{} points per bin is too large", max_h, max_w));
  const auto gh = static_cast<int64_t>(max_h), gw = static_cast<int64_t>(max_w);

  const DType ft = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  Node r = ConvertDType(rois, ft);
  auto column = [&](int64_t i) {
    return Squeeze(SliceAxis(r, 1, AxisElem(i)), {1}) * static_cast<double>(scale) - offset;
  };
  // One axis: the sample coordinates [R, bins, grid] of ROI extent (begin, end) with `bins` bins
  // and grid[r] samples per bin (of `most`), clamped and split into low/high pixel indices and
  // weights (zero where the point falls outside), and whether the sample exists.
  struct Axis1 {
    Node low, high, w_low, w_high, exists;
  };
  auto axis = [&](Node begin, Node end, int64_t bins, const std::vector<double>& grid, int64_t most,
                  int64_t len) {
    Node extent = end - begin;
    if (!half) extent = MaxScalar(extent, 1.0);
    Node bin = Reshape(extent / static_cast<double>(bins), {num, 1, 1});
    Node steps = Reshape(ConvertDType(Const(g, Tensor::FromValue(grid)), ft), {num, 1, 1});
    Node b = ConvertDType(Iota(g, Shape(DType::Int32, {1, bins, 1}), 1), ft);
    Node k = ConvertDType(Iota(g, Shape(DType::Int32, {1, 1, most}), 2), ft);
    Node p = Reshape(begin, {num, 1, 1}) + b * bin +
             (k + 0.5) * bin / MaxScalar(steps, 1.0);  // No samples: exists is false.
    const double last = static_cast<double>(len - 1);
    Node inside = LogicalAnd(GreaterOrEqual(p, ScalarLike(p, -1.0)),
                             LessOrEqual(p, ScalarLike(p, static_cast<double>(len))));
    p = MaxScalar(p, 0.0);
    Node low = Floor(p);
    Node at_end = GreaterOrEqual(low, ScalarLike(low, last));
    low = Where(at_end, ScalarLike(low, last), low);
    Node high = Where(at_end, low, low + 1.0);
    p = Where(at_end, low, p);
    Node frac = p - low, zero = ZerosLike(p);
    Axis1 a;
    a.low = ConvertDType(low, DType::Int32);
    a.high = ConvertDType(high, DType::Int32);
    a.w_low = Where(inside, 1.0 - frac, zero);
    a.w_high = Where(inside, frac, zero);
    a.exists = BroadcastToDims(Less(k, steps), {num, bins, most});
    return a;
  };
  const Axis1 ay = axis(column(1), column(3), out_h, grid_h, gh, height);
  const Axis1 ax = axis(column(0), column(2), out_w, grid_w, gw, width);

  // Everything as [R, out_h, out_w, gh, gw]: y terms are [R, out_h, gh], x terms [R, out_w, gw].
  const std::vector<int64_t> full = {num, out_h, out_w, gh, gw};
  auto ys = [&](Node v) { return BroadcastToDims(Reshape(v, {num, out_h, 1, gh, 1}), full); };
  auto xs = [&](Node v) { return BroadcastToDims(Reshape(v, {num, 1, out_w, 1, gw}), full); };
  Node bi = BroadcastToDims(Reshape(ConvertDType(batch, DType::Int32), {num, 1, 1, 1, 1}), full);
  Node xt = TransposeAllAxes(x, {0, 2, 3, 1});  // [N, H, W, C]
  Node sum, best;
  for (int corner = 0; corner < 4; ++corner) {
    const bool y_high = corner >= 2, x_high = corner % 2 == 1;
    Node idx = Stack({bi, ys(y_high ? ay.high : ay.low), xs(x_high ? ax.high : ax.low)}, -1);
    Node w = ys(y_high ? ay.w_high : ay.w_low) * xs(x_high ? ax.w_high : ax.w_low);
    Node term = Gather(xt, idx) * ConvertDType(ExpandAxes(w, {-1}), x.dtype());  // [R, oh, ow, gh, gw, C]
    sum = sum.Ok() ? sum + term : term;
    best = best.Ok() ? Max(best, term) : term;
  }
  Node exists = ExpandAxes(LogicalAnd(ys(ay.exists), xs(ax.exists)), {-1});
  Node y;
  if (mode == "avg") {
    std::vector<double> count(static_cast<size_t>(num));
    for (size_t i = 0; i < count.size(); ++i) count[i] = std::max(1.0, grid_h[i] * grid_w[i]);
    Node total = ReduceSum(Where(exists, sum, ZerosLike(sum)), {3, 4});  // [R, oh, ow, C]
    y = total / ConvertDType(Reshape(Const(g, Tensor::FromValue(count)), {num, 1, 1, 1}), x.dtype());
  } else {
    Node any = ReduceLogicalOr(exists, {3, 4});
    y = Where(any, MaskedReduceMax(best, exists, {3, 4}), ScalarLike(best, 0));
  }
  return {TransposeAllAxes(y, {0, 3, 1, 2})};
}

}  // namespace

void AddSamplingConverters(std::map<std::string, Converter>& m) {
  m["GridSample"] = GridSample;
  m["RoiAlign"] = RoiAlign;
}

}  // namespace kiln::onnx::internal
