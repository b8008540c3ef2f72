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
#include "backends/cpu/simd_exp-inl.h"
#include "backends/cpu/simd_part-inl.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

/// exp(a) where a >= -87, else 0: below that the result is under float32's normal range (the
/// reference gives a subnormal of at most 2^-126, then divided by a sum of at least 1). The rows
/// shift by their maximum, so a <= 0: within ExpInRange's range.
HWY_INLINE V ExpOrZero(D d, V a) {
  return hn::IfThenElseZero(hn::Ge(a, hn::Set(d, -87.0f)), ExpInRange(d, a));
}

/// The row's maximum in every lane, from the lane-wise maxima `m`; NaN when the row holds a NaN
/// (`nan`) or its maximum is not finite (the row then takes the scalar formula).
template <class M>
HWY_INLINE V RowMax(D d, V m, M nan) {
  const float max = hn::GetLane(hn::MaxOfLanes(d, m));
  return hn::Set(d,
                 hn::AllFalse(d, nan) && std::isfinite(max) ? max : std::numeric_limits<float>::quiet_NaN());
}

/// Rows of n floats that fit in kVecs vectors (the last one holding `rest` values, or full when
/// rest is 0): each row is loaded once and stays in registers.
template <int kVecs>
void ShortRows(D d, const float* x, float* y, int64_t rows, int64_t n, size_t rest) {
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const V neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
  HWY_ALIGN float part[64];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    V v[kVecs];
    for (int k = 0; k < kVecs; ++k) {
      v[k] = k == kVecs - 1 && rest > 0 ? LoadPart(d, xr + k * lanes, rest, neg_inf, part)
                                        : hn::LoadU(d, xr + k * lanes);
    }
    V m = v[0];
    auto nan = hn::IsNaN(v[0]);
    for (int k = 1; k < kVecs; ++k) {
      m = hn::Max(m, v[k]);
      nan = hn::Or(nan, hn::IsNaN(v[k]));
    }
    const V shift = RowMax(d, m, nan);
    if (hn::AllTrue(d, hn::IsNaN(shift))) {
      SoftmaxRowsScalar(xr, yr, 1, n);  // NaN, +inf or a row of -inf: as the reference.
      continue;
    }
    V sum = hn::Zero(d);
    for (int k = 0; k < kVecs; ++k) {
      v[k] = ExpOrZero(d, hn::Sub(v[k], shift));  // A partial vector's -inf lanes give 0.
      sum = hn::Add(sum, v[k]);
    }
    const V total = hn::SumOfLanes(d, sum);
    for (int k = 0; k < kVecs; ++k) {
      const V out = hn::Div(v[k], total);
      if (k == kVecs - 1 && rest > 0) {
        StorePart(d, out, yr + k * lanes, rest, part);
      } else {
        hn::StoreU(out, d, yr + k * lanes);
      }
    }
  }
}

void SoftmaxRows(const float* x, float* y, int64_t rows, int64_t n) {
  const D d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t full = n / lanes * lanes;
  const auto rest = static_cast<size_t>(n - full);
  switch ((n + lanes - 1) / lanes) {  // Rows of up to four vectors stay in registers.
    case 1:
      return ShortRows<1>(d, x, y, rows, n, rest);
    case 2:
      return ShortRows<2>(d, x, y, rows, n, rest);
    case 3:
      return ShortRows<3>(d, x, y, rows, n, rest);
    case 4:
      return ShortRows<4>(d, x, y, rows, n, rest);
    default:
      break;
  }
  const V neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
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
    const V shift = RowMax(d, m, nan);
    if (hn::AllTrue(d, hn::IsNaN(shift))) {
      SoftmaxRowsScalar(xr, yr, 1, n);  // NaN, +inf or a row of -inf: as the reference.
      continue;
    }
    V sum = hn::Zero(d);
    for (int64_t i = 0; i < full; i += lanes) {
      const V e = ExpOrZero(d, hn::Sub(hn::LoadU(d, xr + i), shift));
      hn::StoreU(e, d, yr + i);
      sum = hn::Add(sum, e);
    }
    V e_last = hn::Zero(d);
    if (rest > 0) {
      e_last = ExpOrZero(d, hn::Sub(last, shift));  // -inf lanes: 0.
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
