#pragma once
// A fused elementwise group as a small register machine (FusedSpec): loads of the group's inputs
// (broadcasts read through per-axis strides), immediates and float32 ops, one result (and the
// extra results of a multi-output group). Values are float32 in registers: Bool as 0/1, half
// types as their exact float32 value (rounded after each op by explicit rounding instructions,
// as the reference kernels do). Also the same program as the SIMD evaluator runs it (VProgram),
// and the element conversions every part of the fused machine reads and writes with.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/fused_ops.h"
#include "kiln/compute/program.h"
#include "kiln/core/dtype.h"
#include "kiln/core/half.h"

namespace kiln::compute::cpu {

/// The most axes a fused result may have (the evaluator's index walk holds this many).
inline constexpr int kMaxFusedRank = 16;
/// The most registers a fused program may use (the evaluator's register pointers).
inline constexpr int kMaxFusedRegisters = 256;

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
  /// Further results of a multi-output group (MergeFusedOutputs): the register holding each and
  /// its dtype; the kernel stores them to the buffers it gets after its inputs.
  struct Extra {
    int reg = 0;
    DType dtype = DType::Float32;
  };
  std::vector<Extra> extra;
  /// "Exp, Add, Mul -> (Float32)[16]" and the bytecode, for KILN_CPU_DUMP.
  std::string ToString() const;
};

/// Where an operand of a vector-program instruction comes from.
enum class VSrc : uint8_t {
  kNone,   ///< Unused operand.
  kAcc,    ///< The previous instruction's result, still in vector registers.
  kSlot,   ///< A saved result (register `idx` of the block's spill area).
  kInput,  ///< Input `idx`'s values for the piece.
  kImm,    ///< The immediate `imm`.
};

/// Whether operand source s is in memory (an input's piece or a spill slot).
inline bool InMemory(VSrc s) { return s == VSrc::kInput || s == VSrc::kSlot; }

/// One compute instruction of a vector program: its result becomes the accumulator, and is also
/// saved to slot `save` when a later instruction reads it other than as the accumulator.
struct VInstr {
  FOp op = FOp::kAdd;
  VSrc src[3] = {VSrc::kNone, VSrc::kNone, VSrc::kNone};
  uint16_t idx[3] = {0, 0, 0};
  float imm[3] = {0, 0, 0};
  int32_t save = -1;
};

/// A FusedSpec's compute instructions as the SIMD evaluator runs them: the whole program once per
/// block of a few vectors, each result kept in vector registers for the next instruction and
/// spilled to a small L1 area only when read later; loads become pointers to the piece's input
/// values and immediates broadcast constants.
struct VProgram {
  std::vector<VInstr> code;
  int num_inputs = 0;
  int num_regs = 0;
  /// Where the result is after the last instruction (kAcc or kSlot).
  VSrc result_src = VSrc::kAcc;
  uint16_t result_idx = 0;
  /// Floats of spill area one thread needs.
  size_t SlotFloats() const;
  /// Floats of padded tail buffers one thread needs.
  size_t TailFloats() const;
};

/// The vector program of `spec`, or an empty one when it has no compute instruction writing the
/// result (a group that only converts an input).
VProgram MakeVProgram(const FusedSpec& spec);

/// Element i of data of a fusable dtype (Float32, Float16, BFloat16, Bool) as the register
/// machine holds it: float32, Bool bytes as 0/1.
inline float LoadAsF32(DType dtype, const uint8_t* data, int64_t i) {
  switch (dtype) {
    case DType::Float32: {
      float v;
      std::memcpy(&v, data + i * 4, 4);
      return v;
    }
    case DType::Float16:
    case DType::BFloat16: {
      uint16_t bits;
      std::memcpy(&bits, data + i * 2, 2);
      return dtype == DType::Float16 ? static_cast<float>(std::bit_cast<float16>(bits))
                                     : static_cast<float>(std::bit_cast<bfloat16>(bits));
    }
    default:
      return data[i] != 0 ? 1.0f : 0.0f;
  }
}

/// Stores v as element i of data of a fusable dtype (kiln's half conversions, rounding to
/// nearest even; Bool as v != 0).
inline void StoreFromF32(DType dtype, float v, uint8_t* data, int64_t i) {
  uint16_t bits = 0;
  switch (dtype) {
    case DType::Float32:
      std::memcpy(data + i * 4, &v, 4);
      return;
    case DType::Float16:
    case DType::BFloat16:
      bits = dtype == DType::Float16 ? std::bit_cast<uint16_t>(float16(v))
                                     : std::bit_cast<uint16_t>(bfloat16(v));
      std::memcpy(data + i * 2, &bits, 2);
      return;
    default:
      data[i] = v != 0 ? 1 : 0;
      return;
  }
}

}  // namespace kiln::compute::cpu
