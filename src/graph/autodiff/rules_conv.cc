// Gradient rules of the conv ops (to be written).

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

void RegisterConvRules(RuleTable& t) { t.None(compute::OpType::ConvGeneral, "gradient not written yet"); }

}  // namespace kiln::graph::autodiff
