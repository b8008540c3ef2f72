// Half-precision contractions on the fast path: a DotGeneral or ConvGeneral whose operands and
// result are Float16 (or all BFloat16) becomes the Float32 contraction between conversions,
// which the elementwise pass then fuses with the operands' producers and the result's readers.
// The sums run in float32 and round once to the half type, as the backend documents for half
// precision (ref sums in double: the two agree but for a rare last-bit tie).

#include "backends/cpu/passes.h"

namespace kiln::compute::cpu {

namespace {

/// Whether `inst` is a contraction to widen: operands and result of one half type.
bool Widens(const Instruction& inst, const std::vector<Node>& nodes) {
  if (inst.op != OpType::DotGeneral && inst.op != OpType::ConvGeneral) return false;
  if (inst.IsTuple() || inst.operands.size() != 2 || !IsHalf(inst.shape.dtype())) return false;
  for (int o : inst.operands) {
    if (nodes[static_cast<size_t>(o)].inst.shape.dtype() != inst.shape.dtype()) return false;
  }
  return true;
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
  int widened = 0;
  RebuildModule(m, [&](Node& node, const std::vector<int>&, std::vector<Node>& nodes) {
    if (node.kind != NodeKind::kPrimitive || node.epilogue || !Widens(node.inst, nodes)) return -1;
    const DType half = node.inst.shape.dtype();
    Instruction wide = std::move(node.inst);
    for (int& o : wide.operands)
      o = AppendNode(nodes, Convert(o, nodes[static_cast<size_t>(o)].inst.shape, DType::Float32));
    wide.shape = wide.shape.WithDType(DType::Float32);
    const Shape wide_shape = wide.shape;
    const int sum = AppendNode(nodes, std::move(wide));
    ++widened;
    return AppendNode(nodes, Convert(sum, wide_shape, half));
  });
  return {widened, {}};
}

}  // namespace kiln::compute::cpu
