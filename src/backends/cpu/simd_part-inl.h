// LoadPart and StorePart: the first lanes of a float vector from or to memory, nothing read or
// written past them. Included by the Highway translation units (row_simd.cc,
// conv_tap_sums_simd.cc) after foreach_target.h, once per target (Highway's per-target include
// guard below).

#if defined(KILN_BACKENDS_CPU_SIMD_PART_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_BACKENDS_CPU_SIMD_PART_INL_H_
#undef KILN_BACKENDS_CPU_SIMD_PART_INL_H_
#else
#define KILN_BACKENDS_CPU_SIMD_PART_INL_H_
#endif

#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {

/// The first `count` (at most a vector; none read when 0) floats at p, the other lanes `fill`.
/// x86's AVX2 and AVX-512 targets load under a mask (no access past them); the portable targets
/// copy through `buf` (a vector's floats).
template <class D, class V = hwy::HWY_NAMESPACE::Vec<D>>
HWY_INLINE V LoadPart(D d, const float* p, size_t count, V fill, float* buf) {
  namespace hn = hwy::HWY_NAMESPACE;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  (void)buf;
  const auto m = hn::FirstN(d, count);
  return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), fill);
#else
  hn::Store(fill, d, buf);
  std::memcpy(buf, p, count * sizeof(float));
  return hn::Load(d, buf);
#endif
}

/// Stores the first `count` (at most a vector) lanes of v at p.
template <class D, class V = hwy::HWY_NAMESPACE::Vec<D>>
HWY_INLINE void StorePart(D d, V v, float* p, size_t count, float* buf) {
  namespace hn = hwy::HWY_NAMESPACE;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  (void)buf;
  hn::BlendedStore(v, hn::FirstN(d, count), d, p);
#else
  hn::Store(v, d, buf);
  std::memcpy(p, buf, count * sizeof(float));
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_BACKENDS_CPU_SIMD_PART_INL_H_
