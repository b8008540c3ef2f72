#pragma once
// Shape rules of the op families that live in their own files; compute::InferShape dispatches
// to them after its common checks (operand count, packed and dynamic operands).

#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/program.h"

namespace kiln::compute {

/// Throws kiln::Error "<op>: <what>": the shape rules' one way to reject operands.
[[noreturn]] void FailShape(OpType op, const std::string& what);

/// ConvGeneral (shape_rules_conv.cc).
Shape ConvolutionShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);
/// ReduceWindow, SelectAndScatter (shape_rules_conv.cc).
Shape WindowShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);
/// Gather, Scatter, DynamicSlice, DynamicUpdateSlice (shape_rules_indexing.cc).
Shape IndexingShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);
/// ArgSort, CumSum (shape_rules_indexing.cc).
Shape SortScanShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);

/// AllReduce, AllGather, ReduceScatter, CollectiveBroadcast (shape_rules_collective.cc).
Shape CollectiveShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);

// ---- Control flow (shape_rules_control.cc) ------------------------------------------------------

/// While, If, OptimizationBarrier: the ops whose result is a tuple (Instruction::tuple_shapes).
bool IsTupleOp(OpType op);
/// InferShape's rule for the Control category: always an error (tuple ops have no single shape;
/// GetTupleElement needs its tuple's shapes), saying which function to use.
Shape ControlShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);
/// The results of a tuple op on operands of `operands` shapes, after checking its sub-programs'
/// signatures (parameters and outputs). Throws kiln::Error naming the op.
std::vector<Shape> InferTupleShapes(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs,
                                    const std::vector<std::shared_ptr<const Program>>& subprograms);
/// GetTupleElement's result: element attrs.index of a tuple of `tuple_shapes`.
Shape InferTupleElementShape(const std::vector<Shape>& tuple_shapes, const OpAttributes& attrs);

}  // namespace kiln::compute
