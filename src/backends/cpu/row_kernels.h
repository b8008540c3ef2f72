#pragma once
// The kernels of the row normalisations the cpu compiler recognises (row_norms.cc): softmax over
// each row in one pass over the row held in cache (Highway, row_simd.cc), layer normalisation
// through oneDNN's layer_normalization primitive.

#include <cstdint>
#include <vector>

#include "backends/cpu/kernels.h"

namespace kiln::compute::cpu {

/// The kernel of a kRowNorm node (team of `threads` for large tensors).
KernelChoice MakeRowNormKernel(CpuBackend& backend, int threads, const Node& node,
                               const std::vector<Shape>& operands);

/// y = softmax of each of `rows` rows of `n` floats of x (y may be x): exp(x - max) / sum, with
/// the reference's results for rows holding NaN or infinities (their scalar form).
void SoftmaxRowsSimd(const float* x, float* y, int64_t rows, int64_t n);
/// The same in scalar code, as the reference computes it (the sum in double).
void SoftmaxRowsScalar(const float* x, float* y, int64_t rows, int64_t n);

}  // namespace kiln::compute::cpu
