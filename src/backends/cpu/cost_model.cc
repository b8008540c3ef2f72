// The cpu backend's cost model: the work of fused programs, kernels and whole programs, from
// which the threading gates (cost_model.h) decide.

#include "backends/cpu/cost_model.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace kiln::compute::cpu {

// Each instruction weighs its op's cost (a load 1, an immediate 0), plus one for the store.
int64_t FusedCost(const FusedSpec& spec) {
  int64_t c = 1;
  for (const FInstr& ins : spec.code) c += FOpCost(ins.op);
  return c;
}

int64_t NodeWork(const Module& m, const Node& node) {
  if (node.kind == NodeKind::kWrittenBy) return 0;  // computed by a multi-output kernel, counted there
  const Instruction& inst = node.inst;
  // Leaves, aliases and views have no kernel of their own; tuple ops are counted in their bodies.
  const OpType op = inst.op;
  if (op == OpType::Parameter || op == OpType::Constant || op == OpType::Reshape || op == OpType::Bitcast ||
      op == OpType::StopGradient || op == OpType::GetTupleElement || inst.IsTuple())
    return 0;
  const Shape& operand0 =
      m.nodes[static_cast<size_t>(inst.operands.empty() ? 0 : inst.operands[0])].inst.shape;
  int64_t w = inst.shape.Size();
  if (node.kind == NodeKind::kFused || node.kind == NodeKind::kFusedReduce) {
    // A fused reduction reads more than it writes.
    for (int o : inst.operands) w = std::max(w, m.nodes[static_cast<size_t>(o)].inst.shape.Size());
    return w * FusedCost(*node.fused);
  }
  if (node.kind == NodeKind::kRowNorm) return w * kRowNormCost;
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

namespace {

/// Whether OpenMP's threads sleep between parallel regions ($OMP_WAIT_POLICY=PASSIVE or
/// $GOMP_SPINCOUNT=0).
bool TeamSleeps() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    std::string s = v == nullptr ? "" : v;
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  return env("OMP_WAIT_POLICY") == "passive" || env("GOMP_SPINCOUNT") == "0";
}

}  // namespace

int64_t DefaultSerialWork() { return TeamSleeps() ? kSmallProgramWork : kSpinningProgramWork; }

int64_t SingleThreadMacs() { return TeamSleeps() ? kSingleThreadMacs : kSpinningSingleThreadMacs; }

int ProgramThreads(const Module& m, int threads, int64_t serial_work) {
  if (threads <= 1 || serial_work <= 0) return std::max(threads, 1);
  const ProgramLoad load = ProgramWork(m);
  return load.work < serial_work * std::max(load.sizeable, 1) ? 1 : threads;
}

}  // namespace kiln::compute::cpu
