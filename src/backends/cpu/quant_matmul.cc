// Linear-quantized and NF4 matrix products (quant_matmul.h). Each row i of W is read once and
// turned into float vectors in registers (int8: widen and convert; int4 and NF4: split the
// nibbles of each byte into the even and the odd columns, as q + 8 or the table's value); every row of x adds
// x[r, i] times it into a per-block accumulator, which is scaled (and offset by the zero point, and for int4
// by -8, times the block's sum of x) into y at the end of each block of rows. DequantizeTile turns a tile of
// W into floats for the batched path (quant_composite.cc).

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/quant_matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstring>

#include "backends/cpu/quant_matmul.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

/// How the weights' bytes are read (LinearQuantMatmul::four_bit and ::table).
enum Mode : int { kInt8 = 0, kInt4 = 1, kNF4 = 2 };

Mode ModeOf(const LinearQuantMatmul& p) { return !p.four_bit ? kInt8 : p.table != nullptr ? kNF4 : kInt4; }

/// Column j of row `row`, the integer (int8, int4) or table value (NF4) before scaling.
float ValueAt(const LinearQuantMatmul& p, const uint8_t* row, int64_t j) {
  if (!p.four_bit) return static_cast<float>(static_cast<int8_t>(row[j]));
  const int nibble = (row[j / 2] >> (j % 2 == 0 ? 0 : 4)) & 0x0F;
  return p.table != nullptr ? p.table[nibble] : static_cast<float>((nibble ^ 8) - 8);
}

/// Columns [j, j + Lanes) of int8 row `row` as floats.
HWY_INLINE V LoadInt8(D d, const uint8_t* row, int64_t j) {
  const hn::Rebind<int8_t, D> d8;
  const hn::Rebind<int32_t, D> di;
  return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(row) + j)));
}

using DI = hn::Rebind<int32_t, D>;
using VI = hn::Vec<DI>;

/// table[idx] for 4-bit indices: one lane permutation where a vector holds the 16 entries, two
/// and a blend on AVX2, a gather otherwise.
HWY_INLINE V Lookup16(D d, const float* table, VI idx) {
  const DI di;
  const size_t lanes = hn::Lanes(d);
  if (lanes >= 16) return hn::TableLookupLanes(hn::LoadU(d, table), hn::IndicesFromVec(d, idx));
  if (lanes == 8) {
    const auto low = hn::IndicesFromVec(d, hn::And(idx, hn::Set(di, 7)));
    const V a = hn::TableLookupLanes(hn::LoadU(d, table), low);
    const V b = hn::TableLookupLanes(hn::LoadU(d, table + 8), low);
    return hn::IfThenElse(hn::RebindMask(d, hn::Gt(idx, hn::Set(di, 7))), b, a);
  }
  return hn::GatherIndex(d, table, idx);
}

/// Columns [j, j + 2 Lanes) of packed 4-bit row `row` (j even), split by parity instead of
/// interleaved: `even` holds columns j, j + 2, ..., `odd` columns j + 1, j + 3, ... (one
/// widening load, a mask and a shift; the panels keep their sums in this order). Int4 gives
/// the offset values q + 8 in [0, 16) (both sign bits flipped; the offset is subtracted once
/// per block), NF4 the table's values.
template <int kMode>
HWY_INLINE void SplitNibbles(D d, const LinearQuantMatmul& p, const uint8_t* row, int64_t j, V& even,
                             V& odd) {
  const hn::Rebind<uint8_t, D> du8;
  const DI di;
  auto v = hn::PromoteTo(di, hn::LoadU(du8, row + j / 2));
  if constexpr (kMode == kInt4) v = hn::Xor(v, hn::Set(di, 0x88));
  const VI lo = hn::And(v, hn::Set(di, 0x0F)), hi = hn::ShiftRight<4>(v);
  if constexpr (kMode == kNF4) {
    even = Lookup16(d, p.table, lo);
    odd = Lookup16(d, p.table, hi);
  } else {
    even = hn::ConvertTo(d, lo);
    odd = hn::ConvertTo(d, hi);
  }
}

/// acc[r][c] += x[r, i] · w[c] over columns [0, width) of the range, for one row i of W (the
/// columns after the last whole panel, one at a time).
void AddRow(const LinearQuantMatmul& p, const uint8_t* row, int64_t i, int64_t j0, int64_t width,
            float* acc) {
  for (int64_t c = 0; c < width; ++c) {
    const float v = ValueAt(p, row, j0 + c);
    for (int64_t r = 0; r < p.m; ++r) acc[r * width + c] += p.x[r * p.k + i] * v;
  }
}

