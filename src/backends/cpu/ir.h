#pragma once
// The cpu compiler's program: a mutable copy of compute::Program that the passes rewrite
// (dead code, common subexpressions, fusion) before the memory plan and the kernel list.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/program.h"

namespace kiln::compute::cpu {

struct FusedSpec;  // fusion.h: a group of elementwise ops run as one kernel.

/// The activation a contraction's epilogue applies last.
enum class Activation : uint8_t { kNone, kRelu, kLogistic };

/// What a DotGeneral or ConvGeneral node computes after its sum (epilogue.cc): a bias added
/// along one result axis, then an activation; the contraction's kernel applies both.
struct Epilogue {
  bool bias = false;  ///< Operand 2, a vector as long as result axis `axis`, is added along it.
  int64_t axis = -1;
  Activation activation = Activation::kNone;
  /// "bias(axis 1), Relu", for listings.
  std::string ToString() const;
};

/// One node: an instruction (operands are node ids), or a fused group standing in for several.
struct Node {
  Instruction inst;
  /// Set for a fused kernel: `inst.operands` are the group's inputs, `inst.shape` its result.
  std::shared_ptr<const FusedSpec> fused;
  /// Set on a contraction that carries an epilogue: `inst.operands` gain the bias after the two
  /// contraction operands and `inst.shape` is the epilogue's result.
  std::shared_ptr<const Epilogue> epilogue = nullptr;
  /// A multi-output fused node: the values its kernel also writes (node ids, in the order of its
  /// spec's extra results). Each such node has `written_by` set, no operands and no kernel.
  std::vector<int> writes = {};
  int written_by = -1;
};

struct Module {
  std::vector<Node> nodes;  ///< Topological order; Parameters carry their index in attrs.index.
  std::vector<int> outputs;
  std::vector<bool> donatable;
  /// One line per node ("%3 = Add(%1, %2) : (Float32)[2, 3]", fused groups spelled out).
  std::string ToString() const;
};

Module FromProgram(const Program& program);

/// Appends a node computing `inst` to `nodes`; returns its id.
int AppendNode(std::vector<Node>& nodes, Instruction inst);

/// The scaffolding of passes that insert nodes: rebuilds `m` node by node in order. Each node's
/// operands are renumbered to the rebuilt ids, then `rewrite(node, old_operands, nodes)` may
/// append nodes to `nodes` (the module rebuilt so far) and return the id that stands for the
/// node, or -1 to keep the node as it is. Outputs are renumbered at the end.
using NodeRewrite =
    std::function<int(Node& node, const std::vector<int>& old_operands, std::vector<Node>& nodes)>;
void RebuildModule(Module& m, const NodeRewrite& rewrite);

/// Drops nodes no output needs (parameters stay: they are the signature) and renumbers.
void EliminateDeadCode(Module& m);
/// Merges nodes computing the same op with the same operands and attributes (never Parameters,
/// tuple ops or ops with sub-programs, so nothing crosses an OptimizationBarrier), then drops
/// the copies. Returns how many nodes were merged.
int EliminateCommonSubexpressions(Module& m);

struct Options;

/// Constant folding and algebraic simplification (simplify.cc): never materialises a folded
/// value over 64 KiB (broadcasts of scalars stay symbolic), never looks through an
/// OptimizationBarrier. Returns how many nodes were rewritten.
int Simplify(Module& m);

/// Half-precision contractions (widen.cc): a DotGeneral or ConvGeneral of Float16 or BFloat16
/// operands and result becomes ConvertDType(the Float32 contraction of converted operands), so
/// that it runs on the Float32 kernels. Returns how many it rewrote.
int WidenHalfContractions(Module& m);

/// ReduceWindow-max(Max(x, +0)) -> Max(ReduceWindow-max(x), +0) when the relu has no other
/// reader (epilogue.cc): the relu then runs on the pooled values (a quarter of them for 2x2
/// pooling), and the contraction before it keeps its bias epilogue. Max and relu commute (NaN
/// propagates through both, -0 becomes +0 either way) when every window covers an operand
/// element (no window only of padding). Float32. Returns a readable account of the rewrites.
std::string CommuteReluWithMaxPool(Module& m);

/// Contraction epilogues (epilogue.cc): a Transpose that only swaps a DotGeneral's free axes
/// becomes the DotGeneral with its operands swapped; an Add of a bias broadcast along the result's
/// feature axis and then Max(x, +0) or Logistic move into the DotGeneral or ConvGeneral before them,
/// when the intermediate values have no other reader. Float32 only. Returns a readable account
/// of the rewrites (for KILN_CPU_DUMP).
std::string FuseEpilogues(Module& m);

/// Multi-output fusion (fusion.cc): a fused elementwise group whose result is a program output
/// and is otherwise read only by another fused group of the same shape (element for element)
/// is computed inside that group, which stores it as an extra result: an optimizer's new moments
/// and its new parameter in one pass over memory. Runs last (no pass renumbers nodes after it).
/// Returns a readable account.
std::string MergeFusedOutputs(Module& m);

/// Elementwise fusion (fusion.cc): replaces chains of elementwise ops (with their broadcasts and
/// conversions) by fused nodes. Returns a readable account of the decisions (for KILN_CPU_DUMP).
std::string FuseElementwise(Module& m, const Options& options);

}  // namespace kiln::compute::cpu
