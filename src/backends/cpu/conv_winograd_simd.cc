// The Highway kernels of the F(2x2, 5x5) Winograd convolution (conv_winograd.h): the transforms
// run on vectors of features, the products at the 36 points on register blocks of tiles by output
// features (AVX-512: 6 tiles by 4 vectors). Dynamic dispatch, as fused_simd.cc.

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/conv_winograd_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include <cstring>

#include "backends/cpu/conv_winograd.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

/// Accumulators a register block of the products may hold: AVX-512 has 32 vector registers,
/// the other targets 16 or fewer.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kAccumulators = 24;
#else
constexpr int kAccumulators = 12;
#endif

/// Floats from one point's block of rows of `features` to the next: a cache line more than the
/// rows, so that the 36 planes a tile's transform writes (and the results' read) fall in
/// different sets of L1 rather than in two to four (the block's rows of 32 or 64 features are 3
/// or 6 KiB long: with the line of padding, 0.95 against 0.35 ms for a [128, 14, 14, 64]
/// gradient's transforms).
HWY_INLINE int64_t PointStride(const WinogradShape& s, int64_t features) { return s.rows * features + 16; }

/// B^T applied to six vectors (one line of a patch).
HWY_INLINE void InputLine(D d, const V* in, V* out) {
  const V four = hn::Set(d, 4.0f), five = hn::Set(d, 5.0f), two = hn::Set(d, 2.0f);
  out[0] = hn::NegMulAdd(five, in[2], hn::MulAdd(four, in[0], in[4]));
  const V s12 = hn::Add(in[1], in[2]), d12 = hn::Sub(in[1], in[2]);
  const V s34 = hn::Add(in[3], in[4]), d43 = hn::Sub(in[4], in[3]);
  out[1] = hn::NegMulAdd(four, s12, s34);
  out[2] = hn::MulAdd(four, d12, d43);
  const V d31 = hn::Sub(in[3], in[1]), d42 = hn::Sub(in[4], in[2]);
  out[3] = hn::MulAdd(two, d31, d42);
  out[4] = hn::NegMulAdd(two, d31, d42);
  out[5] = hn::NegMulAdd(five, in[3], hn::MulAdd(four, in[1], in[5]));
}

/// A^T applied to six vectors: the two results of a line.
HWY_INLINE void OutputLine(D d, const V* m, V& y0, V& y1) {
  const V a12 = hn::Add(m[1], m[2]), d12 = hn::Sub(m[1], m[2]);
  const V a34 = hn::Add(m[3], m[4]), d34 = hn::Sub(m[3], m[4]);
  y0 = hn::Add(hn::Add(m[0], a12), a34);
  y1 = hn::Add(hn::MulAdd(hn::Set(d, 2.0f), d34, d12), m[5]);
}

/// A applied to two vectors (the adjoint of OutputLine): six.
HWY_INLINE void GradientLine(D d, V y0, V y1, V* w) {
  const V two = hn::Set(d, 2.0f);
  w[0] = y0;
  w[1] = hn::Add(y0, y1);
  w[2] = hn::Sub(y0, y1);
  w[3] = hn::MulAdd(two, y1, y0);
  w[4] = hn::NegMulAdd(two, y1, y0);
  w[5] = y1;
}

/// The image and first row and column (of the result, or of the gradient) of tile `tile`.
struct TilePlace {
  int64_t image, row, col;
};

HWY_INLINE TilePlace PlaceOf(const WinogradShape& s, int64_t tile) {
  const int64_t wide = s.TilesWide(), per_image = s.TilesHigh() * wide;
  const int64_t rem = tile % per_image;
  return {tile / per_image, rem / wide * 2, rem % wide * 2};
}

/// The rows the products run over come in multiples of this.
constexpr int64_t kRowStep = 8;
static_assert(kWinogradRowStep % kRowStep == 0, "blocks of tiles hold whole steps of rows");

/// Rows of a block the products run over: `count` rounded up to kRowStep (the rows past `count`
/// are zero).
HWY_INLINE int64_t RowsUsed(int64_t count) { return (count + kRowStep - 1) / kRowStep * kRowStep; }

