// MaxOf and MinOf on float32 vectors as the reference computes Max and Min, for the Highway
// translation units that need them (fused_simd.cc, fused_fold_simd.cc), included after
// foreach_target.h, once per target (Highway's per-target include guard below).

#if defined(KILN_BACKENDS_CPU_SIMD_EXTREME_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_BACKENDS_CPU_SIMD_EXTREME_INL_H_
#undef KILN_BACKENDS_CPU_SIMD_EXTREME_INL_H_
#else
#define KILN_BACKENDS_CPU_SIMD_EXTREME_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {

/// Max and Min as the reference: NaN propagates (the first operand's first), and between equal
/// values (zeros of either sign) Max prefers +0 (the bits' AND) and Min -0 (the bits' OR).
template <class V>
HWY_INLINE V MaxOf(V a, V b) {
  namespace hn = hwy::HWY_NAMESPACE;
  const V r = hn::IfThenElse(hn::Eq(a, b), hn::And(a, b), hn::IfThenElse(hn::Gt(a, b), a, b));
  return hn::IfThenElse(hn::IsNaN(a), a, r);
}
template <class V>
HWY_INLINE V MinOf(V a, V b) {
  namespace hn = hwy::HWY_NAMESPACE;
  const V r = hn::IfThenElse(hn::Eq(a, b), hn::Or(a, b), hn::IfThenElse(hn::Lt(a, b), a, b));
  return hn::IfThenElse(hn::IsNaN(a), a, r);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_BACKENDS_CPU_SIMD_EXTREME_INL_H_
