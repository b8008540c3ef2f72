// ggml's block formats on the host: the byte layouts of block_q8_0, block_q4_0, block_q4_K and
// block_q6_K, decoded as ggml's dequantize_row functions define them, and encoded with
// round-to-nearest plus a least-squares refinement of each sub-block's scale (and min).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "kiln/core/half.h"
#include "kiln/quant/quant.h"

namespace kiln::quant {

namespace {

constexpr int64_t kQK = 32;    // Values per block of Q8_0 and Q4_0.
constexpr int64_t kQKK = 256;  // Values per super-block of the K-quants.

float F16(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return detail::HalfBitsToFloat(bits);
}

void PutF16(uint8_t* p, float v) {
  const uint16_t bits = detail::FloatToHalfBits(v);
  std::memcpy(p, &bits, 2);
}

int Nearest(float v) { return static_cast<int>(std::lround(v)); }

// ---- Q8_0: d (f16), qs[32] (int8); y = d · q -------------------------------------------------

void EncodeQ8_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (int64_t j = 0; j < kQK; ++j) amax = std::max(amax, std::abs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1 / d : 0;
  PutF16(b, d);
  for (int64_t j = 0; j < kQK; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(Nearest(x[j] * id)));
}

void DecodeQ8_0(const uint8_t* b, float* y) {
  const float d = F16(b);
  for (int64_t j = 0; j < kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// ---- Q4_0: d (f16), qs[16]: value j in the low nibble of byte j, value j + 16 in its high
// nibble; y = (nibble - 8) · d -----------------------------------------------------------------

void EncodeQ4_0(const float* x, uint8_t* b) {
  float amax = 0, max = 0;  // max: the value of largest magnitude, with its sign
  for (int64_t j = 0; j < kQK; ++j) {
    if (std::abs(x[j]) > amax) {
      amax = std::abs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;
  const float id = d != 0 ? 1 / d : 0;
  PutF16(b, d);
  for (int64_t j = 0; j < kQK / 2; ++j) {
    const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int hi = std::min(15, static_cast<int>(x[j + kQK / 2] * id + 8.5f));
    b[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void DecodeQ4_0(const uint8_t* b, float* y) {
  const float d = F16(b);
  for (int64_t j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>((b[2 + j] & 0x0F) - 8) * d;
    y[j + kQK / 2] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
  }
}

// ---- Q4_K: d (f16), dmin (f16), scales[12] (eight 6-bit scales and mins), qs[128]; sub-block
// s of 32 values: y = d · scale_s · nibble - dmin · min_s ---------------------------------------

/// The 6-bit scale and min of sub-block j from the 12 packed bytes q.
void ScaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

/// Scale and (non-negative) min for n values quantized to [0, nmax] as x ≈ scale · L - min:
/// starts from the [min, max] range, then tries nearby scales, each refitted by least squares.
void FitScaleMin(const float* x, int n, int nmax, float* scale, float* min_out) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);
  if (hi <= lo) {
    *scale = 0;
    *min_out = -lo;
    return;
  }
  float best_err = std::numeric_limits<float>::infinity();
  *scale = (hi - lo) / static_cast<float>(nmax);
  *min_out = -lo;
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / (hi - lo);
    double sl = 0, sl2 = 0, sx = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(Nearest(iscale * (x[i] - lo)), 0, nmax);
      sl += l;
      sl2 += static_cast<double>(l) * l;
      sx += x[i];
      slx += l * static_cast<double>(x[i]);
    }
    const double det = n * sl2 - sl * sl;
    if (det <= 0) continue;
    double s = (n * slx - sl * sx) / det;
    double m = (sl2 * sx - sl * slx) / det;  // x ≈ s · l + m
    if (m > 0) {                             // The format subtracts a non-negative min.
      m = 0;
      s = slx / sl2;
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(Nearest(static_cast<float>((x[i] - m) / s)), 0, nmax);
      const float e = static_cast<float>(s * l + m) - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      *scale = static_cast<float>(s);
      *min_out = static_cast<float>(-m);
    }
  }
}

void EncodeQ4_K(const float* x, uint8_t* b) {
  float scales[8], mins[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    FitScaleMin(x + 32 * j, 32, 15, &scales[j], &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63 / max_scale : 0;
  const float inv_min = max_min > 0 ? 63 / max_min : 0;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(std::min(63, Nearest(inv_scale * scales[j])));
    lm[j] = static_cast<uint8_t>(std::min(63, Nearest(inv_min * mins[j])));
  }
  PutF16(b, max_scale / 63);
  PutF16(b + 2, max_min / 63);
  uint8_t* q = b + 4;
  std::memset(q, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      q[j] = ls[j];
      q[j + 4] = lm[j];
    } else {
      q[j + 4] = static_cast<uint8_t>((ls[j] & 0x0F) | ((lm[j] & 0x0F) << 4));
      q[j - 4] = static_cast<uint8_t>(q[j - 4] | ((ls[j] >> 4) << 6));
      q[j] = static_cast<uint8_t>(q[j] | ((lm[j] >> 4) << 6));
    }
  }
  // The nibbles from the scales and mins as the decoder will read them.
  const float d = F16(b), dmin = F16(b + 2);
  uint8_t levels[kQKK];
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    ScaleMinK4(j, q, &sc, &m);
    const float dl = d * sc, ml = dmin * m;
    for (int i = 0; i < 32; ++i) {
      levels[32 * j + i] =
          dl != 0 ? static_cast<uint8_t>(std::clamp(Nearest((x[32 * j + i] + ml) / dl), 0, 15)) : 0;
    }
  }
  uint8_t* qs = b + 16;
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l)
      qs[32 * c + l] = static_cast<uint8_t>(levels[64 * c + l] | (levels[64 * c + 32 + l] << 4));
  }
}

void DecodeQ4_K(const uint8_t* b, float* y) {
  const float d = F16(b), dmin = F16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  int is = 0;
  for (int64_t j = 0; j < kQKK; j += 64) {
    uint8_t sc, m;
    ScaleMinK4(is, scales, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    ScaleMinK4(is + 1, scales, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

// ---- Q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8), d (f16); sub-block
// s of 16 values: y = d · scale_s · (q - 32) ----------------------------------------------------

/// The signed scale for n values quantized to [-nmax, nmax - 1] as x ≈ scale · l: from the value
/// of largest magnitude, then nearby scales, each refitted by least squares.
float FitScale(const float* x, int n, int nmax) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::abs(x[i]) > amax) {
      amax = std::abs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0) return 0;
  float best = max / static_cast<float>(-nmax), best_err = std::numeric_limits<float>::infinity();
  for (int step = -9; step <= 9; ++step) {
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    double slx = 0, sl2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(Nearest(iscale * x[i]), -nmax, nmax - 1);
      slx += l * static_cast<double>(x[i]);
      sl2 += static_cast<double>(l) * l;
    }
    if (sl2 <= 0) continue;
    const float s = static_cast<float>(slx / sl2);
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(Nearest(x[i] / s), -nmax, nmax - 1);
      const float e = s * static_cast<float>(l) - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best = s;
    }
  }
  return best;
}

void EncodeQ6_K(const float* x, uint8_t* b) {
  float scales[16];
  float max_scale = 0, amax = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = FitScale(x + 16 * j, 16, 32);
    if (std::abs(scales[j]) > amax) {
      amax = std::abs(scales[j]);
      max_scale = scales[j];
    }
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  auto* sc = reinterpret_cast<int8_t*>(b + 192);
  std::memset(b, 0, 210);
  const float iscale = amax > 0 ? -128 / max_scale : 0;
  PutF16(b + 208, iscale != 0 ? 1 / iscale : 0);
  for (int j = 0; j < 16; ++j) sc[j] = static_cast<int8_t>(std::min(127, Nearest(iscale * scales[j])));
  const float d = F16(b + 208);
  uint8_t levels[kQKK];
  for (int j = 0; j < 16; ++j) {
    const float dl = d * static_cast<float>(sc[j]);
    for (int i = 0; i < 16; ++i) {
      const int l = dl != 0 ? std::clamp(Nearest(x[16 * j + i] / dl), -32, 31) : 0;
      levels[16 * j + i] = static_cast<uint8_t>(l + 32);
    }
  }
  for (int h = 0; h < 2; ++h) {
    const uint8_t* L = levels + 128 * h;
    for (int l = 0; l < 32; ++l) {
      ql[64 * h + l] = static_cast<uint8_t>((L[l] & 0x0F) | ((L[l + 64] & 0x0F) << 4));
      ql[64 * h + l + 32] = static_cast<uint8_t>((L[l + 32] & 0x0F) | ((L[l + 96] & 0x0F) << 4));
      qh[32 * h + l] = static_cast<uint8_t>((L[l] >> 4) | ((L[l + 32] >> 4) << 2) | ((L[l + 64] >> 4) << 4) |
                                            ((L[l + 96] >> 4) << 6));
    }
  }
}

void DecodeQ6_K(const uint8_t* b, float* y) {
  const float d = F16(b + 208);
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  for (int64_t n = 0; n < kQKK; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// Plain values, one per "block".
void EncodeF32(const float* x, uint8_t* b) { std::memcpy(b, x, 4); }
void DecodeF32(const uint8_t* b, float* y) { std::memcpy(y, b, 4); }
void EncodeF16(const float* x, uint8_t* b) { PutF16(b, *x); }
void DecodeF16(const uint8_t* b, float* y) { *y = F16(b); }
void EncodeBF16(const float* x, uint8_t* b) {
  const uint16_t bits = detail::FloatToBFloat16Bits(*x);
  std::memcpy(b, &bits, 2);
}
void DecodeBF16(const uint8_t* b, float* y) {
  uint16_t bits;
  std::memcpy(&bits, b, 2);
  *y = detail::BFloat16BitsToFloat(bits);
}

struct Codec {
  int32_t type;
  void (*encode)(const float*, uint8_t*);
  void (*decode)(const uint8_t*, float*);
};

constexpr Codec kCodecs[] = {
    {0, EncodeF32, DecodeF32},    {1, EncodeF16, DecodeF16},    {2, EncodeQ4_0, DecodeQ4_0},
    {8, EncodeQ8_0, DecodeQ8_0},  {12, EncodeQ4_K, DecodeQ4_K}, {14, EncodeQ6_K, DecodeQ6_K},
    {30, EncodeBF16, DecodeBF16},
};

// ggml's tensor types: number, name, values and bytes per block.
constexpr GGMLTypeInfo kTypes[] = {
    {0, "F32", 1, 4, true},          {1, "F16", 1, 2, true},          {2, "Q4_0", 32, 18, true},
    {3, "Q4_1", 32, 20, false},      {6, "Q5_0", 32, 22, false},      {7, "Q5_1", 32, 24, false},
    {8, "Q8_0", 32, 34, true},       {9, "Q8_1", 32, 36, false},      {10, "Q2_K", 256, 84, false},
    {11, "Q3_K", 256, 110, false},   {12, "Q4_K", 256, 144, true},    {13, "Q5_K", 256, 176, false},
    {14, "Q6_K", 256, 210, true},    {15, "Q8_K", 256, 292, false},   {16, "IQ2_XXS", 256, 66, false},
    {17, "IQ2_XS", 256, 74, false},  {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
    {20, "IQ4_NL", 32, 18, false},   {21, "IQ3_S", 256, 110, false},  {22, "IQ2_S", 256, 82, false},
    {23, "IQ4_XS", 256, 136, false}, {24, "I8", 1, 1, false},         {25, "I16", 1, 2, false},
    {26, "I32", 1, 4, false},        {27, "I64", 1, 8, false},        {28, "F64", 1, 8, false},
    {29, "IQ1_M", 256, 56, false},   {30, "BF16", 1, 2, true},
};

const GGMLTypeInfo& Info(nn::GGMLType type) {
  const GGMLTypeInfo* t = FindGGMLType(static_cast<int32_t>(type));
  if (t == nullptr) kiln::detail::Throw("quant: unknown ggml type {}", static_cast<int32_t>(type));
  return *t;
}

/// The codec of `type` for n values (a multiple of its block), or a kiln::Error naming why not.
const Codec& CodecFor(nn::GGMLType type, int64_t n) {
  const GGMLTypeInfo& t = Info(type);
  for (const Codec& c : kCodecs) {
    if (c.type == t.type) {
      if (n < 0 || n % t.block_values != 0)
        kiln::detail::Throw("quant: {} values are not whole {} blocks of {}", n, t.name, t.block_values);
      return c;
    }
  }
  kiln::detail::Throw("quant: ggml type {} is not one kiln encodes or decodes as float32", t.name);
}

}  // namespace

const GGMLTypeInfo* FindGGMLType(int32_t type) {
  for (const GGMLTypeInfo& t : kTypes)
    if (t.type == type) return &t;
  return nullptr;
}

int64_t GGMLBlockValues(nn::GGMLType type) { return Info(type).block_values; }

int64_t GGMLBlockBytes(nn::GGMLType type) { return Info(type).block_bytes; }

void EncodeGGML(nn::GGMLType type, const float* in, int64_t n, uint8_t* out) {
  const Codec& c = CodecFor(type, n);
  const int64_t values = GGMLBlockValues(type), bytes = GGMLBlockBytes(type);
  for (int64_t i = 0; i < n; i += values, out += bytes) c.encode(in + i, out);
}

void DecodeGGML(nn::GGMLType type, const uint8_t* in, int64_t n, float* out) {
  const Codec& c = CodecFor(type, n);
  const int64_t values = GGMLBlockValues(type), bytes = GGMLBlockBytes(type);
  for (int64_t i = 0; i < n; i += values, in += bytes) c.decode(in, out + i);
}

}  // namespace kiln::quant
