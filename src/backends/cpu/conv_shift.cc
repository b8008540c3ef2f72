// ConvGeneral with few output features as one matrix product and a shift-add: P = W^T · X gives,
// for every input position, its product with every kernel tap and output feature (one dnnl_sgemm
// call per block of images), and each output position then sums the taps' products at the input
// positions that tap reaches (contiguous vector adds). oneDNN's convolutions vectorise over output
// features and pad them to a vector of 16, so with 1-4 features most of their work is padding:
// the product and shift-add took a quarter to a half of their time (ShiftConvPays in
// dnnl_kernels.h; docs/performance.md, "Few output features"). Such a convolution is the input
// gradient of a grayscale image's first layer (32 features back to 1) and the last layer of a
// decoder that draws a mask or an image.

#include <algorithm>
#include <cstring>
#include <memory>

#include "backends/cpu/cost_model.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/dnnl_kernels.h"
#include "backends/cpu/team_split.h"

namespace kiln::compute::cpu {

namespace {

using namespace dnnl_util;

/// The products of an image block (taps x features x positions) are sized to stay in a core's
/// L2: blocks of 4 images of 28x28 (5x5 kernel, 1 feature) measured fastest (1-16 tried).
constexpr int64_t kBlockProducts = int64_t{1} << 17;
/// One image's products above this many floats (64 MiB) leave the convolution to oneDNN.
constexpr int64_t kMaxImageProducts = int64_t{1} << 24;
/// Nor does an input of more than twice the result's positions take this kernel.
constexpr int64_t kMaxWastedPositions = 2;

/// Everything one call needs.
struct ShiftPlan {
  int64_t batch = 0, features_in = 0, features_out = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0, taps_h = 0, taps_w = 0;
  int64_t dilation_h = 1, dilation_w = 1, pad_h = 0, pad_w = 0;
  /// The input's strides (elements): image, row, column, feature.
  int64_t x_image = 0, x_row = 0, x_col = 0, x_feature = 0;
  /// Positions along rows of C features (channels last) or features along planes of positions.
  bool channels_last = true;
  /// The kernel's strides: tap row, tap column, input feature, output feature.
  int64_t k_row = 0, k_col = 0, k_in = 0, k_out = 0;
  /// The result's strides: image, row, column, feature.
  int64_t y_image = 0, y_row = 0, y_col = 0, y_feature = 0;
  int64_t images_per_block = 1;
  int threads = 1;
  bool parallel = false;  ///< Blocks split across the team (each block's sgemm on one thread).
  int sgemm_threads = 1;  ///< Otherwise, the threads of the one sgemm call per block.
  Epilogue epilogue;      ///< Bias along the output features and an activation, or none.
  bool has_epilogue = false;
};

/// Image `i` of a block's products (`n` columns) summed into `sums` ([features_out, out_h,
/// out_w]): each output position adds each tap's product at the input position the tap reaches.
void SumTaps(const ShiftPlan& p, const float* products, int64_t n, int64_t i, float* sums) {
  const int64_t positions = p.in_h * p.in_w, out_positions = p.out_h * p.out_w;
  std::memset(sums, 0, sizeof(float) * static_cast<size_t>(p.features_out * out_positions));
  for (int64_t th = 0; th < p.taps_h; ++th) {
    for (int64_t tw = 0; tw < p.taps_w; ++tw) {
      // Output column ox reads input column ox + shift; the columns inside the input.
      const int64_t shift = tw * p.dilation_w - p.pad_w;
      const int64_t ox0 = std::clamp<int64_t>(-shift, 0, p.out_w);
      const int64_t ox1 = std::clamp<int64_t>(p.in_w - shift, ox0, p.out_w);
      for (int64_t o = 0; o < p.features_out; ++o) {
        const float* tap = products + ((th * p.taps_w + tw) * p.features_out + o) * n + i * positions;
        float* plane = sums + o * out_positions;
        for (int64_t oy = 0; oy < p.out_h; ++oy) {
          const int64_t iy = oy + th * p.dilation_h - p.pad_h;
          if (iy < 0 || iy >= p.in_h) continue;
          float* out_row = plane + oy * p.out_w;
          const float* in_row = tap + iy * p.in_w + shift;
          for (int64_t ox = ox0; ox < ox1; ++ox) out_row[ox] += in_row[ox];
        }
      }
    }
  }
}

/// Copies one image's `sums` into its place `yi` in the result's layout.
void StoreImage(const ShiftPlan& p, const float* sums, float* yi) {
  for (int64_t o = 0; o < p.features_out; ++o) {
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      const float* from = sums + (o * p.out_h + oy) * p.out_w;
      float* to = yi + o * p.y_feature + oy * p.y_row;
      if (p.y_col == 1) {
        std::memcpy(to, from, sizeof(float) * static_cast<size_t>(p.out_w));
      } else {
        for (int64_t ox = 0; ox < p.out_w; ++ox) to[ox * p.y_col] = from[ox];
      }
    }
  }
}

/// Image blocks [first, last): each block's products into scratch, then each image's sums, its
/// epilogue and its store.
void RunBlocks(const ShiftPlan& p, const float* x, const float* k, const float* bias, float* y, int64_t first,
               int64_t last) {
  const int64_t rows = p.taps_h * p.taps_w * p.features_out;
  const int64_t positions = p.in_h * p.in_w, out_positions = p.out_h * p.out_w;
  ScratchLayout layout;
  const size_t w_at = layout.Add(sizeof(float) * static_cast<size_t>(rows * p.features_in));
  const size_t p_at = layout.Add(sizeof(float) * static_cast<size_t>(rows * p.images_per_block * positions));
  const size_t t_at = layout.Add(sizeof(float) * static_cast<size_t>(p.features_out * out_positions));
  uint8_t* scratch = Scratch(layout.total);
  auto* w = reinterpret_cast<float*>(scratch + w_at);
  auto* products = reinterpret_cast<float*>(scratch + p_at);
  auto* sums = reinterpret_cast<float*>(scratch + t_at);
  // W^T: row (tap row, tap column, output feature), column input feature.
  StridedCopy(reinterpret_cast<const uint8_t*>(k), {p.taps_h, p.taps_w, p.features_out, p.features_in},
              {p.k_row, p.k_col, p.k_out, p.k_in}, dnnl::memory::data_type::f32,
              reinterpret_cast<uint8_t*>(w));
  for (int64_t block = first; block < last; ++block) {
    const int64_t image0 = block * p.images_per_block;
    const int64_t images = std::min(p.images_per_block, p.batch - image0);
    const int64_t n = images * positions;  // Columns of this block's products.
    const float* xb = x + image0 * p.x_image;
    // products[rows, n] = W^T[rows, C] · X^T: channels last, X is [n, C] with rows of C; else each
    // image's [C, positions] with rows of positions (one call per image).
    dnnl_status_t status = dnnl_success;
    if (p.channels_last) {
      status = dnnl_sgemm('N', 'T', rows, n, p.features_in, 1.0f, w, p.features_in, xb, p.x_col, 0.0f,
                          products, n);
    } else {
      for (int64_t i = 0; i < images && status == dnnl_success; ++i)
        status = dnnl_sgemm('N', 'N', rows, positions, p.features_in, 1.0f, w, p.features_in,
                            xb + i * p.x_image, p.x_feature, 0.0f, products + i * positions, n);
    }
    if (status != dnnl_success) throw dnnl::error(status, "dnnl_sgemm");
    for (int64_t i = 0; i < images; ++i) {
      SumTaps(p, products, n, i, sums);
      if (p.has_epilogue) {
        const int64_t dims[2] = {p.features_out, out_positions};
        ApplyEpilogue(p.epilogue, dims, bias, sums);
      }
      StoreImage(p, sums, y + (image0 + i) * p.y_image);
    }
  }
}

}  // namespace