/// Vectors of columns per panel of the register kernel (64 int8 columns, a cache line, on AVX2).
constexpr int kPanel = 8;

/// Adds rows [i, i + rows) of W's panel at column j, times row r of x, into the block sums
/// `acc` (kPanel vectors). The sums stay in eight named registers while the rows stream (GCC
/// keeps an array of vectors on the stack).
template <int kMode>
HWY_INLINE void PanelRows(D d, const LinearQuantMatmul& p, int64_t r, int64_t i, int64_t rows, int64_t j,
                          float* acc) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  constexpr bool kFourBit = kMode != kInt8;
  const int64_t row_bytes = kFourBit ? p.n / 2 : p.n;
  V a0 = hn::LoadU(d, acc), a1 = hn::LoadU(d, acc + lanes), a2 = hn::LoadU(d, acc + 2 * lanes),
    a3 = hn::LoadU(d, acc + 3 * lanes), a4 = hn::LoadU(d, acc + 4 * lanes),
    a5 = hn::LoadU(d, acc + 5 * lanes), a6 = hn::LoadU(d, acc + 6 * lanes),
    a7 = hn::LoadU(d, acc + 7 * lanes);
  const float* x = p.x + r * p.k;
  const uint8_t* row = p.q + i * row_bytes;
  // The same bytes of the next rows: each row is read once, in short runs the hardware
  // prefetchers do not follow (a row of int8 weights is a page), so fetch a group ahead.
  if (r == 0 && i + 2 * rows <= p.k) {
    const uint8_t* ahead = row + rows * row_bytes + (kFourBit ? j / 2 : j);
    for (int64_t e = 0; e < rows; ++e) __builtin_prefetch(ahead + e * row_bytes);
  }
  for (int64_t e = i; e < i + rows; ++e, row += row_bytes) {
    const V xr = hn::Set(d, x[e]);
    if constexpr (kFourBit) {
      V w0, w1;
      SplitNibbles<kMode>(d, p, row, j, w0, w1);
      a0 = hn::MulAdd(xr, w0, a0);
      a1 = hn::MulAdd(xr, w1, a1);
      SplitNibbles<kMode>(d, p, row, j + 2 * lanes, w0, w1);
      a2 = hn::MulAdd(xr, w0, a2);
      a3 = hn::MulAdd(xr, w1, a3);
      SplitNibbles<kMode>(d, p, row, j + 4 * lanes, w0, w1);
      a4 = hn::MulAdd(xr, w0, a4);
      a5 = hn::MulAdd(xr, w1, a5);
      SplitNibbles<kMode>(d, p, row, j + 6 * lanes, w0, w1);
      a6 = hn::MulAdd(xr, w0, a6);
      a7 = hn::MulAdd(xr, w1, a7);
    } else {
      a0 = hn::MulAdd(xr, LoadInt8(d, row, j), a0);
      a1 = hn::MulAdd(xr, LoadInt8(d, row, j + lanes), a1);
      a2 = hn::MulAdd(xr, LoadInt8(d, row, j + 2 * lanes), a2);
      a3 = hn::MulAdd(xr, LoadInt8(d, row, j + 3 * lanes), a3);
      a4 = hn::MulAdd(xr, LoadInt8(d, row, j + 4 * lanes), a4);
      a5 = hn::MulAdd(xr, LoadInt8(d, row, j + 5 * lanes), a5);
      a6 = hn::MulAdd(xr, LoadInt8(d, row, j + 6 * lanes), a6);
      a7 = hn::MulAdd(xr, LoadInt8(d, row, j + 7 * lanes), a7);
    }
  }
  hn::StoreU(a0, d, acc);
  hn::StoreU(a1, d, acc + lanes);
  hn::StoreU(a2, d, acc + 2 * lanes);
  hn::StoreU(a3, d, acc + 3 * lanes);
  hn::StoreU(a4, d, acc + 4 * lanes);
  hn::StoreU(a5, d, acc + 5 * lanes);
  hn::StoreU(a6, d, acc + 6 * lanes);
  hn::StoreU(a7, d, acc + 7 * lanes);
}

/// Rows of W per pass over the panels: few enough streams for the prefetchers, enough to keep
/// the block sums in registers across them.
constexpr int64_t kRowGroup = 4;

