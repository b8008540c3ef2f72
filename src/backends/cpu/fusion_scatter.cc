// A SelectAndScatter fused into the group that reads it (FuseSelectAndScatter): a max-pool's
// gradient scatters the incoming gradient to each window's selected element, and the next
// elementwise work (the ReLU mask, the bias gradient's sums) reads every scattered element once.
// The group's kernel computes the scattered values of each piece itself from the
// SelectAndScatter's operand and source (pool_kernels.cc's range form), so they are never
// written to memory and read back.

#include <fmt/format.h>

#include "backends/cpu/fused_program.h"
#include "backends/cpu/passes.h"
#include "backends/cpu/pool_kernels.h"

namespace kiln::compute::cpu {

PassReport FuseSelectAndScatter(Module& m) {
  const size_t n = m.nodes.size();
  std::vector<int> uses(n, 0);
  for (const Node& node : m.nodes)
    for (int o : node.inst.operands) ++uses[static_cast<size_t>(o)];
  for (int o : m.outputs) ++uses[static_cast<size_t>(o)];
  PassReport report;
  for (size_t v = 0; v < n; ++v) {
    Node& p = m.nodes[v];
    if ((p.kind != NodeKind::kFused && p.kind != NodeKind::kFusedReduce) || p.windowed) continue;
    const FusedSpec& spec = *p.fused;
    for (size_t input = 0; input < spec.inputs.size(); ++input) {
      const int si = p.inst.operands[input];
      const Node& s = m.nodes[static_cast<size_t>(si)];
      const FInput& fi = spec.inputs[input];
      if (s.kind != NodeKind::kPrimitive || s.inst.op != OpType::SelectAndScatter ||
          uses[static_cast<size_t>(si)] != 1 || !fi.identity || fi.dtype != DType::Float32 ||
          s.inst.shape.Dimensions() != spec.out_dims || !CheapBetween(m, si, static_cast<int>(v)))
        continue;
      std::vector<Shape> shapes;
      for (int o : s.inst.operands) shapes.push_back(m.nodes[static_cast<size_t>(o)].inst.shape);
      if (!ScatterRunsByRange(s.inst, shapes)) continue;
      auto w = std::make_shared<WindowedInput>();
      w->input = static_cast<int>(input);
      w->scatter = s.inst;
      w->scatter.operands.clear();
      w->operands = shapes;
      // The group reads the SelectAndScatter's operand in its place and its source last.
      p.inst.operands[input] = s.inst.operands[0];
      p.inst.operands.push_back(s.inst.operands[1]);
      p.windowed = std::move(w);
      report.log += fmt::format("  fused SelectAndScatter %{} into %{} (its input {} computed by windows)\n",
                                si, v, input);
      ++report.count;
      break;  // One windowed input per node.
    }
  }
  return report;
}

}  // namespace kiln::compute::cpu
