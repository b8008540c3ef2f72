// The Highway kernels of the F(2x2, 5x5) and F(4x4, 5x5) Winograd convolutions (conv_winograd.h):
// the transforms (winograd_lines-inl.h) run on vectors of features, the products at the 36 or 64
// points on register blocks of tiles by output features (AVX-512: 4 tiles by 4 vectors). Dynamic
// dispatch, as fused_simd.cc.

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/conv_winograd_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cpu/conv_winograd.h"
#include "backends/cpu/winograd_lines-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using winograd::D;
using winograd::Lines;
using winograd::V;

/// Accumulators a register block of the products may hold: AVX-512 has 32 vector registers,
/// the other targets 16 or fewer.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kAccumulators = 24;
#else
constexpr int kAccumulators = 12;
#endif
/// The most vectors of output features a register block takes.
constexpr int kWideVectors = kAccumulators >= 24 ? 4 : 2;

/// Calls f(std::integral_constant<int, M>()) for the shape's tile size M (4 or 2).
template <class F>
HWY_INLINE void WithTile(const WinogradShape& s, F f) {
  if (s.tile == 4) {
    f(std::integral_constant<int, 4>());
  } else {
    f(std::integral_constant<int, 2>());
  }
}

/// The image and first row and column (of the result, or of the gradient) of tile `tile`.
struct TilePlace {
  int64_t image, row, col;
};

HWY_INLINE TilePlace PlaceOf(const WinogradShape& s, int64_t tile) {
  const int64_t wide = s.TilesWide(), per_image = s.TilesHigh() * wide;
  const int64_t rem = tile % per_image;
  return {tile / per_image, rem / wide * s.tile, rem % wide * s.tile};
}

/// Rows of a block the products run over: `count` rounded up to kWinogradRowStep (the rows past
/// `count` are zero).
HWY_INLINE int64_t RowsUsed(int64_t count) {
  return (count + kWinogradRowStep - 1) / kWinogradRowStep * kWinogradRowStep;
}

/// Zeroes rows [count, RowsUsed(count)) of each of `points` planes of rows of `features` floats,
/// `stride` floats apart, so that the products over whole register blocks add nothing for them.
void ZeroRowsPast(float* planes, int64_t points, int64_t stride, int64_t count, int64_t features) {
  for (int64_t p = 0; p < points; ++p) {
    std::memset(planes + p * stride + count * features, 0,
                sizeof(float) * static_cast<size_t>((RowsUsed(count) - count) * features));
  }
}

/// Patches of tiles [first, first + count) at the points into v ([points][s.rows][cin]); rows
/// from count to RowsUsed(count) are zero.
template <int M>
void TransformPatches(const WinogradShape& s, const float* x, int64_t first, int64_t count, float* v) {
  constexpr int P = Lines<M>::kPatch;
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  HWY_ALIGN float line[P * P * hn::MaxLanes(d)];
  const int64_t point_stride = s.PointStride(s.cin);
  for (int64_t t = 0; t < count; ++t) {
    const TilePlace at = PlaceOf(s, first + t);
    const int64_t iy0 = at.row - s.pad_top, ix0 = at.col - s.pad_left;
    const float* image = x + at.image * s.x_image;
    for (int64_t c = 0; c < s.cin; c += lanes) {
      // Down each column of the patch, then along each transformed row.
#pragma GCC unroll 8
      for (int j = 0; j < P; ++j) {
        V in[P], out[P];
        const int64_t ix = ix0 + j;
        const bool inside = ix >= 0 && ix < s.in_w;
#pragma GCC unroll 8
        for (int i = 0; i < P; ++i) {
          const int64_t iy = iy0 + i;
          in[i] = inside && iy >= 0 && iy < s.in_h ? hn::LoadU(d, image + iy * s.x_row + ix * s.x_col + c)
                                                   : hn::Zero(d);
        }
        Lines<M>::Input(d, in, out);
#pragma GCC unroll 8
        for (int i = 0; i < P; ++i) hn::Store(out[i], d, line + (i * P + j) * lanes);
      }
#pragma GCC unroll 8
      for (int i = 0; i < P; ++i) {
        V in[P], out[P];
#pragma GCC unroll 8
        for (int j = 0; j < P; ++j) in[j] = hn::Load(d, line + (i * P + j) * lanes);
        Lines<M>::Input(d, in, out);
#pragma GCC unroll 8
        for (int j = 0; j < P; ++j) hn::StoreU(out[j], d, v + (i * P + j) * point_stride + t * s.cin + c);
      }
    }
  }
  ZeroRowsPast(v, P * P, point_stride, count, s.cin);
}

