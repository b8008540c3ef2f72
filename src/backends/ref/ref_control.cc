// The reference interpreter's control flow: the shared While/If/OptimizationBarrier kernels
// (backends/common/control.h) over ref buffers, sub-programs compiled as ref executables.

#include <cstring>
#include <memory>

#include "backends/common/control.h"
#include "backends/ref/ref_backend.h"
#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

TupleKernel MakeControlKernel(RefBackend* backend, const Instruction& inst) {
  std::vector<std::shared_ptr<Executable>> subs;
  for (const auto& p : inst.subprograms) subs.push_back(CompileRef(backend, p));
  common::BufferOps ops;
  ops.copy = [backend](const BufferPtr& buffer) -> BufferPtr {
    const int64_t bytes = buffer->ByteSize();
    std::shared_ptr<RefBuffer> copy = backend->NewBuffer(bytes);
    if (bytes > 0)
      std::memcpy(copy->data(), backend->AsRefBuffer(*buffer)->data(), static_cast<size_t>(bytes));
    return copy;
  };
  ops.read_bool = [backend](const BufferPtr& b) { return backend->AsRefBuffer(*b)->data()[0] != 0; };
  return common::MakeControlKernel(inst, std::move(subs), std::move(ops));
}

}  // namespace kiln::compute::ref
