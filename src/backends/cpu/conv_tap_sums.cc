// ConvGeneral's kernel-gradient form (autodiff's: the result is the kernel) as tap sums
// (conv_tap_sums.h): 2-D Float32 convolutions with 3x3 or 5x5 kernels, unit strides and
// dilations, no groups, 1 to 4 input features and the output features contiguous in the result's
// gradient. The gradient's rows are split into fixed chunks, each summing into its own partial
// sums, added in order afterwards: the same bits on any number of threads.

#include "backends/cpu/conv_tap_sums.h"

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

/// The most input features taken (each one's sums read the whole gradient again).
constexpr int64_t kMaxInputs = 4;
/// The gradient's rows are split into at most this many chunks, so that teams of up to as many
/// threads share the work: fewer where there are fewer rows, or where the chunks' partial sums
/// would take more than kChunkSumFloats. The count depends on the shape alone, never on the
/// threads, so the sums' bits do not either.
constexpr int64_t kChunks = 32;
constexpr int64_t kChunkSumFloats = int64_t{1} << 20;
/// A band's gradient rows take at most this many bytes (they stay in L2 while each input
/// feature's sums read them).
constexpr int64_t kBandBytes = 256 << 10;

struct TapSumsPlan {
  TapSumsShape s;
  /// The result's (the kernel gradient's) strides: tap row, tap column, input feature, output
  /// feature.
  int64_t w_row = 0, w_col = 0, w_in = 0, w_out = 0;
  int threads = 1;
  bool parallel = false;
};

/// The plan's geometry from the op's axes: the op's input x holds the images on its feature axis
/// and the input features on its batch axis; its kernel is the result's gradient (images on the
/// kernel's input-feature axis); its result is the kernel gradient (input features on the
/// result's batch axis). False unless the result's taps are 3x3 or 5x5, the gradient has more
/// positions than the taps, its output features are contiguous, and the input features are few.
bool Map(const OpAttributes& at, const Shape& x, const Shape& dy, const Shape& y, TapSumsPlan& p) {
  const ConvDims& c = at.conv;
  TapSumsShape& s = p.s;
  s.taps_h = Dim(y, c.output_spatial[0]);
  s.taps_w = Dim(y, c.output_spatial[1]);
  if (s.taps_h != s.taps_w || (s.taps_h != 3 && s.taps_h != 5)) return false;
  s.out_h = Dim(dy, c.kernel_spatial[0]);
  s.out_w = Dim(dy, c.kernel_spatial[1]);
  if (s.out_h * s.out_w <= s.taps_h * s.taps_w) return false;
  const std::vector<int64_t> xs = DenseStrides(x.Dimensions()), ds = DenseStrides(dy.Dimensions()),
                             ws = DenseStrides(y.Dimensions());
  if (At(ds, c.kernel_output_feature) != 1) return false;
  s.batch = Dim(x, c.input_feature);
  s.cin = Dim(x, c.input_batch);
  s.cout = Dim(dy, c.kernel_output_feature);
  if (s.cin < 1 || s.cin > kMaxInputs || s.cout < 1 || s.batch < 1) return false;
  const int64_t top = at.padding.empty() ? 0 : at.padding[0].low;
  const int64_t left = at.padding.empty() ? 0 : at.padding[1].low;
  s.in_h = Dim(x, c.input_spatial[0]);
  s.in_w = Dim(x, c.input_spatial[1]);
  s.pad_top = top;
  s.pad_left = left;
  s.x_image = At(xs, c.input_feature);
  s.x_feature = At(xs, c.input_batch);
  s.x_row = At(xs, c.input_spatial[0]);
  s.x_col = At(xs, c.input_spatial[1]);
  s.y_image = At(ds, c.kernel_input_feature);
  s.y_row = At(ds, c.kernel_spatial[0]);
  s.y_col = At(ds, c.kernel_spatial[1]);
  p.w_row = At(ws, c.output_spatial[0]);
  p.w_col = At(ws, c.output_spatial[1]);
  p.w_in = At(ws, c.output_batch);
  p.w_out = At(ws, c.output_feature);
  s.band = std::clamp<int64_t>(kBandBytes / (s.out_w * s.cout * 4), 1, s.out_h);
  return true;
}

void Run(const TapSumsPlan& p, ref::Operands in, uint8_t* out) {
  const TapSumsShape& s = p.s;
  const int64_t rows = s.Rows(), sum_floats = s.SumFloats();
  const int64_t chunks = std::clamp<int64_t>(std::min(kChunkSumFloats / sum_floats, rows), 1, kChunks);
  ScratchLayout layout;
  const size_t sums_at = layout.Add(sizeof(float) * static_cast<size_t>(chunks * sum_floats));
  const size_t planes_at = layout.Add(sizeof(float) * static_cast<size_t>(s.PlaneFloats()));
  uint8_t* scratch = Scratch(layout.total);
  auto* sums = reinterpret_cast<float*>(scratch + sums_at);
  auto* own_planes = reinterpret_cast<float*>(scratch + planes_at);
  const auto* x = reinterpret_cast<const float*>(in[0]);
  const auto* dy = reinterpret_cast<const float*>(in[1]);
  const std::thread::id caller = std::this_thread::get_id();
  SumChunksAcrossTeam(chunks, sum_floats, p.threads, p.parallel, sums, [&](int64_t chunk, float* part) {
    float* planes = PartWork(caller, own_planes, s.PlaneFloats());
    TapSumsRows(s, x, dy, rows * chunk / chunks, rows * (chunk + 1) / chunks, planes, part);
  });
  auto* y = reinterpret_cast<float*>(out);
  const int64_t cp = s.CoutPadded();
  for (int64_t i = 0; i < s.cin; ++i) {
    for (int64_t a = 0; a < s.taps_h; ++a) {
      for (int64_t b = 0; b < s.taps_w; ++b) {
        const float* from = sums + ((i * s.taps_h + a) * s.taps_w + b) * cp;
        float* to = y + a * p.w_row + b * p.w_col + i * p.w_in;
        for (int64_t o = 0; o < s.cout; ++o) to[o * p.w_out] = from[o];
      }
    }
  }
}

}  // namespace

KernelChoice MakeTapSumsConv(int threads, const Instruction& inst, const std::vector<Shape>& operands) {
  if (!UnitStrided2DFloat32Conv(inst, operands)) return {};
  const OpAttributes& at = inst.attrs;
  const Shape &x = operands.at(0), &dy = operands.at(1), &y = inst.shape;
  auto plan = std::make_shared<TapSumsPlan>();
  if (!Map(at, x, dy, y, *plan)) return {};
  TapSumsPlan& p = *plan;
  const TapSumsShape& s = p.s;
  const int64_t macs = s.Rows() * s.out_w * s.cin * s.cout * s.taps_h * s.taps_w;
  p.threads = threads;
  p.parallel = threads > 1 && macs > SingleThreadMacs();
  std::string name = fmt::format("conv.tap_sums({}x{} taps, {} input feature{})", s.taps_h, s.taps_w, s.cin,
                                 s.cin == 1 ? "" : "s");
  return {[plan](ref::Operands in, uint8_t* out) { Run(*plan, in, out); }, std::move(name)};
}

}  // namespace kiln::compute::cpu
