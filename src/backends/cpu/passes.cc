// The cpu compiler's Module (copied from a Program, listed, rebuilt node by node) and its cleanup
// passes: dead code and common subexpressions.

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "backends/cpu/passes.h"

namespace kiln::compute::cpu {

Module FromProgram(const Program& program) {
  Module m;
  for (const Instruction& inst : program.Instructions()) m.nodes.push_back(Node{inst, nullptr});
  m.outputs = program.Outputs();
  m.donatable = program.Donatable();
  return m;
}

std::string Module::ToString() const {
  std::string s;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Instruction& inst = nodes[i].inst;
    std::vector<std::string> ops;
    for (int o : inst.operands) ops.push_back(fmt::format("%{}", o));
    const std::string shape =
        inst.IsTuple() ? fmt::format("tuple of {}", inst.tuple_shapes.size()) : inst.shape.ToString();
    const std::string epilogue =
        nodes[i].epilogue                  ? fmt::format("+Epilogue[{}]", nodes[i].epilogue->ToString())
        : nodes[i].collective_divisor != 0 ? fmt::format("+Div[{}]", nodes[i].collective_divisor)
        : nodes[i].windowed ? fmt::format("+SelectAndScatter[input {}]", nodes[i].windowed->input)
                            : "";
    const std::string what =
        nodes[i].kind == NodeKind::kRowNorm
            ? "RowNorm:" + nodes[i].row_norm->ToString()
            : (nodes[i].kind == NodeKind::kPrimitive ? "" : "Fused:") + FormatOp(inst.op, inst.attrs);
    s += fmt::format("  %{} = {}{}({}) : {}\n", i, what, epilogue, fmt::join(ops, ", "), shape);
  }
  std::vector<std::string> outs;
  for (int o : outputs) outs.push_back(fmt::format("%{}", o));
  s += fmt::format("  outputs: {}\n", fmt::join(outs, ", "));
  return s;
}

namespace {

/// Keeps the nodes marked in `keep` (in order), renumbering operands and outputs through `to`,
/// which maps every old id to the id of the node now standing for it.
void Compact(Module& m, const std::vector<bool>& keep, std::vector<int> to) {
  std::vector<int> new_id(m.nodes.size(), -1);
  std::vector<Node> kept;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (!keep[i]) continue;
    new_id[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(m.nodes[i]));
  }
  auto map = [&](int old) { return new_id[static_cast<size_t>(to[static_cast<size_t>(old)])]; };
  for (Node& n : kept)
    for (int& o : n.inst.operands) o = map(o);
  for (int& o : m.outputs) o = map(o);
  m.nodes = std::move(kept);
}

}  // namespace

int AppendNode(std::vector<Node>& nodes, Instruction inst) {
  nodes.push_back(Node{std::move(inst), nullptr});
  return static_cast<int>(nodes.size()) - 1;
}

void RebuildModule(Module& m, const NodeRewrite& rewrite) {
  std::vector<Node> nodes;
  nodes.reserve(m.nodes.size() + 8);
  std::vector<int> to(m.nodes.size(), -1);  // Old id -> new id.
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    Node node = std::move(m.nodes[i]);
    const std::vector<int> old_operands = node.inst.operands;
    for (int& o : node.inst.operands) o = to[static_cast<size_t>(o)];
    const int id = rewrite(node, old_operands, nodes);
    if (id >= 0) {
      to[i] = id;
      continue;
    }
    nodes.push_back(std::move(node));
    to[i] = static_cast<int>(nodes.size()) - 1;
  }
  for (int& o : m.outputs) o = to[static_cast<size_t>(o)];
  m.nodes = std::move(nodes);
}

bool CheapBetween(const Module& m, int a, int b) {
  for (int w = a + 1; w < b; ++w) {
    const Instruction& inst = m.nodes[static_cast<size_t>(w)].inst;
    if (inst.IsTuple() || inst.shape.IsDynamic() || inst.shape.ByteSize() > kCheapValueBytes) return false;
  }
  return true;
}

PassReport EliminateDeadCode(Module& m) {
  std::vector<bool> live(m.nodes.size(), false);
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (m.nodes[i].inst.op == OpType::Parameter) live[i] = true;
  for (int o : m.outputs) live[static_cast<size_t>(o)] = true;
  for (size_t i = m.nodes.size(); i-- > 0;) {
    if (!live[i]) continue;
    for (int o : m.nodes[i].inst.operands) live[static_cast<size_t>(o)] = true;
  }
  std::vector<int> to(m.nodes.size());
  for (size_t i = 0; i < to.size(); ++i) to[i] = static_cast<int>(i);
  const auto dropped = static_cast<int>(std::count(live.begin(), live.end(), false));
  Compact(m, live, std::move(to));
  return {dropped, {}};
}

PassReport EliminateCommonSubexpressions(Module& m) {
  const size_t n = m.nodes.size();
  std::vector<int> to(n);
  std::unordered_map<size_t, std::vector<int>> seen;  // hash -> representatives
  int merged = 0;
  for (size_t i = 0; i < n; ++i) {
    to[i] = static_cast<int>(i);
    Instruction& inst = m.nodes[i].inst;
    for (int& o : inst.operands) o = to[static_cast<size_t>(o)];
    if (inst.op == OpType::Parameter || inst.IsTuple() || !inst.subprograms.empty() ||
        m.nodes[i].kind != NodeKind::kPrimitive)
      continue;
    size_t h = std::hash<int>{}(static_cast<int>(inst.op));
    for (int o : inst.operands) h = h * 1000003u ^ std::hash<int>{}(o);
    for (int64_t d : inst.shape.Dimensions()) h = h * 31u ^ std::hash<int64_t>{}(d);
    std::vector<int>& bucket = seen[h];
    bool found = false;
    for (int r : bucket) {
      const Instruction& other = m.nodes[static_cast<size_t>(r)].inst;
      if (other.op == inst.op && other.operands == inst.operands && other.shape == inst.shape &&
          AttributesEqual(inst.op, other.attrs, inst.attrs)) {
        to[i] = r;
        found = true;
        ++merged;
        break;
      }
    }
    if (!found) bucket.push_back(static_cast<int>(i));
  }
  if (merged == 0) return {};
  std::vector<bool> keep(n);
  for (size_t i = 0; i < n; ++i) keep[i] = to[i] == static_cast<int>(i);
  for (int& o : m.outputs) o = to[static_cast<size_t>(o)];
  std::vector<int> identity(n);
  for (size_t i = 0; i < n; ++i) identity[i] = to[i];
  // Operands were already redirected; Compact maps through `to` again (idempotent).
  Compact(m, keep, std::move(identity));
  return {merged, {}};
}

}  // namespace kiln::compute::cpu
