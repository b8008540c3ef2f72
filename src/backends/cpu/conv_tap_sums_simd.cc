// The Highway kernels of the tap sums (conv_tap_sums.h): a kernel gradient with each tap's sum for
// one vector of output features in a register. Dynamic dispatch, as fused_simd.cc.

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/conv_tap_sums_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include <algorithm>
#include <cstring>

#include "backends/cpu/conv_tap_sums.h"
#include "backends/cpu/simd_part-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

/// Vector registers: AVX-512 has 32, the other targets 16 or fewer.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kRegisters = 32;
#else
constexpr int kRegisters = 16;
#endif
constexpr int kStep = static_cast<int>(TapSumsShape::kStep);

/// Whether a pass of NV vectors of output features over G tap rows of KW taps fits the registers:
/// NV * G * KW sums, NV * kStep gradient vectors and a broadcast (at most one register spare).
constexpr bool Fits(int nv, int g, int kw) { return nv * g * kw + nv * kStep + 1 <= kRegisters - 1; }

/// Tap rows per pass of NV vectors: the most that fit (5x5 on AVX-512: all 5, 25 sums).
template <int NV, int KH, int KW>
constexpr int GroupOf() {
  int g = KH;
  while (g > 1 && !Fits(NV, g, KW)) --g;
  return g;
}

/// Vectors of output features per pass: 2 where both fit with all tap rows (3x3 on AVX-512: 18
/// sums, 8 gradient vectors: 72 multiply-adds for 26 loads, against 36 for 22 with one), else 1.
template <int KH, int KW>
constexpr int VectorsOf() {
  return Fits(2, KH, KW) ? 2 : 1;
}

/// One step: the gradient at kStep neighbouring positions (g, y_col apart) in NV vectors of
/// features (`lanes[p]` of each at position p, the rest zero, unless kFull, where all are read),
/// times the input's rows of the group (`in`, plane_w apart), added into sums[(k * G + r) * KW +
/// b] for vector k, tap row r, tap column b.
template <int NV, int G, int KW, bool kFull>
HWY_INLINE void Step(D d, const float* in, int64_t plane_w, const float* g, int64_t y_col,
                     const size_t* lanes, V* sums) {
  const int64_t n = static_cast<int64_t>(hn::Lanes(d));
  V dy[NV][kStep];
  HWY_ALIGN float part[hn::MaxLanes(D())];  // LoadPart's copy on the portable targets.
#pragma GCC unroll 4
  for (int p = 0; p < kStep; ++p) {
#pragma GCC unroll 2
    for (int k = 0; k < NV; ++k) {
      const float* at = g + p * y_col + k * n;
      dy[k][p] = kFull ? hn::LoadU(d, at) : LoadPart(d, at, lanes[p], hn::Zero(d), part);
    }
  }
#pragma GCC unroll 5
  for (int r = 0; r < G; ++r) {
    const float* row = in + r * plane_w;
#pragma GCC unroll 8
    for (int j = 0; j < KW + kStep - 1; ++j) {
      const V v = hn::Set(d, row[j]);
#pragma GCC unroll 4
      for (int p = 0; p < kStep; ++p) {
        const int b = j - p;
        if (b < 0 || b >= KW) continue;
#pragma GCC unroll 2
        for (int k = 0; k < NV; ++k) {
          V& sum = sums[(k * G + r) * KW + b];
          sum = hn::MulAdd(v, dy[k][p], sum);
        }
      }
    }
  }
}

/// Tap rows [r0, r0 + G) of one input feature's plane (band rows y0 to y1 of the gradient, the
/// plane's row 0 pairing with row y0 at tap row 0), gradient columns [x0, x1) (whole steps when
/// kFull), for NV vectors of output features from `g`'s first (`lanes` of each; less than a
/// vector only when NV is 1): adds into sums ([taps][CoutPadded()], these vectors' columns). The
/// whole steps and the last partial one run in calls of their own: with both loops in one
/// function, GCC kept 15 of the 25 sums on the stack.
template <int NV, int G, int KW, bool kFull>
void GroupRows(const TapSumsShape& s, const float* plane, int r0, const float* g, int64_t y0, int64_t y1,
               int64_t x0, int64_t x1, size_t lanes, float* sums) {
  const D d;
  const int64_t n = static_cast<int64_t>(hn::Lanes(d)), cp = s.CoutPadded(), plane_w = s.PlaneWidth();
  V acc[NV * G * KW];
#pragma GCC unroll 2
  for (int k = 0; k < NV; ++k) {
#pragma GCC unroll 25
    for (int t = 0; t < G * KW; ++t) acc[k * G * KW + t] = hn::LoadU(d, sums + (r0 * KW + t) * cp + k * n);
  }
  for (int64_t y = y0; y < y1; ++y) {
    const float* in = plane + (y - y0 + r0) * plane_w;
    const float* grow = g + y * s.y_row;
    for (int64_t x = x0; x < x1; x += kStep) {
      size_t at[kStep] = {};
      if constexpr (!kFull) {
        for (int p = 0; p < kStep; ++p) at[p] = x + p < s.out_w ? lanes : 0;
      }
      Step<NV, G, KW, kFull>(d, in + x, plane_w, grow + x * s.y_col, s.y_col, at, acc);
    }
  }
#pragma GCC unroll 2
  for (int k = 0; k < NV; ++k) {
#pragma GCC unroll 25
    for (int t = 0; t < G * KW; ++t) hn::StoreU(acc[k * G * KW + t], d, sums + (r0 * KW + t) * cp + k * n);
  }
}

