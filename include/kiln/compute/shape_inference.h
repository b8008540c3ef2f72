#pragma once
/// @file
/// The one home of the primitives' shape and dtype rules. The graph frontend calls it for every
/// op it adds; backends call it (through Program::Verify) before compiling.

#include <vector>

#include "kiln/compute/program.h"
#include "kiln/core/shape.h"

namespace kiln::compute {

/// The result shape of `op` on operands of `operands` shapes with `attrs`. Throws kiln::Error
/// naming the op and saying what does not fit (operand count, dtypes, ranks, axes, sizes).
Shape InferShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs);

}  // namespace kiln::compute
