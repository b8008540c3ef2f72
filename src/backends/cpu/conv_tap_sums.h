#pragma once
// The kernel gradient of a 2-D Float32 convolution with few input features (1 to 4) and a 3x3 or
// 5x5 kernel, as direct sums with every tap's sum in a register (conv_tap_sums.cc plans the
// calls, conv_tap_sums_simd.cc holds the Highway kernels). For one input feature and one vector
// of output features, dK[a][b] = sum over images and positions (y, x) of X[y + a][x + b] dY[y][x]:
// a step takes the result gradient at 4 neighbouring positions (4 vectors) and the input's row
// segments above them (8 values per tap row, each broadcast once), and adds 4 products into each
// of the 25 taps' sums. 100 multiply-adds for 44 loads, all sums in registers (AVX-512: 25 of
// its 32; 16-register targets take the tap rows in groups of 2 or 3). The input is copied into a
// zero-padded plane per feature first, so the steps never test the borders.
//
// oneDNN's backward-weights kernel for the CNN's first layer ([128, 28, 28, 1] by 5x5 to 32
// features) runs at about 77% of the fp32 peak on the result gradient as the program holds it
// (channels last); these sums at 85-90%, 1.10-1.14 times as fast as oneDNN called directly
// (docs/performance.md, "Kernel gradients of few input features").

#include <cstdint>

namespace kiln::compute::cpu {

/// A kernel gradient's geometry as the tap-sum kernels read it. The result gradient's features
/// (the output features) are contiguous; the input's may be anywhere.
struct TapSumsShape {
  /// Images, input features (1 to 4), output features.
  int64_t batch = 0, cin = 0, cout = 0;
  /// The kernel's taps: 3x3 or 5x5.
  int64_t taps_h = 5, taps_w = 5;
  /// Input rows and columns.
  int64_t in_h = 0, in_w = 0;
  /// Positions of the result gradient.
  int64_t out_h = 0, out_w = 0;
  /// The low padding: gradient position (0, 0) pairs with input position (-pad_top, -pad_left)
  /// at tap (0, 0).
  int64_t pad_top = 0, pad_left = 0;
  /// Input strides (elements): image, row, column, feature.
  int64_t x_image = 0, x_row = 0, x_col = 0, x_feature = 0;
  /// The result gradient's strides: image, row, column.
  int64_t y_image = 0, y_row = 0, y_col = 0;
  /// Rows of the result gradient per pass over the input features (their gradient stays in L2
  /// while each feature's sums read it).
  int64_t band = 1;

  /// Positions a step takes.
  static constexpr int64_t kStep = 4;
  /// Output features rounded up to a vector of 16 (the sums' rows).
  int64_t CoutPadded() const { return (cout + 15) / 16 * 16; }
  /// Columns of a padded input plane: the steps' positions and the taps past them.
  int64_t PlaneWidth() const { return (out_w + kStep - 1) / kStep * kStep + taps_w - 1; }
  /// Floats of the padded planes of one band: a plane per input feature.
  int64_t PlaneFloats() const { return cin * (band + taps_h - 1) * PlaneWidth(); }
  /// Floats of the sums: [cin][taps_h * taps_w][CoutPadded()].
  int64_t SumFloats() const { return cin * taps_h * taps_w * CoutPadded(); }
  /// Rows of the result gradient over all images.
  int64_t Rows() const { return batch * out_h; }
};

/// Adds into `sums` ([cin][taps_h * taps_w][CoutPadded()]) the products over rows [first, last)
/// of the result gradient (counted over images: image * out_h + row): input x, result gradient
/// dy. `planes` holds s.PlaneFloats() floats.
void TapSumsRows(const TapSumsShape& s, const float* x, const float* dy, int64_t first, int64_t last,
                 float* planes, float* sums);

}  // namespace kiln::compute::cpu
