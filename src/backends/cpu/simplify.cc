// The cpu compiler's Simplify pass: rebuilds the module node by node in topological order,
// applying constant folding (simplify_fold.cc) and algebraic simplification
// (simplify_algebra.cc) to each node until neither changes it. A rewritten node either stands
// for another value (its uses are redirected) or gets a new instruction; rules may add helper
// nodes (scalar constants) ahead of it. Duplicates the rewrites made are merged at the end;
// nodes left unused are dropped by the DCE that follows.

#include "backends/cpu/passes.h"
#include "backends/cpu/simplify_rules.h"

namespace kiln::compute::cpu {

namespace {

/// Rewrites applied to one node at most (each shrinks or canonicalises it; this only bounds).
constexpr int kMaxRewritesPerNode = 16;
/// Passes over the module at most (one usually reaches the fixed point).
constexpr int kMaxPasses = 4;

/// Whether the rules may touch `node`: never the signature, tuple ops, barriers and their
/// results, sub-program owners or fused groups.
bool Rewritable(const Node& node) {
  return node.kind == NodeKind::kPrimitive && !simplify::Opaque(node.inst);
}

/// One pass over `m`; returns how many nodes it rewrote.
int SimplifyPass(Module& m) {
  std::vector<Node> nodes;
  nodes.reserve(m.nodes.size());
  simplify::Builder b(nodes);
  std::vector<int> to(m.nodes.size(), -1);  // Old id -> new id.
  int rewrites = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    Node node = std::move(m.nodes[i]);
    for (int& o : node.inst.operands) o = to[static_cast<size_t>(o)];
    if (!Rewritable(node)) {
      nodes.push_back(std::move(node));
      to[i] = static_cast<int>(nodes.size()) - 1;
      continue;
    }
    Instruction inst = std::move(node.inst);
    int redirect = -1;
    bool changed = false;
    for (int k = 0; k < kMaxRewritesPerNode && redirect < 0; ++k) {
      simplify::Rewrite r = simplify::FoldConstants(b, inst);
      if (r.kind == simplify::Rewrite::Kind::kNone) r = simplify::SimplifyAlgebra(b, inst);
      if (r.kind == simplify::Rewrite::Kind::kNone) break;
      changed = true;
      if (r.kind == simplify::Rewrite::Kind::kRedirect) {
        redirect = r.target;
      } else {
        inst = std::move(r.inst);
        if (inst.op == OpType::Constant) break;
      }
    }
    rewrites += changed ? 1 : 0;
    to[i] = redirect >= 0 ? redirect : b.Emit(std::move(inst));
  }
  for (int& o : m.outputs) o = to[static_cast<size_t>(o)];
  m.nodes = std::move(nodes);
  return rewrites;
}

}  // namespace

PassReport Simplify(Module& m) {
  int total = 0;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    const int rewrites = SimplifyPass(m);
    total += rewrites;
    if (rewrites == 0) break;
  }
  // Folding makes equal constants and splats (0 * 1 and the 0 already there): merge them.
  if (total > 0) total += EliminateCommonSubexpressions(m).count;
  return {total, {}};
}

}  // namespace kiln::compute::cpu
