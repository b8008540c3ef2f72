// The float32 FMA peak: independent vector FMA chains, enough of them to hide the latency
// (compiled with -O3 -march=native: 16-wide AVX-512 FMAs where the CPU has them, else 8-wide AVX2).

#include <omp.h>

#include "bench_limits.h"

namespace kiln::bench {
namespace {

#ifdef __AVX512F__
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));
constexpr int kChains = 12;

// One thread's chains; returns a value depending on all of them so nothing is dropped.
float Chains(int64_t iterations, float seed) {
  Vec acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = Vec{} + seed * static_cast<float>(c + 1);
  const Vec mul = Vec{} + 0.999999F, add = Vec{} + 1e-7F;
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * mul + add;
  }
  float sum = 0;
  for (int c = 0; c < kChains; ++c)
    for (int lane = 0; lane < kLanes; ++lane) sum += acc[c][lane];
  return sum;
}

}  // namespace

// Runs Chains on every thread.
double FmaPeakLoop(int64_t iterations, int threads) {
  volatile float sink = 0;
  float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  total += Chains(iterations, 1.0F + static_cast<float>(omp_get_thread_num()));
  sink = total;
  (void)sink;
  return static_cast<double>(threads) * static_cast<double>(iterations) * kChains * kLanes * 2;
}

}  // namespace kiln::bench
