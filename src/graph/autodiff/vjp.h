#pragma once
// The gradient-rule registry: one entry per primitive of ops.def, saying how the adjoint of its
// result flows back to its operands (a vector-Jacobian product built from ordinary ops).
//
// A rule reads the forward values through the context (X(i), Y()), never through the node's
// operands directly: inside a checkpointed block those are recomputed copies.

#include <functional>
#include <string>
#include <vector>

#include "compute/shape_dims.h"
#include "kiln/compute/program.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/ops.h"

namespace kiln::graph::autodiff {

/// What a rule sees for one forward node.
class VJPContext {
 public:
  using Remat = std::function<Node(Node)>;
  VJPContext(Node node, std::vector<Node> adjoints, std::vector<bool> needs, Remat remat)
      : node_(node), adjoints_(std::move(adjoints)), needs_(std::move(needs)), remat_(std::move(remat)) {}

  /// The forward node (its id, op, attributes and shapes; not for reading values).
  Node node() const { return node_; }
  Graph& graph() const { return node_.graph(); }
  const compute::Instruction& inst() const { return graph().instruction(node_.id()); }
  const compute::OpAttributes& attrs() const { return inst().attrs; }
  int NumOperands() const { return static_cast<int>(inst().operands.size()); }
  const Shape& OperandShape(int i) const { return graph().instruction(inst().operands.at(i)).shape; }
  /// Forward value of operand i (recomputed when it lies in a checkpointed block).
  Node X(int i) const { return remat_(node_.operands().at(static_cast<size_t>(i))); }
  /// Forward value of the node (non-tuple ops).
  Node Y() const { return remat_(node_); }
  /// The adjoint of the result (non-tuple ops), of the node's shape.
  Node Adjoint() const { return adjoints_.at(0); }
  /// Tuple ops: the adjoint of each result; invalid where none flowed (zero).
  const std::vector<Node>& Adjoints() const { return adjoints_; }
  /// Whether operand i wants a gradient (float and depending on a target); a rule may return
  /// an invalid Node for the others.
  bool Needs(int i) const { return needs_.at(static_cast<size_t>(i)); }

 private:
  Node node_;
  std::vector<Node> adjoints_;
  std::vector<bool> needs_;
  Remat remat_;
};

/// A rule returns one Node per operand: its adjoint (of the operand's shape and dtype), or an
/// invalid Node for no contribution.
using Rule = std::vector<Node> (*)(const VJPContext&);

enum class RuleKind : uint8_t {
  kMissing,  ///< Not registered (a test fails for any such op).
  kRule,     ///< Differentiable through `rule`.
  kZero,     ///< Derivative zero wherever defined (Floor, Sign, StopGradient...): nothing flows.
  kNone,     ///< No gradient: reaching it with an adjoint is a kiln::Error carrying `why`.
  kSpecial,  ///< Handled by the sweep itself (leaves, GetTupleElement).
};

struct RuleEntry {
  RuleKind kind = RuleKind::kMissing;
  Rule rule = nullptr;
  std::string why;
};

class RuleTable {
 public:
  RuleTable();
  void Set(compute::OpType op, Rule rule) { At(op) = {RuleKind::kRule, rule, {}}; }
  void Zero(compute::OpType op, std::string why) { At(op) = {RuleKind::kZero, nullptr, std::move(why)}; }
  void None(compute::OpType op, std::string why) { At(op) = {RuleKind::kNone, nullptr, std::move(why)}; }
  void Special(compute::OpType op) { At(op) = {RuleKind::kSpecial, nullptr, {}}; }
  const RuleEntry& Get(compute::OpType op) const { return entries_.at(static_cast<size_t>(op)); }

 private:
  RuleEntry& At(compute::OpType op) { return entries_.at(static_cast<size_t>(op)); }
  std::vector<RuleEntry> entries_;
};

/// The table, built once.
const RuleTable& Rules();

// Registration, one function per family (rules_*.cc).
void RegisterElementwiseRules(RuleTable& t);
void RegisterReduceRules(RuleTable& t);
void RegisterMovementRules(RuleTable& t);
void RegisterDotRules(RuleTable& t);
void RegisterConvRules(RuleTable& t);
void RegisterWindowRules(RuleTable& t);
void RegisterIndexingRules(RuleTable& t);
void RegisterSortScanRules(RuleTable& t);
void RegisterControlRules(RuleTable& t);
void RegisterComplexRules(RuleTable& t);
void RegisterCollectiveRules(RuleTable& t);

// ---- Helpers rules share ----------------------------------------------------------------------

/// Appends primitive `op` (no broadcasting; exact operand shapes).
inline Node Prim(compute::OpType op, const std::vector<Node>& operands, compute::OpAttributes attrs = {}) {
  return operands.at(0).graph().AddOp(op, operands, std::move(attrs));
}
/// Whether values of `dtype` receive adjoints: floats and complex numbers.
inline bool Differentiable(DType dtype) { return IsFloat(dtype) || IsComplex(dtype); }
/// A zero scalar of x's dtype broadcast to x's shape.
Node ZerosOf(Graph& g, const Shape& shape);
using compute::KnownEmpty;
/// A scalar constant of `like`'s dtype broadcast to `like`'s shape.
Node Fill(Node like, double value);

}  // namespace kiln::graph::autodiff
