#pragma once
// The cpu compiler's passes over a Module, in the order CompileModule (compiler.h) runs them.
// Each returns a PassReport: how many nodes it rewrote and, for the fusion passes, a readable
// account of its decisions for KILN_CPU_DUMP.

#include <cstdint>
#include <string>

#include "backends/cpu/ir.h"

namespace kiln::compute::cpu {

/// Values up to this size computed between a fused node and the group it joins (or the group it
/// is merged into) cost little to keep alive: nodes join only groups close enough by this measure,
/// so that their inputs do not live much longer.
inline constexpr int64_t kCheapValueBytes = 4096;

/// Whether every node strictly between a and b computes at most kCheapValueBytes (no tuple, no
/// dynamic shape): a value used at b instead of a then lives little longer.
bool CheapBetween(const Module& m, int a, int b);

/// What a pass did.
struct PassReport {
  int count = 0;    ///< Nodes rewritten, merged or dropped.
  std::string log;  ///< One line per decision ("  fused %7: ..."), empty for the cleanups.
};

/// Drops nodes no output needs (parameters stay: they are the signature) and renumbers. Counts
/// the nodes dropped.
PassReport EliminateDeadCode(Module& m);
/// Merges nodes computing the same op with the same operands and attributes (never Parameters,
/// tuple ops or ops with sub-programs, so nothing crosses an OptimizationBarrier), then drops
/// the copies. Counts the nodes merged.
PassReport EliminateCommonSubexpressions(Module& m);

/// Constant folding and algebraic simplification (simplify.cc): never materialises a folded
/// value over 64 KiB (broadcasts stay symbolic: elementwise ops move past them), never looks through an
/// OptimizationBarrier. Counts the nodes rewritten.
PassReport Simplify(Module& m);

/// Half-precision contractions and reductions (widen.cc): a DotGeneral or ConvGeneral (but a
/// BFloat16 one oneDNN runs on the CPU's bfloat16 instructions), a ReduceSum/Max/Min, ReduceWindow or
/// SelectAndScatter of Float16 or BFloat16 operands and result becomes ConvertDType(the Float32
/// op on converted operands), so that it runs on the Float32 kernels. Counts the contractions
/// rewritten; the log says how many reductions were.
PassReport WidenHalfContractions(Module& m);

/// Channels-last layout (layout.cc): Float32 convolutions with NCHW input and result run on NHWC
/// values. Each value is held in its written layout or one permuted layout; elementwise ops,
/// reductions, windowed reductions, pads, slices, concatenations, transposes, broadcasts and
/// reshapes follow their operands' layout where that costs no copy, and a Transpose is made only
/// where a value is needed in a layout it lacks (once per value and layout), so consecutive
/// convolutions pass NHWC values without reordering. Counts the convolutions moved; the log line
/// counts the transposes.
PassReport ConvolutionsChannelsLast(Module& m);

/// ReduceWindow-max(Max(x, +0)) -> Max(ReduceWindow-max(x), +0) when the relu has no other
/// reader (epilogue.cc): the relu then runs on the pooled values (a quarter of them for 2x2
/// pooling), and the contraction before it keeps its bias epilogue. Max and relu commute (NaN
/// propagates through both, -0 becomes +0 either way) when every window covers an operand
/// element (no window only of padding). Float32. Returns a readable account of the rewrites.
PassReport CommuteReluWithMaxPool(Module& m);

/// Row normalisations (row_norms.cc): a softmax or a layer normalisation over the last axis,
/// written out in primitives, becomes one kRowNorm node when the values it computes on the way
/// have no other reader. Float32 only.
PassReport FuseRowNorms(Module& m);

/// Contraction epilogues (epilogue.cc): a Transpose that only swaps a DotGeneral's free axes
/// becomes the DotGeneral with its operands swapped; an Add of a bias broadcast along the result's
/// feature axis and then Max(x, +0), Logistic or HardSwish (written out) move into the DotGeneral or
/// ConvGeneral before them,
/// when the intermediate values have no other reader. Float32 only. Returns a readable account
/// of the rewrites (for KILN_CPU_DUMP).
PassReport FuseEpilogues(Module& m);

/// Div(AllReduce-sum(x), c), c a Float32 constant read only there, becomes the AllReduce with
/// `collective_divisor` c (collective_mean.cc): the collective's kernel divides the sums while they
/// are in cache, as Div would. Returns a readable account.
PassReport FoldMeanIntoAllReduce(Module& m);

/// Multi-output fusion (fusion_merge.cc): a fused elementwise group read element for element by
/// another fused group of the same shape or by a fused reduction, when it is a program output or
/// its other readers all come later, is computed inside that reader, which stores it as an extra
/// result: an optimizer's new moments and its new parameter in one pass over memory; a ReLU
/// gradient and its bias gradient's sums. Runs last (no pass renumbers nodes after it). Returns a
/// readable account.
PassReport MergeFusedOutputs(Module& m);
/// A SelectAndScatter read only by a fused node (elementwise or a fused reduction's program),
/// element for element, that the pool kernels can compute by runs (ScatterRunsByRange) becomes
/// that node's windowed input (fusion_scatter.cc): the node reads the SelectAndScatter's operand
/// and source and computes the scattered values piece by piece, so they are never written out (a
/// max-pool's gradient, its ReLU mask and its bias gradient in one pass). Runs after
/// FuseElementwise and before MergeFusedOutputs; leaves the SelectAndScatter dead.
PassReport FuseSelectAndScatter(Module& m);

/// Elementwise fusion (fusion_group.cc, its programs from fusion_codegen.cc): replaces chains of elementwise
/// ops (with their broadcasts and conversions) by fused nodes. Returns a readable account of the decisions
/// (for KILN_CPU_DUMP).
PassReport FuseElementwise(Module& m);

}  // namespace kiln::compute::cpu
