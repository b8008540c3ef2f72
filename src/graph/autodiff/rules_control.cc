// Gradient rules of the control ops (to be written).

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

void RegisterControlRules(RuleTable& t) {
  t.None(compute::OpType::While, "gradient not written yet");
  t.None(compute::OpType::If, "gradient not written yet");
  t.None(compute::OpType::OptimizationBarrier, "gradient not written yet");
}

}  // namespace kiln::graph::autodiff
