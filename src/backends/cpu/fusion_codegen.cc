// Code generation for the fused machine: each member of a group becomes register-machine
// instructions (its operands loaded once, scalar constants as immediates, broadcasts read
// through strides, a rounding instruction after each inexact op on a half-typed result), then
// the virtual registers are mapped onto a small register file.

#include "backends/cpu/fusion_codegen.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <span>

namespace kiln::compute::cpu {

bool FusableDType(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16 || d == DType::Bool;
}

namespace {

/// A scalar Constant of a fusable dtype (possibly through a BroadcastInDim): its value as float.
std::optional<float> ImmediateOf(const Module& m, int v) {
  const Instruction* inst = &m.nodes[static_cast<size_t>(v)].inst;
  if (inst->op == OpType::BroadcastInDim) inst = &m.nodes[static_cast<size_t>(inst->operands[0])].inst;
  if (inst->op != OpType::Constant || !inst->shape.IsScalar() || !FusableDType(inst->shape.dtype()))
    return std::nullopt;
  float value = 0;
  const DType d = inst->shape.dtype();
  inst->attrs.literal.ConstBytes([&](std::span<const uint8_t> b) {
    if (static_cast<int64_t>(b.size()) * 8 >= DTypeBits(d)) value = LoadAsF32(d, b.data(), 0);
  });
  return value;
}

/// Builds the register-machine program of one group (members in topological order, root last).
class SpecBuilder {
 public:
  /// `members`: the group's nodes, sorted, the root last.
  SpecBuilder(const Module& m, const std::vector<int>& members) : m_(m), members_(members) {
    member_set_.insert(members.begin(), members.end());
  }

  /// The spec, and the fused node's operands (node ids of the group's inputs).
  FusedSpec Build(std::vector<int>& operands) {
    const Instruction& root = m_.nodes[static_cast<size_t>(members_.back())].inst;
    spec_.out_dtype = root.shape.dtype();
    spec_.out_dims = root.shape.Dimensions();
    for (int v : members_) EmitNode(v);
    AllocateRegisters(vreg_of_.at(members_.back()));
    operands = input_nodes_;
    return std::move(spec_);
  }

 private:
  /// A new instruction writing a fresh virtual register (its index in code_).
  int Emit(FInstr ins) {
    ins.dst = static_cast<uint16_t>(code_.size());
    code_.push_back(ins);
    return ins.dst;
  }

  /// The virtual register holding operand node `o` of a member.
  int Operand(int o) {
    if (member_set_.count(o)) return vreg_of_.at(o);
    if (std::optional<float> imm = ImmediateOf(m_, o)) {
      const uint32_t bits = std::bit_cast<uint32_t>(*imm);
      if (auto it = imms_.find(bits); it != imms_.end()) return it->second;
      FInstr ins;
      ins.op = FOp::kImm;
      ins.imm = *imm;
      // A broadcast scalar counts as an op: fusing it saves writing the broadcast out.
      if (m_.nodes[static_cast<size_t>(o)].inst.op == OpType::BroadcastInDim)
        spec_.ops.push_back(OpType::BroadcastInDim);
      return imms_[bits] = Emit(ins);
    }
    const Instruction& inst = m_.nodes[static_cast<size_t>(o)].inst;
    FInput in;
    int source = o;
    if (inst.op == OpType::BroadcastInDim && inst.shape.Dimensions() == spec_.out_dims) {
      source = inst.operands[0];
      const Shape& s = m_.nodes[static_cast<size_t>(source)].inst.shape;
      in.strides.assign(spec_.out_dims.size(), 0);
      int64_t stride = 1;
      for (size_t k = s.Dimensions().size(); k-- > 0;) {
        const auto axis = static_cast<size_t>(inst.attrs.axes[k]);
        if (s.Dimensions()[k] != 1) in.strides[axis] = stride;
        stride *= s.Dimensions()[k];
      }
      in.identity =
          s.Dimensions() == spec_.out_dims && std::is_sorted(inst.attrs.axes.begin(), inst.attrs.axes.end());
      in.dtype = s.dtype();
      spec_.ops.push_back(OpType::BroadcastInDim);
    } else {
      in.dtype = inst.shape.dtype();
      in.identity = true;
    }
    if (in.identity) in.strides.clear();
    for (size_t i = 0; i < input_nodes_.size(); ++i) {
      if (input_nodes_[i] == source && spec_.inputs[i].strides == in.strides &&
          spec_.inputs[i].identity == in.identity)
        return input_vreg_[i];
    }
    FInstr ins;
    ins.op = FOp::kInput;
    ins.input = static_cast<int>(spec_.inputs.size());
    spec_.inputs.push_back(in);
    input_nodes_.push_back(source);
    input_vreg_.push_back(Emit(ins));
    return input_vreg_.back();
  }

  /// Emits `op` on the given registers, then the rounding of a half-typed result.
  int EmitOp(FOp op, DType result, int a, int b = 0, int c = 0) {
    FInstr ins;
    ins.op = op;
    ins.a = static_cast<uint16_t>(a);
    ins.b = static_cast<uint16_t>(b);
    ins.c = static_cast<uint16_t>(c);
    const int r = Emit(ins);
    if (!IsHalf(result) || FOpExactOnHalf(op)) return r;
    return EmitRound(result, r);
  }