/// One register block of a product: c[R rows][NV vectors] (rows ldc apart) = (c if kAdd, else 0)
/// + sum over `depth` terms k of a(r, k) b[k][NV vectors], where a(r, k) is at a + r * a_row +
/// k * a_term and b's rows are ldb apart. The forward products (rows of tiles, terms of input
/// features) and the kernel gradient's (rows of input features, terms of tiles) both run on it.
template <int R, int NV, bool kAdd>
HWY_INLINE void ProductBlock(D d, const float* a, int64_t a_row, int64_t a_term, const float* b, int64_t ldb,
                             int64_t depth, float* c, int64_t ldc) {
  const size_t lanes = hn::Lanes(d);
  V acc[R][NV];
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k)
      acc[r][k] = kAdd ? hn::LoadU(d, c + r * ldc + static_cast<int64_t>(k * lanes)) : hn::Zero(d);
  }
  for (int64_t t = 0; t < depth; ++t) {
    V w[NV];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) w[k] = hn::LoadU(d, b + t * ldb + static_cast<int64_t>(k * lanes));
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r) {
      const V x = hn::Set(d, a[r * a_row + t * a_term]);
#pragma GCC unroll 4
      for (int k = 0; k < NV; ++k) acc[r][k] = hn::MulAdd(x, w[k], acc[r][k]);
    }
  }
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) hn::StoreU(acc[r][k], d, c + r * ldc + static_cast<int64_t>(k * lanes));
  }
}

/// Rows of a register block of NV vectors of output features (they divide kWinogradRowStep): AVX-512's
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
  static_assert(kWinogradRowStep % R == 0, "register blocks divide the rows a block's products run over");
  for (int64_t t = 0; t < rows; t += R)
    ProductBlock<R, NV, false>(d, v + t * cin, cin, 1, u, cout, cin, m + t * cout, cout);
}

/// The products at the points: m[p] ([rows][cout]) = v[p] . u[p].
void MultiplyPoints(const WinogradShape& s, int64_t rows, const float* v, const float* u, float* m) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t p = 0; p < s.Points(); ++p) {
    const float* vp = v + p * s.PointStride(s.cin);
    const float* up = u + p * s.PointPlane();
    float* mp = m + p * s.PointStride(s.cout);
    int64_t o = 0;
    for (; o + kWideVectors * lanes <= s.cout; o += kWideVectors * lanes)
      MultiplyColumns<kWideVectors>(d, rows, vp, up + o, s.cin, s.cout, mp + o);
    const int64_t left = (s.cout - o) / lanes;
    if (kWideVectors == 4 && left == 3) {
      MultiplyColumns<3>(d, rows, vp, up + o, s.cin, s.cout, mp + o);
    } else if (kWideVectors == 4 && left == 2) {
      MultiplyColumns<2>(d, rows, vp, up + o, s.cin, s.cout, mp + o);
    } else if (left == 1) {
      MultiplyColumns<1>(d, rows, vp, up + o, s.cin, s.cout, mp + o);
    }
  }
}

