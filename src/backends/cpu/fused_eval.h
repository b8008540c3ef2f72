#pragma once
// The fused evaluator: runs a FusedSpec over pieces of its result, for the elementwise kernel
// (fused_kernel.cc) and the fused reductions (fused_reduce.cc).

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backends/cpu/fused_program.h"
#include "backends/cpu/vprogram_jit.h"

namespace kiln::compute::cpu {

/// An input of a fused program whose values are computed per piece instead of read (a
/// SelectAndScatter's result, WindowedInput): fill(in, start, len, dst) writes its elements
/// [start, start + len) to dst, `in` being all the kernel's inputs (the program's, then any the
/// fill reads after them, `reads_after` of those). `input` -1: none.
struct ComputedInput {
  int input = -1;
  size_t reads_after = 0;
  std::function<void(std::span<const uint8_t* const> in, int64_t start, int64_t len, float* dst)> fill;
};

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

  /// `simd`: the SIMD kernels (else their scalar forms); `jit`: the vector program compiled to
  /// machine code where VProgramJit compiles it (else the interpreter runs it).
  FusedEvaluator(std::shared_ptr<const FusedSpec> spec, bool simd, bool jit, ComputedInput computed = {});

  const FusedSpec& spec() const { return *spec_; }
  /// Whether the vector program runs as compiled code (on an AVX-512 target).
  bool compiled() const { return jit_ != nullptr; }
  /// How the kernels' names mark the program's form: ".scalar" (the scalar forms), ".jit"
  /// (compiled) or nothing (SIMD, interpreted).
  const char* FormSuffix() const { return !simd_ ? ".scalar" : compiled() ? ".jit" : ""; }
  /// Result elements.
  int64_t size() const { return n_; }
  /// The kernel's inputs: the program's, then those its computed input reads after them.
  size_t num_inputs() const { return spec_->inputs.size() + computed_.reads_after; }
  /// For a kernel whose results may take the buffers of its inputs (in place): copies of the
  /// program's inputs in `in` that one of the `written` buffers is but that the program does not
  /// read element for element (a broadcast or strided input, or the computed input's operand read
  /// through windows, would be read after a piece wrote over it); `in` then points at the copies,
  /// which the caller keeps until the kernel is done.
  std::vector<std::vector<uint8_t>> CopyInputsWrittenOver(std::vector<const uint8_t*>& in,
                                                          const std::vector<const uint8_t*>& written) const;
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
  /// A Scratch set up for this program, from the calling thread's pool, back to it when the
  /// lease ends: a kernel called over and over reuses the buffers (allocating and zeroing them
  /// per call cost more than small kernels' work).
  class ScratchLease {
   public:
    explicit ScratchLease(std::unique_ptr<Scratch> s) : s_(std::move(s)) {}
    ScratchLease(ScratchLease&&) = default;
    ScratchLease& operator=(ScratchLease&&) = delete;
    ScratchLease(const ScratchLease&) = delete;
    ScratchLease& operator=(const ScratchLease&) = delete;
    ~ScratchLease();
    Scratch& operator*() const { return *s_; }

   private:
    std::unique_ptr<Scratch> s_;
  };
  ScratchLease NewScratch() const;
  /// Computes result elements [start, start + len) (len <= kTile) into float32 and returns where
  /// they are: `direct` when it is not null and the program can write there, else a register.
  const float* Eval(std::span<const uint8_t* const> in, int64_t start, int64_t len, Scratch& scratch,
                    float* direct) const;
  /// One compute instruction, SIMD or scalar.
  void Op(FOp op, const float* a, const float* b, const float* c, float* out, size_t count) const;

 private:
  /// How an input is read within one row.
  enum class Read : uint8_t { kGather, kContiguous, kBroadcast };
  /// Input `input`'s values at [start, start + len): a pointer into its data, or `dst` filled
  /// (by the computed input's fill, for that input).
  void Load(size_t input, std::span<const uint8_t* const> in, int64_t start, int64_t len, float* dst,
            int64_t& filled, const float** at) const;
  /// The same by an index walk over the input's strides (any piece).
  void Gather(size_t input, const uint8_t* data, int64_t start, int64_t len, float* dst) const;

  /// Eval through the vector program.
  const float* EvalVector(std::span<const uint8_t* const> in, int64_t start, int64_t len, Scratch& scratch,
                          float* direct) const;

  std::shared_ptr<const FusedSpec> spec_;
  ComputedInput computed_;
  bool simd_ = true;
  VProgram vprog_;                          ///< Empty when the SIMD path runs the instructions one pass each.
  std::shared_ptr<const VProgramJit> jit_;  ///< vprog_ compiled, or null.

  int64_t n_ = 0, inner_ = 1;
  std::vector<int64_t> out_strides_;
  std::vector<Read> read_;                   ///< Per input.
  std::vector<bool> keep_;                   ///< Per input: its register holds it all along.
  std::vector<std::vector<int64_t>> outer_;  ///< Per input: its strides over the row axes.
  size_t row_axes_ = 0;                      ///< Axes before the inner run.
};

struct Node;
/// The evaluator of a fused node's program (kFused or kFusedReduce), its windowed input (a fused
/// SelectAndScatter) computed by the pool kernels' range form (fused_kernel.cc).
std::shared_ptr<const FusedEvaluator> MakeNodeEvaluator(const Node& node, bool simd, bool jit);

}  // namespace kiln::compute::cpu
