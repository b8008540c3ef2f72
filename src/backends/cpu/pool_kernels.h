#pragma once
// Window kernels of the cpu backend (pool_kernels.cc): ReduceWindow (Sum, Max, Min) and
// SelectAndScatter (Max, Min) on Float32, and their Max/Min forms on BFloat16, bit-identical to the
// reference kernels.

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

}  // namespace kiln::compute::cpu