/// The results of tiles [first, first + count) from their products m, plus bias, clamped.
template <int M>
void StoreResults(const WinogradShape& s, const float* m, int64_t first, int64_t count, const float* bias,
                  bool relu, float* y) {
  constexpr int P = Lines<M>::kPatch;
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t point_stride = s.PointStride(s.cout);
  for (int64_t t = 0; t < count; ++t) {
    const TilePlace at = PlaceOf(s, first + t);
    float* image = y + at.image * s.y_image;
    const int rows = static_cast<int>(std::min<int64_t>(M, s.out_h - at.row));
    const int cols = static_cast<int>(std::min<int64_t>(M, s.out_w - at.col));
    for (int64_t c = 0; c < s.cout; c += lanes) {
      V half[M][P];
#pragma GCC unroll 8
      for (int j = 0; j < P; ++j) {
        V col[P], out[M];
#pragma GCC unroll 8
        for (int i = 0; i < P; ++i) col[i] = hn::LoadU(d, m + (i * P + j) * point_stride + t * s.cout + c);
        Lines<M>::Output(d, col, out);
#pragma GCC unroll 4
        for (int a = 0; a < M; ++a) half[a][j] = out[a];
      }
      const V b = bias != nullptr ? hn::LoadU(d, bias + c) : hn::Zero(d);
      for (int a = 0; a < rows; ++a) {
        V out[M];
        Lines<M>::Output(d, half[a], out);
        for (int e = 0; e < cols; ++e) {
          V r = hn::Add(out[e], b);
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
  float* m = work + s.Points() * s.PointStride(s.cin);
  WithTile(s, [&](auto tile) {
    TransformPatches<tile()>(s, x, first, count, v);
    MultiplyPoints(s, RowsUsed(count), v, u, m);
    StoreResults<tile()>(s, m, first, count, bias, relu, y);
  });
}

/// The result gradient's tiles [first, first + count) at the points into w
/// ([points][s.rows][cout]): A dY A^T, positions past the gradient's edge zero; rows from count
/// to RowsUsed(count) are zero.
template <int M>
void TransformGradients(const WinogradShape& s, const float* dy, int64_t first, int64_t count, float* w) {
  constexpr int P = Lines<M>::kPatch;
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t point_stride = s.PointStride(s.cout);
  for (int64_t t = 0; t < count; ++t) {
    const TilePlace at = PlaceOf(s, first + t);
    const float* image = dy + at.image * s.y_image;
    const int64_t rows = std::min<int64_t>(M, s.out_h - at.row),
                  cols = std::min<int64_t>(M, s.out_w - at.col);
    for (int64_t c = 0; c < s.cout; c += lanes) {
      V half[M][P];
#pragma GCC unroll 4
      for (int a = 0; a < M; ++a) {
        V g[M];
#pragma GCC unroll 4
        for (int e = 0; e < M; ++e) {
          g[e] = a < rows && e < cols
                     ? hn::LoadU(d, image + (at.row + a) * s.y_row + (at.col + e) * s.y_col + c)
                     : hn::Zero(d);
        }
        Lines<M>::Gradient(d, g, half[a]);
      }
#pragma GCC unroll 8
      for (int j = 0; j < P; ++j) {
        V col[M], out[P];
#pragma GCC unroll 4
        for (int a = 0; a < M; ++a) col[a] = half[a][j];
        Lines<M>::Gradient(d, col, out);
#pragma GCC unroll 8
        for (int i = 0; i < P; ++i) hn::StoreU(out[i], d, w + (i * P + j) * point_stride + t * s.cout + c);
      }
    }
  }
  ZeroRowsPast(w, P * P, point_stride, count, s.cout);
}

void KernelGradientTiles(const WinogradShape& s, const float* x, const float* dy, int64_t first,
                         int64_t count, float* work, float* sums) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  float* v = work;
  float* w = work + s.Points() * s.PointStride(s.cin);
  WithTile(s, [&](auto tile) {
    TransformPatches<tile()>(s, x, first, count, v);
    TransformGradients<tile()>(s, dy, first, count, w);
  });
  const int64_t rows = RowsUsed(count);
  // Blocks of R input features (cin is a multiple of 16) by kWideVectors, 2 or 1 vectors of
  // output features.
  constexpr int R = 4;
  for (int64_t p = 0; p < s.Points(); ++p) {
    const float* vp = v + p * s.PointStride(s.cin);
    const float* wp = w + p * s.PointStride(s.cout);
    float* sp = sums + p * s.PointPlane();
    for (int64_t i = 0; i < s.cin; i += R) {
      int64_t o = 0;
      for (; o + kWideVectors * lanes <= s.cout; o += kWideVectors * lanes)
        ProductBlock<R, kWideVectors, true>(d, vp + i, 1, s.cin, wp + o, s.cout, rows, sp + i * s.cout + o,
                                            s.cout);
      for (; o + 2 * lanes <= s.cout; o += 2 * lanes)
        ProductBlock<R, 2, true>(d, vp + i, 1, s.cin, wp + o, s.cout, rows, sp + i * s.cout + o, s.cout);
      if (o < s.cout)
        ProductBlock<R, 1, true>(d, vp + i, 1, s.cin, wp + o, s.cout, rows, sp + i * s.cout + o, s.cout);
    }
  }
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

/// BothAxes over every vector of a [cin][cout] plane: block `in` (in_stride floats between its
/// kIn x kIn matrices) to block `out`.
template <int kIn, int kOut, class Line>
HWY_INLINE void BothAxesOfPlane(const WinogradShape& s, const float* in, int64_t in_stride, float* out,
                                int64_t out_stride, Line line) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < s.cin * s.cout; i += lanes)
    BothAxes<kIn, kOut>(d, in + i, in_stride, out + i, out_stride, line);
}

void TransformKernel(const WinogradShape& s, const float* g, float* u) {
  WithTile(s, [&](auto tile) {
    using L = Lines<tile()>;
    BothAxesOfPlane<5, L::kPatch>(s, g, s.cin * s.cout, u, s.PointPlane(),
                                  [](D dd, const V* in, V* out) { L::Kernel(dd, in, out); });
  });
}

void FinishKernelGradient(const WinogradShape& s, const float* sums, float* dg) {
  WithTile(s, [&](auto tile) {
    using L = Lines<tile()>;
    BothAxesOfPlane<L::kPatch, 5>(s, sums, s.PointPlane(), dg, s.cin * s.cout,
                                  [](D dd, const V* in, V* out) { L::KernelGradient(dd, in, out); });
  });
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

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
