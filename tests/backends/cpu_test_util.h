#pragma once
// Helpers shared by the cpu backend's compiler tests.

#include "backends/cpu/ir.h"

namespace kiln::test {

/// The cpu compiler's module for `program` after the pipeline's cleanups (dead code, common
/// subexpressions, Simplify, dead code), as the passes after them see it.
inline compute::cpu::Module CleanedModule(const compute::Program& program) {
  compute::cpu::Module m = compute::cpu::FromProgram(program);
  compute::cpu::EliminateDeadCode(m);
  compute::cpu::EliminateCommonSubexpressions(m);
  compute::cpu::Simplify(m);
  compute::cpu::EliminateDeadCode(m);
  return m;
}

}  // namespace kiln::test
