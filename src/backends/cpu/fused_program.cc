// The fused program's listing and its vector form.

#include <fmt/format.h>

#include <algorithm>

#include "backends/cpu/fused_program.h"

namespace kiln::compute::cpu {

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

// Follows the registers through the program: an operand written by the previous compute
// instruction is the accumulator, one written earlier is saved to its register's slot.
VProgram MakeVProgram(const FusedSpec& spec) {
  VProgram p;
  p.num_inputs = static_cast<int>(spec.inputs.size());
  p.num_regs = spec.num_regs;
  struct Writer {
    VSrc src = VSrc::kNone;
    int at = -1;  ///< kInput: the input; kSlot: the compute instruction.
    float imm = 0;
  };
  std::vector<Writer> writer(static_cast<size_t>(std::max(spec.num_regs, 1)));
  // Where register r's current value is, seen from the next instruction; kNone if unwritten.
  auto source = [&](uint16_t r, VSrc& src, uint16_t& idx, float& imm) {
    const Writer& w = writer[r];
    src = w.src;
    idx = r;
    if (w.src == VSrc::kImm) {
      imm = w.imm;
    } else if (w.src == VSrc::kInput) {
      idx = static_cast<uint16_t>(w.at);
    } else if (w.src == VSrc::kSlot) {
      if (static_cast<size_t>(w.at) + 1 == p.code.size()) {
        src = VSrc::kAcc;
      } else {
        p.code[static_cast<size_t>(w.at)].save = r;
      }
    }
    return src != VSrc::kNone;
  };
  for (const FInstr& ins : spec.code) {
    if (ins.op == FOp::kImm) {
      writer[ins.dst] = {VSrc::kImm, -1, ins.imm};
      continue;
    }
    if (ins.op == FOp::kInput) {
      writer[ins.dst] = {VSrc::kInput, ins.input, 0};
      continue;
    }
    VInstr v;
    v.op = ins.op;
    const uint16_t regs[3] = {ins.a, ins.b, ins.c};
    for (int k = 0; k < FOpArity(ins.op); ++k)
      if (!source(regs[k], v.src[k], v.idx[k], v.imm[k])) return {};
    p.code.push_back(v);
    writer[ins.dst] = {VSrc::kSlot, static_cast<int>(p.code.size()) - 1, 0};
  }
  float unused = 0;
  if (writer[static_cast<size_t>(spec.result)].src != VSrc::kSlot ||
      !source(static_cast<uint16_t>(spec.result), p.result_src, p.result_idx, unused))
    return {};
  return p;
}

}  // namespace kiln::compute::cpu
