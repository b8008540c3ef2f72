// Gradient rules of the window ops (to be written).

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

void RegisterWindowRules(RuleTable& t) {
  t.None(compute::OpType::ReduceWindow, "gradient not written yet");
  t.None(compute::OpType::SelectAndScatter, "gradient not written yet");
}

}  // namespace kiln::graph::autodiff
