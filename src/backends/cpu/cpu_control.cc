// The cpu backend's tuple ops: a Composite whose name has a kernel here (quant_composite.cc,
// adam_kernel.cc)
// runs it; everything else runs the shared While/If/OptimizationBarrier/Composite kernels
// (backends/common/control.h) over cpu buffers, sub-programs compiled as cpu executables.

#include <cstring>
#include <memory>
#include <string>

#include "backends/common/control.h"
#include "backends/cpu/kernels.h"
#include "kiln/compute/composite.h"

namespace kiln::compute::cpu {

namespace {

/// The Composite names the cpu backend has kernels for, each with its maker (an empty kernel
/// where it does not take these operands).
struct CompositeKernel {
  const char* name;
  const char* kernel_name;
  TupleKernel (*make)(CpuBackend*, const Instruction&);
  bool overwrites_operands;  ///< TupleKernelChoice::overwrites_operands.
  bool own_threads;          ///< TupleKernelChoice::own_threads.
};
constexpr CompositeKernel kCompositeKernels[] = {
    // The quantized product opens OpenMP regions of its own; Adam splits through SplitAcrossTeam.
    {composite::kQuantizedMatmul, "quant_matmul", MakeQuantizedMatmulKernel, false, true},
    {composite::kAdamUpdate, "adam_update", MakeAdamUpdateKernel, true, false},
};

TupleKernel MakeControlKernel(CpuBackend* backend, const Instruction& inst) {
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

}  // namespace

TupleKernelChoice ChooseTupleKernel(CpuBackend* backend, const Instruction& inst) {
  if (inst.op == OpType::Composite) {
    for (const CompositeKernel& c : kCompositeKernels) {
      if (inst.attrs.name != c.name) continue;
      if (TupleKernel k = c.make(backend, inst))
        return {std::move(k), c.kernel_name, c.overwrites_operands, c.own_threads};
    }
    return {MakeControlKernel(backend, inst), "Composite " + inst.attrs.name + " (decomposition)"};
  }
  return {MakeControlKernel(backend, inst), std::string(OpName(inst.op))};
}

}  // namespace kiln::compute::cpu
