// ggml Q8_0 / Q4_0 / Q4_K / Q6_K matrix products (ggml_matmul.h). For each output feature j the
// row of blocks is read once; each block is decoded into an L1-resident buffer (Q8_0 and Q4_0
// widened and scaled by the block's d afterwards; the K-quants with their sub-block scales, in
// ggml's reference's order) and multiplied into a vector of partial sums with
// the matching values of each row of x (the K-quants' decoders are vectorised too: the 6-bit
// values of Q6_K assembled from their nibble and 2-bit parts in int32 lanes). Q4_0's offset of 8 is applied
// once per row: -8 · Σ_blocks d · (the block's sum of x).

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/ggml_matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/ggml_matmul.h"
#include "hwy/highway.h"
#include "kiln/core/half.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

/// Values per block: 32 for Q8_0 and Q4_0, 256 for the K-quants.
template <int kType>
constexpr int64_t kValues = kType == kGGMLQ4_K || kType == kGGMLQ6_K ? 256 : 32;
constexpr int64_t kMaxValues = 256;

/// The factor a decoded block is multiplied by: d for Q8_0 and Q4_0 (decoded unscaled), 1 for
/// the K-quants (decoded with their sub-block scales applied).
template <int kType>
inline float BlockScale(const uint8_t* block) {
  if constexpr (kType == kGGMLQ8_0 || kType == kGGMLQ4_0) return GGMLHalfAt(block);
  return 1.0f;
}

/// Sub-block j's 6-bit scale and min of a block_q4_K (ggml's get_scale_min_k4).
inline void ScaleMinK4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

/// block_q4_K (d, dmin, 12 bytes of scales and mins, 128 bytes of nibbles) -> 256 values:
/// 64 at a time, the low nibbles of 32 bytes then their high nibbles, each sub-block of 32 with
/// its scale d · sc and offset dmin · m.
HWY_INLINE void DecodeQ4K(D d, const uint8_t* b, float* w) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const hn::Rebind<uint8_t, D> du8;
  const hn::Rebind<int32_t, D> di;
  const float dd = GGMLHalfAt(b), dmin = GGMLHalfAt(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int j = 0; j < 4; ++j, q += 32, w += 64) {
    int sc, m;
    ScaleMinK4(2 * j, scales, sc, m);
    const V d1 = hn::Set(d, dd * static_cast<float>(sc)), m1 = hn::Set(d, -dmin * static_cast<float>(m));
    ScaleMinK4(2 * j + 1, scales, sc, m);
    const V d2 = hn::Set(d, dd * static_cast<float>(sc)), m2 = hn::Set(d, -dmin * static_cast<float>(m));
    for (int64_t l = 0; l < 32; l += lanes) {
      const auto v = hn::PromoteTo(di, hn::LoadU(du8, q + l));
      hn::StoreU(hn::MulAdd(hn::ConvertTo(d, hn::And(v, hn::Set(di, 0x0F))), d1, m1), d, w + l);
      hn::StoreU(hn::MulAdd(hn::ConvertTo(d, hn::ShiftRight<4>(v)), d2, m2), d, w + 32 + l);
    }
  }
}

