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

/// Work (result elements times window taps) from which a window kernel splits across the
/// OpenMP team. Not measured on its own: a tap is a load and a compare or two, about half the
/// work per element of the fused chain x*3+1 (cost 4), which pays for a second thread from
/// 64-128K elements (kFusedParallelWork in fusion.h), hence 128K taps.
inline constexpr int64_t kPoolParallelWork = int64_t{1} << 17;

}  // namespace kiln::compute::cpu