/// Patches of tiles [first, first + count) at the 36 points into v ([36][s.rows][cin]);
/// rows from count to RowsUsed(count) are zero.
void TransformPatches(const WinogradShape& s, const float* x, int64_t first, int64_t count, float* v) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  HWY_ALIGN float line[36 * hn::MaxLanes(d)];
  const int64_t point_stride = PointStride(s, s.cin);
  for (int64_t t = 0; t < count; ++t) {
    const TilePlace at = PlaceOf(s, first + t);
    const int64_t iy0 = at.row - s.pad_top, ix0 = at.col - s.pad_left;
    const float* image = x + at.image * s.x_image;
    for (int64_t c = 0; c < s.cin; c += lanes) {
      // Down each column of the patch, then along each transformed row.
#pragma GCC unroll 6
      for (int j = 0; j < 6; ++j) {
        V in[6], out[6];
        const int64_t ix = ix0 + j;
        const bool inside = ix >= 0 && ix < s.in_w;
#pragma GCC unroll 6
        for (int i = 0; i < 6; ++i) {
          const int64_t iy = iy0 + i;
          in[i] = inside && iy >= 0 && iy < s.in_h ? hn::LoadU(d, image + iy * s.x_row + ix * s.x_col + c)
                                                   : hn::Zero(d);
        }
        InputLine(d, in, out);
#pragma GCC unroll 6
        for (int i = 0; i < 6; ++i) hn::Store(out[i], d, line + (i * 6 + j) * lanes);
      }
#pragma GCC unroll 6
      for (int i = 0; i < 6; ++i) {
        V in[6], out[6];
#pragma GCC unroll 6
        for (int j = 0; j < 6; ++j) in[j] = hn::Load(d, line + (i * 6 + j) * lanes);
        InputLine(d, in, out);
#pragma GCC unroll 6
        for (int j = 0; j < 6; ++j) hn::StoreU(out[j], d, v + (i * 6 + j) * point_stride + t * s.cin + c);
      }
    }
  }
  for (int p = 0; p < 36; ++p) {
    std::memset(v + p * point_stride + count * s.cin, 0,
                sizeof(float) * static_cast<size_t>((RowsUsed(count) - count) * s.cin));
  }
}

/// m[R rows][NV vectors] = v[R rows][cin] . u[cin][NV vectors] (row strides cin and cout).
template <int R, int NV>
HWY_INLINE void MultiplyBlock(D d, const float* v, const float* u, int64_t cin, int64_t cout, float* m) {
  const size_t lanes = hn::Lanes(d);
  V acc[R][NV];
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) acc[r][k] = hn::Zero(d);
  }
  for (int64_t c = 0; c < cin; ++c) {
    V w[NV];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) w[k] = hn::LoadU(d, u + c * cout + static_cast<int64_t>(k * lanes));
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r) {
      const V b = hn::Set(d, v[r * cin + c]);
#pragma GCC unroll 4
      for (int k = 0; k < NV; ++k) acc[r][k] = hn::MulAdd(b, w[k], acc[r][k]);
    }
  }
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) hn::StoreU(acc[r][k], d, m + r * cout + static_cast<int64_t>(k * lanes));
  }
}

/// Rows of a register block of NV vectors of output features (they divide kRowStep): AVX-512's
/// 4 by 4 vectors ran the [128, 14, 14, 32] to 64 products at 6 by 4's speed, and 8 by 2 vectors
/// (32 features, the input gradient's) 1.2 times as fast as 12 by 2 (24 accumulators; 2.58
/// against 3.08 ms for the whole convolution).
template <int NV>
constexpr int BlockRows() {
  if (kAccumulators >= 24) return NV == 4 ? 4 : 8;
  return NV == 2 ? 4 : 8;
}

/// All `rows` rows of the NV vectors of features from `o` on, in blocks of R rows.
template <int NV>
HWY_INLINE void MultiplyColumns(D d, int64_t rows, const float* v, const float* u, int64_t cin, int64_t cout,
                                float* m) {
  constexpr int R = BlockRows<NV>();
  static_assert(kRowStep % R == 0, "register blocks divide the rows a block's products run over");
  for (int64_t t = 0; t < rows; t += R) MultiplyBlock<R, NV>(d, v + t * cin, u, cin, cout, m + t * cout);
}

