// Shape rules: ConvGeneral, ReduceWindow, SelectAndScatter.

#include "compute/shape_rules.h"
#include "core/check.h"

namespace kiln::compute {

Shape ConvolutionShape(OpType op, const std::vector<Shape>&, const OpAttributes&) {
  detail::Throw("{}: not implemented yet", OpName(op));
}

Shape WindowShape(OpType op, const std::vector<Shape>&, const OpAttributes&) {
  detail::Throw("{}: not implemented yet", OpName(op));
}

}  // namespace kiln::compute
