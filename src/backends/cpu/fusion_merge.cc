// Multi-output fusion for the cpu compiler: a fused group read element for element by another
// group of the same shape (elementwise, or the operand program of a fused reduction) is computed
// inside that group, which stores it as an extra result, when it is a program output or its other
// readers all come later (an optimizer's new moments and its new parameter in one pass over
// memory; a masked gradient and its bias gradient's sums in one pass).

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "backends/cpu/fused_program.h"
#include "backends/cpu/passes.h"

namespace kiln::compute::cpu {

namespace {

/// Whether fused node `q` may be computed inside fused node `p` (a reader, through an input read
/// element for element): both over the same dims (p elementwise or a fused reduction's operand
/// program), q ending on a compute instruction that writes its result, q not itself
/// multi-output, registers within bounds.
bool Mergeable(const Node& q, const Node& p, size_t input) {
  // A merged node has no spec left; a multi-output one (writes) is not merged again.
  if (q.kind != NodeKind::kFused || !q.writes.empty()) return false;
  if (p.kind != NodeKind::kFused && p.kind != NodeKind::kFusedReduce) return false;
  if (q.windowed && p.windowed) return false;  // One windowed input per node.
  const FusedSpec &qs = *q.fused, &ps = *p.fused;
  // Float32 only: a half result would be rounded before p reads it, the register is not.
  if (qs.out_dims != ps.out_dims || qs.code.empty() || qs.out_dtype != DType::Float32) return false;
  const FInstr& last = qs.code.back();
  if (last.op == FOp::kInput || last.op == FOp::kImm || last.dst != qs.result) return false;
  if (qs.num_regs + ps.num_regs > kMaxFusedRegisters) return false;
  return ps.inputs[input].identity && ps.inputs[input].dtype == qs.out_dtype;
}

/// p's spec with q's program in front of it: q's inputs join p's (an operand both read element
/// for element shares one), p's loads of input `input` read q's result register instead, and q's result
/// is the first extra result. Operands go to `operands` (the program's inputs). The windowed input
/// of q or p (its index there, or -1) shares with nothing; its index in the result goes to
/// `windowed`.
FusedSpec MergeSpecs(const FusedSpec& qs, const std::vector<int>& q_operands, int q_windowed,
                     const FusedSpec& ps, const std::vector<int>& p_operands, int p_windowed, size_t input,
                     std::vector<int>& operands, int& windowed) {
  FusedSpec out;
  operands.clear();
  windowed = -1;
  // Identity inputs only: a broadcast input's register is filled once per row for its one load
  // (FusedEvaluator's keep_ and filled are per input).
  auto add_input = [&](const FInput& fi, int operand, bool is_windowed) {
    for (size_t k = 0; k < operands.size() && fi.identity && !is_windowed; ++k) {
      const FInput& have = out.inputs[k];
      if (operands[k] == operand && have.dtype == fi.dtype && have.identity &&
          static_cast<int>(k) != windowed)
        return static_cast<int>(k);
    }
    out.inputs.push_back(fi);
    operands.push_back(operand);
    if (is_windowed) windowed = static_cast<int>(operands.size()) - 1;
    return static_cast<int>(operands.size()) - 1;
  };
  std::vector<int> q_in(qs.inputs.size()), p_in(ps.inputs.size(), -1);
  for (size_t k = 0; k < qs.inputs.size(); ++k)
    q_in[k] = add_input(qs.inputs[k], q_operands[k], static_cast<int>(k) == q_windowed);
  for (size_t k = 0; k < ps.inputs.size(); ++k)
    if (k != input) p_in[k] = add_input(ps.inputs[k], p_operands[k], static_cast<int>(k) == p_windowed);
  const auto shift = static_cast<uint16_t>(qs.num_regs);
  // Immediates first (their registers are filled once per scratch), then q's code, then p's.
  for (const FInstr& ins : qs.code)
    if (ins.op == FOp::kImm) out.code.push_back(ins);
  for (FInstr ins : ps.code) {
    if (ins.op != FOp::kImm) continue;
    ins.dst = static_cast<uint16_t>(ins.dst + shift);
    out.code.push_back(ins);
  }
  for (FInstr ins : qs.code) {
    if (ins.op == FOp::kImm) continue;
    if (ins.op == FOp::kInput) ins.input = q_in[static_cast<size_t>(ins.input)];
    out.code.push_back(ins);
  }
  // p's registers move past q's; a load of q is dropped and, until its register is written
  // again, reads of it read q's result.
  const auto q_result = static_cast<uint16_t>(qs.result);
  int renamed = -1;  // p's register (unshifted) standing for q's result, -1 when none
  for (FInstr ins : ps.code) {
    if (ins.op == FOp::kImm) continue;
    if (ins.op != FOp::kInput) {
      uint16_t* regs[3] = {&ins.a, &ins.b, &ins.c};
      for (int k = 0; k < FOpArity(ins.op); ++k)
        *regs[k] = renamed >= 0 && *regs[k] == renamed ? q_result : static_cast<uint16_t>(*regs[k] + shift);
    }
    if (renamed >= 0 && ins.dst == renamed) renamed = -1;
    if (ins.op == FOp::kInput && static_cast<size_t>(ins.input) == input) {
      renamed = ins.dst;
      continue;
    }
    if (ins.op == FOp::kInput) ins.input = p_in[static_cast<size_t>(ins.input)];
    ins.dst = static_cast<uint16_t>(ins.dst + shift);
    out.code.push_back(ins);
  }
  out.num_regs = qs.num_regs + ps.num_regs;
  // p's result may be the load of q itself (p only converts it).
  out.result = renamed >= 0 && ps.result == renamed ? qs.result : ps.result + shift;
  out.out_dtype = ps.out_dtype;
  out.out_dims = ps.out_dims;
  out.ops = qs.ops;
  out.ops.insert(out.ops.end(), ps.ops.begin(), ps.ops.end());
  out.extra.push_back({qs.result, qs.out_dtype});
  for (FusedSpec::Extra e : ps.extra) {
    e.reg += shift;
    out.extra.push_back(e);
  }
  return out;
}

/// Whether q's value may first exist at p's step (q < v): no reader of q before p and, when q has
/// readers besides p, nothing sizeable computed between them (q's operands then live until p, as
/// fusion's CloseEnough asks; an output read only by p keeps them alive regardless).
bool WrittenInTime(const Module& m, const std::set<int>& q_readers, int q, int v) {
  if (*q_readers.begin() < v) return false;
  return q_readers.size() == 1 || CheapBetween(m, q, v);
}

}  // namespace

PassReport MergeFusedOutputs(Module& m) {
  const size_t n = m.nodes.size();
  std::vector<std::set<int>> readers(n);
  std::vector<bool> is_output(n, false);
  for (size_t v = 0; v < n; ++v)
    for (int o : m.nodes[v].inst.operands) readers[static_cast<size_t>(o)].insert(static_cast<int>(v));
  for (int o : m.outputs) is_output[static_cast<size_t>(o)] = true;
  PassReport report;
  for (size_t v = 0; v < n; ++v) {
    Node& p = m.nodes[v];
    if (p.kind != NodeKind::kFused && p.kind != NodeKind::kFusedReduce) continue;
    const int vi = static_cast<int>(v);
    // Repeatedly: the first operand that is a mergeable group.
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t input = 0; input < p.fused->inputs.size(); ++input) {
        const int qi = p.inst.operands[input];
        Node& q = m.nodes[static_cast<size_t>(qi)];
        const std::set<int>& q_readers = readers[static_cast<size_t>(qi)];
        // A group read only by p that is no output is in p's group already, unless CloseEnough
        // kept it apart; p must read it through this input alone.
        const bool read_elsewhere = q_readers.size() > 1 || is_output[static_cast<size_t>(qi)];
        if (!read_elsewhere || std::count(p.inst.operands.begin(), p.inst.operands.end(), qi) != 1 ||
            !Mergeable(q, p, input) || !WrittenInTime(m, q_readers, qi, vi))
          continue;
        std::vector<int> operands;
        int windowed = -1;
        FusedSpec spec =
            MergeSpecs(*q.fused, q.inst.operands, q.windowed ? q.windowed->input : -1, *p.fused,
                       p.inst.operands, p.windowed ? p.windowed->input : -1, input, operands, windowed);
        // A windowed input keeps its SelectAndScatter, whose source comes after the inputs.
        std::shared_ptr<const WindowedInput> window;
        if (const Node* w = q.windowed ? &q : p.windowed ? &p : nullptr) {
          auto moved = std::make_shared<WindowedInput>(*w->windowed);
          moved->input = windowed;
          operands.push_back(w->inst.operands[w->fused->inputs.size()]);
          window = std::move(moved);
        }
        // p reads its new operands instead of its old ones; q reads nothing.
        for (int o : p.inst.operands) readers[static_cast<size_t>(o)].erase(vi);
        for (int o : operands) readers[static_cast<size_t>(o)].insert(vi);
        for (int o : q.inst.operands) readers[static_cast<size_t>(o)].erase(qi);
        report.log +=
            fmt::format("  merged %{} into %{} (written as an extra result): {}\n", qi, v, spec.ToString());
        ++report.count;
        std::vector<int> writes = {qi};
        writes.insert(writes.end(), p.writes.begin(), p.writes.end());
        p.writes = std::move(writes);
        p.inst.operands = std::move(operands);
        p.fused = std::make_shared<const FusedSpec>(std::move(spec));
        p.windowed = std::move(window);
        q.inst.operands.clear();
        q.fused = nullptr;
        q.windowed = nullptr;
        q.written_by = static_cast<int>(v);
        q.kind = NodeKind::kWrittenBy;
        merged = true;
        break;
      }
    }
  }
  return report;
}

}  // namespace kiln::compute::cpu
