#pragma once
// A fused elementwise group as a small register machine (FusedSpec): loads of the group's inputs
// (broadcasts read through per-axis strides), immediates and float32 ops, one result. Values are
// float32 in registers: Bool as 0/1, half types as their exact float32 value (rounded after each
// op by explicit rounding instructions, as the reference kernels do). A fused node is either the
// group itself (elementwise) or a reduction whose operand the group computes. Also: the SIMD
// helpers the fused kernels use and the evaluator that runs a program over pieces of its result.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
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
/// Whether `op` is computed by an approximation (Exp, Expm1, Log, Log1p, Sin, Cos, Tanh,
/// Logistic, Erf): dearer than an arithmetic op, and within an ulp bound of the reference.
bool FOpTranscendental(FOp op);

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

/// Runs `prog` over n elements (hwy_fused.cc): `in[i]` points at input i's n values, `out`
/// receives the results (it may be one of the inputs). `slots` and `tail` are scratch of
/// SlotFloats() and TailFloats(); `tail_in` has room for num_inputs pointers. The ops are the
/// same SIMD forms as RunFusedOpSimd's, so results are the same bits.
void RunVProgramSimd(const VProgram& prog, const float* const* in, float* out, size_t n, float* slots,
                     float* tail, const float** tail_in);

/// Whether the SIMD target in use runs vector programs (AVX3: a block of four vectors stays in its
/// 32 registers); elsewhere one pass per instruction costs fewer instructions per element.
bool UseVProgramSimd();

/// Runs one compute instruction of `op` over n elements with Highway (hwy_fused.cc): operands
/// `a`, `b`, `c` as the op needs; `out` may alias an operand.
void RunFusedOpSimd(FOp op, const float* a, const float* b, const float* c, float* out, size_t n);
/// The same with plain scalar C++ (the reference kernels' formulas; fused_kernel.cc).
void RunFusedOpScalar(FOp op, const float* a, const float* b, const float* c, float* out, size_t n);
/// dst[i] = src[i] as float32 for a Float32, Float16, BFloat16 or Bool source (SIMD).
void ConvertToF32Simd(DType dtype, const uint8_t* src, float* dst, size_t n);
/// dst[i] = src[i] in `dtype` (Float32, Float16 or BFloat16 rounded to nearest even, Bool as
/// src[i] != 0), as kiln's half types convert (SIMD).
void ConvertFromF32Simd(DType dtype, const float* src, uint8_t* dst, size_t n);
/// dst[0, n) = v.
void FillSimd(float* dst, float v, size_t n);
/// The sum of v[0, n) accumulated in double (lane-wise partial sums, then added up).
double SumSimd(const float* v, size_t n);
/// acc[i] += v[i] in double.
void AddIntoSimd(double* acc, const float* v, size_t n);
/// The maximum (is_max) or minimum of init and v[0, n); NaN propagates as in the reference.
float ExtremeSimd(bool is_max, const float* v, size_t n, float init);
/// acc[i] = max(acc[i], v[i]) (or min), NaN propagating.
void ExtremeIntoSimd(bool is_max, float* acc, const float* v, size_t n);

/// A rough cost per element of a program (loads, ops and the store; a transcendental counts as
/// 8 cheap ops): the threading gate multiplies it by the element count.
int64_t FusedCost(const FusedSpec& spec);

/// Work (elements times FusedCost) from which a fused kernel splits across the OpenMP team; below
/// it, the calling thread runs it alone. Measured on this 2-core machine (threads=2 against
/// threads=1 with the gate off, medians of 3000 calls): the fixed chain exp(relu(2x+1))/2 - x
/// (cost 15) is faster on two threads from 8-16K elements (0.12-0.25M work), x*3+1 (cost 4)
/// from 64-128K elements (0.26-0.52M); below, waking the team costs more than it saves.
constexpr int64_t kFusedParallelWork = int64_t{1} << 18;

/// Runs a FusedSpec over pieces of its result (fused_kernel.cc), for the elementwise kernel and
/// the fused reductions. Result elements are numbered row-major; the result is viewed as
/// [rows, inner] with `inner` the longest run of trailing axes over which every input is either
/// contiguous or constant, so that a piece inside one row reads each input through a plain
/// pointer, a vectorised conversion or one broadcast value (other pieces gather by strides).
class FusedEvaluator {
 public:
  /// Elements per piece: a register is one piece of floats (the file stays in L1).
  static constexpr int64_t kTile = 1024;
  /// Rows shorter than this are not worth a piece each: the view is then one flat row.
  static constexpr int64_t kMinRow = 64;

  FusedEvaluator(std::shared_ptr<const FusedSpec> spec, bool simd);

  const FusedSpec& spec() const { return *spec_; }
  /// Result elements.
  int64_t size() const { return n_; }
  /// The row length of the [rows, inner] view.
  int64_t inner() const { return inner_; }
  /// One thread's working memory: the register file (a piece of floats per register,
  /// immediates filled) and which row each broadcast register holds.
  struct Scratch {
    std::vector<float> regs;
    std::vector<int64_t> filled;  ///< Per input: 1 + the offset its register holds, 0 if none.
    // The vector program's working memory (SIMD only).
    std::vector<float> loads;  ///< Per input: a piece of converted or broadcast values.
    std::vector<float> slots, tail, result;
    std::vector<const float*> in, tail_in;
    std::vector<const float*> extras;  ///< Where Eval left each extra result of the piece.
  };
  Scratch NewScratch() const;
  /// Computes result elements [start, start + len) (len <= kTile) into float32 and returns where
  /// they are: `direct` when it is not null and the program can write there, else a register.
  const float* Eval(std::span<const uint8_t* const> in, int64_t start, int64_t len, Scratch& scratch,
                    float* direct) const;
  /// One compute instruction, SIMD or scalar.
  void Op(FOp op, const float* a, const float* b, const float* c, float* out, size_t count) const;

 private:
  /// How an input is read within one row.
  enum class Read : uint8_t { kGather, kContiguous, kBroadcast };
  /// Input `input`'s values at [start, start + len): a pointer into its data, or `dst` filled.
  void Load(size_t input, const uint8_t* data, int64_t start, int64_t len, float* dst, int64_t& filled,
            const float** at) const;
  /// The same by an index walk over the input's strides (any piece).
  void Gather(size_t input, const uint8_t* data, int64_t start, int64_t len, float* dst) const;

  /// Eval through the vector program.
  const float* EvalVector(std::span<const uint8_t* const> in, int64_t start, int64_t len, Scratch& scratch,
                          float* direct) const;

  std::shared_ptr<const FusedSpec> spec_;
  bool simd_ = true;
  VProgram vprog_;  ///< Empty when the SIMD path runs the instructions one pass each.

  int64_t n_ = 0, inner_ = 1;
  std::vector<int64_t> out_strides_;
  std::vector<Read> read_;                   ///< Per input.
  std::vector<bool> keep_;                   ///< Per input: its register holds it all along.
  std::vector<std::vector<int64_t>> outer_;  ///< Per input: its strides over the row axes.
  size_t row_axes_ = 0;                      ///< Axes before the inner run.
};

/// The Highway target the SIMD kernels dispatch to ("AVX2", "EMU128"...).
const char* FusedSimdTarget();
/// For tests: calls `fn` with each compiled SIMD target this machine supports forced in turn
/// (not thread-safe), then restores the normal dispatch.
void ForEachFusedSimdTarget(const std::function<void(const char* target)>& fn);

}  // namespace kiln::compute::cpu