/// GroupRows over every column: whole steps where `lanes` is a full vector, the rest partial.
template <int NV, int G, int KW>
HWY_INLINE void GroupColumns(const TapSumsShape& s, const float* plane, int r0, const float* g, int64_t y0,
                             int64_t y1, size_t lanes, float* sums) {
  const int64_t whole = lanes == hn::Lanes(D()) ? s.out_w / kStep * kStep : 0;
  if (whole > 0) GroupRows<NV, G, KW, true>(s, plane, r0, g, y0, y1, 0, whole, lanes, sums);
  if (whole < s.out_w) GroupRows<NV, G, KW, false>(s, plane, r0, g, y0, y1, whole, s.out_w, lanes, sums);
}

/// Every tap row of one plane for NV vectors of output features, in groups of GroupOf rows.
template <int NV, int KH, int KW>
HWY_INLINE void PlaneRows(const TapSumsShape& s, const float* plane, const float* g, int64_t y0, int64_t y1,
                          size_t lanes, float* sums) {
  constexpr int kGroup = GroupOf<NV, KH, KW>();
  int r0 = 0;
  for (; r0 + kGroup <= KH; r0 += kGroup) GroupColumns<NV, kGroup, KW>(s, plane, r0, g, y0, y1, lanes, sums);
  if constexpr (KH % kGroup != 0) GroupColumns<NV, KH % kGroup, KW>(s, plane, r0, g, y0, y1, lanes, sums);
}

/// The input's rows for gradient rows [y0, y1) of one image, zero-padded: plane i ([rows][width])
/// holds feature i, its row r and column c input position (y0 + r - pad_top, c - pad_left).
void FillPlanes(const TapSumsShape& s, const float* image, int64_t y0, int64_t y1, float* planes) {
  const int64_t width = s.PlaneWidth(), rows = y1 - y0 + s.taps_h - 1;
  const int64_t c0 = std::clamp<int64_t>(s.pad_left, 0, width),
                c1 = std::clamp<int64_t>(s.in_w + s.pad_left, c0, width);
  for (int64_t i = 0; i < s.cin; ++i) {
    float* plane = planes + i * rows * width;
    for (int64_t r = 0; r < rows; ++r) {
      float* out = plane + r * width;
      const int64_t iy = y0 + r - s.pad_top;
      if (iy < 0 || iy >= s.in_h) {
        std::memset(out, 0, sizeof(float) * static_cast<size_t>(width));
        continue;
      }
      std::fill(out, out + c0, 0.0f);
      const float* in = image + iy * s.x_row + i * s.x_feature + (c0 - s.pad_left) * s.x_col;
      for (int64_t c = c0; c < c1; ++c, in += s.x_col) out[c] = *in;
      std::fill(out + c1, out + width, 0.0f);
    }
  }
}

template <int KH, int KW>
void Rows(const TapSumsShape& s, const float* x, const float* dy, int64_t first, int64_t last, float* planes,
          float* sums) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d)), taps = KH * KW, cp = s.CoutPadded();
  for (int64_t row = first; row < last;) {
    const int64_t image = row / s.out_h, y0 = row % s.out_h;
    const int64_t y1 = std::min({s.out_h, y0 + s.band, y0 + last - row});
    FillPlanes(s, x + image * s.x_image, y0, y1, planes);
    const int64_t plane_floats = (y1 - y0 + KH - 1) * s.PlaneWidth();
    for (int64_t i = 0; i < s.cin; ++i) {
      const float* plane = planes + i * plane_floats;
      const float* g = dy + image * s.y_image;
      float* sum = sums + i * taps * cp;
      int64_t o = 0;
      constexpr int kWide = VectorsOf<KH, KW>();
      if constexpr (kWide > 1) {
        for (; o + kWide * lanes <= s.cout; o += kWide * lanes)
          PlaneRows<kWide, KH, KW>(s, plane, g + o, y0, y1, static_cast<size_t>(lanes), sum + o);
      }
      for (; o < s.cout; o += lanes)
        PlaneRows<1, KH, KW>(s, plane, g + o, y0, y1, static_cast<size_t>(std::min(lanes, s.cout - o)),
                             sum + o);
    }
    row += y1 - y0;
  }
}

void TapSums(const TapSumsShape& s, const float* x, const float* dy, int64_t first, int64_t last,
             float* planes, float* sums) {
  if (s.taps_h == 5) {
    Rows<5, 5>(s, x, dy, first, last, planes, sums);
  } else {
    Rows<3, 3>(s, x, dy, first, last, planes, sums);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(TapSums);

void TapSumsRows(const TapSumsShape& s, const float* x, const float* dy, int64_t first, int64_t last,
                 float* planes, float* sums) {
  HWY_DYNAMIC_DISPATCH(TapSums)(s, x, dy, first, last, planes, sums);
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
