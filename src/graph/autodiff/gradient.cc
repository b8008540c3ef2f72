// Reverse-mode automatic differentiation: the backward sweep over a graph, checkpoint
// rematerialisation, custom gradients, and the rule table.

#include "kiln/graph/gradient.h"

#include <algorithm>
#include <unordered_map>

#include "core/check.h"
#include "graph/autodiff/vjp.h"
#include "kiln/graph/control_flow.h"

namespace kiln::graph {

using compute::OpType;

namespace autodiff {

RuleTable::RuleTable() : entries_(static_cast<size_t>(compute::kNumOps)) {}

const RuleTable& Rules() {
  static const RuleTable table = [] {
    RuleTable t;
    t.Special(OpType::Parameter);
    t.Special(OpType::Constant);
    t.Special(OpType::Iota);
    t.Special(OpType::GetTupleElement);
    RegisterElementwiseRules(t);
    RegisterReduceRules(t);
    RegisterMovementRules(t);
    RegisterDotRules(t);
    RegisterConvRules(t);
    RegisterWindowRules(t);
    RegisterIndexingRules(t);
    RegisterSortScanRules(t);
    RegisterCollectiveRules(t);
    RegisterControlRules(t);
    RegisterComplexRules(t);
    return t;
  }();
  return table;
}

Node ZerosOf(Graph& g, const Shape& shape) { return Zeros(g, shape); }

Node Fill(Node like, double value) { return BroadcastToShape(ScalarLike(like, value), like.shape()); }

namespace {

bool SameShape(const Shape& a, const Shape& b) {
  return a.dtype() == b.dtype() && a.Dimensions() == b.Dimensions();
}

/// Ops whose result is a cheap rearrangement of their operand.
bool IsCheapCopy(OpType op) {
  return op == OpType::BroadcastInDim || op == OpType::Reshape || op == OpType::Transpose ||
         op == OpType::ConvertDType;
}

/// Restores the graph's rematerialisation inheritance when the sweep ends (or throws).
class NoRematInheritance {
 public:
  explicit NoRematInheritance(Graph& g) : g_(g), was_(g.RematInheritance()) { g_.SetRematInheritance(false); }
  ~NoRematInheritance() { g_.SetRematInheritance(was_); }
  NoRematInheritance(const NoRematInheritance&) = delete;
  NoRematInheritance& operator=(const NoRematInheritance&) = delete;

 private:
  Graph& g_;
  bool was_;
};

/// One backward pass.
class Sweep {
 public:
  explicit Sweep(Graph& g) : g_(g) {}

  std::vector<Node> Run(const std::vector<Node>& outputs, const std::vector<Node>& adjoints,
                        const std::vector<Node>& targets) {
    NoRematInheritance guard(g_);
    int max_id = -1, min_id = g_.NumNodes();
    for (const Node& o : outputs) max_id = std::max(max_id, o.id());
    for (const Node& t : targets) min_id = std::min(min_id, t.id());
    on_path_.assign(static_cast<size_t>(g_.NumNodes()), false);
    for (const Node& t : targets) on_path_[static_cast<size_t>(t.id())] = true;
    for (int id = min_id; id <= max_id; ++id) {
      if (on_path_[static_cast<size_t>(id)]) continue;
      for (int o : g_.instruction(id).operands)
        if (on_path_[static_cast<size_t>(o)]) on_path_[static_cast<size_t>(id)] = true;
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (adjoints[i].Ok() && OnPath(outputs[i].id())) Accumulate(outputs[i].id(), 0, adjoints[i]);
    }
    for (int id = max_id; id >= min_id; --id) {
      if (!OnPath(id)) continue;
      auto it = adjoints_.find(id);
      if (it == adjoints_.end()) continue;
      Backpropagate(id, it->second);
    }
    std::vector<Node> result;
    for (const Node& t : targets) {
      auto it = adjoints_.find(t.id());
      result.push_back(it != adjoints_.end() && it->second.at(0).Ok() ? it->second[0] : Zeros(g_, t.shape()));
    }
    return result;
  }

 private:
  bool OnPath(int id) const { return on_path_[static_cast<size_t>(id)]; }

  void Accumulate(int id, size_t slot, Node adjoint) {
    std::vector<Node>& slots = adjoints_[id];
    const compute::Instruction& inst = g_.instruction(id);
    if (slots.empty()) slots.resize(inst.IsTuple() ? inst.tuple_shapes.size() : 1);
    Node& a = slots.at(slot);
    a = a.Ok() ? Add(a, adjoint) : adjoint;
  }