KernelChoice MakeShiftConv(int threads, const Instruction& inst, const std::vector<Shape>& operands,
                           const Epilogue* epilogue) {
  const OpAttributes& at = inst.attrs;
  const ConvDims& c = at.conv;
  const Shape &x = operands.at(0), &k = operands.at(1), &y = inst.shape;
  if (c.input_spatial.size() != 2 || at.feature_groups != 1 || at.batch_groups != 1) return {};
  if (x.dtype() != DType::Float32 || k.dtype() != DType::Float32 || y.dtype() != DType::Float32) return {};
  for (int64_t d : at.input_dilations)
    if (d != 1) return {};
  for (int64_t s : at.strides)
    if (s != 1) return {};
  if (y.Size() == 0 || x.Size() == 0 || k.Size() == 0) return {};
  auto plan = std::make_shared<ShiftPlan>();
  ShiftPlan& p = *plan;
  p.features_in = Dim(x, c.input_feature);
  p.features_out = Dim(k, c.kernel_output_feature);
  if (!ShiftConvPays(p.features_in, p.features_out)) return {};
  p.batch = Dim(x, c.input_batch);
  p.in_h = Dim(x, c.input_spatial[0]);
  p.in_w = Dim(x, c.input_spatial[1]);
  p.out_h = Dim(y, c.output_spatial[0]);
  p.out_w = Dim(y, c.output_spatial[1]);
  p.taps_h = Dim(k, c.kernel_spatial[0]);
  p.taps_w = Dim(k, c.kernel_spatial[1]);
  if (!at.kernel_dilations.empty()) {
    p.dilation_h = at.kernel_dilations[0];
    p.dilation_w = at.kernel_dilations[1];
  }
  if (!at.padding.empty()) {
    p.pad_h = at.padding[0].low;
    p.pad_w = at.padding[1].low;
  }
  const std::vector<int64_t> xs = DenseStrides(x.Dimensions()), ks = DenseStrides(k.Dimensions()),
                             ys = DenseStrides(y.Dimensions());
  const auto at_axis = [](const std::vector<int64_t>& s, int64_t a) { return s[static_cast<size_t>(a)]; };
  p.x_image = at_axis(xs, c.input_batch);
  p.x_row = at_axis(xs, c.input_spatial[0]);
  p.x_col = at_axis(xs, c.input_spatial[1]);
  p.x_feature = at_axis(xs, c.input_feature);
  // The product reads each image as a plain matrix: positions of C contiguous features (rows of
  // positions one after the other), or C planes of contiguous positions.
  const int64_t positions = p.in_h * p.in_w;
  if (p.x_feature == 1 && p.x_col == p.features_in && p.x_row == p.in_w * p.x_col) {
    p.channels_last = true;
  } else if (p.x_col == 1 && p.x_row == p.in_w) {
    p.channels_last = false;
  } else {
    return {};
  }
  p.k_row = at_axis(ks, c.kernel_spatial[0]);
  p.k_col = at_axis(ks, c.kernel_spatial[1]);
  p.k_in = at_axis(ks, c.kernel_input_feature);
  p.k_out = at_axis(ks, c.kernel_output_feature);
  p.y_image = at_axis(ys, c.output_batch);
  p.y_row = at_axis(ys, c.output_spatial[0]);
  p.y_col = at_axis(ys, c.output_spatial[1]);
  p.y_feature = at_axis(ys, c.output_feature);
  const int64_t rows = p.taps_h * p.taps_w * p.features_out;
  // Every tap is multiplied at every input position: where the result has far fewer positions
  // (a valid convolution with a large kernel, autodiff's kernel-gradient form) most of that work
  // would be thrown away.
  if (positions > kMaxWastedPositions * p.out_h * p.out_w || rows * positions > kMaxImageProducts) return {};
  // Consecutive images (one matrix, channels last; one sgemm call each, planes) make blocks of
  // about kBlockProducts products.
  const bool images_follow = p.x_image == positions * p.features_in;
  p.images_per_block = images_follow ? std::max<int64_t>(1, kBlockProducts / (rows * positions)) : 1;
  if (epilogue != nullptr) {
    // The bias (operand 2) runs along the output features: axis 0 of each image's sums.
    if (epilogue->bias && epilogue->axis != c.output_feature) return {};
    p.epilogue = *epilogue;
    p.epilogue.axis = 0;
    p.has_epilogue = true;
  }
  const int64_t blocks = (p.batch + p.images_per_block - 1) / p.images_per_block;
  const int64_t macs = p.batch * positions * rows * p.features_in;
  p.threads = threads;
  const bool large = threads > 1 && macs > SingleThreadMacs();
  p.parallel = large && blocks > 1;
  p.sgemm_threads = large && blocks == 1 ? threads : 1;
  std::string name = "conv.sgemm_shift";
  if (epilogue != nullptr) name += "+post[" + epilogue->ToString() + "]";
  return GuardedDnnlKernel(
      "ConvGeneral", std::move(name), p.sgemm_threads > 1, [plan, blocks](ref::Operands in, uint8_t* out) {
        const ShiftPlan& q = *plan;
        // Inside a team's part or an OpenMP region sgemm runs on its thread alone.
        if (!q.parallel && !ProgramTeam::InPart()) SetThreads(q.sgemm_threads);
        const auto* xd = reinterpret_cast<const float*>(in[0]);
        const auto* kd = reinterpret_cast<const float*>(in[1]);
        const float* bias =
            q.has_epilogue && q.epilogue.bias ? reinterpret_cast<const float*>(in[2]) : nullptr;
        auto* yd = reinterpret_cast<float*>(out);
        SplitAcrossTeam(blocks, q.threads, q.parallel,
                        [&](int64_t first, int64_t last) { RunBlocks(q, xd, kd, bias, yd, first, last); });
      });
}

}  // namespace kiln::compute::cpu
