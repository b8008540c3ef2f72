// The mean of an AllReduce folded into its kernel: Div(AllReduce-sum(x), c) with c a Float32
// constant (graph::AllReduce's Mean divides by the replica count this way) becomes the AllReduce
// with `collective_divisor` c, whose kernel divides each chunk of sums while it is in cache and
// before the replicas copy it into one another's results, instead of a pass of its own over
// memory. The kernel divides as Div does, so the values are the same bits.

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "backends/cpu/match_util.h"
#include "backends/cpu/passes.h"

namespace kiln::compute::cpu {

PassReport FoldMeanIntoAllReduce(Module& m) {
  std::vector<int> uses(m.nodes.size(), 0);
  for (const Node& n : m.nodes)
    for (int o : n.inst.operands) ++uses[static_cast<size_t>(o)];
  for (int o : m.outputs) ++uses[static_cast<size_t>(o)];
  PassReport report;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& div = m.nodes[i];
    if (div.kind != NodeKind::kPrimitive || div.inst.op != OpType::Div ||
        div.inst.shape.dtype() != DType::Float32)
      continue;
    const int a = div.inst.operands[0];
    const Node& sum = m.nodes[static_cast<size_t>(a)];
    const std::optional<float> c = SplatValue(m.nodes, div.inst.operands[1]);
    if (sum.kind != NodeKind::kPrimitive || sum.inst.op != OpType::AllReduce ||
        sum.inst.attrs.reduce_kind != ReduceKind::Sum || sum.collective_divisor != 0 ||
        sum.inst.shape != div.inst.shape || uses[static_cast<size_t>(a)] != 1 || !c || *c == 0 ||
        !std::isfinite(*c))
      continue;
    Node folded = sum;
    folded.collective_divisor = *c;
    for (int o : div.inst.operands) --uses[static_cast<size_t>(o)];
    report.log += fmt::format("  %{}: Div of AllReduce %{} by {} into the AllReduce\n", i, a, *c);
    m.nodes[i] = std::move(folded);
    ++report.count;
  }
  if (report.count > 0) report.log = fmt::format("  collective means: {}\n{}", report.count, report.log);
  return report;
}

}  // namespace kiln::compute::cpu
