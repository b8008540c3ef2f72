// The hand-fused elementwise chain: the bandwidth a perfect fused kernel reaches (this TU is
// compiled with -O3 -march=native -ffast-math, so expf is vectorised through libmvec).

#include <cmath>

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

}  // namespace kiln::bench
