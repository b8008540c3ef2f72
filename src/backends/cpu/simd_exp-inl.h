// ExpInRange: exp(x) for float32 vectors, the same bits as Highway's hn::Exp wherever the result
// is a normal float (x in [-87, 88.5]), in about half of its instructions on AVX-512. Included by
// the Highway translation units (fused_simd.cc, row_simd.cc) after foreach_target.h, once per
// target (Highway's per-target include guard below).
//
// hn::Exp rounds x / ln 2 to q (half away from zero) through an int32 conversion and back, reduces
// x by q · ln 2 in two parts, evaluates its polynomial and scales by 2^q as two multiplications by
// 2^(q/2) (which keeps the range past the exponent's). Where the result is normal, 2^q in one step
// is the same exact product; AVX-512 rounds q in one instruction (VRNDSCALEPS) and scales in one
// (VSCALEFPS), where the conversions, the int32 overflow fixes, the exponent arithmetic and the
// two multiplications cost about fifteen. Callers keep x in range, or recompute the other lanes
// (FixLanes) or discard them.

#if defined(KILN_BACKENDS_CPU_SIMD_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_BACKENDS_CPU_SIMD_EXP_INL_H_
#undef KILN_BACKENDS_CPU_SIMD_EXP_INL_H_
#else
#define KILN_BACKENDS_CPU_SIMD_EXP_INL_H_
#endif

#include <type_traits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {

/// exp(x) lane-wise: hn::Exp's bits where x is in [-87, 88.5] (results in the normal range).
/// Outside it the lanes are finite, infinite or NaN but not specified.
template <class D, class V = hwy::HWY_NAMESPACE::Vec<D>>
HWY_INLINE V ExpInRange(D d, V x) {
  namespace hn = hwy::HWY_NAMESPACE;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  if constexpr (std::is_same_v<V, hn::Vec512<float>>) {
    // hn::Exp's q: x / ln 2 plus half with the sign of x, truncated (as its int32 conversion
    // does for every q this range reaches).
    const V half = hn::Or(hn::Set(d, 0.5f), hn::And(x, hn::Set(d, -0.0f)));
    const V t = hn::MulAdd(x, hn::Set(d, 1.442695040888963407359924681f), half);
    const V q{_mm512_roundscale_ps(t.raw, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)};
    // Its reduction (ln 2 in two parts) and polynomial.
    V r = hn::MulAdd(q, hn::Set(d, -0.693145751953125f), x);
    r = hn::MulAdd(q, hn::Set(d, -1.428606765330187045e-6f), r);
    hn::impl::ExpImpl<float> impl;
    const V p = hn::Add(impl.ExpPoly(d, r), hn::Set(d, 1.0f));
    return V{_mm512_scalef_ps(p.raw, q.raw)};
  }
#endif
  return hn::Exp(d, x);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_BACKENDS_CPU_SIMD_EXP_INL_H_