/// The products at the 36 points: m[p] ([rows][cout]) = v[p] . u[p].
void MultiplyPoints(const WinogradShape& s, int64_t rows, const float* v, const float* u, float* m) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  constexpr int kWide = kAccumulators >= 24 ? 4 : 2;
  for (int p = 0; p < 36; ++p) {
    const float* vp = v + p * PointStride(s, s.cin);
    const float* up = u + p * s.cin * s.cout;
    float* mp = m + p * PointStride(s, s.cout);
    int64_t o = 0;
    for (; o + kWide * lanes <= s.cout; o += kWide * lanes)
      MultiplyColumns<kWide>(d, rows, vp, up + o, s.cin, s.cout, mp + o);
    const int64_t left = (s.cout - o) / lanes;
    if (kWide == 4 && left == 3) {
      MultiplyColumns<3>(d, rows, vp, up + o, s.cin, s.cout, mp + o);
    } else if (kWide == 4 && left == 2) {
      MultiplyColumns<2>(d, rows, vp, up + o, s.cin, s.cout, mp + o);
    } else if (left == 1) {
      MultiplyColumns<1>(d, rows, vp, up + o, s.cin, s.cout, mp + o);
    }
  }
}

/// The results of tiles [first, first + count) from their products m, plus bias, clamped.
void StoreResults(const WinogradShape& s, const float* m, int64_t first, int64_t count, const float* bias,
                  bool relu, float* y) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t point_stride = PointStride(s, s.cout);
  for (int64_t t = 0; t < count; ++t) {
    const TilePlace at = PlaceOf(s, first + t);
    float* image = y + at.image * s.y_image;
    const bool full_rows = at.row + 1 < s.out_h, full_cols = at.col + 1 < s.out_w;
    for (int64_t c = 0; c < s.cout; c += lanes) {
      V low[6], high[6];
#pragma GCC unroll 6
      for (int j = 0; j < 6; ++j) {
        V col[6];
#pragma GCC unroll 6
        for (int i = 0; i < 6; ++i) col[i] = hn::LoadU(d, m + (i * 6 + j) * point_stride + t * s.cout + c);
        OutputLine(d, col, low[j], high[j]);
      }
      V out[2][2];
      OutputLine(d, low, out[0][0], out[0][1]);
      OutputLine(d, high, out[1][0], out[1][1]);
      const V b = bias != nullptr ? hn::LoadU(d, bias + c) : hn::Zero(d);
      for (int a = 0; a < (full_rows ? 2 : 1); ++a) {
        for (int e = 0; e < (full_cols ? 2 : 1); ++e) {
          V r = hn::Add(out[a][e], b);
          if (relu) r = hn::Max(r, hn::Zero(d));
          hn::StoreU(r, d, image + (at.row + a) * s.y_row + (at.col + e) * s.y_col + c);
        }
      }
    }
  }
}

void ForwardTiles(const WinogradShape& s, const float* x, const float* u, const float* bias, bool relu,
                  int64_t first, int64_t count, float* work, float* y) {
  float* v = work;
  float* m = work + 36 * PointStride(s, s.cin);
  TransformPatches(s, x, first, count, v);
  MultiplyPoints(s, RowsUsed(count), v, u, m);
  StoreResults(s, m, first, count, bias, relu, y);
}

/// The result gradient's tiles [first, first + count) at the 36 points into w
/// ([36][s.rows][cout]): A dY A^T, positions past the gradient's edge zero; rows from count to
/// RowsUsed(count) are zero.
void TransformGradients(const WinogradShape& s, const float* dy, int64_t first, int64_t count, float* w) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t point_stride = PointStride(s, s.cout);
  for (int64_t t = 0; t < count; ++t) {
    const TilePlace at = PlaceOf(s, first + t);
    const float* image = dy + at.image * s.y_image;
    const bool full_rows = at.row + 1 < s.out_h, full_cols = at.col + 1 < s.out_w;
    for (int64_t c = 0; c < s.cout; c += lanes) {
      V g[2][2];
      for (int a = 0; a < 2; ++a) {
        for (int e = 0; e < 2; ++e) {
          const bool inside = (a == 0 || full_rows) && (e == 0 || full_cols);
          g[a][e] = inside ? hn::LoadU(d, image + (at.row + a) * s.y_row + (at.col + e) * s.y_col + c)
                           : hn::Zero(d);
        }
      }
      V rows[2][6];
      GradientLine(d, g[0][0], g[0][1], rows[0]);
      GradientLine(d, g[1][0], g[1][1], rows[1]);
#pragma GCC unroll 6
      for (int j = 0; j < 6; ++j) {
        V col[6];
        GradientLine(d, rows[0][j], rows[1][j], col);
#pragma GCC unroll 6
        for (int i = 0; i < 6; ++i) hn::StoreU(col[i], d, w + (i * 6 + j) * point_stride + t * s.cout + c);
      }
    }
  }
  for (int p = 0; p < 36; ++p) {
    std::memset(w + p * point_stride + count * s.cout, 0,
                sizeof(float) * static_cast<size_t>((RowsUsed(count) - count) * s.cout));
  }
}

