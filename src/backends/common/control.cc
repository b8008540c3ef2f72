// While, If, OptimizationBarrier and Composite (its decomposition) for the host backends.

#include "backends/common/control.h"

#include "core/check.h"

namespace kiln::compute::common {

namespace {

/// Results that are operands (a loop that ran zero times) are copied: the tuple must not alias
/// buffers the calling execution may reuse.
std::vector<BufferPtr> Unaliased(const BufferOps& ops, std::vector<BufferPtr> results,
                                 const std::vector<BufferPtr>& operands) {
  for (BufferPtr& r : results) {
    for (const BufferPtr& o : operands) {
      if (r == o) {
        r = ops.copy(r);
        break;
      }
    }
  }
  return results;
}

}  // namespace

TupleKernel MakeControlKernel(const Instruction& inst, std::vector<std::shared_ptr<Executable>> subs,
                              BufferOps ops) {
  switch (inst.op) {
    case OpType::While:
      return [subs, ops](const std::vector<BufferPtr>& operands, int device) {
        std::vector<BufferPtr> state = operands;
        for (;;) {
          std::vector<BufferPtr> cond = subs[0]->Execute(state, {}, device);
          if (!ops.read_bool(cond.at(0))) break;
          state = subs[1]->Execute(state, {}, device);
        }
        return Unaliased(ops, std::move(state), operands);
      };
    case OpType::If:
      return [subs, ops](const std::vector<BufferPtr>& operands, int device) {
        const std::vector<BufferPtr> values(operands.begin() + 1, operands.end());
        const bool pred = ops.read_bool(operands.at(0));
        return Unaliased(ops, subs[pred ? 0 : 1]->Execute(values, {}, device), operands);
      };
    case OpType::Composite:
      return [subs, ops](const std::vector<BufferPtr>& operands, int device) {
        return Unaliased(ops, subs[0]->Execute(operands, {}, device), operands);
      };
    case OpType::OptimizationBarrier:
      return [ops](const std::vector<BufferPtr>& operands, int) {
        std::vector<BufferPtr> results;
        for (const BufferPtr& o : operands) results.push_back(ops.copy(o));
        return results;
      };
    case OpType::GetTupleElement:
#define KILN_LISTED_Control
#include "kiln/compute/op_cases.inc"
      break;
  }
  detail::Throw("{} is not a tuple op", OpName(inst.op));
}

}  // namespace kiln::compute::common
