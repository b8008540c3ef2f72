// ggml Q8_0 / Q4_0 / Q4_K / Q6_K matrix products (ggml_matmul.h). For each output feature j the
// row of blocks is read once; each block is decoded into an L1-resident buffer (Q8_0 and Q4_0
// widened with SIMD and scaled by the block's d afterwards; the K-quants decoded with their
// sub-block scales, as ggml's reference does) and multiplied into a vector of partial sums with
// the matching values of each row of x. Q4_0's offset of 8 is applied once per row:
// -8 · Σ_blocks d · (the block's sum of x).

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

/// The block's float16 scale d.
inline float HalfAt(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return kiln::detail::HalfBitsToFloat(bits);
}

/// The factor a decoded block is multiplied by: d for Q8_0 and Q4_0 (decoded unscaled), 1 for
/// the K-quants (decoded with their sub-block scales applied).
template <int kType>
inline float BlockScale(const uint8_t* block) {
  if constexpr (kType == kGGMLQ8_0 || kType == kGGMLQ4_0) return HalfAt(block);
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

/// block_q4_K (d, dmin, 12 bytes of scales and mins, 128 bytes of nibbles) -> 256 values.
inline void DecodeQ4K(const uint8_t* b, float* w) {
  const float d = HalfAt(b), dmin = HalfAt(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int j = 0; j < 4; ++j, q += 32, w += 64) {  // 64 values: low nibbles, then high.
    int sc, m;
    ScaleMinK4(2 * j, scales, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    ScaleMinK4(2 * j + 1, scales, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      w[l] = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      w[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

/// block_q6_K (128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, d) -> 256
/// values (ggml's dequantize_row_q6_K).
inline void DecodeQ6K(const uint8_t* b, float* w) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = HalfAt(b + 208);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, w += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      w[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      w[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      w[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      w[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
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
    DecodeQ4K(block, w);
  } else if constexpr (kType == kGGMLQ6_K) {
    DecodeQ6K(block, w);
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
