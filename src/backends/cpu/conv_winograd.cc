// ConvGeneral as Winograd's F(4x4, 5x5) or F(2x2, 5x5) (conv_winograd.h): 2-D Float32
// convolutions with 5x5 kernels, unit strides and dilations, no groups, and input and output
// features in multiples of 16, contiguous in the data. Two forms: the forward one (a layer's
// result, and its input gradient, which autodiff writes as a forward convolution with the
// reversed kernel), and the kernel gradient (autodiff's form whose result is the 5x5 kernel).
// The transforms and products of a block of tiles (WinogradRows) run in a core's L2; blocks
// split across the team. oneDNN's direct kernels for the CNN benchmark's second layer ([128, 14,
// 14, 32] by 5x5 to 64 features, 2.57 GFLOP in each of the three) run at about the fp32 peak;
// with 4x4 tiles this does a fifth of their multiply-adds (docs/performance.md, "Winograd
// convolutions").

#include "backends/cpu/conv_winograd.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "backends/cpu/conv_kernels.h"
#include "backends/cpu/cost_model.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/team_split.h"

namespace kiln::compute::cpu {

namespace {

using namespace dnnl_util;

constexpr int64_t kTaps = 5;
/// Features come in vectors of 16 (AVX-512's; two of AVX2's).
constexpr int64_t kFeatureStep = 16;
/// The transformed kernel ([64][cin][cout]) is at most this many floats (cin x cout up to 128 by
/// 128, 4.2 MB; the kernel gradient keeps up to kGradientChunks partial sums of that size);
/// larger convolutions stay on oneDNN.
constexpr int64_t kMaxPointFloats = 64 * 128 * 128;
/// The kernel gradient's tiles are split into this many chunks (fewer for small convolutions),
/// each summing into its own partial sums, which are then added in order: the result has the same
/// bits on any number of threads.
constexpr int64_t kGradientChunks = 4;

/// Everything one call needs.
struct WinogradPlan {
  WinogradShape s;
  bool kernel_gradient = false;
  /// Forward: the kernel's strides; kernel gradient: the result's. Tap row, tap column, input
  /// feature, output feature.
  int64_t w_row = 0, w_col = 0, w_in = 0, w_out = 0;
  bool bias = false, relu = false;
  int threads = 1;
  bool parallel = false;
  /// Set for a forward convolution whose kernel is a constant: its transform.
  std::shared_ptr<KeptCopy> kernel_cache;
};

/// The tile size that does fewer products: 4 (64 points per 4x4 results) unless 2 (36 points per
/// 2x2) covers the result with fewer points (results of 1 or 2 positions along an axis), 2 on a
/// tie (its rounding is the smaller: conv_winograd.h).
int64_t TileFor(WinogradShape s) {
  s.tile = 2;
  const int64_t small = s.Points() * s.TilesHigh() * s.TilesWide();
  s.tile = 4;
  const int64_t large = s.Points() * s.TilesHigh() * s.TilesWide();
  return large < small ? 4 : 2;
}

/// Tiles [first, last) of block b of `blocks` over `tiles`: blocks of equal size (to a tile),
/// each at most s.rows (a batch of one 14x14 image: 25 and 24 tiles, not 48 and 1).
std::pair<int64_t, int64_t> BlockTiles(int64_t b, int64_t blocks, int64_t tiles) {
  return {tiles * b / blocks, tiles * (b + 1) / blocks};
}

/// The padding of spatial axis i: low, high.
std::pair<int64_t, int64_t> Padding(const OpAttributes& at, size_t i) {
  if (at.padding.empty()) return {0, 0};
  return {at.padding[i].low, at.padding[i].high};
}

bool FeaturesFit(int64_t cin, int64_t cout) {
  return cin > 0 && cout > 0 && cin % kFeatureStep == 0 && cout % kFeatureStep == 0 &&
         64 * cin * cout <= kMaxPointFloats;
}

/// Where a form finds what the tiles read: the input's image and feature axes; the operand laid
/// out as the tiles' results (the result, or the result's gradient) with its image, feature and
/// spatial axes; and the 5x5 operand (the kernel, or the kernel gradient) with its spatial,
/// input-feature and output-feature axes.
struct FormAxes {
  int64_t x_image = 0, x_feature = 0;
  const Shape* tiles = nullptr;
  int64_t t_image = 0, t_feature = 0;
  std::vector<int64_t> t_spatial;
  const Shape* taps = nullptr;
  std::vector<int64_t> w_spatial;
  int64_t w_in = 0, w_out = 0;
};

/// Fills the plan's geometry from the form's axes; false when the features are not contiguous
/// in the input and the tiles' operand, or do not fit (FeaturesFit).
bool MapForm(const OpAttributes& at, const Shape& x, const FormAxes& f, WinogradPlan& p) {
  const ConvDims& c = at.conv;
  const std::vector<int64_t> xs = DenseStrides(x.Dimensions()), ts = DenseStrides(f.tiles->Dimensions()),
                             ws = DenseStrides(f.taps->Dimensions());
  if (At(xs, f.x_feature) != 1 || At(ts, f.t_feature) != 1) return false;
  WinogradShape& s = p.s;
  s.batch = Dim(x, f.x_image);
  s.cin = Dim(x, f.x_feature);
  s.cout = Dim(*f.tiles, f.t_feature);
  if (!FeaturesFit(s.cin, s.cout)) return false;
  const auto [top, bottom] = Padding(at, 0);
  const auto [left, right] = Padding(at, 1);
  s.in_h = Dim(x, c.input_spatial[0]) + std::min<int64_t>(bottom, 0);
  s.in_w = Dim(x, c.input_spatial[1]) + std::min<int64_t>(right, 0);
  s.pad_top = top;
  s.pad_left = left;
  s.x_image = At(xs, f.x_image);
  s.x_row = At(xs, c.input_spatial[0]);
  s.x_col = At(xs, c.input_spatial[1]);
  s.out_h = Dim(*f.tiles, f.t_spatial[0]);
  s.out_w = Dim(*f.tiles, f.t_spatial[1]);
  s.y_image = At(ts, f.t_image);
  s.y_row = At(ts, f.t_spatial[0]);
  s.y_col = At(ts, f.t_spatial[1]);
  p.w_row = At(ws, f.w_spatial[0]);
  p.w_col = At(ws, f.w_spatial[1]);
  p.w_in = At(ws, f.w_in);
  p.w_out = At(ws, f.w_out);
  return true;
}

/// The forward form: a 5x5 kernel, features last in the input and the result.
bool MapForward(const OpAttributes& at, const Shape& x, const Shape& k, const Shape& y,
                const Epilogue* epilogue, WinogradPlan& p) {
  const ConvDims& c = at.conv;
  if (Dim(k, c.kernel_spatial[0]) != kTaps || Dim(k, c.kernel_spatial[1]) != kTaps) return false;
  if (epilogue != nullptr) {
    if (epilogue->bias && epilogue->axis != c.output_feature) return false;
    if (epilogue->activation != Activation::kNone && epilogue->activation != Activation::kRelu) return false;
    p.bias = epilogue->bias;
    p.relu = epilogue->activation == Activation::kRelu;
  }
  return MapForm(at, x,
                 {c.input_batch, c.input_feature, &y, c.output_batch, c.output_feature, c.output_spatial, &k,
                  c.kernel_spatial, c.kernel_input_feature, c.kernel_output_feature},
                 p);
}

/// The kernel-gradient form: the result is a 5x5 kernel ([taps, taps] by the input's batch axis,
/// which holds the features, and the result's feature axis); the op's kernel is the result
/// gradient, its input feature axis the images. Features last in both operands.
bool MapKernelGradient(const OpAttributes& at, const Shape& x, const Shape& dy, const Shape& y,
                       WinogradPlan& p) {
  const ConvDims& c = at.conv;
  if (Dim(y, c.output_spatial[0]) != kTaps || Dim(y, c.output_spatial[1]) != kTaps) return false;
  if (Dim(dy, c.kernel_spatial[0]) * Dim(dy, c.kernel_spatial[1]) <= kTaps * kTaps) return false;
  p.kernel_gradient = true;
  return MapForm(at, x,
                 {c.input_feature, c.input_batch, &dy, c.kernel_input_feature, c.kernel_output_feature,
                  c.kernel_spatial, &y, c.output_spatial, c.output_batch, c.output_feature},
                 p);
}

/// The kernel (operand `w`, at the plan's strides) at the points in `u`; `g` takes a dense
/// copy of it unless it is dense already ([5][5][cin][cout]).
void TransformKernel(const WinogradPlan& p, const uint8_t* w, float* g, float* u) {
  const WinogradShape& s = p.s;
  const bool dense =
      p.w_out == 1 && p.w_in == s.cout && p.w_col == s.cin * s.cout && p.w_row == kTaps * p.w_col;
  if (dense) {
    WinogradTransformKernel(s, reinterpret_cast<const float*>(w), u);
    return;
  }
  StridedCopy(w, {kTaps, kTaps, s.cin, s.cout}, {p.w_row, p.w_col, p.w_in, p.w_out},
              dnnl::memory::data_type::f32, reinterpret_cast<uint8_t*>(g));
  WinogradTransformKernel(s, g, u);
}

/// The constant kernel `w` at the points, from the plan's cache (transformed now if not yet).
const float* CachedKernel(const WinogradPlan& p, const uint8_t* w, float* g) {
  const size_t bytes = sizeof(float) * static_cast<size_t>(p.s.Points() * p.s.PointPlane());
  return reinterpret_cast<const float*>(p.kernel_cache->Get(
      w, bytes, [&](uint8_t* copy) { TransformKernel(p, w, g, reinterpret_cast<float*>(copy)); }));
}

void RunForward(const WinogradPlan& p, ref::Operands in, uint8_t* out) {
  const WinogradShape& s = p.s;
  const size_t plane = static_cast<size_t>(s.cin * s.cout);
  ScratchLayout layout;
  const size_t g_at = layout.Add(sizeof(float) * kTaps * kTaps * plane);
  const size_t u_at =
      p.kernel_cache ? 0 : layout.Add(sizeof(float) * static_cast<size_t>(s.Points() * s.PointPlane()));
  const size_t work_at = layout.Add(sizeof(float) * static_cast<size_t>(s.WorkFloats()));
  uint8_t* scratch = Scratch(layout.total);
  auto* g = reinterpret_cast<float*>(scratch + g_at);
  auto* own_work = reinterpret_cast<float*>(scratch + work_at);
  const float* u = nullptr;
  if (p.kernel_cache) {
    u = CachedKernel(p, in[1], g);
  } else {
    auto* fresh = reinterpret_cast<float*>(scratch + u_at);
    TransformKernel(p, in[1], g, fresh);
    u = fresh;
  }
  const auto* x = reinterpret_cast<const float*>(in[0]);
  const float* bias = p.bias ? reinterpret_cast<const float*>(in[2]) : nullptr;
  auto* y = reinterpret_cast<float*>(out);
  const int64_t tiles = s.Tiles(), blocks = (tiles + s.rows - 1) / s.rows;
  const std::thread::id caller = std::this_thread::get_id();
  SplitAcrossTeam(blocks, p.threads, p.parallel, [&](int64_t first, int64_t last) {
    float* work = PartWork(caller, own_work, s.WorkFloats());
    for (int64_t b = first; b < last; ++b) {
      const auto [t0, t1] = BlockTiles(b, blocks, tiles);
      WinogradForwardTiles(s, x, u, bias, p.relu, t0, t1 - t0, work, y);
    }
  });
}

void RunKernelGradient(const WinogradPlan& p, ref::Operands in, uint8_t* out) {
  const WinogradShape& s = p.s;
  const int64_t plane = s.cin * s.cout, points = s.Points() * s.PointPlane();
  const int64_t tiles = s.Tiles(), blocks = (tiles + s.rows - 1) / s.rows;
  const int64_t chunks = std::min(blocks, kGradientChunks);
  ScratchLayout layout;
  const size_t sums_at = layout.Add(sizeof(float) * static_cast<size_t>(chunks * points));
  const size_t dg_at = layout.Add(sizeof(float) * static_cast<size_t>(kTaps * kTaps * plane));
  const size_t work_at = layout.Add(sizeof(float) * static_cast<size_t>(s.WorkFloats()));
  uint8_t* scratch = Scratch(layout.total);
  auto* sums = reinterpret_cast<float*>(scratch + sums_at);
  auto* dg = reinterpret_cast<float*>(scratch + dg_at);
  auto* own_work = reinterpret_cast<float*>(scratch + work_at);
  const auto* x = reinterpret_cast<const float*>(in[0]);
  const auto* dy = reinterpret_cast<const float*>(in[1]);
  const std::thread::id caller = std::this_thread::get_id();
  SumChunksAcrossTeam(chunks, points, p.threads, p.parallel, sums, [&](int64_t chunk, float* part) {
    float* work = PartWork(caller, own_work, s.WorkFloats());
    for (int64_t b = blocks * chunk / chunks; b < blocks * (chunk + 1) / chunks; ++b) {
      const auto [t0, t1] = BlockTiles(b, blocks, tiles);
      WinogradKernelGradientTiles(s, x, dy, t0, t1 - t0, work, part);
    }
  });
  WinogradFinishKernelGradient(s, sums, dg);
  auto* y = reinterpret_cast<float*>(out);
  for (int64_t a = 0; a < kTaps; ++a) {
    for (int64_t b = 0; b < kTaps; ++b) {
      for (int64_t i = 0; i < s.cin; ++i) {
        const float* from = dg + ((a * kTaps + b) * s.cin + i) * s.cout;
        float* to = y + a * p.w_row + b * p.w_col + i * p.w_in;
        for (int64_t o = 0; o < s.cout; ++o) to[o * p.w_out] = from[o];
      }
    }
  }
}

}  // namespace

KernelChoice MakeWinogradConv(int threads, const Instruction& inst, const std::vector<Shape>& operands,
                              const Epilogue* epilogue, bool constant_kernel) {
  if (!UnitStrided2DFloat32Conv(inst, operands)) return {};
  const OpAttributes& at = inst.attrs;
  const Shape &x = operands.at(0), &k = operands.at(1), &y = inst.shape;
  auto plan = std::make_shared<WinogradPlan>();
  WinogradPlan& p = *plan;
  if (!MapForward(at, x, k, y, epilogue, p)) {
    p = WinogradPlan();
    if (epilogue != nullptr || !MapKernelGradient(at, x, k, y, p)) return {};
  }
  p.s.tile = TileFor(p.s);
  p.s.rows = WinogradRows(p.s.Points(), p.s.cin, p.s.cout);
  const WinogradShape& s = p.s;
  if (s.Tiles() == 0) return {};
  const int64_t macs = s.batch * s.out_h * s.out_w * s.cin * s.cout * kTaps * kTaps;
  p.threads = threads;
  p.parallel = threads > 1 && macs > SingleThreadMacs();
  if (constant_kernel && !p.kernel_gradient) p.kernel_cache = std::make_shared<KeptCopy>();
  std::string name = p.kernel_gradient ? "conv.winograd_kernel_gradient" : "conv.winograd";
  name += fmt::format("({0}x{0} tiles)", s.tile);
  if (p.kernel_cache) name += "(kernel kept)";
  if (epilogue != nullptr) name += "+post[" + epilogue->ToString() + "]";
  if (p.kernel_gradient)
    return {[plan](ref::Operands in, uint8_t* out) { RunKernelGradient(*plan, in, out); }, std::move(name)};
  return {[plan](ref::Operands in, uint8_t* out) { RunForward(*plan, in, out); }, std::move(name)};
}

}  // namespace kiln::compute::cpu
