// Reference kernels (placeholder until the op family lands).

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

Kernel MakeWindowKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  NoKernel(inst.op, operands.at(0).dtype());
}

}  // namespace kiln::compute::ref
