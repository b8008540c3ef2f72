// The cpu compiler's driver: the pass pipeline and its report.

#include "backends/cpu/compiler.h"

#include <fmt/format.h>

#include "backends/cpu/passes.h"

namespace kiln::compute::cpu {

CompiledModule CompileModule(const Program& program, const Options& options) {
  CompiledModule out{FromProgram(program), {}};
  Module& m = out.module;
  EliminateDeadCode(m);
  const PassReport merged = EliminateCommonSubexpressions(m);
  const PassReport simplified = Simplify(m);
  EliminateDeadCode(m);
  const PassReport widened = WidenHalfContractions(m);
  std::string fusion;
  if (options.fusion) {
    const PassReport layout = ConvolutionsChannelsLast(m);
    if (layout.count > 0) {
      fusion += layout.log;
      // The transposes it made of constants fold, and transposes of size-1 axes become reshapes.
      Simplify(m);
      EliminateDeadCode(m);
    }
    // Epilogues first: the elementwise pass would otherwise take the bias and activation.
    fusion += CommuteReluWithMaxPool(m).log;
    EliminateDeadCode(m);
    fusion += FuseRowNorms(m).log;
    EliminateDeadCode(m);
    fusion += FuseEpilogues(m).log;
    EliminateDeadCode(m);
    fusion += FoldMeanIntoAllReduce(m).log;
    EliminateDeadCode(m);
    fusion += FuseElementwise(m).log;
    EliminateDeadCode(m);
    fusion += FuseSelectAndScatter(m).log;
    EliminateDeadCode(m);
    fusion += MergeFusedOutputs(m).log;
  }
  for (Node& n : m.nodes)
    n.constant_kernel = n.kind == NodeKind::kPrimitive && n.inst.op == OpType::ConvGeneral &&
                        m.nodes[static_cast<size_t>(n.inst.operands[1])].inst.op == OpType::Constant;
  out.report = fmt::format(
      "program ({} nodes after cleanups; {} common subexpressions merged, {} nodes simplified, {} "
      "half-precision contractions widened to Float32)\n{}{}{}",
      m.nodes.size(), merged.count, simplified.count, widened.count, widened.log, m.ToString(), fusion);
  return out;
}

}  // namespace kiln::compute::cpu
