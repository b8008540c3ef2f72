#pragma once
// Shared pieces of the cpu backend's oneDNN kernels: the engine, per-thread scratch memory (the
// user-scratchpad mode: the kernel, not oneDNN, owns scratch), strided copies and helpers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kiln/core/shape.h"

namespace kiln::compute::cpu::dnnl_util {

/// The process-wide oneDNN cpu engine.
const dnnl::engine& Engine();

/// At least `bytes` bytes of 64-byte aligned scratch owned by the calling thread, valid until the
/// thread's next call (a kernel takes it once per call; kernels on one thread run one at a time).
uint8_t* Scratch(size_t bytes);

/// `floats` floats of work space for a part of a kernel split across a team: `own` (carved out of
/// the calling thread's Scratch before the split, since the kernel holds that block) on the thread
/// that made the call (`caller`), the thread's own Scratch on a helper.
inline float* PartWork(std::thread::id caller, float* own, int64_t floats) {
  if (std::this_thread::get_id() == caller) return own;
  return reinterpret_cast<float*>(Scratch(sizeof(float) * static_cast<size_t>(floats)));
}

/// A constant operand in the form a kernel wants (oneDNN's layout of a kernel, Winograd's
/// transformed kernel), made on the first call and again only if the constant's buffer moves.
/// One per kernel, shared by its calls from any thread.
class KeptCopy {
 public:
  /// The form of the constant at `source`: `fill` writes it into `bytes` of 64-byte aligned
  /// memory unless it was made for this source already.
  template <class Fill>
  const uint8_t* Get(const void* source, size_t bytes, Fill fill) {
    std::lock_guard<std::mutex> lock(mu_);
    if (source_ != source) {
      if (!data_) Allocate(bytes);
      fill(data_.get());
      source_ = source;
    }
    return data_.get();
  }

 private:
  void Allocate(size_t bytes);
  std::mutex mu_;
  const void* source_ = nullptr;
  std::unique_ptr<uint8_t, decltype(&std::free)> data_{nullptr, &std::free};
};

/// Carves 64-byte aligned regions out of one scratch block.
struct ScratchLayout {
  size_t total = 0;
  /// Reserves `bytes` and returns the region's offset.
  size_t Add(size_t bytes);
};

/// Sets the OpenMP team size of the calling thread (oneDNN's runtime) before a primitive runs.
void SetThreads(int threads);

/// Sets the calling thread's OpenMP team size for a scope (primitive creation: oneDNN sizes some
/// implementations' work split by the thread count at creation), then restores it.
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int previous_;
};

/// Whether oneDNN chose its slow reference implementation ("ref:any"...).
bool IsReference(const dnnl::primitive_desc_base& pd);

/// The implementation oneDNN chose, for kernel names ("jit:avx2", "gemm:jit"...).
std::string ImplName(const dnnl::primitive_desc_base& pd);

/// A memory descriptor with explicit strides (elements), float32 unless told.
dnnl::memory::desc StridedDesc(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                               dnnl::memory::data_type type = dnnl::memory::data_type::f32);

/// A memory descriptor whose layout oneDNN picks (format_tag::any), float32 unless told.
dnnl::memory::desc AnyDesc(const std::vector<int64_t>& dims,
                           dnnl::memory::data_type type = dnnl::memory::data_type::f32);

/// The size of axis `a` of `s` (a ConvDims or matmul axis number).
inline int64_t Dim(const Shape& s, int64_t a) { return s.Dimensions()[static_cast<size_t>(a)]; }

/// Row-major (dense) strides of `dims`.
std::vector<int64_t> DenseStrides(const std::vector<int64_t>& dims);

/// Entry `axis` of `strides` (a ConvDims axis number).
inline int64_t At(const std::vector<int64_t>& strides, int64_t axis) {
  return strides[static_cast<size_t>(axis)];
}

/// Copies the box `dims` of `src` (element i at src + sum(i_a * src_strides[a]); strides may be
/// negative, in elements) into `dst`, dense row-major; elements of `type` (f32 or bf16).
void StridedCopy(const uint8_t* src, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& src_strides, dnnl::memory::data_type type, uint8_t* dst);

/// Whether oneDNN runs bfloat16 matrix products on this CPU's bfloat16 instructions
/// (avx512_core_bf16 or later), rather than emulating them.
bool NativeBFloat16();

/// The oneDNN element type of a matmul or convolution with operands `a`, `b` and result
/// `result`: f32 for Float32 ones; bf16 for BFloat16 ones on a CPU with bfloat16 instructions
/// (NativeBFloat16) whose epilogue, if any, has no activation (`activation`: a bias alone is
/// oneDNN's bias argument, summed in float32 with the products and rounded once); nullopt for any
/// other (left to other kernels).
std::optional<dnnl::memory::data_type> ContractionType(const Shape& a, const Shape& b, const Shape& result,
                                                       bool activation);

/// A memory object over `data` (oneDNN's handles are non-const even for inputs).
dnnl::memory Wrap(const dnnl::memory::desc& md, const void* data);

}  // namespace kiln::compute::cpu::dnnl_util