/// The panels [n_begin, panels_end) of one block of W's rows (from b0): block sums in `acc`
/// (m × width floats, width = n_end - n_begin), scaled into y at the end.
template <int kMode>
void PanelBlock(D d, const LinearQuantMatmul& p, int64_t b0, int64_t n_begin, int64_t panels_end,
                int64_t width, float* acc) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t panel = kPanel * lanes;
  const int64_t used = panels_end - n_begin;
  for (int64_t r = 0; r < p.m; ++r) std::fill(acc + r * width, acc + r * width + used, 0.0f);
  const int64_t group = p.block % kRowGroup == 0 ? kRowGroup : 1;
  for (int64_t i = b0; i < b0 + p.block; i += group)
    for (int64_t j = n_begin; j < panels_end; j += panel)
      for (int64_t r = 0; r < p.m; ++r)
        PanelRows<kMode>(d, p, r, i, group, j, acc + r * width + (j - n_begin));
  const float* s = p.scale + (b0 / p.block) * p.n + n_begin;
  const float* z = p.zero != nullptr ? p.zero + (b0 / p.block) * p.n + n_begin : nullptr;
  for (int64_t r = 0; r < p.m; ++r) {
    float xsum = 0;  // The zero point (and int4's offset of 8) times the block's sum of x.
    if (z != nullptr || kMode == kInt4)
      for (int64_t i = b0; i < b0 + p.block; ++i) xsum += p.x[r * p.k + i];
    const V xs = hn::Set(d, xsum);
    float* y = p.y + r * p.n + n_begin;
    const float* a = acc + r * width;
    if constexpr (kMode != kInt8) {
      // Sums of columns split by parity (SplitNibbles): y += a · s + xsum · (z - 8 s) (int4),
      // y += a · s (NF4).
      const V minus8 = hn::Set(d, kMode == kInt4 ? -8.0f : 0.0f);
      for (int64_t c = 0; c < used; c += 2 * lanes) {
        V se, so, ye, yo;
        hn::LoadInterleaved2(d, s + c, se, so);
        hn::LoadInterleaved2(d, y + c, ye, yo);
        V ze = hn::Mul(minus8, se), zo = hn::Mul(minus8, so);
        if (z != nullptr) {
          V pe, po;
          hn::LoadInterleaved2(d, z + c, pe, po);
          ze = hn::Add(ze, pe);
          zo = hn::Add(zo, po);
        }
        ye = hn::MulAdd(xs, ze, hn::MulAdd(hn::LoadU(d, a + c), se, ye));
        yo = hn::MulAdd(xs, zo, hn::MulAdd(hn::LoadU(d, a + c + lanes), so, yo));
        hn::StoreInterleaved2(ye, yo, d, y + c);
      }
    } else {
      for (int64_t c = 0; c < used; c += lanes) {
        V out = hn::MulAdd(hn::LoadU(d, a + c), hn::LoadU(d, s + c), hn::LoadU(d, y + c));
        if (z != nullptr) out = hn::MulAdd(xs, hn::LoadU(d, z + c), out);
        hn::StoreU(out, d, y + c);
      }
    }
  }
}

