// oneDNN kernels for the cpu backend (to be written).

#include "backends/cpu/kernels.h"

namespace kiln::compute::cpu {

KernelChoice TryDnnlKernel(CpuBackend& backend, const Node& node, const std::vector<Shape>& operands) {
  (void)backend;
  (void)node;
  (void)operands;
  return {};
}

}  // namespace kiln::compute::cpu
