// oneDNN kernels for the cpu backend: which nodes oneDNN runs (Float32 DotGeneral and
// ConvGeneral); the mappings live in dnnl_matmul.cc and dnnl_conv.cc.

#include "backends/cpu/dnnl_kernels.h"

#include <algorithm>

namespace kiln::compute::cpu {

namespace {

/// Whether the node and all its operands are Float32.
bool AllFloat32(const Node& node, const std::vector<Shape>& operands) {
  if (node.inst.shape.dtype() != DType::Float32) return false;
  return std::all_of(operands.begin(), operands.end(),
                     [](const Shape& s) { return s.dtype() == DType::Float32; });
}

}  // namespace

KernelChoice TryDnnlKernel(CpuBackend& backend, const Node& node, const std::vector<Shape>& operands) {
  if (node.fused || node.inst.IsTuple() || !AllFloat32(node, operands)) return {};
  switch (node.inst.op) {
    case OpType::DotGeneral:
      return MakeDnnlMatmul(backend, node.inst, operands);
    case OpType::ConvGeneral:
      return MakeDnnlConv(backend, node.inst, operands);
    default:
      return {};
  }
}

}  // namespace kiln::compute::cpu
