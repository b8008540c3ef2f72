#pragma once
// Code generation for the fused machine: the register-machine program (FusedSpec) of one group
// of elementwise nodes, with its registers allocated.

#include <vector>

#include "backends/cpu/fused_program.h"
#include "backends/cpu/ir.h"

namespace kiln::compute::cpu {

/// The dtypes a fused group computes: floats in float32, Bool as 0/1.
bool FusableDType(DType d);

/// The program of the group `members` (node ids sorted, the root last; every member an
/// elementwise op the machine implements, StopGradient or ConvertDType between fusable dtypes).
/// The group's inputs (node ids, in the program's input order) go to `operands`.
FusedSpec BuildFusedSpec(const Module& m, const std::vector<int>& members, std::vector<int>& operands);

}  // namespace kiln::compute::cpu
