#pragma once
// A fused elementwise group as a small register machine (FusedSpec): loads of the group's inputs
// (broadcasts read through per-axis strides), immediates and float32 ops, one result. Values are
// float32 in registers: Bool as 0/1, half types as their exact float32 value (rounded after each
// op by explicit rounding instructions, as the reference kernels do).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/compute/program.h"
#include "kiln/core/dtype.h"

namespace kiln::compute::cpu {

/// The register machine's operations. Unary ops read `a`; binary `a`, `b`; kWhere `a ? b : c`.
enum class FOp : uint8_t {
  kInput,  ///< dst = input `input` (converted to float32).
  kImm,    ///< dst = `imm` (filled once per kernel call).
  // Unary.
  kNeg,
  kAbs,
  kSign,
  kSqrt,
  kRsqrt,
  kExp,
  kExpm1,
  kLog,
  kLog1p,
  kSin,
  kCos,
  kTanh,
  kLogistic,
  kErf,
  kFloor,
  kCeil,
  kRound,
  kIsFinite,
  kIsNaN,
  kLogicalNot,  ///< 1 where a == 0.
  kNotZero,     ///< 1 where a != 0 (conversion to Bool; NaN is true).
  kRoundF16,    ///< a rounded to the nearest Float16 (ties to even).
  kRoundBF16,   ///< a rounded to the nearest BFloat16 (ties to even).
  // Binary.
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kMin,
  kLogicalAnd,
  kLogicalOr,
  kLogicalXor,
  kEqual,
  kNotEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  // Ternary.
  kWhere,
};

/// The op's name ("Exp", "RoundF16"...), for listings.
const char* FOpName(FOp op);
/// Operand count of a compute op (0 for kInput and kImm).
int FOpArity(FOp op);

/// One instruction: registers are indices into the kernel's register file.
struct FInstr {
  FOp op = FOp::kImm;
  uint16_t dst = 0, a = 0, b = 0, c = 0;
  float imm = 0;
  int input = -1;  ///< kInput: which group input.
};

/// One input of the group: its dtype and, per output axis, its element stride (0: broadcast).
struct FInput {
  DType dtype = DType::Float32;
  std::vector<int64_t> strides;
  bool identity = true;  ///< Reads element i at output element i (same dims, no broadcast).
};

struct FusedSpec {
  std::vector<FInput> inputs;  ///< In the order of the fused node's operands.
  std::vector<FInstr> code;    ///< Immediates first, then loads and ops in topological order.
  int num_regs = 0;
  int result = 0;  ///< The register holding the result after the last instruction.
  DType out_dtype = DType::Float32;
  std::vector<int64_t> out_dims;
  std::vector<OpType> ops;  ///< The graph ops the group stands for, in order (for listings).
  /// "Exp, Add, Mul -> (Float32)[16]" and the bytecode, for KILN_CPU_DUMP.
  std::string ToString() const;
};

/// Runs one compute instruction of `op` over n elements with Highway (hwy_fused.cc): operands
/// `a`, `b`, `c` as the op needs; `out` may alias an operand.
void RunFusedOpSimd(FOp op, const float* a, const float* b, const float* c, float* out, size_t n);
/// The same with plain scalar C++ (the reference kernels' formulas; fused_kernel.cc).
void RunFusedOpScalar(FOp op, const float* a, const float* b, const float* c, float* out, size_t n);
/// The Highway target the SIMD kernels dispatch to ("AVX2", "EMU128"...).
const char* FusedSimdTarget();
/// For tests: calls `fn` with each compiled SIMD target this machine supports forced in turn
/// (not thread-safe), then restores the normal dispatch.
void ForEachFusedSimdTarget(const std::function<void(const char* target)>& fn);

}  // namespace kiln::compute::cpu
