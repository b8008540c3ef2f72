#pragma once
// The fused register machine's operations (generated from fused_ops.def): the FOp enum, each
// op's properties, the graph ops each computes, and their scalar forms.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "backends/common/scalar_math.h"
#include "kiln/compute/program.h"
#include "kiln/core/half.h"

namespace kiln::compute::cpu {

/// The register machine's operations: kInput and kImm, then the compute ops of fused_ops.def in
/// its order. Unary ops read `a`; binary `a`, `b`; kWhere `a ? b : c`.
enum class FOp : uint8_t {
  kInput,  ///< dst = input `input` (converted to float32).
  kImm,    ///< dst = `imm` (filled once per kernel call).
#define KILN_FUSED_OP(Name, ...) k##Name,
#include "backends/cpu/fused_ops.def"
};

namespace fused_table {

/// One row of fused_ops.def.
struct Row {
  const char* name;
  int arity;
  bool transcendental;
  bool exact_on_half;
  int cost;
};

// clang-format off
inline constexpr Row kRows[] = {
    {"Input", 0, false, true, 1},
    {"Imm", 0, false, true, 0},
#define KILN_FUSED_OP(Name, Arity, FloatOp, BoolOp, Transcendental, ExactOnHalf, Cost, ...) \
    {#Name, Arity, Transcendental != 0, ExactOnHalf != 0, Cost},
#include "backends/cpu/fused_ops.def"
};
// clang-format on

inline constexpr const Row& RowOf(FOp op) { return kRows[static_cast<size_t>(op)]; }

}  // namespace fused_table

/// The op's name ("Exp", "RoundF16"...), for listings.
inline constexpr const char* FOpName(FOp op) { return fused_table::RowOf(op).name; }
/// Operand count of a compute op (0 for kInput and kImm).
inline constexpr int FOpArity(FOp op) { return fused_table::RowOf(op).arity; }
/// Whether `op` is computed by an approximation (the Transcendental column): dearer than an
/// arithmetic op, and within an ulp bound of the reference.
inline constexpr bool FOpTranscendental(FOp op) { return fused_table::RowOf(op).transcendental; }
/// Whether the op's float result is exact for half-typed operands (no rounding step needed).
inline constexpr bool FOpExactOnHalf(FOp op) { return fused_table::RowOf(op).exact_on_half; }
/// Cost per element in cheap ops (a load counts 1, an immediate 0).
inline constexpr int FOpCost(FOp op) { return fused_table::RowOf(op).cost; }

/// The register-machine op computing graph op `op` on operands whose first is Bool
/// (`bool_operands`) or a float type; nullopt when the machine has none.
std::optional<FOp> FusedOpOf(OpType op, bool bool_operands);

/// 1 where `b`, else 0.
inline constexpr float One(bool b) { return b ? 1.0f : 0.0f; }

/// The scalar form of compute op `kOp` (fused_ops.def's Scalar column): unary ops read x,
/// binary x and y, kWhere x ? y : z.
template <FOp kOp>
float ScalarOp(float x, float y, float z);

#define KILN_FUSED_OP(Name, Arity, FloatOp, BoolOp, Transcendental, ExactOnHalf, Cost, ...) \
  template <>                                                                               \
  inline float ScalarOp<FOp::k##Name>(float x, float y, float z) {                          \
    (void)x;                                                                                \
    (void)y;                                                                                \
    (void)z;                                                                                \
    return __VA_ARGS__;                                                                     \
  }
#include "backends/cpu/fused_ops.def"

/// Runs compute op `op` over n elements with the scalar forms: operands `a`, `b`, `c` as the
/// op needs; `out` may alias an operand (fused_ops.cc).
void RunFusedOpScalar(FOp op, const float* a, const float* b, const float* c, float* out, size_t n);

}  // namespace kiln::compute::cpu
