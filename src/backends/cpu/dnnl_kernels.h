#pragma once
// The cpu backend's oneDNN kernels by op: each returns an empty choice when oneDNN cannot run the
// node exactly (the reference kernel runs it then).

#include <dnnl.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernels.h"
#include "core/check.h"

namespace kiln::compute::cpu {

/// The kernel `name` that calls run(in, out), a oneDNN error in a call becoming a kiln::Error
/// naming the graph op `op` and the kernel; `own_threads` as KernelChoice's (a oneDNN call on
/// more than one thread).
template <class F>
KernelChoice GuardedDnnlKernel(const char* op, std::string name, bool own_threads, F run) {
  return {[op, name, run = std::move(run)](ref::Operands in, uint8_t* out) {
            try {
              run(in, out);
            } catch (const dnnl::error& e) {
              detail::Throw("{}: oneDNN kernel {} failed: {}", op, name, e.what());
            }
          },
          name, own_threads};
}

/// `threads`: the most threads the kernel may use (contractions of at most kSingleThreadMacs
/// multiply-adds use one); `team`: the size of the program team it may split into when the
/// program runs on one (1: none; see KernelChoice::team_work).
/// DotGeneral in Float32 (or BFloat16, dnnl_util::ContractionType) as a oneDNN matmul over
/// [B, M, K] x [B, K, N] (dnnl_matmul.cc), with `epilogue` (when not null; its bias is operand 2)
/// as the matmul's bias and post-op.
KernelChoice MakeDnnlMatmul(int threads, int team, const Instruction& inst,
                            const std::vector<Shape>& operands, const Epilogue* epilogue);

/// ConvGeneral in Float32 (or BFloat16, as above) as a oneDNN forward convolution, or, for
/// input-dilated convolutions, a backward-data convolution (dnnl_conv.cc); `epilogue` (when not
/// null) only on forward ones. With `constant_kernel` (operand 1 never changes) the weights are
/// reordered once.
KernelChoice MakeDnnlConv(int threads, const Instruction& inst, const std::vector<Shape>& operands,
                          const Epilogue* epilogue, bool constant_kernel = false);

/// A 2-D Float32 ConvGeneral with unit strides and no input dilation or groups whose features
/// ShiftConvPays for, as one dnnl_sgemm per block of images and a shift-add (conv_shift.cc);
/// `epilogue` (when not null) is applied to the sums. Empty when the convolution is not of that
/// form or its input is not a plain matrix per image (features last, or planes of positions).
KernelChoice MakeShiftConv(int threads, const Instruction& inst, const std::vector<Shape>& operands,
                           const Epilogue* epilogue);

/// Whether a convolution of `in` to `out` features runs faster as a product and a shift-add than
/// on oneDNN, which pads the output features to a vector of 16: at most 4 output features from
/// 16 or more inputs, or one from 4 or more (28x28 images, 5x5, batch 128, 2 threads, three
/// interleaved rounds of `kiln_bench --benchmark_filter=conv_few/` against the oneDNN kernel:
/// 32 to 1 feature 1.65-2.16 against 6.64-8.09 ms, 32 to 4 3.94-4.46 against 6.63-8.60, 16 to 4
/// 2.03-2.96 against 3.83-4.77, 4 to 1 0.53-0.73 against 1.36-1.72; 8 to 4 tied, 2.38-2.52
/// against 2.34-2.71; 32 to 8 on the harness 11.2 against 7.7).
constexpr bool ShiftConvPays(int64_t in, int64_t out) {
  return (out <= 4 && in >= 16) || (out == 1 && in >= 4);
}

/// MakeShiftConv or MakeDnnlConv for a ConvGeneral, MakeDnnlMatmul for a DotGeneral, nothing for
/// another op.
KernelChoice MakeDnnlContraction(int threads, int team, const Instruction& inst,
                                 const std::vector<Shape>& operands, const Epilogue* epilogue,
                                 bool constant_kernel = false);

/// Whether oneDNN runs BFloat16 contraction `inst` (its operands defined in `nodes`) with
/// `epilogue` (or none) on the CPU's bfloat16 instructions: such a kernel exists (none without
/// those instructions, nor where oneDNN has only its reference kernel). widen.cc asks before
/// leaving a contraction BFloat16, epilogue.cc before giving one a bias.
bool DnnlRunsBFloat16(const Instruction& inst, const std::vector<Node>& nodes, const Epilogue* epilogue);

/// Transpose of 4-byte elements (Float32, Int32, Uint32) of at least kMinReorderElements as a
/// oneDNN reorder (dnnl_reorder.cc): the operand viewed through the permuted strides, copied
/// dense by oneDNN's jitted, multi-threaded copy (bits unchanged: it moves Int32s).
KernelChoice MakeDnnlTranspose(int threads, const Instruction& inst, const Shape& operand);
/// Below this, the reference kernel's copy is faster than setting up a oneDNN call (measured in
/// dnnl_reorder.cc).
inline constexpr int64_t kMinReorderElements = int64_t{1} << 15;

/// The oneDNN post-ops of an epilogue's activation: Logistic and HardSwish. oneDNN's relu turns NaN into 0
/// where Max(x, 0) keeps it, so Relu runs as ReluInPlace right after the contraction instead,
/// while the result is still in cache.
dnnl::post_ops ActivationPostOps(const Epilogue& epilogue);

/// Applies `e` (bias along e.axis, then the activation) over `out` (dims `dims`) after the
/// contraction, on the calling thread: the loop oneDNN's post-ops would have run, for
/// contractions run without them.
void ApplyEpilogue(const Epilogue& e, std::span<const int64_t> dims, const float* bias, float* out);

/// x = Max(x, +0) over `n` floats, as the reference Max: NaN stays, -0 becomes +0. Uses `threads`
/// OpenMP threads for results larger than a core's cache, the calling thread otherwise.
void ReluInPlace(float* x, int64_t n, int threads);

}  // namespace kiln::compute::cpu
