#pragma once
// The physical limits the benchmarks are compared with, compiled with -O3 -march=native
// (-ffast-math for the elementwise loop, so that its exp is vectorised).

#include <cstdint>

namespace kiln::bench {

/// exp(max(x * 2 + 1, 0)) * 0.5 - x over n floats, hand-fused in one loop on `threads` threads.
void HandFusedChain(const float* x, float* y, int64_t n, int threads);

/// Independent float32 FMA chains (`iterations` steps of 12 full-width vector FMAs per thread) on
/// `threads` threads; returns the FLOPs done (an FMA counts two).
double FmaPeakLoop(int64_t iterations, int threads);

}  // namespace kiln::bench