/// block_q6_K (128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, d) -> 256
/// values, laid out as ggml's dequantize_row_q6_K: in each half of 128, value l (l < 32) and
/// l + 64 take the low and high nibble of ql[l], l + 32 and l + 96 those of ql[l + 32], their
/// top two bits bits 0-1, 2-3, 4-5 and 6-7 of qh[l]; scale sc[l / 16 + 0, 2, 4, 6].
HWY_INLINE void DecodeQ6K(D d, const uint8_t* b, float* w) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const hn::Rebind<uint8_t, D> du8;
  const hn::Rebind<int32_t, D> di;
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float dd = GGMLHalfAt(b + 208);
  const auto three = hn::Set(di, 3), low = hn::Set(di, 0x0F), bias = hn::Set(di, 32);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, w += 128) {
    for (int64_t l = 0; l < 32; l += lanes) {  // Lanes <= 16 keep one l / 16 per vector.
      const int64_t is = l / 16;
      const auto a = hn::PromoteTo(di, hn::LoadU(du8, ql + l));
      const auto c = hn::PromoteTo(di, hn::LoadU(du8, ql + l + 32));
      const auto h = hn::PromoteTo(di, hn::LoadU(du8, qh + l));
      const auto q1 = hn::Sub(hn::Or(hn::And(a, low), hn::ShiftLeft<4>(hn::And(h, three))), bias);
      const auto q2 =
          hn::Sub(hn::Or(hn::And(c, low), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(h), three))), bias);
      const auto q3 =
          hn::Sub(hn::Or(hn::ShiftRight<4>(a), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(h), three))), bias);
      const auto q4 = hn::Sub(hn::Or(hn::ShiftRight<4>(c), hn::ShiftLeft<4>(hn::ShiftRight<6>(h))), bias);
      hn::StoreU(hn::Mul(hn::ConvertTo(d, q1), hn::Set(d, dd * sc[is])), d, w + l);
      hn::StoreU(hn::Mul(hn::ConvertTo(d, q2), hn::Set(d, dd * sc[is + 2])), d, w + l + 32);
      hn::StoreU(hn::Mul(hn::ConvertTo(d, q3), hn::Set(d, dd * sc[is + 4])), d, w + l + 64);
      hn::StoreU(hn::Mul(hn::ConvertTo(d, q4), hn::Set(d, dd * sc[is + 6])), d, w + l + 96);
    }
  }
}

/// The values of `block` into `w`: q (Q8_0) or the stored nibble q + 8 in [0, 16) (Q4_0), to be
/// multiplied by BlockScale; the K-quants' final values.
template <int kType>
HWY_INLINE void DecodeBlock(D d, const uint8_t* block, float* w) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const hn::Rebind<int32_t, D> di;
  constexpr int64_t kBlock = 32;
  if constexpr (kType == kGGMLQ4_K) {
    DecodeQ4K(d, block, w);
  } else if constexpr (kType == kGGMLQ6_K) {
    DecodeQ6K(d, block, w);
  } else if constexpr (kType == kGGMLQ8_0) {
    const hn::Rebind<int8_t, D> d8;
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
    for (int64_t l = 0; l < kBlock; l += lanes)
      hn::StoreU(hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, q + l))), d, w + l);
  } else {
    const hn::Rebind<uint8_t, D> du8;
    const uint8_t* q = block + 2;
    const int64_t half = kBlock / 2;
    for (int64_t l = 0; l < half; l += lanes) {
      const auto v = hn::PromoteTo(di, hn::LoadU(du8, q + l));
      hn::StoreU(hn::ConvertTo(d, hn::And(v, hn::Set(di, 0x0F))), d, w + l);
      hn::StoreU(hn::ConvertTo(d, hn::ShiftRight<4>(v)), d, w + half + l);
    }
  }
}

template <int kType>
void RunType(const GGMLMatmul& p, int64_t n_begin, int64_t n_end) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  constexpr int64_t kBlock = kValues<kType>;
  const int64_t nb = p.k / kBlock, bytes = GGMLBlockBytesOf(kType);
  // Q4_0: each block's sum of each row of x, for the offset.
  std::vector<float> xsum(kType == kGGMLQ4_0 ? static_cast<size_t>(p.m * nb) : 0);
  if constexpr (kType == kGGMLQ4_0) {
    for (int64_t r = 0; r < p.m; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        float s = 0;
        for (int64_t l = 0; l < kBlock; ++l) s += p.x[r * p.k + b * kBlock + l];
        xsum[static_cast<size_t>(r * nb + b)] = s;
      }
  }
  HWY_ALIGN float w[kMaxValues];
  constexpr int64_t kMaxRows = 8;  // Rows of x whose sums stay in registers at once.
  for (int64_t j = n_begin; j < n_end; ++j) {
    const uint8_t* row = p.w + j * nb * bytes;
    for (int64_t r0 = 0; r0 < p.m; r0 += kMaxRows) {
      const int64_t rows = std::min(kMaxRows, p.m - r0);
      V acc[kMaxRows];
      float offset[kMaxRows] = {};
      for (int64_t r = 0; r < rows; ++r) acc[r] = hn::Zero(d);
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* block = row + b * bytes;
        const float scale = BlockScale<kType>(block);
        DecodeBlock<kType>(d, block, w);
        const V ds = hn::Set(d, scale);
        for (int64_t r = 0; r < rows; ++r) {
          const float* x = p.x + (r0 + r) * p.k + b * kBlock;
          V part = hn::Mul(hn::LoadU(d, x), hn::Load(d, w));
          for (int64_t l = lanes; l < kBlock; l += lanes)
            part = hn::MulAdd(hn::LoadU(d, x + l), hn::Load(d, w + l), part);
          acc[r] = hn::MulAdd(ds, part, acc[r]);
          if constexpr (kType == kGGMLQ4_0) offset[r] += scale * xsum[static_cast<size_t>((r0 + r) * nb + b)];
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        p.y[(r0 + r) * p.n + j] =
            hn::GetLane(hn::SumOfLanes(d, acc[r])) - (kType == kGGMLQ4_0 ? 8.0f * offset[r] : 0.0f);
    }
  }
}