  /// Propagates the adjoint(s) of node `id` to its operands.
  void Backpropagate(int id, std::vector<Node> adjoints) {
    const compute::Instruction& inst = g_.instruction(id);
    Node node = g_.NodeAt(id);
    if (inst.op == OpType::GetTupleElement) {
      const int tuple = inst.operands[0];
      if (OnPath(tuple)) Accumulate(tuple, static_cast<size_t>(inst.attrs.index), adjoints[0]);
      return;
    }
    std::vector<bool> needs;
    bool any = false;
    for (int o : inst.operands) {
      const compute::Instruction& oi = g_.instruction(o);
      const bool n = OnPath(o) && (oi.IsTuple() || Differentiable(oi.shape.dtype()));
      needs.push_back(n);
      any = any || n;
    }
    if (!any) return;
    const bool remat = g_.NeedsRematerialization(id);
    Node trigger;
    for (const Node& a : adjoints)
      if (a.Ok() && !trigger.Ok()) trigger = a;
    auto view = [this, remat, trigger](Node n) { return remat ? Remat(n, trigger) : n; };

    if (const Graph::CustomGradientFn* fn = g_.CustomGradient(id)) {
      Node x = view(node.operands()[0]);
      Node gx = (*fn)(x, adjoints[0]);
      if (!gx.Ok() || &gx.graph() != &g_ || !SameShape(gx.shape(), x.shape())) {
        kiln::detail::Throw("Gradient: the custom gradient of {} returned {}, not a node of shape {}",
                            node.ToString(), gx.Ok() ? gx.shape().ToString() : std::string("an invalid node"),
                            x.shape());
      }
      Accumulate(inst.operands[0], 0, gx);
      return;
    }

    const RuleEntry& entry = Rules().Get(inst.op);
    switch (entry.kind) {
      case RuleKind::kZero:
      case RuleKind::kSpecial:
        return;
      case RuleKind::kMissing:
        kiln::detail::Throw("Gradient: no gradient rule registered for {} (a kiln bug)", node.ToString());
      case RuleKind::kNone:
        kiln::detail::Throw(
            "Gradient: {} has no gradient ({}); wrap its operands in StopGradient if no gradient should "
            "flow through it",
            node.ToString(), entry.why);
      case RuleKind::kRule:
        break;
    }
    VJPContext ctx(node, std::move(adjoints), needs, view);
    std::vector<Node> grads = entry.rule(ctx);
    if (grads.size() != inst.operands.size()) {
      kiln::detail::Throw("Gradient: the rule of {} returned {} gradients for {} operands (a kiln bug)",
                          compute::OpName(inst.op), grads.size(), inst.operands.size());
    }
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!needs[i] || !grads[i].Ok()) continue;
      const int o = inst.operands[i];
      const compute::Instruction& oi = g_.instruction(o);
      if (!SameShape(grads[i].shape(), oi.shape)) {
        kiln::detail::Throw(
            "Gradient: the rule of {} gave operand {} a gradient of shape {}, not {} (a kiln bug)",
            compute::OpName(inst.op), i, grads[i].shape(), oi.shape);
      }
      Accumulate(o, 0, grads[i]);
    }
  }

  /// The forward value of `n` for the backward pass: n itself, or inside a checkpointed block a
  /// recomputed copy, built from the block's checkpoint once the adjoint `trigger` exists.
  Node Remat(Node n, Node trigger) {
    const int id = n.id();
    if (auto it = remat_cache_.find(id); it != remat_cache_.end()) return it->second;
    const compute::Instruction& inst = g_.instruction(id);
    Node result;
    if (g_.IsCheckpoint(id)) {
      // The recomputation starts from the kept value, fenced by the adjoint so that it cannot run
      // (or be merged with the forward copy) before the backward pass reaches it.
      result = trigger.Ok() ? OptimizationBarrier({n, trigger})[0] : n;
    } else if (!g_.NeedsRematerialization(id)) {
      // Cheap reshapes of values kept anyway (a layer's broadcast weights) are recomputed too,
      // so that the block does not keep their copies alive until the backward pass.
      // Their kept operands are fenced too, or common-subexpression elimination would merge the
      // copy back into the forward one.
      if (!IsCheapCopy(inst.op)) return n;
      std::vector<Node> operands;
      for (Node o : n.operands()) {
        Node r = Remat(o, trigger);
        if (r == o && trigger.Ok()) r = OptimizationBarrier({o, trigger})[0];
        operands.push_back(r);
      }
      result = g_.AddOp(inst.op, operands, inst.attrs);
    } else if (inst.op == OpType::GetTupleElement) {
      const int tuple = inst.operands[0];
      auto it = remat_tuples_.find(tuple);
      if (it == remat_tuples_.end()) {
        const compute::Instruction& ti = g_.instruction(tuple);
        std::vector<Node> operands;
        for (Node o : g_.NodeAt(tuple).operands()) operands.push_back(Remat(o, trigger));
        it = remat_tuples_.emplace(tuple, g_.AddTupleOp(ti.op, operands, ti.attrs, ti.subprograms)).first;
      }
      result = it->second.at(static_cast<size_t>(inst.attrs.index));
    } else {
      std::vector<Node> operands;
      for (Node o : n.operands()) operands.push_back(Remat(o, trigger));
      result = g_.AddOp(inst.op, operands, inst.attrs);
    }
    remat_cache_[id] = result;
    return result;
  }

