// Elementwise fusion for the cpu compiler: groups chains of elementwise ops (with the broadcasts
// and scalar constants feeding them) whose intermediates are used only inside the group, and
// replaces each group by one node carrying a FusedSpec (the group's register-machine program).
// Single output: a value used outside its group ends the group (it becomes a group's root); a
// node joins only a group computed close after it (see CloseEnough), so inputs do not live longer.
// Afterwards MergeFusedOutputs folds a group that is a program output and is read only by
// another group of the same shape into that one as an extra result (multi-output kernels).
// A group whose root feeds only a reduction the fused reduce kernel runs becomes that
// reduction's program instead (fused_reduce.cc), and other such reductions get a one-load one.

#include "backends/cpu/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ir.h"
#include "backends/cpu/kernels.h"
#include "kiln/core/half.h"

namespace kiln::compute::cpu {

namespace {

/// The dtypes a fused group computes: floats in float32, Bool as 0/1.
bool FusableDType(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16 || d == DType::Bool;
}

/// The register-machine op of a float unary op (nullopt when not fused).
std::optional<FOp> FloatUnaryOp(OpType op) {
  switch (op) {
    case OpType::Neg:
      return FOp::kNeg;
    case OpType::Abs:
      return FOp::kAbs;
    case OpType::Sign:
      return FOp::kSign;
    case OpType::Sqrt:
      return FOp::kSqrt;
    case OpType::Rsqrt:
      return FOp::kRsqrt;
    case OpType::Exp:
      return FOp::kExp;
    case OpType::Expm1:
      return FOp::kExpm1;
    case OpType::Log:
      return FOp::kLog;
    case OpType::Log1p:
      return FOp::kLog1p;
    case OpType::Sin:
      return FOp::kSin;
    case OpType::Cos:
      return FOp::kCos;
    case OpType::Tanh:
      return FOp::kTanh;
    case OpType::Logistic:
      return FOp::kLogistic;
    case OpType::Erf:
      return FOp::kErf;
    case OpType::Floor:
      return FOp::kFloor;
    case OpType::Ceil:
      return FOp::kCeil;
    case OpType::Round:
      return FOp::kRound;
    case OpType::IsFinite:
      return FOp::kIsFinite;
    case OpType::IsNaN:
      return FOp::kIsNaN;
    default:
      return std::nullopt;
  }
}

/// The register-machine op of a float binary or compare op (nullopt when not fused).
std::optional<FOp> FloatBinaryOp(OpType op) {
  switch (op) {
    case OpType::Add:
      return FOp::kAdd;
    case OpType::Sub:
      return FOp::kSub;
    case OpType::Mul:
      return FOp::kMul;
    case OpType::Div:
      return FOp::kDiv;
    case OpType::Pow:
      return FOp::kPow;
    case OpType::Max:
      return FOp::kMax;
    case OpType::Min:
      return FOp::kMin;
    case OpType::Equal:
      return FOp::kEqual;
    case OpType::NotEqual:
      return FOp::kNotEqual;
    case OpType::Less:
      return FOp::kLess;
    case OpType::LessOrEqual:
      return FOp::kLessOrEqual;
    case OpType::Greater:
      return FOp::kGreater;
    case OpType::GreaterOrEqual:
      return FOp::kGreaterOrEqual;
    default:
      return std::nullopt;
  }
}

/// The register-machine op of a Bool op (nullopt when not fused).
std::optional<FOp> BoolOp(OpType op) {
  switch (op) {
    case OpType::LogicalNot:
      return FOp::kLogicalNot;
    case OpType::LogicalAnd:
      return FOp::kLogicalAnd;
    case OpType::LogicalOr:
      return FOp::kLogicalOr;
    case OpType::LogicalXor:
      return FOp::kLogicalXor;
    case OpType::Equal:
      return FOp::kEqual;
    case OpType::NotEqual:
      return FOp::kNotEqual;
    default:
      return std::nullopt;
  }
}

/// Ops whose float result is exact, so a half-typed result needs no rounding step.
bool ExactOnHalf(FOp op) {
  switch (op) {
    case FOp::kNeg:
    case FOp::kAbs:
    case FOp::kSign:
    case FOp::kFloor:
    case FOp::kCeil:
    case FOp::kRound:
    case FOp::kMax:
    case FOp::kMin:
      return true;
    default:
      return false;
  }
}

/// Whether a node computes an elementwise value the register machine implements.
bool IsComputeNode(const Module& m, const Node& node) {
  const Instruction& inst = node.inst;
  if (node.fused || inst.IsTuple() || !inst.shape.Ok() || inst.shape.IsDynamic()) return false;
  if (inst.shape.Rank() > 16) return false;  // The kernel's index walk holds 16 axes.
  if (!FusableDType(inst.shape.dtype())) return false;
  std::vector<DType> in;
  for (int o : inst.operands) {
    const Shape& s = m.nodes[static_cast<size_t>(o)].inst.shape;
    if (!s.Ok() || s.IsDynamic() || !FusableDType(s.dtype())) return false;
    in.push_back(s.dtype());
  }
  switch (GetOpCategory(inst.op)) {
    case OpCategory::Unary:
    case OpCategory::UnaryPredicate:
      if (inst.op == OpType::StopGradient) return true;
      if (in[0] == DType::Bool) return inst.op == OpType::LogicalNot;
      return FloatUnaryOp(inst.op).has_value();
    case OpCategory::Binary:
    case OpCategory::Compare:
      if (in[0] == DType::Bool) return BoolOp(inst.op).has_value();
      return FloatBinaryOp(inst.op).has_value();
    case OpCategory::Select:
      return in[0] == DType::Bool;
    case OpCategory::Convert:
      return inst.op == OpType::ConvertDType;
    default:
      return false;
  }
}

/// A scalar Constant of a fusable dtype (possibly through a BroadcastInDim): its value as float.
std::optional<float> ImmediateOf(const Module& m, int v) {
  const Instruction* inst = &m.nodes[static_cast<size_t>(v)].inst;
  if (inst->op == OpType::BroadcastInDim) inst = &m.nodes[static_cast<size_t>(inst->operands[0])].inst;
  if (inst->op != OpType::Constant || !inst->shape.IsScalar() || !FusableDType(inst->shape.dtype()))
    return std::nullopt;
  float value = 0;
  const DType d = inst->shape.dtype();
  inst->attrs.literal.ConstBytes([&](std::span<const uint8_t> b) {
    if (d == DType::Float32 && b.size() >= 4) {
      std::memcpy(&value, b.data(), 4);
    } else if (IsHalf(d) && b.size() >= 2) {
      uint16_t bits = 0;
      std::memcpy(&bits, b.data(), 2);
      value = d == DType::Float16 ? static_cast<float>(std::bit_cast<float16>(bits))
                                  : static_cast<float>(std::bit_cast<bfloat16>(bits));
    } else if (d == DType::Bool && !b.empty()) {
      value = b[0] != 0 ? 1.0f : 0.0f;
    }
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
    if (!IsHalf(result) || ExactOnHalf(op)) return r;
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
    const DType out = inst.shape.dtype();
    const DType in = m_.nodes[static_cast<size_t>(inst.operands[0])].inst.shape.dtype();
    int result = r[0];
    switch (GetOpCategory(inst.op)) {
      case OpCategory::Unary:
      case OpCategory::UnaryPredicate:
        if (inst.op == OpType::StopGradient) break;
        result = EmitOp(in == DType::Bool ? *BoolOp(inst.op) : *FloatUnaryOp(inst.op), out, r[0]);
        break;
      case OpCategory::Binary:
      case OpCategory::Compare:
        result = EmitOp(in == DType::Bool ? *BoolOp(inst.op) : *FloatBinaryOp(inst.op), out, r[0], r[1]);
        break;
      case OpCategory::Select:
        result = EmitOp(FOp::kWhere, DType::Float32, r[0], r[1], r[2]);
        break;
      default:  // ConvertDType between fusable dtypes.
        if (out == in) break;
        if (out == DType::Bool) {
          result = EmitOp(FOp::kNotZero, out, r[0]);
        } else if (IsHalf(out) && in != DType::Bool) {
          result = EmitRound(out, r[0]);
        }
        break;
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

/// Whether node v may join group g through its user u without holding v's inputs across other
/// work: every node between them is in the group or cheap (a leaf, broadcast, reshape, slice or
/// a value of at most 4 KiB). A group's inputs are read when its root runs, so joining across a
/// large unrelated computation would keep them alive through it (a long Add chain of gradient
/// terms would keep every term alive to its end).
bool CloseEnough(const Module& m, const std::vector<int>& group, int v, int u, int g) {
  if (u - v > 256) return false;
  for (int w = v + 1; w < u; ++w) {
    if (group[static_cast<size_t>(w)] == g) continue;
    const Instruction& inst = m.nodes[static_cast<size_t>(w)].inst;
    switch (inst.op) {
      case OpType::Constant:
      case OpType::Parameter:
      case OpType::BroadcastInDim:
      case OpType::Reshape:
      case OpType::Slice:
      case OpType::GetTupleElement:
        continue;
      default:
        break;
    }
    if (inst.IsTuple() || inst.shape.IsDynamic() || inst.shape.ByteSize() > 4096) return false;
  }
  return true;
}

}  // namespace

// Names in FOp order.
const char* FOpName(FOp op) {
  static const char* const kNames[] = {"Input",
                                       "Imm",
                                       "Neg",
                                       "Abs",
                                       "Sign",
                                       "Sqrt",
                                       "Rsqrt",
                                       "Exp",
                                       "Expm1",
                                       "Log",
                                       "Log1p",
                                       "Sin",
                                       "Cos",
                                       "Tanh",
                                       "Logistic",
                                       "Erf",
                                       "Floor",
                                       "Ceil",
                                       "Round",
                                       "IsFinite",
                                       "IsNaN",
                                       "LogicalNot",
                                       "NotZero",
                                       "RoundF16",
                                       "RoundBF16",
                                       "Add",
                                       "Sub",
                                       "Mul",
                                       "Div",
                                       "Pow",
                                       "Max",
                                       "Min",
                                       "LogicalAnd",
                                       "LogicalOr",
                                       "LogicalXor",
                                       "Equal",
                                       "NotEqual",
                                       "Less",
                                       "LessOrEqual",
                                       "Greater",
                                       "GreaterOrEqual",
                                       "Where"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(FOp::kWhere) + 1);
  return kNames[static_cast<size_t>(op)];
}

// Compute ops are ordered unary, binary, then kWhere.
int FOpArity(FOp op) {
  if (op == FOp::kInput || op == FOp::kImm) return 0;
  if (op == FOp::kWhere) return 3;
  return op >= FOp::kAdd ? 2 : 1;
}

// The ops, the result shape, then the bytecode.
std::string FusedSpec::ToString() const {
  std::vector<std::string> names;
  for (OpType op : ops) names.emplace_back(OpName(op));
  std::string s = fmt::format("[{}] -> {}, {} input{}, {} register{}:", fmt::join(names, ", "),
                              Shape(out_dtype, out_dims).ToString(), inputs.size(),
                              inputs.size() == 1 ? "" : "s", num_regs, num_regs == 1 ? "" : "s");
  for (const FInstr& ins : code) {
    if (ins.op == FOp::kInput) {
      const FInput& in = inputs[static_cast<size_t>(ins.input)];
      s += fmt::format(
          " r{}=in{}{}", ins.dst, ins.input,
          in.identity ? std::string() : fmt::format("{{strides=[{}]}}", fmt::join(in.strides, ",")));
    } else if (ins.op == FOp::kImm) {
      s += fmt::format(" r{}={}", ins.dst, ins.imm);
    } else {
      const uint16_t ops[3] = {ins.a, ins.b, ins.c};
      std::vector<std::string> args;
      for (int k = 0; k < FOpArity(ins.op); ++k) args.push_back(fmt::format("r{}", ops[k]));
      s += fmt::format(" r{}={}({})", ins.dst, FOpName(ins.op), fmt::join(args, ","));
    }
    s += ";";
  }
  for (const Extra& e : extra) s += fmt::format(" also r{} as {};", e.reg, DTypeName(e.dtype));
  return s;
}

namespace {

/// Whether fused node `q` may be computed inside fused node `p` (its only reader, through an
/// input read element for element): both elementwise over the same dims, q ending on a compute
/// instruction that writes its result, q not itself multi-output, registers within bounds.
bool Mergeable(const Node& q, const Node& p, size_t input) {
  // A merged node has no spec left; a multi-output one (writes) is not merged again.
  if (!q.fused || !p.fused || !q.writes.empty()) return false;
  if (GetOpCategory(q.inst.op) == OpCategory::Reduce || GetOpCategory(p.inst.op) == OpCategory::Reduce)
    return false;
  const FusedSpec &qs = *q.fused, &ps = *p.fused;
  // Float32 only: a half result would be rounded before p reads it, the register is not.
  if (qs.out_dims != ps.out_dims || qs.code.empty() || qs.out_dtype != DType::Float32) return false;
  const FInstr& last = qs.code.back();
  if (last.op == FOp::kInput || last.op == FOp::kImm || last.dst != qs.result) return false;
  if (qs.num_regs + ps.num_regs > 256) return false;
  return ps.inputs[input].identity && ps.inputs[input].dtype == qs.out_dtype;
}

/// p's spec with q's program in front of it: q's inputs join p's (an operand both read element
/// for element shares one), p's loads of input `input` read q's result register instead, and q's result
/// is the first extra result. Operands go to `operands`.
FusedSpec MergeSpecs(const FusedSpec& qs, const std::vector<int>& q_operands, const FusedSpec& ps,
                     const std::vector<int>& p_operands, size_t input, std::vector<int>& operands) {
  FusedSpec out;
  operands.clear();
  // Identity inputs only: a broadcast input's register is filled once per row for its one load
  // (FusedEvaluator's keep_ and filled are per input).
  auto add_input = [&](const FInput& fi, int operand) {
    for (size_t k = 0; k < operands.size() && fi.identity; ++k) {
      const FInput& have = out.inputs[k];
      if (operands[k] == operand && have.dtype == fi.dtype && have.identity) return static_cast<int>(k);
    }
    out.inputs.push_back(fi);
    operands.push_back(operand);
    return static_cast<int>(operands.size()) - 1;
  };
  std::vector<int> q_in(qs.inputs.size()), p_in(ps.inputs.size(), -1);
  for (size_t k = 0; k < qs.inputs.size(); ++k) q_in[k] = add_input(qs.inputs[k], q_operands[k]);
  for (size_t k = 0; k < ps.inputs.size(); ++k)
    if (k != input) p_in[k] = add_input(ps.inputs[k], p_operands[k]);
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

}  // namespace

std::string MergeFusedOutputs(Module& m) {
  const size_t n = m.nodes.size();
  std::vector<int> uses(n, 0);
  std::vector<bool> is_output(n, false);
  for (const Node& node : m.nodes)
    for (int o : node.inst.operands) ++uses[static_cast<size_t>(o)];
  for (int o : m.outputs) is_output[static_cast<size_t>(o)] = true;
  std::string log;
  for (size_t v = 0; v < n; ++v) {
    Node& p = m.nodes[v];
    if (!p.fused) continue;
    // Repeatedly: the first operand that is a mergeable group read only here.
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t input = 0; input < p.inst.operands.size(); ++input) {
        const int qi = p.inst.operands[input];
        Node& q = m.nodes[static_cast<size_t>(qi)];
        // Only outputs: a group read only by p that is no output is in p's group already, unless
        // CloseEnough kept it apart.
        if (uses[static_cast<size_t>(qi)] != 1 || !is_output[static_cast<size_t>(qi)] ||
            !Mergeable(q, p, input))
          continue;
        std::vector<int> operands;
        FusedSpec spec = MergeSpecs(*q.fused, q.inst.operands, *p.fused, p.inst.operands, input, operands);
        // p reads its new operands instead of its old ones; q reads nothing.
        for (int o : p.inst.operands) --uses[static_cast<size_t>(o)];
        for (int o : operands) ++uses[static_cast<size_t>(o)];
        for (int o : q.inst.operands) --uses[static_cast<size_t>(o)];
        log +=
            fmt::format("  merged %{} into %{} (written as an extra result): {}\n", qi, v, spec.ToString());
        std::vector<int> writes = {qi};
        writes.insert(writes.end(), p.writes.begin(), p.writes.end());
        p.writes = std::move(writes);
        p.inst.operands = std::move(operands);
        p.fused = std::make_shared<const FusedSpec>(std::move(spec));
        q.inst.operands.clear();
        q.fused = nullptr;
        q.written_by = static_cast<int>(v);
        uses[static_cast<size_t>(qi)] = 0;
        merged = true;
        break;
      }
    }
  }
  return log;
}

// Groups (reverse topological order), then one fused node per group of 2+ ops at its root.
std::string FuseElementwise(Module& m, const Options& options) {
  (void)options;
  const size_t n = m.nodes.size();
  std::vector<std::set<int>> users(n);
  std::vector<bool> is_output(n, false);
  for (size_t v = 0; v < n; ++v)
    for (int o : m.nodes[v].inst.operands) users[static_cast<size_t>(o)].insert(static_cast<int>(v));
  for (int o : m.outputs) is_output[static_cast<size_t>(o)] = true;
  // Reverse topological order: a node joins its only user's group when that user is in one.
  std::vector<int> group(n, -1);
  std::vector<std::vector<int>> members;
  for (size_t v = n; v-- > 0;) {
    if (!IsComputeNode(m, m.nodes[v])) continue;
    const Shape& shape = m.nodes[v].inst.shape;
    if (!is_output[v] && users[v].size() == 1) {
      const int u = *users[v].begin();
      const int g = group[static_cast<size_t>(u)];
      if (g >= 0 && m.nodes[static_cast<size_t>(u)].inst.shape.Dimensions() == shape.Dimensions() &&
          CloseEnough(m, group, static_cast<int>(v), u, g)) {
        group[v] = g;
        members[static_cast<size_t>(g)].push_back(static_cast<int>(v));
        continue;
      }
    }
    group[v] = static_cast<int>(members.size());
    members.push_back({static_cast<int>(v)});
  }
  // A group whose root only feeds a reduction the fused reduce kernel runs is computed inside
  // that reduction (reduce_of[g]: the reduction's node), its values never written out.
  std::vector<int> reduce_of(members.size(), -1);
  for (size_t u = 0; u < n; ++u) {
    const Instruction& inst = m.nodes[u].inst;
    if (m.nodes[u].fused || GetOpCategory(inst.op) != OpCategory::Reduce || inst.operands.size() != 1)
      continue;
    const int v = inst.operands[0];
    const int g = group[static_cast<size_t>(v)];
    if (g < 0 || members[static_cast<size_t>(g)].front() != v || is_output[static_cast<size_t>(v)] ||
        users[static_cast<size_t>(v)].size() != 1)
      continue;
    if (!FusesIntoReduce(inst.op, m.nodes[static_cast<size_t>(v)].inst.shape, inst.attrs.axes)) continue;
    if (!CloseEnough(m, group, v, static_cast<int>(u), g)) continue;
    reduce_of[static_cast<size_t>(g)] = static_cast<int>(u);
  }
  std::string report;
  int fused = 0, reductions = 0;
  for (size_t g = 0; g < members.size(); ++g) {
    std::vector<int>& group_members = members[g];
    std::sort(group_members.begin(), group_members.end());
    std::vector<int> operands;
    SpecBuilder builder(m, group_members);
    FusedSpec spec = builder.Build(operands);
    const int reduce = reduce_of[g];
    // One op (its broadcasts counted): the plain kernel does as well, unless a reduction takes it
    // or it is a conversion (the fused kernel's are vectorised; a widened half-precision
    // contraction's operands and result are such lone conversions).
    const bool lone_convert =
        spec.ops.size() == 1 &&
        m.nodes[static_cast<size_t>(group_members.back())].inst.op == OpType::ConvertDType;
    if (spec.ops.size() < 2 && reduce < 0 && !lone_convert) continue;
    const int root = reduce >= 0 ? reduce : group_members.back();
    Node& node = m.nodes[static_cast<size_t>(root)];
    if (reduce >= 0) {
      report += fmt::format("  fused %{}: {}{{axes=[{}]}} of {}\n", root, OpName(node.inst.op),
                            fmt::join(node.inst.attrs.axes, ","), spec.ToString());
      ++reductions;
    } else {
      report += fmt::format("  fused %{}: {}\n", root, spec.ToString());
    }
    node.inst.operands = std::move(operands);
    node.fused = std::make_shared<const FusedSpec>(std::move(spec));
    ++fused;
  }
  // Other reductions the fused kernel runs read their operand through a one-load program (its
  // SIMD reductions beat the reference loops).
  for (size_t u = 0; u < n; ++u) {
    Node& node = m.nodes[u];
    const Instruction& inst = node.inst;
    if (node.fused || GetOpCategory(inst.op) != OpCategory::Reduce || inst.operands.size() != 1) continue;
    const Shape& operand = m.nodes[static_cast<size_t>(inst.operands[0])].inst.shape;
    if (!FusesIntoReduce(inst.op, operand, inst.attrs.axes) || operand.Rank() > 16) continue;
    FusedSpec spec;
    spec.inputs.push_back(FInput{DType::Float32, {}, true});
    FInstr load;
    load.op = FOp::kInput;
    load.input = 0;
    spec.code.push_back(load);
    spec.num_regs = 1;
    spec.out_dims = operand.Dimensions();
    report += fmt::format("  fused %{}: {}{{axes=[{}]}} of {}\n", u, OpName(inst.op),
                          fmt::join(inst.attrs.axes, ","), spec.ToString());
    node.fused = std::make_shared<const FusedSpec>(std::move(spec));
    ++fused;
    ++reductions;
  }
  if (fused == 0) return {};
  return fmt::format("  fusion: {} group{}, {} into reductions\n", fused, fused == 1 ? "" : "s", reductions) +
         report;
}

}  // namespace kiln::compute::cpu
