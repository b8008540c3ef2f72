#pragma once
// The physical limits the benchmarks are compared with, compiled with -O3 -march=native
// (-ffast-math for the elementwise loop, so that its exp is vectorised).

#include <cstdint>

namespace kiln::bench {

/// exp(max(x * 2 + 1, 0)) * 0.5 - x over n floats, hand-fused in one loop on `threads` threads.
void HandFusedChain(const float* x, float* y, int64_t n, int threads);

/// The op codes of a random chain (elementwise_bench.cc's ApplyStep), where its broadcast add and
/// its half round trip come, and which half type.
struct HandChainCodes {
  int ops[8];
  int broadcast_at, convert_at;
  bool bfloat16;
};

/// The codes compiled into HandFusedRandomChain(which) (which: 1 or 2).
HandChainCodes HandFusedChainCodes(int which);

/// Random chain `which` hand-fused in one loop over a [rows, cols] (col: [rows], row: [cols];
/// constants: the chain's eight constants) on `threads` threads, its op codes compiled in.
void HandFusedRandomChain(int which, const float* constants, const float* a, const float* col,
                          const float* row, float* y, int64_t rows, int64_t cols, int threads);

/// Independent float32 FMA chains (`iterations` steps of 12 full-width vector FMAs per thread) on
/// `threads` threads; returns the FLOPs done (an FMA counts two).
double FmaPeakLoop(int64_t iterations, int threads);

}  // namespace kiln::bench
