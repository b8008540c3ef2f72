// Gradient rules of the sortscan ops (to be written).

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

void RegisterSortScanRules(RuleTable& t) {
  t.None(compute::OpType::ArgSort, "gradient not written yet");
  t.None(compute::OpType::CumSum, "gradient not written yet");
}

}  // namespace kiln::graph::autodiff
