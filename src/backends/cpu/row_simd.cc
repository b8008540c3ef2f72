// The SIMD form of the row softmax (row_kernels.h): per row, the maximum, exp(x - max) written
// out while summed, then the division, each over the row's vectors (the last partial one under a mask)
// while the row is in L1. Highway with dynamic dispatch, as fused_simd.cc.

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/row_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/row_kernels.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// The first `count` (< a vector) floats at p, the other lanes `fill`. AVX2 and AVX-512 load
/// under a mask (no access past them); the portable targets copy through `buf`.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V LoadPart(D d, const float* p, size_t count, V fill, float* buf) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  (void)buf;
  const auto m = hn::FirstN(d, count);
  return hn::IfThenElse(m, hn::MaskedLoad(m, d, p), fill);
#else
  hn::Store(fill, d, buf);
  std::memcpy(buf, p, count * sizeof(float));
  return hn::Load(d, buf);
#endif
}

/// Stores the first `count` (< a vector) lanes of v at p.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void StorePart(D d, V v, float* p, size_t count, float* buf) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  (void)buf;
  hn::BlendedStore(v, hn::FirstN(d, count), d, p);
#else
  hn::Store(v, d, buf);
  std::memcpy(p, buf, count * sizeof(float));
#endif
}

void SoftmaxRows(const float* x, float* y, int64_t rows, int64_t n) {
  using D = hn::ScalableTag<float>;
  using V = hn::Vec<D>;
  const D d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t full = n / lanes * lanes;
  const auto rest = static_cast<size_t>(n - full);
  const V neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
  // exp(a) for a below this is under float32's normal range: those lanes give 0 (the reference
  // gives a subnormal of at most 2^-126, then divided by a sum of at least 1).
  const V lowest = hn::Set(d, -87.0f);
  // The row's last partial vector, on the portable targets (no read or write past the row).
  HWY_ALIGN float part[64];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    V m = neg_inf;
    auto nan = hn::Lt(m, m);  // No lane.
    for (int64_t i = 0; i < full; i += lanes) {
      const V v = hn::LoadU(d, xr + i);
      nan = hn::Or(nan, hn::IsNaN(v));
      m = hn::Max(m, v);
    }
    V last = neg_inf;
    if (rest > 0) last = LoadPart(d, xr + full, rest, neg_inf, part);
    nan = hn::Or(nan, hn::IsNaN(last));
    m = hn::Max(m, last);
    const float max = hn::GetLane(hn::MaxOfLanes(d, m));
    if (!hn::AllFalse(d, nan) || !std::isfinite(max)) {
      SoftmaxRowsScalar(xr, yr, 1, n);  // NaN, +inf or a row of -inf: as the reference.
      continue;
    }
    const V shift = hn::Set(d, max);
    V sum = hn::Zero(d);
    for (int64_t i = 0; i < full; i += lanes) {
      const V a = hn::Sub(hn::LoadU(d, xr + i), shift);
      const V e = hn::IfThenElseZero(hn::Ge(a, lowest), hn::Exp(d, a));
      hn::StoreU(e, d, yr + i);
      sum = hn::Add(sum, e);
    }
    V e_last = hn::Zero(d);
    if (rest > 0) {
      const V a = hn::Sub(last, shift);
      e_last = hn::IfThenElseZero(hn::Ge(a, lowest), hn::Exp(d, a));  // -inf lanes: 0.
      sum = hn::Add(sum, e_last);
    }
    const V total = hn::SumOfLanes(d, sum);
    for (int64_t i = 0; i < full; i += lanes) hn::StoreU(hn::Div(hn::LoadU(d, yr + i), total), d, yr + i);
    if (rest > 0) StorePart(d, hn::Div(e_last, total), yr + full, rest, part);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(SoftmaxRows);

void SoftmaxRowsSimd(const float* x, float* y, int64_t rows, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRows)(x, y, rows, n);
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
