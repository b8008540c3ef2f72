#pragma once
// The cpu compiler's driver: a Program through every pass, in order, into the optimised Module
// the executable chooses kernels and plans memory for.

#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ir.h"
#include "kiln/compute/program.h"

namespace kiln::compute::cpu {

/// A program after the passes.
struct CompiledModule {
  Module module;
  /// What the passes did: a header line of counts, the module, then the fusion passes' logs
  /// (the first part of KILN_CPU_DUMP's listing).
  std::string report;
};

/// Runs the passes of passes.h over `program`: dead code, common subexpressions, simplification,
/// dead code, half-precision widening; then, with `options.fusion`, the relu/max-pool commute,
/// contraction epilogues, elementwise fusion and multi-output fusion (dead code after each that
/// leaves nodes behind). MergeFusedOutputs runs last: nothing renumbers the nodes after it.
CompiledModule CompileModule(const Program& program, const Options& options);

}  // namespace kiln::compute::cpu
