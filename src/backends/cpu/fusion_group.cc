// Elementwise fusion for the cpu compiler: groups chains of elementwise ops (with the broadcasts
// and scalar constants feeding them) whose intermediates are used only inside the group, and
// replaces each group by one node carrying a FusedSpec (fusion_codegen.cc writes its program).
// Single output: a value used outside its group ends the group (it becomes a group's root); a
// node joins only a group computed close after it (see CloseEnough), so inputs do not live longer.
// A group whose root feeds only a reduction the fused reduce kernel runs becomes that
// reduction's program instead (fused_reduce.cc), and other such reductions get a one-load one.
// MergeFusedOutputs (fusion_merge.cc) runs afterwards.

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "backends/cpu/fusion_codegen.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/passes.h"

namespace kiln::compute::cpu {

namespace {

/// The farthest (in node order) a node may be from the group member that reads it and still
/// join the group.
constexpr int kMaxJoinDistance = 256;

/// Whether a node computes an elementwise value the register machine implements.
bool IsComputeNode(const Module& m, const Node& node) {
  const Instruction& inst = node.inst;
  if (node.kind != NodeKind::kPrimitive || inst.IsTuple() || !inst.shape.Ok() || inst.shape.IsDynamic())
    return false;
  if (inst.shape.Rank() > kMaxFusedRank) return false;
  if (!FusableDType(inst.shape.dtype())) return false;
  std::vector<DType> in;
  for (int o : inst.operands) {
    const Shape& s = m.nodes[static_cast<size_t>(o)].inst.shape;
    if (!s.Ok() || s.IsDynamic() || !FusableDType(s.dtype())) return false;
    in.push_back(s.dtype());
  }
  if (in.empty()) return false;
  if (inst.op == OpType::StopGradient || inst.op == OpType::ConvertDType) return true;
  return FusedOpOf(inst.op, in[0] == DType::Bool).has_value();
}

/// Whether node v may join group g through its user u without holding v's inputs across other
/// work: every node between them is in the group or cheap (a leaf, broadcast, reshape, slice or
/// a value of at most kCheapValueBytes). A group's inputs are read when its root runs, so joining across a
/// large unrelated computation would keep them alive through it (a long Add chain of gradient
/// terms would keep every term alive to its end).
bool CloseEnough(const Module& m, const std::vector<int>& group, int v, int u, int g) {
  if (u - v > kMaxJoinDistance) return false;
  for (int w = v + 1; w < u; ++w) {
    if (group[static_cast<size_t>(w)] == g) continue;
    const Instruction& inst = m.nodes[static_cast<size_t>(w)].inst;
    const OpType op = inst.op;
    if (op == OpType::Constant || op == OpType::Parameter || op == OpType::BroadcastInDim ||
        op == OpType::Reshape || op == OpType::Slice || op == OpType::GetTupleElement)
      continue;
    if (inst.IsTuple() || inst.shape.IsDynamic() || inst.shape.ByteSize() > kCheapValueBytes) return false;
  }
  return true;
}

/// Each node's readers, and which nodes are program outputs.
void Readers(const Module& m, std::vector<std::set<int>>& users, std::vector<bool>& is_output) {
  const size_t n = m.nodes.size();
  users.assign(n, {});
  is_output.assign(n, false);
  for (size_t v = 0; v < n; ++v)
    for (int o : m.nodes[v].inst.operands) users[static_cast<size_t>(o)].insert(static_cast<int>(v));
  for (int o : m.outputs) is_output[static_cast<size_t>(o)] = true;
}

/// Whether node `v` is cheap arithmetic worth computing again in each of its readers' groups:
/// LayerNorm's centred values x - mean, read by the variance's reduction and by the
/// normalisation, then cost a subtraction per read instead of a pass writing them and passes
/// reading them back. Float32 Add/Sub/Mul/Div/Max/Min/Neg, not an output, read only by same-shape
/// elementwise ops and by reductions the fused reduce kernel runs.
bool CloneIntoReaders(const Module& m, int v, const std::vector<std::set<int>>& users,
                      const std::vector<bool>& is_output) {
  const Node& node = m.nodes[static_cast<size_t>(v)];
  const Instruction& inst = node.inst;
  if (is_output[static_cast<size_t>(v)] || users[static_cast<size_t>(v)].size() < 2 ||
      inst.shape.dtype() != DType::Float32 || !IsComputeNode(m, node))
    return false;
  const OpType op = inst.op;
  if (op != OpType::Add && op != OpType::Sub && op != OpType::Mul && op != OpType::Div && op != OpType::Max &&
      op != OpType::Min && op != OpType::Neg)
    return false;
  for (int u : users[static_cast<size_t>(v)]) {
    const Node& reader = m.nodes[static_cast<size_t>(u)];
    const Instruction& r = reader.inst;
    if (GetOpCategory(r.op) == OpCategory::Reduce && r.operands.size() == 1) {
      if (!FusesIntoReduce(r.op, inst.shape, r.attrs.axes)) return false;
      continue;
    }
    if (!IsComputeNode(m, reader) || r.shape.Dimensions() != inst.shape.Dimensions()) return false;
  }
  return true;
}

/// Gives each reader but the first of a node CloneIntoReaders accepts a copy of its own, placed
/// just before it, so that the grouping below can take the node into every reader's group.
void CloneCheapSharedValues(Module& m) {
  const size_t n = m.nodes.size();
  std::vector<std::set<int>> users;
  std::vector<bool> is_output;
  Readers(m, users, is_output);
  std::vector<bool> clone(n, false);
  bool any = false;
  for (size_t v = 0; v < n; ++v) {
    clone[v] = CloneIntoReaders(m, static_cast<int>(v), users, is_output);
    any = any || clone[v];
  }
  if (!any) return;
  std::vector<bool> first_taken(n, false);  // By old id: the original went to its first reader.
  RebuildModule(m, [&](Node& node, const std::vector<int>& old_operands, std::vector<Node>& nodes) {
    std::vector<std::pair<int, int>> copies;  // (old operand, new copy) made for this reader.
    for (size_t k = 0; k < old_operands.size(); ++k) {
      const int v = old_operands[k];
      if (!clone[static_cast<size_t>(v)]) continue;
      auto made = std::find_if(copies.begin(), copies.end(), [&](const auto& c) { return c.first == v; });
      if (made != copies.end()) {
        node.inst.operands[k] = made->second;
        continue;
      }
      if (!first_taken[static_cast<size_t>(v)]) {
        first_taken[static_cast<size_t>(v)] = true;
        copies.emplace_back(v, node.inst.operands[k]);
        continue;
      }
      Node copy = nodes[static_cast<size_t>(node.inst.operands[k])];
      nodes.push_back(std::move(copy));
      const int id = static_cast<int>(nodes.size()) - 1;
      copies.emplace_back(v, id);
      node.inst.operands[k] = id;
    }
    return -1;
  });
}

}  // namespace

/// A lone Float32 elementwise op of this many elements or more runs as a fused kernel.
constexpr int64_t kLoneOpElements = int64_t{1} << 16;

// Groups (reverse topological order), then one fused node per group of 2+ ops at its root.
PassReport FuseElementwise(Module& m) {
  CloneCheapSharedValues(m);
  const size_t n = m.nodes.size();
  std::vector<std::set<int>> users;
  std::vector<bool> is_output;
  Readers(m, users, is_output);
  // Reverse topological order: a node joins its only user's group when that user is in one.
  std::vector<int> group(n, -1);
  std::vector<std::vector<int>> members;
  for (size_t v = n; v-- > 0;) {
    if (!IsComputeNode(m, m.nodes[v])) continue;
    const Shape& shape = m.nodes[v].inst.shape;
    if (!is_output[v] && users[v].size() == 1) {
      const int u = *users[v].begin();
      const int g = group[static_cast<size_t>(u)];
      if (g >= 0 && m.nodes[static_cast<size_t>(u)].inst.shape.Dimensions() == shape.Dimensions() &&
          CloseEnough(m, group, static_cast<int>(v), u, g)) {
        group[v] = g;
        members[static_cast<size_t>(g)].push_back(static_cast<int>(v));
        continue;
      }
    }
    group[v] = static_cast<int>(members.size());
    members.push_back({static_cast<int>(v)});
  }
  // A group whose root only feeds a reduction the fused reduce kernel runs is computed inside
  // that reduction (reduce_of[g]: the reduction's node), its values never written out.
  std::vector<int> reduce_of(members.size(), -1);
  for (size_t u = 0; u < n; ++u) {
    const Instruction& inst = m.nodes[u].inst;
    if (m.nodes[u].kind != NodeKind::kPrimitive || GetOpCategory(inst.op) != OpCategory::Reduce ||
        inst.operands.size() != 1)
      continue;
    const int v = inst.operands[0];
    const int g = group[static_cast<size_t>(v)];
    if (g < 0 || members[static_cast<size_t>(g)].front() != v || is_output[static_cast<size_t>(v)] ||
        users[static_cast<size_t>(v)].size() != 1)
      continue;
    if (!FusesIntoReduce(inst.op, m.nodes[static_cast<size_t>(v)].inst.shape, inst.attrs.axes)) continue;
    if (!CloseEnough(m, group, v, static_cast<int>(u), g)) continue;
    reduce_of[static_cast<size_t>(g)] = static_cast<int>(u);
  }
  std::string report;
  int fused = 0, reductions = 0;
  for (size_t g = 0; g < members.size(); ++g) {
    std::vector<int>& group_members = members[g];
    std::sort(group_members.begin(), group_members.end());
    std::vector<int> operands;
    FusedSpec spec = BuildFusedSpec(m, group_members, operands);
    const int reduce = reduce_of[g];
    // One op (its broadcasts counted): the plain kernel does as well on small values, unless a
    // reduction takes it or it is a conversion (the fused kernel's are vectorised; a widened
    // half-precision contraction's operands and result are such lone conversions). On Float32
    // values of kLoneOpElements or more the fused kernel's vector loop over the team wins (a
    // residual Add of a transformer block).
    const Instruction& last = m.nodes[static_cast<size_t>(group_members.back())].inst;
    const bool lone_convert = spec.ops.size() == 1 && last.op == OpType::ConvertDType;
    const bool lone_large =
        spec.ops.size() == 1 && last.shape.dtype() == DType::Float32 && last.shape.Size() >= kLoneOpElements;
    if (spec.ops.size() < 2 && reduce < 0 && !lone_convert && !lone_large) continue;
    const int root = reduce >= 0 ? reduce : group_members.back();
    Node& node = m.nodes[static_cast<size_t>(root)];
    if (reduce >= 0) {
      report += fmt::format("  fused %{}: {}{{axes=[{}]}} of {}\n", root, OpName(node.inst.op),
                            fmt::join(node.inst.attrs.axes, ","), spec.ToString());
      ++reductions;
    } else {
      report += fmt::format("  fused %{}: {}\n", root, spec.ToString());
    }
    node.inst.operands = std::move(operands);
    node.fused = std::make_shared<const FusedSpec>(std::move(spec));
    node.kind = reduce >= 0 ? NodeKind::kFusedReduce : NodeKind::kFused;
    ++fused;
  }
  // Other reductions the fused kernel runs read their operand through a one-load program (its
  // SIMD reductions beat the reference loops).
  for (size_t u = 0; u < n; ++u) {
    Node& node = m.nodes[u];
    const Instruction& inst = node.inst;
    if (node.kind != NodeKind::kPrimitive || GetOpCategory(inst.op) != OpCategory::Reduce ||
        inst.operands.size() != 1)
      continue;
    const Shape& operand = m.nodes[static_cast<size_t>(inst.operands[0])].inst.shape;
    if (!FusesIntoReduce(inst.op, operand, inst.attrs.axes) || operand.Rank() > kMaxFusedRank) continue;
    FusedSpec spec;
    spec.inputs.push_back(FInput{DType::Float32, {}, true});
    FInstr load;
    load.op = FOp::kInput;
    load.input = 0;
    spec.code.push_back(load);
    spec.num_regs = 1;
    spec.out_dims = operand.Dimensions();
    report += fmt::format("  fused %{}: {}{{axes=[{}]}} of {}\n", u, OpName(inst.op),
                          fmt::join(inst.attrs.axes, ","), spec.ToString());
    node.fused = std::make_shared<const FusedSpec>(std::move(spec));
    node.kind = NodeKind::kFusedReduce;
    ++fused;
    ++reductions;
  }
  if (fused == 0) return {};
  return {fused, fmt::format("  fusion: {} group{}, {} into reductions\n", fused, fused == 1 ? "" : "s",
                             reductions) +
                     report};
}

}  // namespace kiln::compute::cpu
