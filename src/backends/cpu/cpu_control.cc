// The cpu backend's control flow: While, If and OptimizationBarrier run their sub-programs as
// cpu executables of their own (compiled once with the instruction) on the operands' buffers.

#include <cstring>
#include <memory>

#include "backends/cpu/kernels.h"
#include "core/check.h"

namespace kiln::compute::cpu {

namespace {

BufferPtr Copy(CpuBackend* backend, const BufferPtr& buffer) {
  const int64_t bytes = buffer->ByteSize();
  std::shared_ptr<CpuBuffer> copy = backend->NewBuffer(bytes);
  if (bytes > 0) std::memcpy(copy->data(), backend->AsCpuBuffer(*buffer)->data(), static_cast<size_t>(bytes));
  return copy;
}

/// Results that are operands (a loop that ran zero times) are copied.
std::vector<BufferPtr> Unaliased(CpuBackend* backend, std::vector<BufferPtr> results,
                                 const std::vector<BufferPtr>& operands) {
  for (BufferPtr& r : results) {
    for (const BufferPtr& o : operands) {
      if (r == o) {
        r = Copy(backend, r);
        break;
      }
    }
  }
  return results;
}

bool ReadBool(CpuBackend* backend, const BufferPtr& buffer) {
  return backend->AsCpuBuffer(*buffer)->data()[0] != 0;
}

}  // namespace

TupleKernel MakeTupleKernel(CpuBackend* backend, const Instruction& inst) {
  std::vector<std::shared_ptr<Executable>> subs;
  for (const auto& p : inst.subprograms) subs.push_back(CompileCpu(backend, p));
  switch (inst.op) {
    case OpType::While:
      return [backend, subs](const std::vector<BufferPtr>& operands, int device) {
        std::vector<BufferPtr> state = operands;
        for (;;) {
          std::vector<BufferPtr> cond = subs[0]->Execute(state, {}, device);
          if (!ReadBool(backend, cond.at(0))) break;
          state = subs[1]->Execute(state, {}, device);
        }
        return Unaliased(backend, std::move(state), operands);
      };
    case OpType::If:
      return [backend, subs](const std::vector<BufferPtr>& operands, int device) {
        const std::vector<BufferPtr> values(operands.begin() + 1, operands.end());
        const bool pred = ReadBool(backend, operands.at(0));
        return Unaliased(backend, subs[pred ? 0 : 1]->Execute(values, {}, device), operands);
      };
    case OpType::OptimizationBarrier:
      return [backend](const std::vector<BufferPtr>& operands, int) {
        std::vector<BufferPtr> results;
        for (const BufferPtr& o : operands) results.push_back(Copy(backend, o));
        return results;
      };
    default:
      detail::Throw("backend \"cpu\": {} is not a tuple op", OpName(inst.op));
  }
}

}  // namespace kiln::compute::cpu
