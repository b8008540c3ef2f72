#pragma once
// Control flow shared by the host backends: While, If, OptimizationBarrier and Composite (which
// runs its decomposition) run their sub-programs (compiled once, as executables of the backend) on the
// operands' buffers. A backend supplies how to copy one of its buffers and how to read a scalar Bool from
// one.

#include <functional>
#include <memory>
#include <vector>

#include "kiln/compute/backend.h"
#include "kiln/compute/program.h"

namespace kiln::compute::common {

/// A compiled tuple op: operand buffers in, result buffers out, never aliasing an operand.
using TupleKernel = std::function<std::vector<BufferPtr>(const std::vector<BufferPtr>& operands, int device)>;

struct BufferOps {
  std::function<BufferPtr(const BufferPtr&)> copy;
  std::function<bool(const BufferPtr&)> read_bool;
};

/// The kernel of tuple op `inst`, whose sub-programs were compiled into `subs` (in order).
TupleKernel MakeControlKernel(const Instruction& inst, std::vector<std::shared_ptr<Executable>> subs,
                              BufferOps ops);

}  // namespace kiln::compute::common
