#pragma once
// Vector programs compiled to machine code: on CPUs with AVX-512, a fused elementwise group's
// vector program (fused_program.h) becomes one x86-64 function (generated with Xbyak) that runs
// the whole program over blocks of four vectors with every operand, constant and op in place,
// where the interpreter (fused_simd.cc: RunProgram) dispatches each instruction of each block
// through a switch. The compiled code computes the interpreter's bits: the same instructions per
// op (Exp is ExpInRange, and blocks with lanes outside its range take the interpreter's Exp, scalar
// lanes included, through a call; so does Logistic).

#include <cstddef>
#include <memory>

#include "backends/cpu/fused_program.h"

namespace kiln::compute::cpu {

class VProgramJit {
 public:
  /// Elements per block: four vectors of sixteen floats.
  static constexpr size_t kBlock = 64;
  /// Inputs a compiled program reads at most.
  static constexpr int kMaxInputs = 32;

  /// `prog` compiled, or null where this CPU has no AVX-512, the program has more than kMaxInputs
  /// inputs or an op without a compiled form (CompilesOp), or the code cannot be made executable:
  /// the interpreter then runs it.
  static std::unique_ptr<VProgramJit> Compile(const VProgram& prog);
  /// Whether an instruction of `op` (with its operands) has a compiled form: Add, Sub, Mul, Div,
  /// Max, Min, Neg, Abs, Sqrt, Exp, Logistic, the Float16 and BFloat16 roundings, the
  /// comparisons and Where.
  static bool CompilesOp(FOp op);

  ~VProgramJit();
  VProgramJit(const VProgramJit&) = delete;
  VProgramJit& operator=(const VProgramJit&) = delete;

  /// The program over blocks * kBlock elements, as RunVProgramSimd over the same: in[k] points at
  /// input k's values, `out` may be an input, `slots` holds prog.SlotFloats() floats.
  void Run(const float* const* in, float* out, size_t blocks, float* slots) const {
    fn_(in, out, blocks, slots);
  }

 private:
  using Fn = void (*)(const float* const*, float*, size_t, float*);
  class Code;
  VProgramJit(std::unique_ptr<Code> code, Fn fn);

  std::unique_ptr<Code> code_;
  Fn fn_;
};

}  // namespace kiln::compute::cpu