  /// Emits the rounding of register r to the half type `to`.
  int EmitRound(DType to, int r) {
    FInstr ins;
    ins.op = to == DType::Float16 ? FOp::kRoundF16 : FOp::kRoundBF16;
    ins.a = static_cast<uint16_t>(r);
    return Emit(ins);
  }

  /// Emits one member's instructions; its result's virtual register goes to vreg_of_.
  void EmitNode(int v) {
    const Instruction& inst = m_.nodes[static_cast<size_t>(v)].inst;
    spec_.ops.push_back(inst.op);
    std::vector<int> r;
    for (int o : inst.operands) r.push_back(Operand(o));
    r.resize(3, 0);
    const DType out = inst.shape.dtype();
    const DType in = m_.nodes[static_cast<size_t>(inst.operands[0])].inst.shape.dtype();
    int result = r[0];
    if (inst.op == OpType::ConvertDType) {  // Between fusable dtypes.
      if (out == DType::Bool && in != DType::Bool) {
        result = EmitOp(FOp::kNotZero, out, r[0]);
      } else if (IsHalf(out) && in != out && in != DType::Bool) {
        result = EmitRound(out, r[0]);
      }
    } else if (inst.op != OpType::StopGradient) {
      result = EmitOp(*FusedOpOf(inst.op, in == DType::Bool), out, r[0], r[1], r[2]);
    }
    vreg_of_[v] = result;
  }

  /// Whether `ins` loads an input constant along the last axis ([N, 1] broadcast to [N, M]): its
  /// register keeps the value for a whole row, so the kernel fills it once per row.
  bool RowConstant(const FInstr& ins) const {
    if (ins.op != FOp::kInput) return false;
    const FInput& in = spec_.inputs[static_cast<size_t>(ins.input)];
    return !in.identity && !in.strides.empty() && in.strides.back() == 0;
  }

  /// Maps virtual registers to a small register file (a register is free after its last read);
  /// immediates keep their registers (filled once per call).
  void AllocateRegisters(int result_vreg) {
    const size_t n = code_.size();
    std::vector<int> last_read(n, -1);
    for (size_t i = 0; i < n; ++i) {
      const FInstr& ins = code_[i];
      const int arity = FOpArity(ins.op);
      const uint16_t ops[3] = {ins.a, ins.b, ins.c};
      for (int k = 0; k < arity; ++k) last_read[ops[k]] = static_cast<int>(i);
    }
    last_read[static_cast<size_t>(result_vreg)] = static_cast<int>(n);
    std::vector<int> phys(n, -1);
    std::vector<int> free_regs;
    int num = 0;
    std::vector<FInstr> imms, body;
    for (const FInstr& ins : code_) {
      if (ins.op == FOp::kImm) {
        phys[ins.dst] = num++;
        FInstr c = ins;
        c.dst = static_cast<uint16_t>(phys[ins.dst]);
        imms.push_back(c);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const FInstr& ins = code_[i];
      if (ins.op == FOp::kImm) continue;
      FInstr c = ins;
      const int arity = FOpArity(ins.op);
      const uint16_t ops[3] = {ins.a, ins.b, ins.c};
      uint16_t* dst_ops[3] = {&c.a, &c.b, &c.c};
      for (int k = 0; k < arity; ++k) *dst_ops[k] = static_cast<uint16_t>(phys[ops[k]]);
      // Operands read for the last time free their registers before the result is placed: the
      // machine's ops are elementwise, so the result may overwrite an operand.
      for (int k = 0; k < arity; ++k) {
        const uint16_t o = ops[k];
        if (last_read[o] == static_cast<int>(i) && code_[o].op != FOp::kImm && !RowConstant(code_[o]) &&
            std::find(free_regs.begin(), free_regs.end(), phys[o]) == free_regs.end())
          free_regs.push_back(phys[o]);
      }
      if (last_read[i] < 0) last_read[i] = static_cast<int>(i);  // Unused value (dead code): still written.
      if (!free_regs.empty()) {
        phys[i] = free_regs.back();
        free_regs.pop_back();
      } else {
        phys[i] = num++;
      }
      c.dst = static_cast<uint16_t>(phys[i]);
      body.push_back(c);
      if (last_read[i] == static_cast<int>(i)) free_regs.push_back(phys[i]);
    }
    spec_.code = std::move(imms);
    spec_.code.insert(spec_.code.end(), body.begin(), body.end());
    spec_.num_regs = num;
    spec_.result = phys[static_cast<size_t>(result_vreg)];
  }

  const Module& m_;
  const std::vector<int>& members_;
  std::set<int> member_set_;
  std::map<int, int> vreg_of_;
  std::map<uint32_t, int> imms_;
  std::vector<int> input_nodes_, input_vreg_;
  std::vector<FInstr> code_;
  FusedSpec spec_;
};

}  // namespace

FusedSpec BuildFusedSpec(const Module& m, const std::vector<int>& members, std::vector<int>& operands) {
  return SpecBuilder(m, members).Build(operands);
}

}  // namespace kiln::compute::cpu