  Graph& g_;
  std::vector<bool> on_path_;
  std::unordered_map<int, std::vector<Node>> adjoints_;
  std::unordered_map<int, Node> remat_cache_;
  std::unordered_map<int, std::vector<Node>> remat_tuples_;
};

}  // namespace
}  // namespace autodiff

std::vector<Node> VJP(const std::vector<Node>& outputs, const std::vector<Node>& adjoints,
                      const std::vector<Node>& targets) {
  if (outputs.empty()) kiln::detail::Throw("VJP: no outputs");
  if (adjoints.size() != outputs.size())
    kiln::detail::Throw("VJP: {} adjoints for {} outputs", adjoints.size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].Ok()) kiln::detail::Throw("VJP: output {} is an invalid (default-constructed) node", i);
  }
  Graph& g = outputs[0].graph();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (&outputs[i].graph() != &g)
      kiln::detail::Throw("VJP: output {} belongs to graph \"{}\", not \"{}\"", i, outputs[i].graph().name(),
                          g.name());
    if (!adjoints[i].Ok()) continue;
    if (&adjoints[i].graph() != &g)
      kiln::detail::Throw("VJP: adjoint {} belongs to graph \"{}\", not \"{}\"", i,
                          adjoints[i].graph().name(), g.name());
    const Shape& os = outputs[i].shape();
    const Shape& as = adjoints[i].shape();
    if (os.dtype() != as.dtype() || os.Dimensions() != as.Dimensions())
      kiln::detail::Throw("VJP: adjoint {} has shape {}, output {} has {}", i, as, i, os);
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    const Node& t = targets[i];
    if (!t.Ok()) kiln::detail::Throw("Gradient: target {} is an invalid (default-constructed) node", i);
    if (&t.graph() != &g) {
      kiln::detail::Throw("Gradient: target {} belongs to graph \"{}\", not to the loss's graph \"{}\"", i,
                          t.graph().name(), g.name());
    }
    if (!autodiff::Differentiable(t.dtype())) {
      kiln::detail::Throw(
          "Gradient: target {} ({}) has dtype {}: only float and complex nodes have gradients", i,
          t.ToString(), DTypeName(t.dtype()));
    }
  }
  if (targets.empty()) return {};
  return autodiff::Sweep(g).Run(outputs, adjoints, targets);
}

std::vector<Node> Gradient(Node loss, const std::vector<Node>& targets) {
  if (!loss.Ok()) kiln::detail::Throw("Gradient: the loss is an invalid (default-constructed) node");
  if (loss.rank() != 0) {
    kiln::detail::Throw(
        "Gradient: the loss must be a scalar, got {} (reduce it first, e.g. with ReduceAllSum)",
        loss.shape());
  }
  if (!IsFloat(loss.dtype()))
    kiln::detail::Throw("Gradient: the loss must have a float dtype, got {}", loss.shape());
  return VJP({loss}, {ScalarLike(loss, 1)}, targets);
}

Node IdentityWithCustomGradient(Node x, const std::function<Node(Node x, Node adjoint)>& fn) {
  if (!x.Ok()) kiln::detail::Throw("IdentityWithCustomGradient: x is an invalid (default-constructed) node");
  if (!fn) kiln::detail::Throw("IdentityWithCustomGradient: empty gradient function");
  // StopGradient carries the override: without it (e.g. a pass that ignores the table) no
  // gradient would flow, never a wrong one.
  Node n = x.graph().AddOp(OpType::StopGradient, {x});
  x.graph().SetCustomGradient(n, fn);
  return n;
}

Node Checkpoint(Node x) {
  if (!x.Ok()) kiln::detail::Throw("Checkpoint: x is an invalid (default-constructed) node");
  Node r = OptimizationBarrier(x);
  x.graph().MarkCheckpoint(r, true);
  return r;
}

Node StopCheckpoint(Node x) {
  if (!x.Ok()) kiln::detail::Throw("StopCheckpoint: x is an invalid (default-constructed) node");
  Node r = OptimizationBarrier(x);
  x.graph().MarkCheckpoint(r, false);
  return r;
}

bool HasGradientRule(compute::OpType op, std::string* why) {
  const autodiff::RuleEntry& e = autodiff::Rules().Get(op);
  if (e.kind == autodiff::RuleKind::kNone || e.kind == autodiff::RuleKind::kMissing) {
    if (why != nullptr) *why = e.kind == autodiff::RuleKind::kMissing ? "no rule registered" : e.why;
    return false;
  }
  return true;
}

}  // namespace kiln::graph
