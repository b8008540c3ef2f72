#pragma once
// The cpu backend's kernel table: for each node, the fastest kernel it has (fused elementwise
// groups, oneDNN contractions, SIMD kernels as they are added), else the reference kernel.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/cost_model.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ir.h"
#include "backends/ref/ref_kernels.h"

namespace kiln::compute::cpu {

/// Reads the operands' bytes, writes the result's bytes; the same contract as ref::Kernel
/// (elementwise kernels tolerate the result aliasing an operand of the same size).
using Kernel = ref::Kernel;

struct KernelChoice {
  Kernel kernel;
  /// Which implementation ("ref", "fused[5]", "dnnl.matmul"...), for the dump and tests.
  std::string name;
  /// The kernel spreads its work over threads of its own making (a multi-threaded oneDNN call,
  /// an OpenMP region), which a program team (team.h) cannot lend its threads to: inside one it
  /// would run on the calling thread alone. Programs with such a kernel run without a team.
  /// Kernels that run on the calling thread, or split through SplitAcrossTeam, leave it false.
  bool own_threads = false;
  /// The kernel has parts for a program team that pay even where the program is too small to
  /// engage OpenMP's team (a matrix-vector product's contraction blocks): such a small program
  /// runs on a team (see CpuExecutable::UseTeamIfAllSplit).
  bool team_work = false;
};

/// oneDNN kernels (dnnl_kernels.cc): DotGeneral and ConvGeneral where oneDNN runs them; an empty
/// kernel when it does not apply. `team`: the program team's size the kernel may split into.
KernelChoice TryDnnlKernel(int threads, int team, const Node& node, const std::vector<Shape>& operands);
/// The kernel of a fused node (fused_kernel.cc).
KernelChoice MakeFusedKernel(CpuBackend& backend, int threads, const Node& node,
                             const std::vector<Shape>& operands);

/// The kernel of a reduction fused with its operand's elementwise group (fused_reduce.cc).
KernelChoice MakeFusedReduceKernel(CpuBackend& backend, int threads, const Node& node,
                                   const std::vector<Shape>& operands);
/// Whether a reduction `op` over `axes` of `operand` has a fused kernel (ReduceSum, ReduceMax,
/// ReduceMin of Float32 whose reduced axes form one block).
bool FusesIntoReduce(OpType op, const Shape& operand, const std::vector<int64_t>& axes);

/// The kernel for a non-tuple node with the given operand shapes: a fused node's, else a window
/// kernel (pool_kernels.h), oneDNN's, or the reference kernel. Every builder takes `threads`,
/// the most threads a kernel of this program may engage (see ProgramThreads).
KernelChoice ChooseKernel(CpuBackend& backend, int threads, const Node& node,
                          const std::vector<Shape>& operands);

/// Whether the node's result may be written over an operand of the same size at its last use.
bool WritesInPlace(const Node& node, const std::vector<Shape>& operands);
/// Whether the extra results a multi-output kernel writes (its `writes`) may take the memory of
/// its operands of the same size at their last use: fused kernels store a piece's results only
/// after its loads (and copy first an input read other than element for element).
bool ExtraResultsWriteInPlace(const Node& writer);
/// For a node that WritesInPlace: whether its result may take the memory of operand number
/// `operand` (DynamicUpdateSlice: only the operand it updates, never the update itself; a fused
/// node with a windowed input: neither the SelectAndScatter's operand nor its source).
bool MayWriteOver(const Node& node, size_t operand);

/// A compiled tuple op (While, If, OptimizationBarrier, Composite): operand buffers in, fresh
/// result buffers out; sub-programs are compiled for the cpu backend once (cpu_control.cc).
using TupleKernel = std::function<std::vector<BufferPtr>(const std::vector<BufferPtr>& operands, int device)>;
struct TupleKernelChoice {
  TupleKernel kernel;
  /// Which implementation ("While", "quant_matmul", "Composite <name> (decomposition)").
  std::string name;
  /// The kernel may write a result over an operand it is given as a buffer that owns its memory
  /// (CpuBuffer::OwnsMemory) and return that buffer: the executable gives it such buffers only for
  /// donated parameters that no later step reads (others are lent as views).
  bool overwrites_operands = false;
  /// As KernelChoice::own_threads. Control flow's kernels run sub-programs, which a team does
  /// not yet reach into: true for them.
  bool own_threads = true;
};
/// The kernel of tuple op `inst`: a Composite runs the backend's kernel of its name where one
/// accepts it, everything else the shared control flow (a Composite its decomposition).
TupleKernelChoice ChooseTupleKernel(CpuBackend* backend, const Instruction& inst);

/// The kernel of a "kiln.quantized_matmul" Composite when the cpu backend has one for its
/// operands (quant_composite.cc), else an empty function.
TupleKernel MakeQuantizedMatmulKernel(CpuBackend* backend, const Instruction& inst);
/// The "kiln.adam_update" composite's kernel (adam_kernel.cc): Adam's update of one Float32
/// variable in one pass; empty for instances it does not take (they run the decomposition). It
/// writes m', v' and w' over m, v and w where it is given their buffers (overwrites_operands).
TupleKernel MakeAdamUpdateKernel(CpuBackend* backend, const Instruction& inst);

}  // namespace kiln::compute::cpu
