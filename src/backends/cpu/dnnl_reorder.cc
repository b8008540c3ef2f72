// Transposes through oneDNN's reorder primitive. The reference kernel copies a transpose as
// boxes of contiguous runs on one thread; oneDNN's reorder walks the same strided view with
// jitted loops and splits it across the team. Measured on the 2-core machine (a standalone loop
// over the primitive, best of 20 x 50 calls, against the step times of KILN_CPU_PROFILE): the
// attention head split of PP-OCRv4's encoder, [32, 40, 3, 8, 15] -> [3, 32, 8, 40, 15] (1.8 MB),
// 39 us on two threads and 64 us on one against 150 us through the reference kernel; at batch 1
// (58 KB) 10 us against 7 us, hence the size gate kMinReorderElements.

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/dnnl_kernels.h"

namespace kiln::compute::cpu {

KernelChoice MakeDnnlTranspose(int threads, const Instruction& inst, const Shape& operand) {
  const DType dtype = operand.dtype();
  if (DTypeBits(dtype) != 32 || operand.IsDynamic()) return {};  // Float32, Int32, Uint32.
  if (operand.Size() < kMinReorderElements || operand.Rank() > DNNL_MAX_NDIMS || operand.Rank() < 2)
    return {};
  const std::vector<int64_t>& perm = inst.attrs.permutation;
  const std::vector<int64_t> in_strides = dnnl_util::DenseStrides(operand.Dimensions());
  dnnl::memory::dims dims, strides;
  for (int64_t a : perm) {
    dims.push_back(operand.Dimensions()[static_cast<size_t>(a)]);
    strides.push_back(in_strides[static_cast<size_t>(a)]);
  }
  const dnnl::memory::desc src(dims, dnnl::memory::data_type::s32, strides);
  const dnnl::memory::desc dst(dims, dnnl::memory::data_type::s32, dnnl_util::DenseStrides(dims));
  const dnnl_util::ThreadScope scope(threads);
  try {
    const dnnl::reorder::primitive_desc pd(dnnl_util::Engine(), src, dnnl_util::Engine(), dst);
    if (dnnl_util::IsReference(pd)) return {};
    auto primitive = std::make_shared<dnnl::reorder>(pd);
    return GuardedDnnlKernel("Transpose", "dnnl.reorder[" + dnnl_util::ImplName(pd) + "]", threads > 1,
                             [primitive, src, dst, threads](ref::Operands in, uint8_t* out) {
                               dnnl_util::SetThreads(threads);
                               dnnl::memory from = dnnl_util::Wrap(src, in[0]),
                                            to = dnnl_util::Wrap(dst, out);
                               dnnl::stream stream(dnnl_util::Engine());
                               primitive->execute(stream, from, to);
                               stream.wait();
                             });
  } catch (const dnnl::error&) {
    return {};
  }
}

}  // namespace kiln::compute::cpu
