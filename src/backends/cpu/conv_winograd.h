#pragma once
// Winograd's minimal filtering F(4x4, 5x5) and F(2x2, 5x5) for 2-D Float32 convolutions with 5x5
// kernels and features in multiples of 16 (conv_winograd.cc plans the calls, conv_winograd_simd.cc
// holds the Highway kernels, winograd_lines-inl.h the transforms). Each m x m block of results (a
// "tile", m = 4 or 2) comes from an (m + 4) x (m + 4) patch of the input d and the kernel g as
// A^T [(G g G^T) . (B^T d B)] A: the kernel and the patch are taken to 64 (or 36) points, where a
// tile's sums over input features are independent matrix products, one per point: 64
// multiply-adds per 16 results (36 per 4) instead of 25 per result, and back. The points 0, 1,
// -1, 2, -2, 1/2, -1/2 (F(4, 5); the first five for F(2, 5)) and infinity keep the data's
// transforms to small fractions. F(2, 5)'s matrices, for instance:
//
//   B^T = [4  0 -5  0 1 0]   G = [ 1/4     0     0     0    0]   A^T = [1 1  1 1  1 0]
//         [0 -4 -4  1 1 0]       [-1/6  -1/6  -1/6  -1/6 -1/6]         [0 1 -1 2 -2 1]
//         [0  4 -4 -1 1 0]       [-1/6   1/6  -1/6   1/6 -1/6]
//         [0 -2 -1  2 1 0]       [1/24  1/12   1/6   1/3  2/3]
//         [0  2 -1 -2 1 0]       [1/24 -1/12   1/6  -1/3  2/3]
//         [0  4  0 -5 0 1]       [   0     0     0     0    1]
//
// The kernel's gradient is the same products' adjoint: G^T [sum over tiles (B^T d B) . (A dY A^T)] G.
// Results differ from a direct convolution's by rounding (against Float64, the CNN's second layer:
// an RMS error of 2.3e-6 of the results' RMS with 4x4 tiles, 1.4e-6 with 2x2, 4.7e-7 for oneDNN's
// direct sums), and a NaN or infinity in a patch can reach the other results of its tile, not
// only those whose window holds it.

#include <cstdint>

namespace kiln::compute::cpu {

/// Tiles per block come in multiples of this (every register block's rows divide it).
inline constexpr int64_t kWinogradRowStep = 8;

/// Tiles per block for `points` (36 or 64), `cin` input and `cout` output features: the most of
/// 48, 24, 16 and 8 whose transformed patches ([points][rows][cin]) and products
/// ([points][rows][cout]) take at most 768 KiB of a core's L2 (8 if none). F(2x2, 5x5), 32 to 64
/// features, 2 threads: the kernel gradient 2.51-2.55 ms at 48 tiles against 2.73-2.75 at 24 and
/// 2.71 at 96; the forward ones alike at 24 and 48, slower at 96.
inline int64_t WinogradRows(int64_t points, int64_t cin, int64_t cout) {
  for (int64_t rows : {48, 24, 16}) {
    if (points * rows * (cin + cout) * 4 <= 768 * 1024) return rows;
  }
  return 8;
}

/// A convolution's geometry as the Winograd kernels read it. Features are contiguous in the
/// input, in the result (forward) and in the result's gradient (kernel gradient).
struct WinogradShape {
  int64_t batch = 0, cin = 0, cout = 0;
  /// Input rows and columns the convolution reads (a negative high padding shortens them).
  int64_t in_h = 0, in_w = 0;
  /// Positions of the result (forward) or of the result's gradient (kernel gradient).
  int64_t out_h = 0, out_w = 0;
  /// The low padding: result position (0, 0) reads input position (-pad_top, -pad_left) first.
  int64_t pad_top = 0, pad_left = 0;
  /// Input strides (elements): image, row, column.
  int64_t x_image = 0, x_row = 0, x_col = 0;
  /// The result's (or the result gradient's) strides: image, row, column.
  int64_t y_image = 0, y_row = 0, y_col = 0;
  /// Results per tile along each axis: 2 (F(2x2, 5x5), 36 points) or 4 (F(4x4, 5x5), 64).
  int64_t tile = 4;
  /// Tiles per block (WinogradRows).
  int64_t rows = kWinogradRowStep;

  int64_t Patch() const { return tile + 4; }
  /// Floats from one point's block of `rows` rows of `features` to the next in a block's work
  /// space: a cache line more than the rows, so that the planes a tile's transform writes (and
  /// the results' read) fall in different sets of L1 (rows of 32 or 64 features, 3 or 6 KiB,
  /// put them in two to four: a [128, 14, 14, 64] gradient's transforms took 0.95 against
  /// 0.30 ms).
  int64_t PointStride(int64_t features) const { return rows * features + 16; }
  /// Floats of one block's work space: its transformed patches and its products (or transformed
  /// gradients), PointStride apart per point.
  int64_t WorkFloats() const { return Points() * (PointStride(cin) + PointStride(cout)); }
  /// Floats from one point's [cin][cout] matrix (of the transformed kernel, or of the kernel
  /// gradient's sums) to the next: a cache line more than the matrix, whose 8 KiB (32 by 64
  /// features) would put every point's store of a transform in one set of L1.
  int64_t PointPlane() const { return cin * cout + 16; }
  int64_t Points() const { return Patch() * Patch(); }
  int64_t TilesHigh() const { return (out_h + tile - 1) / tile; }
  int64_t TilesWide() const { return (out_w + tile - 1) / tile; }
  int64_t Tiles() const { return batch * TilesHigh() * TilesWide(); }
};

/// The kernel g ([5][5][cin][cout], dense) at the points: u = G g G^T ([points][cin][cout], points
/// PointPlane() floats apart).
void WinogradTransformKernel(const WinogradShape& s, const float* g, float* u);

/// Tiles [first, first + count) (count <= s.rows) of the forward convolution of x by the
/// transformed kernel u, plus `bias` (cout values, or null), clamped at zero when `relu`, written
/// to y. `work` holds s.WorkFloats() floats.
void WinogradForwardTiles(const WinogradShape& s, const float* x, const float* u, const float* bias,
                          bool relu, int64_t first, int64_t count, float* work, float* y);

/// Adds the kernel gradient's sums at the points ([points][cin][cout], PointPlane() apart) over tiles [first,
/// first + count) (count <= s.rows): input x, result gradient dy (at s's y strides).
void WinogradKernelGradientTiles(const WinogradShape& s, const float* x, const float* dy, int64_t first,
                                 int64_t count, float* work, float* sums);

/// The kernel gradient ([5][5][cin][cout], dense) from its sums at the points: G^T sums G.
void WinogradFinishKernelGradient(const WinogradShape& s, const float* sums, float* dg);

}  // namespace kiln::compute::cpu
