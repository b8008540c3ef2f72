// The cpu backend's control flow: the shared While/If/OptimizationBarrier/Composite kernels
// (backends/common/control.h) over cpu buffers, sub-programs compiled as cpu executables. (A
// Composite the backend has a kernel for, quant_composite.cc, runs that instead: ChooseKernels.)

#include <cstring>
#include <memory>

#include "backends/common/control.h"
#include "backends/cpu/kernels.h"

namespace kiln::compute::cpu {

TupleKernel MakeTupleKernel(CpuBackend* backend, const Instruction& inst) {
  std::vector<std::shared_ptr<Executable>> subs;
  for (const auto& p : inst.subprograms) subs.push_back(CompileCpu(backend, p));
  common::BufferOps ops;
  ops.copy = [backend](const BufferPtr& buffer) -> BufferPtr {
    const int64_t bytes = buffer->ByteSize();
    std::shared_ptr<CpuBuffer> copy = backend->NewBuffer(bytes);
    if (bytes > 0)
      std::memcpy(copy->data(), backend->AsCpuBuffer(*buffer)->data(), static_cast<size_t>(bytes));
    return copy;
  };
  ops.read_bool = [backend](const BufferPtr& b) { return backend->AsCpuBuffer(*b)->data()[0] != 0; };
  return common::MakeControlKernel(inst, std::move(subs), std::move(ops));
}

}  // namespace kiln::compute::cpu
