#pragma once
// Helpers shared by the cpu backend's compiler tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/passes.h"
#include "kiln/kiln.h"

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

/// Whether got and want agree within float32 accumulation error over `terms` products each (the
/// cpu backend's contractions against ref's).
inline ::testing::AssertionResult Close(const Tensor& got, const Tensor& want, int64_t terms) {
  if (got.shape() != want.shape()) return ::testing::AssertionFailure() << "shapes differ";
  const std::vector<float> g = got.ToVector<float>(), w = want.ToVector<float>();
  const double tol = 1e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1))) + 1e-6;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::abs(static_cast<double>(g[i]) - w[i]) <= tol * (1 + std::abs(static_cast<double>(w[i]))))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want " << w[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::test
