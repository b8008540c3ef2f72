#pragma once
// The pieces of the cpu compiler's Simplify pass (simplify.cc drives them): the module being
// rebuilt node by node, and the two rule sets, constant folding (simplify_fold.cc) and algebraic
// simplification (simplify_algebra.cc).

#include <cstdint>
#include <vector>

#include "backends/cpu/ir.h"

namespace kiln::compute::cpu::simplify {

/// No folded value is materialised above this many bytes.
inline constexpr int64_t kMaxFoldBytes = 64 * 1024;

/// The module being rebuilt: the nodes emitted so far, in topological order, with their
/// operands already rewritten. Rules read operand definitions here and may emit helper nodes
/// (a scalar Constant) ahead of the node they rewrite.
class Builder {
 public:
  explicit Builder(std::vector<Node>& nodes) : nodes_(nodes) {}
  /// The instruction defining value `id`.
  const Instruction& Def(int id) const { return nodes_[static_cast<size_t>(id)].inst; }
  /// Appends `inst` as a new node; returns its id.
  int Emit(Instruction inst) {
    nodes_.push_back(Node{std::move(inst), nullptr});
    return static_cast<int>(nodes_.size()) - 1;
  }

 private:
  std::vector<Node>& nodes_;
};

/// Whether `inst` is one the rules never rewrite or fold: a tuple, an owner of sub-programs, or
/// a parameter, constant, tuple element, barrier or control-flow op.
inline bool Opaque(const Instruction& inst) {
  if (inst.IsTuple() || !inst.subprograms.empty()) return true;
  const OpType op = inst.op;
  return op == OpType::Parameter || op == OpType::Constant || op == OpType::GetTupleElement ||
         op == OpType::OptimizationBarrier || op == OpType::While || op == OpType::If ||
         op == OpType::Composite || GetOpCategory(op) == OpCategory::Collective;
}

/// An instruction with no attributes set.
inline Instruction MakeInstruction(OpType op, std::vector<int> operands, const Shape& shape) {
  Instruction inst;
  inst.op = op;
  inst.operands = std::move(operands);
  inst.shape = shape;
  return inst;
}

/// What a rule decided for one node: nothing, use another value instead, or compute `inst`.
struct Rewrite {
  enum class Kind { kNone, kRedirect, kReplace };
  Kind kind = Kind::kNone;
  int target = -1;     ///< kRedirect: the value standing for the node.
  Instruction inst{};  ///< kReplace: the node's new instruction (operands are builder ids).

  static Rewrite None() { return Rewrite{}; }
  static Rewrite To(int value) {
    Rewrite r;
    r.kind = Kind::kRedirect;
    r.target = value;
    return r;
  }
  static Rewrite With(Instruction inst) {
    Rewrite r;
    r.kind = Kind::kReplace;
    r.inst = std::move(inst);
    return r;
  }
};

/// Constant folding: `inst` computed at compile time when its operands are constants (results
/// up to kMaxFoldBytes; splats, broadcasts of a one-element constant, stay symbolic).
Rewrite FoldConstants(Builder& b, const Instruction& inst);

/// Algebraic identities that are exact for every value (IEEE zeros and NaN included).
Rewrite SimplifyAlgebra(Builder& b, const Instruction& inst);

// ---- Helpers shared by the rule sets --------------------------------------------------------

/// Whether `op` is elementwise (unary, binary, compare, select or a dtype conversion).
bool IsElementwise(OpType op);

/// Whether `p` maps every axis to itself.
bool IsIdentityPermutation(const std::vector<int64_t>& p);

/// The one-element Constant behind value `id` when `id` is a splat: that Constant itself (one
/// element) or a BroadcastInDim of it. -1 otherwise.
int SplatSource(const Builder& b, int id);

/// A rank-0 Constant holding the element of the one-element Constant `source` (itself if it is
/// rank 0, else a new node).
int ScalarConstant(Builder& b, int source);

/// BroadcastInDim of the rank-0 value `scalar` to `shape` (the value itself when `shape` is a
/// scalar shape).
Rewrite SplatTo(int scalar, const Shape& shape);

}  // namespace kiln::compute::cpu::simplify
