// Shape rules: Gather, Scatter, DynamicSlice, DynamicUpdateSlice, ArgSort, CumSum.

#include "compute/shape_rules.h"
#include "core/check.h"

namespace kiln::compute {

Shape IndexingShape(OpType op, const std::vector<Shape>&, const OpAttributes&) {
  detail::Throw("{}: not implemented yet", OpName(op));
}

Shape SortScanShape(OpType op, const std::vector<Shape>&, const OpAttributes&) {
  detail::Throw("{}: not implemented yet", OpName(op));
}

}  // namespace kiln::compute
