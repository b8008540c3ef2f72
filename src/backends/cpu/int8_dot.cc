// Integer dot products with int8 activations (int8_dot.h): the plain C++ form here, the x86
// forms in int8_dot_x86-inl.h, compiled twice under target attributes (AVX2; AVX-512 with VNNI)
// and chosen at run time. The plain form spells out the vector forms' steps lane by lane, so
// all three give the same bits.

#include "backends/cpu/int8_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep (the compiled targets)
#include "hwy/base.h"
#include "hwy/targets.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_INT8_X86 1
#else
#define KILN_INT8_X86 0
#endif

#if KILN_INT8_X86
HWY_PUSH_ATTRIBUTES("avx,avx2,fma,f16c")
#define KILN_INT8_VNNI 0
#define KILN_INT8_NS kiln::compute::cpu::int8_avx2
#include "backends/cpu/int8_dot_x86-inl.h"
#undef KILN_INT8_NS
#undef KILN_INT8_VNNI
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES("avx,avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")
#define KILN_INT8_VNNI 1
#define KILN_INT8_NS kiln::compute::cpu::int8_vnni
#include "backends/cpu/int8_dot_x86-inl.h"
#undef KILN_INT8_NS
#undef KILN_INT8_VNNI
HWY_POP_ATTRIBUTES
#endif

namespace kiln::compute::cpu {

namespace {

constexpr int64_t kBlock = 32;

void QuantizeBlockScalar(const float* x, int8_t* q, float& d, int32_t& sum) {
  float amax = 0;
  for (int64_t l = 0; l < kBlock; ++l) {
    const float a = std::fabs(x[l]);
    if (!(a <= std::numeric_limits<float>::max())) {  // NaN or Inf.
      d = std::numeric_limits<float>::quiet_NaN();
      std::memset(q, 0, kBlock);
      sum = 0;
      return;
    }
    amax = std::max(amax, a);
  }
  d = amax / 127.0f;
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  if (!std::isfinite(id)) d = id = 0.0f;  // max|x| below about 1e-38: a block of zeros.
  sum = 0;
  for (int64_t l = 0; l < kBlock; ++l) {
    q[l] = static_cast<int8_t>(std::nearbyint(x[l] * id));  // Ties to even, as cvtps2dq.
    sum += q[l];
  }
}

/// The x86 forms' SumLanes, lane by lane.
float SumLanesScalar(const float* v) {
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}

void RunGGMLScalar(const GGMLMatmul& p, const Q8Rows& x, int64_t n_begin, int64_t n_end) {
  const bool q4 = p.type == kGGMLQ4_0;
  const int64_t bytes = q4 ? 18 : 34, nb = x.blocks;
  for (int64_t r = 0; r < x.m; ++r) {
    for (int64_t j = n_begin; j < n_end; ++j) {
      float acc[8] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* block = p.w + (j * nb + b) * bytes;
        const int64_t at = r * nb + b;
        const int8_t* xq = x.q.data() + at * kBlock;
        const float s = GGMLHalfAt(block) * x.d[static_cast<size_t>(at)];
        for (int l = 0; l < 8; ++l) {
          int32_t i = q4 ? -x.sum[static_cast<size_t>(at)] : 0;
          for (int t = 4 * l; t < 4 * l + 4; ++t) {
            const int w = q4 ? (t < 16 ? block[2 + t] & 0x0F : block[2 + t - 16] >> 4)
                             : static_cast<int8_t>(block[2 + t]);
            i += w * xq[t];
          }
          acc[l] = std::fma(static_cast<float>(i), s, acc[l]);
        }
      }
      p.y[r * p.n + j] = SumLanesScalar(acc);
    }
  }
}

/// One column of LinearQuantMatmul's product, as the x86 forms compute each lane.
void LinearColumnScalar(const LinearQuantMatmul& p, const Q8Rows& x, const float* xsum, int64_t j,
                        int64_t r) {
  const int64_t blocks = p.k / p.block, per = p.block / kBlock;
  float y = 0;
  for (int64_t wb = 0; wb < blocks; ++wb) {
    float f = 0;
    for (int64_t a = wb * per; a < (wb + 1) * per; ++a) {
      int32_t i = 0;
      const int8_t* xq = x.q.data() + r * x.k + a * kBlock;
      for (int64_t l = 0; l < kBlock; ++l) i += static_cast<int8_t>(p.q[(a * kBlock + l) * p.n + j]) * xq[l];
      f = std::fma(static_cast<float>(i), x.d[static_cast<size_t>(r * x.blocks + a)], f);
    }
    y = std::fma(f, p.scale[wb * p.n + j], y);
    if (p.zero != nullptr) y = std::fma(p.zero[wb * p.n + j], xsum[r * blocks + wb], y);
  }
  p.y[r * p.n + j] = p.bias != nullptr ? y + p.bias[j] : y;
}

}  // namespace