/// sums[R input features][NV vectors] += v^T . w over the block's `rows` tiles (v's rows
/// of cin, w's of cout).
template <int R, int NV>
HWY_INLINE void AccumulateBlock(D d, int64_t rows, const float* v, const float* w, int64_t cin, int64_t cout,
                                float* sums) {
  const size_t lanes = hn::Lanes(d);
  V acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) acc[r][k] = hn::LoadU(d, sums + r * cout + static_cast<int64_t>(k * lanes));
  }
  for (int64_t t = 0; t < rows; ++t) {
    V g[NV];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) g[k] = hn::LoadU(d, w + t * cout + static_cast<int64_t>(k * lanes));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const V b = hn::Set(d, v[t * cin + r]);
#pragma GCC unroll 4
      for (int k = 0; k < NV; ++k) acc[r][k] = hn::MulAdd(b, g[k], acc[r][k]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) hn::StoreU(acc[r][k], d, sums + r * cout + static_cast<int64_t>(k * lanes));
  }
}

void KernelGradientTiles(const WinogradShape& s, const float* x, const float* dy, int64_t first,
                         int64_t count, float* work, float* sums) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  float* v = work;
  float* w = work + 36 * PointStride(s, s.cin);
  TransformPatches(s, x, first, count, v);
  TransformGradients(s, dy, first, count, w);
  const int64_t rows = RowsUsed(count);
  // Blocks of R input features (cin is a multiple of 16) by 2 or 1 vectors of output features.
  constexpr int R = 4;
  for (int p = 0; p < 36; ++p) {
    const float* vp = v + p * PointStride(s, s.cin);
    const float* wp = w + p * PointStride(s, s.cout);
    float* sp = sums + p * s.cin * s.cout;
    for (int64_t i = 0; i < s.cin; i += R) {
      int64_t o = 0;
      for (; o + 4 * lanes <= s.cout; o += 4 * lanes)
        AccumulateBlock<R, 4>(d, rows, vp + i, wp + o, s.cin, s.cout, sp + i * s.cout + o);
      for (; o + 2 * lanes <= s.cout; o += 2 * lanes)
        AccumulateBlock<R, 2>(d, rows, vp + i, wp + o, s.cin, s.cout, sp + i * s.cout + o);
      if (o < s.cout) AccumulateBlock<R, 1>(d, rows, vp + i, wp + o, s.cin, s.cout, sp + i * s.cout + o);
    }
  }
}

/// G applied to five vectors (one line of the kernel): six. With e = g0 + g2 + g4, o = g1 + g3,
/// a = g0/24 + g2/6 + 2 g4/3 and b = g1/12 + g3/3: g0/4, -(e + o)/6, -(e - o)/6, a + b, a - b, g4.
HWY_INLINE void KernelLine(D d, const V* g, V* u) {
  const V e = hn::Add(hn::Add(g[0], g[2]), g[4]), o = hn::Add(g[1], g[3]);
  const V sixth = hn::Set(d, -1 / 6.0f);
  const V a = hn::MulAdd(hn::Set(d, 1 / 24.0f), g[0],
                         hn::MulAdd(hn::Set(d, 1 / 6.0f), g[2], hn::Mul(hn::Set(d, 2 / 3.0f), g[4])));
  const V b = hn::MulAdd(hn::Set(d, 1 / 12.0f), g[1], hn::Mul(hn::Set(d, 1 / 3.0f), g[3]));
  u[0] = hn::Mul(hn::Set(d, 0.25f), g[0]);
  u[1] = hn::Mul(sixth, hn::Add(e, o));
  u[2] = hn::Mul(sixth, hn::Sub(e, o));
  u[3] = hn::Add(a, b);
  u[4] = hn::Sub(a, b);
  u[5] = g[4];
}

