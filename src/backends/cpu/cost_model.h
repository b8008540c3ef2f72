#pragma once
// The cpu backend's work and threading cost model, in one place: how much work a kernel and a
// program have, and the thresholds from which a kernel engages the OpenMP team. Under
// OMP_WAIT_POLICY=PASSIVE each parallel region wakes sleeping threads (45-65 us on a 2-core VM),
// so every gate below weighs a kernel's work against that wake-up.

#include <cstdint>

#include "backends/cpu/fused_program.h"
#include "backends/cpu/ir.h"

namespace kiln::compute::cpu {

/// Programs with less work than this per sizeable kernel (ProgramThreads) run every kernel on
/// the calling thread (the default of the backend's `serial_work` option). Measured
/// (`kiln_bench --benchmark_filter='infer(_sweep)?/cnn|size_sweep'` with cpu:threads=1 and
/// cpu:threads=2,serial_work=0): the CNN's inference (3 sizeable kernels) is faster on one thread
/// at batch 1 and 2 (12M and 25M multiply-adds), on two from batch 4 (49M); the fixed elementwise
/// chain alone (cost 15 per element) on one thread up to 262K elements (3.9M), on two from 1M
/// (15.7M).
inline constexpr int64_t kSmallProgramWork = int64_t{1} << 23;

/// The same threshold when the team spins between parallel regions (OpenMP's default wait
/// policy, or ACTIVE): a region then costs a few microseconds, not a wake-up. Measured with
/// `kiln_bench --benchmark_filter='^onnx/ppocr_(svtr|cls)_b1/'` at serial_work 2^23, 2^21, 2^19
/// and 0 (three runs each): PP-OCRv4's transformer encoder at batch 1 (10M multiply-adds, 8
/// sizeable kernels) 0.31-0.32 ms, 0.31-0.32, 0.25 and 0.26-0.38 ms; the mobile classifier at batch
/// 1 0.74-0.84, 0.72-0.87, 0.66 and 0.72-0.90 ms. Under OMP_WAIT_POLICY=PASSIVE the same 2^19
/// made them 0.81-0.88 ms (against 0.34-0.36) and 4.3-5.3 ms (against 0.78-0.96).
inline constexpr int64_t kSpinningProgramWork = int64_t{1} << 19;

/// The default of `serial_work`: kSmallProgramWork when OpenMP's threads sleep between parallel
/// regions ($OMP_WAIT_POLICY=PASSIVE, or $GOMP_SPINCOUNT=0), else kSpinningProgramWork.
int64_t DefaultSerialWork();

/// Products this small run on the calling thread: waking the OpenMP team costs more than it
/// saves (measured on the 2-core bench machine, minimum over 3000 calls of Exec::Call: 32x128x128
/// takes 6.2 us on one thread and 7.1 us on two, 64x128x128 10.0 and 7.8 us). This includes
/// matrix-vector products with large weights: alone, 1x512x512 gains from a second core's
/// bandwidth (22.3 us on one thread, 17.4 us on two), but in a model each product pays the
/// team's wake-up again (OMP_WAIT_POLICY=PASSIVE, as the bench runs): the MLP 784-512-512-10 at
/// batch 1 answers in 71 us on one thread against 142 us on two. (On a program team, whose helpers
/// spin between executions, such products split their contraction instead: dnnl_matmul.cc's
/// AddContractionBlocks.)
inline constexpr int64_t kSingleThreadMacs = int64_t{1} << 19;

/// The same threshold when the team spins between parallel regions (OpenMP's default wait
/// policy): a region costs microseconds, and a matrix-vector product with weights of a few
/// hundred KB gains a second core's bandwidth. Measured with `kiln_lm_bench generate` (a
/// Llama-shaped model at batch 1, KILN_CPU_PROFILE=1): the key and value projections 1x768x256
/// (197K multiply-adds, 786 KB of weights) take 0.104 ms on one thread and 0.062-0.096 ms on two
/// (means over their 40 calls per run, two runs each, on a busy host).
inline constexpr int64_t kSpinningSingleThreadMacs = int64_t{1} << 16;

/// kSingleThreadMacs when OpenMP's threads sleep between regions (as DefaultSerialWork decides),
/// else kSpinningSingleThreadMacs.
int64_t SingleThreadMacs();

/// A rough cost per element of a fused program (loads, ops and the store; each op weighs its
/// Cost column of fused_ops.def): the threading gate multiplies it by the element count.
int64_t FusedCost(const FusedSpec& spec);

/// Work (elements times FusedCost) from which a fused kernel splits across the OpenMP team; below
/// it, the calling thread runs it alone. Measured on this 2-core machine (threads=2 against
/// threads=1 with the gate off, medians of 3000 calls): the fixed chain exp(relu(2x+1))/2 - x
/// (cost 15) is faster on two threads from 8-16K elements (0.12-0.25M work), x*3+1 (cost 4)
/// from 64-128K elements (0.26-0.52M); below, waking the team costs more than it saves.
inline constexpr int64_t kFusedParallelWork = int64_t{1} << 18;

/// Work per element of a row normalisation (row_norms.cc), in FusedCost's units.
inline constexpr int64_t kRowNormCost = 10;

/// Work (result elements times window taps) from which a window kernel splits across the
/// OpenMP team. Not measured on its own: a tap is a load and a compare or two, about half the
/// work per element of the fused chain x*3+1 (cost 4), which pays for a second thread from
/// 64-128K elements (kFusedParallelWork), hence 128K taps.
inline constexpr int64_t kPoolParallelWork = int64_t{1} << 17;

/// Rough work of a node's kernel: the multiply-adds of a contraction; otherwise its largest
/// operand's or result's elements (times the program cost of a fused group).
int64_t NodeWork(const Module& m, const Node& node);
/// Kernels with at least this much work count as sizeable (the GEMM gate, kSingleThreadMacs).
inline constexpr int64_t kSizeableKernelWork = int64_t{1} << 19;
struct ProgramLoad {
  int64_t work = 0;  ///< The sum of NodeWork.
  int sizeable = 0;  ///< Kernels of at least kSizeableKernelWork.
};
ProgramLoad ProgramWork(const Module& m);
/// The team size a program's kernels may use: `threads`, or 1 when its work is below
/// `serial_work` per sizeable kernel (each may wake the team; at least one counted).
int ProgramThreads(const Module& m, int threads, int64_t serial_work = kSmallProgramWork);

}  // namespace kiln::compute::cpu