std::vector<float> BlockSumsOf(const LinearQuantMatmul& p) {
  const int64_t blocks = p.k / p.block;
  std::vector<float> out(static_cast<size_t>(p.m * blocks));
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t b = 0; b < blocks; ++b) {
      float s = 0;
      for (int64_t i = b * p.block; i < (b + 1) * p.block; ++i) s += p.x[r * p.k + i];
      out[static_cast<size_t>(r * blocks + b)] = s;
    }
  return out;
}

void RunLinearInt8(const LinearQuantMatmul& p, const Q8Rows& x, const float* xsum, int64_t n_begin,
                   int64_t n_end, Int8DotIsa isa) {
  int64_t j = n_begin;
#if KILN_INT8_X86
  if (isa == Int8DotIsa::kAvx512Vnni) j = int8_vnni::RunLinear(p, x, xsum, n_begin, n_end);
  if (isa == Int8DotIsa::kAvx2) j = int8_avx2::RunLinear(p, x, xsum, n_begin, n_end);
#else
  (void)isa;
#endif
  for (; j < n_end; ++j)
    for (int64_t r = 0; r < x.m; ++r) LinearColumnScalar(p, x, xsum, j, r);
}

Int8DotIsa CurrentInt8DotIsa() {
#if KILN_INT8_X86
  // Highway's AVX2 target implies AVX2, FMA and F16C, its AVX3 targets AVX-512 F/VL/DQ/BW: only
  // VNNI is asked of the CPU itself.
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  const int64_t targets = hwy::SupportedTargets();  // Narrowed by a SimdTargetScope.
  if (vnni && (targets & (HWY_AVX3 | HWY_AVX3_DL)) != 0) return Int8DotIsa::kAvx512Vnni;
  if ((targets & (HWY_AVX2 | HWY_AVX3 | HWY_AVX3_DL)) != 0) return Int8DotIsa::kAvx2;
#endif
  return Int8DotIsa::kScalar;
}

const char* Int8DotIsaName(Int8DotIsa isa) {
  switch (isa) {
    case Int8DotIsa::kAvx512Vnni:
      return "avx512_vnni";
    case Int8DotIsa::kAvx2:
      return "avx2";
    default:
      return "scalar";
  }
}

void QuantizeRowsQ8(const float* x, int64_t m, int64_t k, Int8DotIsa isa, Q8Rows& out) {
  out.m = m;
  out.k = k;
  out.blocks = k / kBlock;
  out.q.resize(static_cast<size_t>(m * k));
  out.d.resize(static_cast<size_t>(m * out.blocks));
  out.sum.resize(out.d.size());
#if KILN_INT8_X86
  if (isa != Int8DotIsa::kScalar) return int8_avx2::QuantizeRows(x, m, k, out);
#else
  (void)isa;
#endif
  for (int64_t r = 0; r < m; ++r)
    for (int64_t b = 0; b < out.blocks; ++b) {
      const int64_t at = r * out.blocks + b;
      QuantizeBlockScalar(x + r * k + b * kBlock, out.q.data() + at * kBlock, out.d[static_cast<size_t>(at)],
                          out.sum[static_cast<size_t>(at)]);
    }
}

void RunGGMLInt8(const GGMLMatmul& p, const Q8Rows& x, int64_t n_begin, int64_t n_end, Int8DotIsa isa) {
#if KILN_INT8_X86
  if (isa == Int8DotIsa::kAvx512Vnni) return int8_vnni::RunGGML(p, x, n_begin, n_end);
  if (isa == Int8DotIsa::kAvx2) return int8_avx2::RunGGML(p, x, n_begin, n_end);
#else
  (void)isa;
#endif
  RunGGMLScalar(p, x, n_begin, n_end);
}

}  // namespace kiln::compute::cpu
