// Half-precision contractions and reductions on the fast path: a DotGeneral or ConvGeneral, a
// ReduceSum/Max/Min, ReduceWindow or SelectAndScatter whose operands and result are Float16 (or
// all BFloat16) becomes the Float32 op between conversions, which the elementwise pass then fuses
// with the operands' producers and the result's readers (a bias gradient, the sum of a BFloat16
// result gradient over the batch, becomes one fused reduction; sum pooling runs on the window
// kernels). BFloat16 max and min pooling, and max pooling's gradient without overlapping windows,
// stay: the window kernels run them on BFloat16 (exact, so no conversions are needed).
// The sums run in float32 and round once to the half type, as the backend documents for half
// precision (ref sums in double: the two agree but for a rare last-bit tie). A BFloat16
// DotGeneral or ConvGeneral stays as it is on a CPU with bfloat16 instructions (avx512_core_bf16):
// oneDNN multiplies bfloat16 operands there, summing in float32 just the same, at up to twice the
// Float32 rate (dnnl_matmul.cc, dnnl_conv.cc); a convolution form it has no such kernel for is
// widened.

#include <fmt/format.h>

#include "backends/cpu/dnnl_kernels.h"
#include "backends/cpu/passes.h"
#include "backends/cpu/pool_kernels.h"

namespace kiln::compute::cpu {

namespace {

/// Whether `op` is a reduction the Float32 kernels run (fused reductions, pooling and its
/// gradient), which the reference kernel would otherwise run on half types.
bool IsReduction(OpType op) {
  return op == OpType::ReduceSum || op == OpType::ReduceMax || op == OpType::ReduceMin ||
         op == OpType::ReduceWindow || op == OpType::SelectAndScatter;
}

/// Whether `inst` is a contraction or reduction to widen: operands and result of one half type.
bool Widens(const Instruction& inst, const std::vector<Node>& nodes) {
  const bool contraction = inst.op == OpType::DotGeneral || inst.op == OpType::ConvGeneral;
  if (!contraction && !IsReduction(inst.op)) return false;
  if (inst.IsTuple() || (contraction && inst.operands.size() != 2) || !IsHalf(inst.shape.dtype()))
    return false;
  if (contraction && DnnlRunsBFloat16(inst, nodes, nullptr)) return false;
  std::vector<Shape> operands;
  for (int o : inst.operands) {
    operands.push_back(nodes[static_cast<size_t>(o)].inst.shape);
    if (operands.back().dtype() != inst.shape.dtype()) return false;
  }
  // Max pooling and its gradient have BFloat16 kernels of their own (pool_kernels.h).
  return !PoolKernelRunsBFloat16(inst, operands);
}

/// A ConvertDType of value `x` (of shape `from`) to `dtype`.
Instruction Convert(int x, const Shape& from, DType dtype) {
  Instruction c;
  c.op = OpType::ConvertDType;
  c.operands = {x};
  c.attrs.dtype = dtype;
  c.shape = from.WithDType(dtype);
  return c;
}

}  // namespace

PassReport WidenHalfContractions(Module& m) {
  int widened = 0, reductions = 0;
  RebuildModule(m, [&](Node& node, const std::vector<int>&, std::vector<Node>& nodes) {
    if (node.kind != NodeKind::kPrimitive || node.epilogue || !Widens(node.inst, nodes)) return -1;
    const DType half = node.inst.shape.dtype();
    const bool reduction = IsReduction(node.inst.op);
    Instruction wide = std::move(node.inst);
    for (int& o : wide.operands)
      o = AppendNode(nodes, Convert(o, nodes[static_cast<size_t>(o)].inst.shape, DType::Float32));
    wide.shape = wide.shape.WithDType(DType::Float32);
    const Shape wide_shape = wide.shape;
    const int sum = AppendNode(nodes, std::move(wide));
    ++(reduction ? reductions : widened);
    return AppendNode(nodes, Convert(sum, wide_shape, half));
  });
  return {widened, reductions > 0
                       ? fmt::format("  {} half-precision reductions widened to Float32\n", reductions)
                       : std::string()};
}

}  // namespace kiln::compute::cpu
