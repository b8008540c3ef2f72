#pragma once
// The cpu backend's oneDNN kernels by op: each returns an empty choice when oneDNN cannot run the
// node exactly (the reference kernel runs it then).

#include <vector>

#include "backends/cpu/kernels.h"

namespace kiln::compute::cpu {

/// DotGeneral in Float32 as a oneDNN matmul over [B, M, K] x [B, K, N] (dnnl_matmul.cc).
KernelChoice MakeDnnlMatmul(const CpuBackend& backend, const Instruction& inst,
                            const std::vector<Shape>& operands);

/// ConvGeneral in Float32 as a oneDNN forward convolution, or, for input-dilated convolutions, a
/// backward-data convolution (dnnl_conv.cc).
KernelChoice MakeDnnlConv(const CpuBackend& backend, const Instruction& inst,
                          const std::vector<Shape>& operands);

}  // namespace kiln::compute::cpu
