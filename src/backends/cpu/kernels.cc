// The cpu kernel table: fast kernels first (fused groups, pooling windows, oneDNN contractions),
// the reference kernels as the generic path.

#include "backends/cpu/kernels.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/conv_kernels.h"
#include "backends/cpu/fused_program.h"
#include "backends/cpu/pool_kernels.h"
#include "backends/cpu/row_kernels.h"

namespace kiln::compute::cpu {

namespace {

/// Ops whose reference kernels write every element of the result (the others may rely on the
/// zero-filled buffers ref gives them, so the generic path clears the result first).
/// DynamicUpdateSlice may run in place: clearing its result would clear the operand it updates.
bool WritesEveryElement(OpType op) {
  if (op == OpType::DynamicSlice || op == OpType::DynamicUpdateSlice) return true;
  switch (GetOpCategory(op)) {
    case OpCategory::Unary:
    case OpCategory::UnaryPredicate:
    case OpCategory::Binary:
    case OpCategory::Compare:
    case OpCategory::Select:
    case OpCategory::Movement:
    case OpCategory::Convert:
    case OpCategory::Leaf:
    case OpCategory::Collective:
      return true;
    default:
      return false;
  }
}

/// kiln's own convolution kernels (conv_kernels.h), with the SIMD kernels on: Winograd's (unless
/// `winograd=false`), then the tap sums for a kernel gradient without an epilogue.
KernelChoice TrySimdConvKernel(const Options& o, int threads, const Node& node,
                               const std::vector<Shape>& operands) {
  if (!o.simd || node.kind != NodeKind::kPrimitive || node.inst.op != OpType::ConvGeneral) return {};
  const Epilogue* e = node.epilogue.get();
  if (o.winograd) {
    if (KernelChoice w = MakeWinogradConv(threads, node.inst, operands, e, node.constant_kernel); w.kernel)
      return w;
  }
  if (e != nullptr) return {};
  return MakeTapSumsConv(threads, node.inst, operands);
}

}  // namespace

bool WritesInPlace(const Node& node, const std::vector<Shape>& operands) {
  if (node.kind == NodeKind::kFused) return true;
  // DynamicUpdateSlice writes its update into the operand it replaces (a key/value cache updated
  // in place); only operand 0 may be written over (MayWriteOver).
  if (node.kind == NodeKind::kPrimitive && node.inst.op == OpType::DynamicUpdateSlice)
    return !operands.empty() && operands[0] == node.inst.shape;
  // A softmax row is read whole before it is written; oneDNN's layer normalisation promises no
  // such thing.
  if (node.kind == NodeKind::kRowNorm) return node.row_norm->kind == RowNorm::Kind::kSoftmax;
  // A fused reduction reads its inputs all along while writing a smaller result.
  if (node.kind == NodeKind::kFusedReduce) return false;
  switch (GetOpCategory(node.inst.op)) {
    case OpCategory::Unary:
      // Abs of a complex operand is real: a result of another type is not written in place.
      return operands.empty() || operands[0].dtype() == node.inst.shape.dtype();
    case OpCategory::Binary:
    case OpCategory::Select:
      return true;
    case OpCategory::UnaryPredicate:
    case OpCategory::Compare:
      return false;  // Bool results: element sizes differ from the operands'.
    case OpCategory::Convert:
      return false;  // Reading T and writing U through one address would break aliasing rules.
    default:
      (void)operands;
      return false;
  }
}

bool ExtraResultsWriteInPlace(const Node& writer) {
  return writer.kind == NodeKind::kFused || writer.kind == NodeKind::kFusedReduce;
}

bool MayWriteOver(const Node& node, size_t operand) {
  if (node.kind == NodeKind::kPrimitive && node.inst.op == OpType::DynamicUpdateSlice) return operand == 0;
  // A fused SelectAndScatter reads its operand through windows (and its source) all along.
  if (node.windowed)
    return operand != static_cast<size_t>(node.windowed->input) && operand < node.fused->inputs.size();
  return true;
}

KernelChoice ChooseKernel(CpuBackend& backend, int threads, const Node& node,
                          const std::vector<Shape>& operands) {
  if (node.kind == NodeKind::kFused || node.kind == NodeKind::kFusedReduce)
    return MakeFusedKernel(backend, threads, node, operands);
  if (node.kind == NodeKind::kRowNorm) return MakeRowNormKernel(backend, threads, node, operands);
  if (node.collective_divisor != 0)
    return {ref::MakeCollectiveKernel(node.inst, operands, node.collective_divisor), "ref+div"};
  if (KernelChoice p = TryPoolKernel(backend, threads, node, operands); p.kernel) return p;
  const Options& o = backend.options();
  if (KernelChoice c = TrySimdConvKernel(o, threads, node, operands); c.kernel) return c;
  if (KernelChoice d = TryDnnlKernel(threads, TeamThreads(o), node, operands); d.kernel) return d;
  const Instruction& inst = node.inst;
  Kernel k = ref::MakeKernel(inst, operands);
  if (WritesEveryElement(inst.op)) return {std::move(k), "ref"};
  const int64_t bytes = inst.shape.ByteSize();
  return {[k = std::move(k), bytes](ref::Operands in, uint8_t* out) {
            if (bytes > 0) std::memset(out, 0, static_cast<size_t>(bytes));
            k(in, out);
          },
          "ref"};
}

}  // namespace kiln::compute::cpu
