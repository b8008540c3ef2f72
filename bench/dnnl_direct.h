#pragma once
// oneDNN called directly (no kiln in between): the library yardstick for the matmul and
// convolution cases. Each closure is the faster of the ways tried at creation: for matmul,
// dnnl_sgemm or the matmul primitive on the row-major operands; for convolution, NHWC/HWIO
// tensors (the layouts kiln holds) or the layouts oneDNN prefers (format_tag::any, reorders
// not counted: the library's best case).

#include <cstdint>
#include <functional>

namespace kiln::bench {

/// Row-major C[m,n] = op(A)·op(B) on `threads` OpenMP threads, operands owned by the closure;
/// trans_a / trans_b say that A is stored [k,m] and B [n,k].
std::function<void()> MakeDnnlMatmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                     int threads);

/// Which convolution pass to run.
enum class ConvPass { kForward, kBackwardData, kBackwardWeights };

/// A stride-1, same-padded 2-D convolution of [batch, size, size, in] with a [kernel, kernel,
/// in, out] kernel: returns a closure running `pass` once (primitive created up front, buffers
/// owned by the closure, filled with small values).
std::function<void()> MakeDnnlConv(ConvPass pass, int64_t batch, int64_t size, int64_t in, int64_t out,
                                   int64_t kernel, int threads);

}  // namespace kiln::bench