void Run(const LinearQuantMatmul& p, int64_t n_begin, int64_t n_end, float* acc) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t row_bytes = p.four_bit ? p.n / 2 : p.n;
  for (int64_t r = 0; r < p.m; ++r) {  // y starts at the bias (or 0).
    float* y = p.y + r * p.n + n_begin;
    if (p.bias != nullptr) {
      std::memcpy(y, p.bias + n_begin, static_cast<size_t>(n_end - n_begin) * sizeof(float));
    } else {
      std::fill(y, y + n_end - n_begin, 0.0f);
    }
  }
  // Whole panels in registers; the columns after them through per-row accumulators in memory.
  const int64_t panel = kPanel * lanes;
  const int64_t panels_end = n_begin + (n_end - n_begin) / panel * panel;
  // Block by block of W's rows, a few rows at a time streamed across the panels.
  if (panels_end > n_begin) {
    for (int64_t b0 = 0; b0 < p.k; b0 += p.block) {
      switch (ModeOf(p)) {
        case kInt8:
          PanelBlock<kInt8>(d, p, b0, n_begin, panels_end, n_end - n_begin, acc);
          break;
        case kInt4:
          PanelBlock<kInt4>(d, p, b0, n_begin, panels_end, n_end - n_begin, acc);
          break;
        case kNF4:
          PanelBlock<kNF4>(d, p, b0, n_begin, panels_end, n_end - n_begin, acc);
          break;
      }
    }
  }
  n_begin = panels_end;
  const int64_t width = n_end - n_begin;
  if (width == 0) return;
  for (int64_t b0 = 0; b0 < p.k; b0 += p.block) {
    std::fill(acc, acc + p.m * width, 0.0f);
    for (int64_t i = b0; i < b0 + p.block; ++i) AddRow(p, p.q + i * row_bytes, i, n_begin, width, acc);
    const float* s = p.scale + (b0 / p.block) * p.n + n_begin;
    const float* z = p.zero != nullptr ? p.zero + (b0 / p.block) * p.n + n_begin : nullptr;
    for (int64_t r = 0; r < p.m; ++r) {
      float xsum = 0;  // The zero point adds zero[j] · (the block's sum of x).
      if (z != nullptr)
        for (int64_t i = b0; i < b0 + p.block; ++i) xsum += p.x[r * p.k + i];
      const V xs = hn::Set(d, xsum);
      float* y = p.y + r * p.n + n_begin;
      const float* a = acc + r * width;
      int64_t c = 0;
      for (; c + lanes <= width; c += lanes) {
        V out = hn::MulAdd(hn::LoadU(d, a + c), hn::LoadU(d, s + c), hn::LoadU(d, y + c));
        if (z != nullptr) out = hn::MulAdd(xs, hn::LoadU(d, z + c), out);
        hn::StoreU(out, d, y + c);
      }
      for (; c < width; ++c) y[c] += a[c] * s[c] + (z != nullptr ? xsum * z[c] : 0.0f);
    }
  }
}

void DequantizeTile(const LinearQuantMatmul& p, int64_t k0, int64_t k1, int64_t n0, int64_t n1, float* out) {
  const D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t row_bytes = p.four_bit ? p.n / 2 : p.n;
  const int64_t width = n1 - n0;
  const Mode mode = ModeOf(p);
  for (int64_t i = k0; i < k1; ++i) {
    const uint8_t* row = p.q + i * row_bytes;
    const float* s = p.scale + (i / p.block) * p.n;
    const float* z = p.zero != nullptr ? p.zero + (i / p.block) * p.n : nullptr;
    float* o = out + (i - k0) * width;
    int64_t j = n0;
    if (mode != kInt8) {
      // Values by parity (SplitNibbles), scaled, stored back in column order.
      const V offset = hn::Set(d, mode == kInt4 ? -8.0f : 0.0f);
      for (; j + 2 * lanes <= n1; j += 2 * lanes) {
        V we, wo, se, so;
        if (mode == kInt4) {
          SplitNibbles<kInt4>(d, p, row, j, we, wo);
        } else {
          SplitNibbles<kNF4>(d, p, row, j, we, wo);
        }
        hn::LoadInterleaved2(d, s + j, se, so);
        we = hn::Mul(hn::Add(we, offset), se);
        wo = hn::Mul(hn::Add(wo, offset), so);
        if (z != nullptr) {
          V ze, zo;
          hn::LoadInterleaved2(d, z + j, ze, zo);
          we = hn::Add(we, ze);
          wo = hn::Add(wo, zo);
        }
        hn::StoreInterleaved2(we, wo, d, o + (j - n0));
      }
    } else {
      for (; j + lanes <= n1; j += lanes) {
        V w = hn::Mul(LoadInt8(d, row, j), hn::LoadU(d, s + j));
        if (z != nullptr) w = hn::Add(w, hn::LoadU(d, z + j));
        hn::StoreU(w, d, o + (j - n0));
      }
    }
    for (; j < n1; ++j)  // The last columns one at a time.
      o[j - n0] = ValueAt(p, row, j) * s[j] + (z != nullptr ? z[j] : 0.0f);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(Run);
HWY_EXPORT(DequantizeTile);

void RunLinearQuantMatmul(const LinearQuantMatmul& p, int64_t n_begin, int64_t n_end, float* scratch) {
  HWY_DYNAMIC_DISPATCH(Run)(p, n_begin, n_end, scratch);
}

void DequantizeLinearTile(const LinearQuantMatmul& p, int64_t k_begin, int64_t k_end, int64_t n_begin,
                          int64_t n_end, float* out) {
  HWY_DYNAMIC_DISPATCH(DequantizeTile)(p, k_begin, k_end, n_begin, n_end, out);
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
