// The kernel of a fused elementwise node (to be written).

#include "backends/cpu/kernels.h"
#include "core/check.h"

namespace kiln::compute::cpu {

KernelChoice MakeFusedKernel(CpuBackend& backend, const Node& node, const std::vector<Shape>& operands) {
  (void)backend;
  (void)operands;
  detail::Throw("backend \"cpu\": no kernel for the fused node {}", OpName(node.inst.op));
}

}  // namespace kiln::compute::cpu
