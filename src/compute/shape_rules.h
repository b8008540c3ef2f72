#pragma once
// Shape rules of the op families that live in their own files; compute::InferShape dispatches
// to them after its common checks (operand count, packed and dynamic operands).

#include <vector>

#include "kiln/compute/program.h"

namespace kiln::compute {

/// ConvGeneral (shape_rules_conv.cc).
Shape ConvolutionShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);
/// ReduceWindow, SelectAndScatter (shape_rules_conv.cc).
Shape WindowShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);
/// Gather, Scatter, DynamicSlice, DynamicUpdateSlice (shape_rules_indexing.cc).
Shape IndexingShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);
/// ArgSort, CumSum (shape_rules_indexing.cc).
Shape SortScanShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);

}  // namespace kiln::compute
