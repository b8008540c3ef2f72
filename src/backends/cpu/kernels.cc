// The cpu kernel table: fast kernels first, the reference kernels as the generic path.

#include "backends/cpu/kernels.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/fusion.h"

namespace kiln::compute::cpu {

namespace {

/// Families whose reference kernels write every element of the result (the others may rely on
/// the zero-filled buffers ref gives them, so the generic path clears the result first).
bool WritesEveryElement(OpCategory c) {
  switch (c) {
    case OpCategory::Unary:
    case OpCategory::UnaryPredicate:
    case OpCategory::Binary:
    case OpCategory::Compare:
    case OpCategory::Select:
    case OpCategory::Movement:
    case OpCategory::Convert:
    case OpCategory::Leaf:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool WritesInPlace(const Node& node, const std::vector<Shape>& operands) {
  // A fused reduction reads its inputs all along while writing a smaller result.
  if (node.fused) return GetOpCategory(node.inst.op) != OpCategory::Reduce;
  switch (GetOpCategory(node.inst.op)) {
    case OpCategory::Unary:
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

KernelChoice ChooseKernel(CpuBackend& backend, int threads, const Node& node,
                          const std::vector<Shape>& operands) {
  if (node.fused) return MakeFusedKernel(backend, threads, node, operands);
  if (KernelChoice d = TryDnnlKernel(threads, node, operands); d.kernel) return d;
  const Instruction& inst = node.inst;
  Kernel k = ref::MakeKernel(inst, operands);
  if (WritesEveryElement(GetOpCategory(inst.op))) return {std::move(k), "ref"};
  const int64_t bytes = inst.shape.ByteSize();
  return {[k = std::move(k), bytes](ref::Operands in, uint8_t* out) {
            if (bytes > 0) std::memset(out, 0, static_cast<size_t>(bytes));
            k(in, out);
          },
          "ref"};
}

int64_t NodeWork(const Module& m, const Node& node) {
  if (node.written_by >= 0) return 0;  // computed by a multi-output kernel, counted there
  const Instruction& inst = node.inst;
  switch (inst.op) {
    case OpType::Parameter:
    case OpType::Constant:
    case OpType::Reshape:  // aliases or views: no kernel of their own
    case OpType::Bitcast:
    case OpType::StopGradient:
    case OpType::GetTupleElement:
      return 0;
    default:
      if (inst.IsTuple()) return 0;
  }
  const Shape& operand0 =
      m.nodes[static_cast<size_t>(inst.operands.empty() ? 0 : inst.operands[0])].inst.shape;
  int64_t w = inst.shape.Size();
  if (node.fused) {
    // A fused reduction reads more than it writes.
    for (int o : inst.operands) w = std::max(w, m.nodes[static_cast<size_t>(o)].inst.shape.Size());
    return w * FusedCost(*node.fused);
  }
  if (inst.op == OpType::DotGeneral) {
    for (int64_t a : inst.attrs.lhs_contracting) w *= operand0.Dim(static_cast<int>(a));
    return w;
  }
  if (inst.op == OpType::ConvGeneral) {
    // Per result element: the kernel's window times its input features (per group).
    const Shape& k = m.nodes[static_cast<size_t>(inst.operands.at(1))].inst.shape;
    const int64_t out_features = k.Dim(static_cast<int>(inst.attrs.conv.kernel_output_feature));
    return out_features > 0 ? w * (k.Size() / out_features) : w;
  }
  for (int o : inst.operands) w = std::max(w, m.nodes[static_cast<size_t>(o)].inst.shape.Size());
  return w;
}

ProgramLoad ProgramWork(const Module& m) {
  ProgramLoad load;
  for (const Node& node : m.nodes) {
    const int64_t w = NodeWork(m, node);
    load.work += w;
    load.sizeable += w >= kSizeableKernelWork ? 1 : 0;
  }
  return load;
}

int ProgramThreads(const Module& m, int threads, int64_t serial_work) {
  if (threads <= 1 || serial_work <= 0) return std::max(threads, 1);
  const ProgramLoad load = ProgramWork(m);
  return load.work < serial_work * std::max(load.sizeable, 1) ? 1 : threads;
}

}  // namespace kiln::compute::cpu
