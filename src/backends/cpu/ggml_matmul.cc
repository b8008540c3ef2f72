// ggml Q8_0 / Q4_0 matrix products (ggml_matmul.h). For each output feature j the row of blocks
// is read once; each block's 32 values are widened to floats in registers and multiplied into
// a vector of partial sums with the matching 32 values of each row of x, scaled by the block's d.
// Q4_0's offset of 8 is applied once per row: -8 · Σ_blocks d · (the block's sum of x).

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

constexpr int64_t kBlock = 32;

/// The block's float16 scale d.
inline float BlockScale(const uint8_t* block) {
  uint16_t bits;
  std::memcpy(&bits, block, 2);
  return kiln::detail::HalfBitsToFloat(bits);
}

/// The 32 values q (Q8_0) or q + 8... as stored, q in [0, 16) (Q4_0) of `block` into `w`.
template <int kType>
HWY_INLINE void DecodeBlock(D d, const uint8_t* block, float* w) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const hn::Rebind<int32_t, D> di;
  if constexpr (kType == kGGMLQ8_0) {
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
  HWY_ALIGN float w[kBlock];
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
        const float scale = BlockScale(block);
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
  if (p.type == kGGMLQ4_0) {
    RunType<kGGMLQ4_0>(p, n_begin, n_end);
  } else {
    RunType<kGGMLQ8_0>(p, n_begin, n_end);
  }
}

void DecodeTile(const GGMLMatmul& p, int64_t n0, int64_t n1, int64_t k0, int64_t k1, float* out) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t nb = p.k / kBlock, bytes = GGMLBlockBytesOf(p.type);
  HWY_ALIGN float w[kBlock];
  for (int64_t j = n0; j < n1; ++j) {
    float* o = out + (j - n0) * (k1 - k0);
    for (int64_t b = k0 / kBlock; b < k1 / kBlock; ++b) {
      const uint8_t* block = p.w + (j * nb + b) * bytes;
      const V ds = hn::Set(d, BlockScale(block));
      const V shift = hn::Set(d, p.type == kGGMLQ4_0 ? -8.0f : 0.0f);
      if (p.type == kGGMLQ4_0) {
        DecodeBlock<kGGMLQ4_0>(d, block, w);
      } else {
        DecodeBlock<kGGMLQ8_0>(d, block, w);
      }
      for (int64_t l = 0; l < kBlock; l += lanes)
        hn::StoreU(hn::Mul(hn::Add(hn::Load(d, w + l), shift), ds), d, o + b * kBlock - k0 + l);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(Run);
HWY_EXPORT(DecodeTile);

int64_t GGMLBlockBytesOf(int type) { return type == kGGMLQ4_0 ? 18 : 34; }

void RunGGMLMatmul(const GGMLMatmul& p, int64_t n_begin, int64_t n_end) {
  HWY_DYNAMIC_DISPATCH(Run)(p, n_begin, n_end);
}

void DecodeGGMLTile(const GGMLMatmul& p, int64_t n_begin, int64_t n_end, int64_t k_begin, int64_t k_end,
                    float* out) {
  HWY_DYNAMIC_DISPATCH(DecodeTile)(p, n_begin, n_end, k_begin, k_end, out);
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
