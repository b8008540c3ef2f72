// Gradient rules of the indexing ops (to be written).

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

void RegisterIndexingRules(RuleTable& t) {
  t.None(compute::OpType::Gather, "gradient not written yet");
  t.None(compute::OpType::Scatter, "gradient not written yet");
  t.None(compute::OpType::DynamicSlice, "gradient not written yet");
  t.None(compute::OpType::DynamicUpdateSlice, "gradient not written yet");
}

}  // namespace kiln::graph::autodiff
