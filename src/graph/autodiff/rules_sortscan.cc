// Gradient rules of the sorting and scan ops: CumSum sends its adjoint back with a running sum in
// the opposite direction; ArgSort's result is an integer permutation (Sort and TopK values are
// ArgSort followed by a gather, which carries their gradients).

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using V = std::vector<Node>;

namespace {

// CumSum: each input element feeds every later (earlier, reversed) output, so its adjoint is the
// running sum of the output adjoints from the other end.
V CumSumRule(const VJPContext& c) {
  compute::OpAttributes at;
  at.axis = c.attrs().axis;
  at.reverse = !c.attrs().reverse;
  return {Prim(OpType::CumSum, {c.Adjoint()}, std::move(at))};
}

}  // namespace

void RegisterSortScanRules(RuleTable& t) {
  t.None(OpType::ArgSort, "an integer permutation");
  t.Set(OpType::CumSum, CumSumRule);
}

}  // namespace kiln::graph::autodiff