/// G^T applied to six vectors (the adjoint of KernelLine): five. With p = s1 + s2, m = s1 - s2,
/// q = s3 + s4, n = s3 - s4: s0/4 - p/6 + q/24, -m/6 + n/12, (q - p)/6, -m/6 + n/3,
/// -p/6 + 2q/3 + s5.
HWY_INLINE void KernelGradientLine(D d, const V* s, V* g) {
  const V p = hn::Add(s[1], s[2]), m = hn::Sub(s[1], s[2]), q = hn::Add(s[3], s[4]), n = hn::Sub(s[3], s[4]);
  const V sixth = hn::Set(d, 1 / 6.0f);
  const V mp = hn::Mul(sixth, p), mm = hn::Mul(sixth, m);
  g[0] = hn::MulAdd(hn::Set(d, 1 / 24.0f), q, hn::MulSub(hn::Set(d, 0.25f), s[0], mp));
  g[1] = hn::MulSub(hn::Set(d, 1 / 12.0f), n, mm);
  g[2] = hn::Mul(sixth, hn::Sub(q, p));
  g[3] = hn::MulSub(hn::Set(d, 1 / 3.0f), n, mm);
  g[4] = hn::Add(hn::MulSub(hn::Set(d, 2 / 3.0f), q, mp), s[5]);
}

/// Both axes of a kIn x kIn block of vectors (at `in`, stride in_stride) through Line into
/// kOut x kOut (at `out`, stride out_stride): down each column, then along each row.
template <int kIn, int kOut, class Line>
HWY_INLINE void BothAxes(D d, const float* in, int64_t in_stride, float* out, int64_t out_stride, Line line) {
  V half[kOut][kIn];
  for (int j = 0; j < kIn; ++j) {
    V column[kIn], done[kOut];
    for (int i = 0; i < kIn; ++i) column[i] = hn::LoadU(d, in + (i * kIn + j) * in_stride);
    line(d, column, done);
    for (int a = 0; a < kOut; ++a) half[a][j] = done[a];
  }
  for (int a = 0; a < kOut; ++a) {
    V done[kOut];
    line(d, half[a], done);
    for (int b = 0; b < kOut; ++b) hn::StoreU(done[b], d, out + (a * kOut + b) * out_stride);
  }
}

void TransformKernel(const WinogradShape& s, const float* g, float* u) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d)), plane = s.cin * s.cout;
  for (int64_t i = 0; i < plane; i += lanes) {
    BothAxes<5, 6>(d, g + i, plane, u + i, plane, [](D dd, const V* in, V* out) { KernelLine(dd, in, out); });
  }
}

void FinishKernelGradient(const WinogradShape& s, const float* sums, float* dg) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d)), plane = s.cin * s.cout;
  for (int64_t i = 0; i < plane; i += lanes) {
    BothAxes<6, 5>(d, sums + i, plane, dg + i, plane,
                   [](D dd, const V* in, V* out) { KernelGradientLine(dd, in, out); });
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(TransformKernel);
HWY_EXPORT(ForwardTiles);
HWY_EXPORT(KernelGradientTiles);
HWY_EXPORT(FinishKernelGradient);

void WinogradTransformKernel(const WinogradShape& s, const float* g, float* u) {
  HWY_DYNAMIC_DISPATCH(TransformKernel)(s, g, u);
}

void WinogradForwardTiles(const WinogradShape& s, const float* x, const float* u, const float* bias,
                          bool relu, int64_t first, int64_t count, float* work, float* y) {
  HWY_DYNAMIC_DISPATCH(ForwardTiles)(s, x, u, bias, relu, first, count, work, y);
}

void WinogradKernelGradientTiles(const WinogradShape& s, const float* x, const float* dy, int64_t first,
                                 int64_t count, float* work, float* sums) {
  HWY_DYNAMIC_DISPATCH(KernelGradientTiles)(s, x, dy, first, count, work, sums);
}

void WinogradFinishKernelGradient(const WinogradShape& s, const float* sums, float* dg) {
  HWY_DYNAMIC_DISPATCH(FinishKernelGradient)(s, sums, dg);
}

int64_t WinogradWorkFloats(const WinogradShape& s) { return 36 * (s.rows * (s.cin + s.cout) + 32); }

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
