#pragma once
// Window kernels of the cpu backend (pool_kernels.cc): ReduceWindow (Sum, Max, Min) and
// SelectAndScatter (Max, Min) on Float32, bit-identical to the reference kernels.

#include <vector>

#include "backends/cpu/kernels.h"

namespace kiln::compute::cpu {

/// The kernel of a ReduceWindow or SelectAndScatter node, or an empty kernel when the node is
/// another op or a case these kernels leave to the reference (other dtypes, Product, window
/// tables too large to precompute).
KernelChoice TryPoolKernel(CpuBackend& backend, int threads, const Node& node,
                           const std::vector<Shape>& operands);

}  // namespace kiln::compute::cpu
