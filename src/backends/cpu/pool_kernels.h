#pragma once
// Window kernels of the cpu backend (pool_kernels.cc): ReduceWindow (Sum, Max, Min) and
// SelectAndScatter (Max, Min) on Float32, and their Max/Min forms on BFloat16, bit-identical to the
// reference kernels.

#include <cstdint>
#include <functional>
#include <vector>

#include "backends/cpu/kernels.h"

namespace kiln::compute::cpu {

/// The kernel of a ReduceWindow or SelectAndScatter node, or an empty kernel when the node is
/// another op or a case these kernels leave to the reference (other dtypes, Product, window
/// tables too large to precompute).
/// Whether the kernels run this BFloat16 node without widening it: ReduceWindow Max/Min, and
/// SelectAndScatter Max/Min whose windows do not overlap (max and min are exact, so these run
/// on widened lanes and store the same bits the Float32 kernel's result would narrow to; a sum
/// would round, and stays widened).
bool PoolKernelRunsBFloat16(const Instruction& inst, const std::vector<Shape>& operands);

KernelChoice TryPoolKernel(CpuBackend& backend, int threads, const Node& node,
                           const std::vector<Shape>& operands);

/// Whether a fused kernel may compute this SelectAndScatter's result piece by piece instead of
/// reading it whole (fusion_scatter.cc): Max or Min on Float32 whose windows do not overlap, with
/// at least 16 elements per tap that the window leaves alone (the channels of a channels-last
/// pooling).
bool ScatterRunsByRange(const Instruction& inst, const std::vector<Shape>& operands);

/// Computes result elements [start, start + len) of such a SelectAndScatter into dst from its
/// operand and source: the values its pool kernel writes there (each window's selection taken
/// again for each of its taps).
using ScatterRangeFn =
    std::function<void(const float* operand, const float* source, int64_t start, int64_t len, float* dst)>;
ScatterRangeFn MakeScatterRange(const Instruction& inst, const std::vector<Shape>& operands, bool simd);

}  // namespace kiln::compute::cpu