void Run(const GGMLMatmul& p, int64_t n_begin, int64_t n_end) {
  switch (p.type) {
    case kGGMLQ4_0:
      return RunType<kGGMLQ4_0>(p, n_begin, n_end);
    case kGGMLQ4_K:
      return RunType<kGGMLQ4_K>(p, n_begin, n_end);
    case kGGMLQ6_K:
      return RunType<kGGMLQ6_K>(p, n_begin, n_end);
    default:
      return RunType<kGGMLQ8_0>(p, n_begin, n_end);
  }
}

template <int kType>
void DecodeTileType(const GGMLMatmul& p, int64_t n0, int64_t n1, int64_t k0, int64_t k1, float* out) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  constexpr int64_t kBlock = kValues<kType>;
  const int64_t nb = p.k / kBlock, bytes = GGMLBlockBytesOf(kType);
  HWY_ALIGN float w[kMaxValues];
  const V shift = hn::Set(d, kType == kGGMLQ4_0 ? -8.0f : 0.0f);
  for (int64_t j = n0; j < n1; ++j) {
    float* o = out + (j - n0) * (k1 - k0);
    for (int64_t b = k0 / kBlock; b < k1 / kBlock; ++b) {
      const uint8_t* block = p.w + (j * nb + b) * bytes;
      const V ds = hn::Set(d, BlockScale<kType>(block));
      DecodeBlock<kType>(d, block, w);
      for (int64_t l = 0; l < kBlock; l += lanes)
        hn::StoreU(hn::Mul(hn::Add(hn::Load(d, w + l), shift), ds), d, o + b * kBlock - k0 + l);
    }
  }
}

void DecodeTile(const GGMLMatmul& p, int64_t n0, int64_t n1, int64_t k0, int64_t k1, float* out) {
  switch (p.type) {
    case kGGMLQ4_0:
      return DecodeTileType<kGGMLQ4_0>(p, n0, n1, k0, k1, out);
    case kGGMLQ4_K:
      return DecodeTileType<kGGMLQ4_K>(p, n0, n1, k0, k1, out);
    case kGGMLQ6_K:
      return DecodeTileType<kGGMLQ6_K>(p, n0, n1, k0, k1, out);
    default:
      return DecodeTileType<kGGMLQ8_0>(p, n0, n1, k0, k1, out);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(Run);
HWY_EXPORT(DecodeTile);

int64_t GGMLBlockBytesOf(int type) {
  switch (type) {
    case kGGMLQ4_0:
      return 18;
    case kGGMLQ4_K:
      return 144;
    case kGGMLQ6_K:
      return 210;
    default:
      return 34;
  }
}

int64_t GGMLBlockValuesOf(int type) { return type == kGGMLQ4_K || type == kGGMLQ6_K ? 256 : 32; }

void RunGGMLMatmul(const GGMLMatmul& p, int64_t n_begin, int64_t n_end) {
  HWY_DYNAMIC_DISPATCH(Run)(p, n_begin, n_end);
}

void DecodeGGMLTile(const GGMLMatmul& p, int64_t n_begin, int64_t n_end, int64_t k_begin, int64_t k_end,
                    float* out) {
  HWY_DYNAMIC_DISPATCH(DecodeTile)(p, n_begin, n_end, k_begin, k_end, out);
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
