// Shared pieces of the oneDNN kernels: engine, per-thread scratch, strided copies, descriptors.

#include "backends/cpu/dnnl_common.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace kiln::compute::cpu::dnnl_util {

namespace {

constexpr size_t kAlign = 64;

/// Rounds `n` up to a multiple of kAlign.
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// One thread's scratch block: grows to the largest request, freed when the thread exits.
struct ThreadScratch {
  uint8_t* data = nullptr;
  size_t size = 0;
  ~ThreadScratch() { std::free(data); }
};

}  // namespace

const dnnl::engine& Engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

uint8_t* Scratch(size_t bytes) {
  thread_local ThreadScratch scratch;
  if (bytes > scratch.size) {
    const size_t size = AlignUp(bytes);
    void* p = std::aligned_alloc(kAlign, size);
    if (p == nullptr) throw std::bad_alloc();
    std::free(scratch.data);
    scratch.data = static_cast<uint8_t*>(p);
    scratch.size = size;
  }
  return scratch.data;
}

void KeptCopy::Allocate(size_t bytes) {
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlign, std::max<size_t>(AlignUp(bytes), kAlign))));
  if (!data_) throw std::bad_alloc();
}

size_t ScratchLayout::Add(size_t bytes) {
  const size_t offset = total;
  total += AlignUp(bytes);
  return offset;
}

void SetThreads(int threads) { omp_set_num_threads(threads > 0 ? threads : 1); }

ThreadScope::ThreadScope(int threads) : previous_(omp_get_max_threads()) { SetThreads(threads); }

ThreadScope::~ThreadScope() { omp_set_num_threads(previous_); }

bool IsReference(const dnnl::primitive_desc_base& pd) { return ImplName(pd).rfind("ref", 0) == 0; }

std::string ImplName(const dnnl::primitive_desc_base& pd) {
  const char* name = pd.impl_info_str();
  return name != nullptr ? name : "";
}

dnnl::memory::desc StridedDesc(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                               dnnl::memory::data_type type) {
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), type,
                            dnnl::memory::dims(strides.begin(), strides.end()));
}

dnnl::memory::desc AnyDesc(const std::vector<int64_t>& dims, dnnl::memory::data_type type) {
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), type,
                            dnnl::memory::format_tag::any);
}

std::vector<int64_t> DenseStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

namespace {

template <typename T>
void StridedCopyOf(const T* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& src_strides,
                   T* dst) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  if (dims.empty()) {
    *dst = *src;
    return;
  }
  const size_t rank = dims.size();
  const int64_t inner = dims[rank - 1], inner_stride = src_strides[rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  const T* row = src;
  while (true) {
    if (inner_stride == 1) {
      std::memcpy(dst, row, static_cast<size_t>(inner) * sizeof(T));
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i] = row[i * inner_stride];
    }
    dst += inner;
    // Odometer over the outer axes.
    size_t a = rank - 1;
    while (a > 0) {
      --a;
      row += src_strides[a];
      if (++index[a] < dims[a]) break;
      row -= src_strides[a] * dims[a];
      index[a] = 0;
      if (a == 0) return;
    }
    if (rank == 1) return;
  }
}

}  // namespace

void StridedCopy(const uint8_t* src, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& src_strides, dnnl::memory::data_type type, uint8_t* dst) {
  if (type == dnnl::memory::data_type::bf16) {
    StridedCopyOf(reinterpret_cast<const uint16_t*>(src), dims, src_strides,
                  reinterpret_cast<uint16_t*>(dst));
  } else {
    StridedCopyOf(reinterpret_cast<const float*>(src), dims, src_strides, reinterpret_cast<float*>(dst));
  }
}

bool NativeBFloat16() {
  // The ISA values are bit sets: bf16 means every bit of avx512_core_bf16 (AMX includes them).
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;
  }();
  return native;
}

std::optional<dnnl::memory::data_type> ContractionType(const Shape& a, const Shape& b, const Shape& result,
                                                       bool activation) {
  const DType t = result.dtype();
  if (a.dtype() != t || b.dtype() != t) return std::nullopt;
  if (t == DType::Float32) return dnnl::memory::data_type::f32;
  if (t == DType::BFloat16 && !activation && NativeBFloat16()) return dnnl::memory::data_type::bf16;
  return std::nullopt;
}

dnnl::memory Wrap(const dnnl::memory::desc& md, const void* data) {
  return dnnl::memory(md, Engine(), const_cast<void*>(data));
}

}  // namespace kiln::compute::cpu::dnnl_util
