// The hand-fused elementwise loops: the bandwidth (or, for chains with transcendentals, the
// compute rate) a perfect fused kernel reaches. This TU is compiled with -O3 -march=native
// -ffast-math, so exp, tanh and the divisions are vectorised (libmvec).

// GCC 12 reports its own _mm512_undefined_* inside the F16C conversions as maybe uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench_limits.h"

namespace kiln::bench {

// One pass over x, one over y.
void HandFusedChain(const float* x, float* y, int64_t n, int threads) {
#pragma omp parallel for simd num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float t = x[i] * 2.0F + 1.0F;
    t = t > 0.0F ? t : 0.0F;
    y[i] = std::exp(t) * 0.5F - x[i];
  }
}

namespace {

// The two chains the bench draws (elementwise_bench.cc checks these codes against its generator).
constexpr HandChainCodes kChain1 = {{7, 5, 4, 7, 0, 5, 0, 8}, 4, 2, false};
constexpr HandChainCodes kChain2 = {{9, 4, 9, 4, 7, 5, 6, 0}, 5, 1, true};

// Rounds t[0..n) to the nearest Float16 or BFloat16, ties to even (finite values: the chains
// make no NaN), 16 at a time where the target has AVX-512.
void RoundHalf(float* t, int64_t n, bool bfloat16) {
  if (bfloat16) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      uint32_t u;
      std::memcpy(&u, &t[j], sizeof u);
      u = (u + 0x7FFFU + ((u >> 16) & 1U)) & 0xFFFF0000U;
      std::memcpy(&t[j], &u, sizeof u);
    }
    return;
  }
  int64_t j = 0;
#if defined(__AVX512F__)
  for (; j + 16 <= n; j += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(t + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_storeu_ps(t + j, _mm512_cvtph_ps(h));
  }
#elif defined(__F16C__)
  for (; j + 8 <= n; j += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(t + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(t + j, _mm256_cvtph_ps(h));
  }
#endif
  for (; j < n; ++j) t[j] = static_cast<float>(static_cast<_Float16>(t[j]));
}

// Step `K` of chain `Codes` (op codes as in elementwise_bench.cc's ApplyStep), then the broadcast
// add b where the chain has it.
template <const HandChainCodes& Codes, int K>
inline float Apply(float t, float a, const float* c, float b) {
  constexpr int op = Codes.ops[K];
  if constexpr (op == 0) t = t * (0.5F + c[K]);
  if constexpr (op == 1) t = t + (c[K] - 0.5F);
  if constexpr (op == 2) t = t > 0.0F ? t : 0.0F;
  if constexpr (op == 3) t = std::tanh(t);
  if constexpr (op == 4) t = 1.0F / (1.0F + std::exp(-t));
  if constexpr (op == 5) t = std::exp(-std::fabs(t));
  if constexpr (op == 6) t = t * a;
  if constexpr (op == 7) t = t - a;
  if constexpr (op == 8) t = std::fabs(t);
  if constexpr (op == 9) t = std::sqrt(std::fabs(t) + 1.0F);
  if constexpr (K == Codes.broadcast_at) t = t + b;
  return t;
}

// Steps First, First+1, ... of chain `Codes`.
template <const HandChainCodes& Codes, int First, size_t... I>
inline float ApplySteps(float t, float a, const float* c, float b, std::index_sequence<I...> /*steps*/) {
  ((t = Apply<Codes, First + static_cast<int>(I)>(t, a, c, b)), ...);
  return t;
}

// One chain, its op codes compiled in: a [rows, cols] pass reading a, col [rows] and row [cols],
// in blocks of a row: the steps up to the half round trip into an L1 buffer, the round trip 16
// at a time, the remaining steps into y. The chain starts from `start`, the same array as `a`
// through another pointer: a chain whose first op is `t - a` would otherwise be folded to 0
// under -ffast-math, which kiln may not do (a - a is NaN for an infinite a); the second read of
// each element hits L1.
template <const HandChainCodes& Codes>
void ChainLoop(const float* c, const float* start, const float* a, const float* col, const float* row,
               float* y, int64_t rows, int64_t cols, int threads) {
  constexpr int kConvert = Codes.convert_at;
  constexpr int64_t kBlock = 512;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const float ci = col[i];
    alignas(64) float t[kBlock];
    for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
      const int64_t n = std::min(kBlock, cols - j0);
      const float *ai = a + i * cols + j0, *si = start + i * cols + j0, *rj = row + j0;
      float* yi = y + i * cols + j0;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j)
        t[j] = ApplySteps<Codes, 0>(si[j], ai[j], c, ci + rj[j], std::make_index_sequence<kConvert + 1>());
      RoundHalf(t, n, Codes.bfloat16);
#pragma omp simd
      for (int64_t j = 0; j < n; ++j)
        yi[j] = ApplySteps<Codes, kConvert + 1>(t[j], ai[j], c, ci + rj[j],
                                                std::make_index_sequence<7 - kConvert>());
    }
  }
}

// `p`, through a call the optimiser cannot see into.
[[gnu::noinline]] const float* Opaque(const float* p) {
  asm volatile("" : "+r"(p));
  return p;
}

}  // namespace

HandChainCodes HandFusedChainCodes(int which) {
  if (which == 1) return kChain1;
  if (which == 2) return kChain2;
  throw std::invalid_argument("no hand-fused random chain " + std::to_string(which));
}

void HandFusedRandomChain(int which, const float* constants, const float* a, const float* col,
                          const float* row, float* y, int64_t rows, int64_t cols, int threads) {
  if (which == 1) {
    ChainLoop<kChain1>(constants, Opaque(a), a, col, row, y, rows, cols, threads);
  } else if (which == 2) {
    ChainLoop<kChain2>(constants, Opaque(a), a, col, row, y, rows, cols, threads);
  } else {
    throw std::invalid_argument("no hand-fused random chain " + std::to_string(which));
  }
}

}  // namespace kiln::bench
