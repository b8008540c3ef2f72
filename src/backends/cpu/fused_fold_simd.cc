// The fused reductions' folds (fused_simd.h; fused_reduce.cc runs them): sums of float32 values
// in double (whole pieces, element for element, whole rows into column sums) and NaN-propagating
// max and min, with Highway's dynamic dispatch over the same targets as fused_simd.cc. The order
// of every sum is fixed by its arguments, never by the target.

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/fused_fold_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include "backends/common/scalar_math.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/simd_extreme-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr size_t kMaxLanes = kMaxSimdLanes;

/// The sum of v[0, n) in double (lanes accumulate separately, then add up).
double SumF64(const float* v, size_t n) {
  const hn::Rebind<float, hn::ScalableTag<double>> dh;
  const hn::ScalableTag<double> dd;
  const size_t lanes = hn::Lanes(dd);
  auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::Add(acc0, hn::PromoteTo(dd, hn::LoadU(dh, v + i)));
    acc1 = hn::Add(acc1, hn::PromoteTo(dd, hn::LoadU(dh, v + i + lanes)));
  }
  double s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(acc0, acc1)));
  for (; i < n; ++i) s += static_cast<double>(v[i]);
  return s;
}

/// acc[i] += v[i] in double.
void AddIntoF64(double* acc, const float* v, size_t n) {
  const hn::Rebind<float, hn::ScalableTag<double>> dh;
  const hn::ScalableTag<double> dd;
  const size_t lanes = hn::Lanes(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Add(hn::LoadU(dd, acc + i), hn::PromoteTo(dd, hn::LoadU(dh, v + i))), dd, acc + i);
  for (; i < n; ++i) acc[i] += static_cast<double>(v[i]);
}

/// acc[j] += v[k * cols + j] over the rows k in order, in double: columns in blocks of four
/// vectors (then one) whose sums stay in registers over all the rows.
void AddRowsIntoF64(double* acc, const float* v, size_t rows, size_t cols) {
  const hn::Rebind<float, hn::ScalableTag<double>> dh;
  const hn::ScalableTag<double> dd;
  const size_t lanes = hn::Lanes(dd);
  size_t j = 0;
  for (; j + 4 * lanes <= cols; j += 4 * lanes) {
    auto a0 = hn::LoadU(dd, acc + j), a1 = hn::LoadU(dd, acc + j + lanes);
    auto a2 = hn::LoadU(dd, acc + j + 2 * lanes), a3 = hn::LoadU(dd, acc + j + 3 * lanes);
    const float* row = v + j;
    for (size_t k = 0; k < rows; ++k, row += cols) {
      a0 = hn::Add(a0, hn::PromoteTo(dd, hn::LoadU(dh, row)));
      a1 = hn::Add(a1, hn::PromoteTo(dd, hn::LoadU(dh, row + lanes)));
      a2 = hn::Add(a2, hn::PromoteTo(dd, hn::LoadU(dh, row + 2 * lanes)));
      a3 = hn::Add(a3, hn::PromoteTo(dd, hn::LoadU(dh, row + 3 * lanes)));
    }
    hn::StoreU(a0, dd, acc + j);
    hn::StoreU(a1, dd, acc + j + lanes);
    hn::StoreU(a2, dd, acc + j + 2 * lanes);
    hn::StoreU(a3, dd, acc + j + 3 * lanes);
  }
  for (; j + lanes <= cols; j += lanes) {
    auto a = hn::LoadU(dd, acc + j);
    const float* row = v + j;
    for (size_t k = 0; k < rows; ++k, row += cols) a = hn::Add(a, hn::PromoteTo(dd, hn::LoadU(dh, row)));
    hn::StoreU(a, dd, acc + j);
  }
  for (; j < cols; ++j) {
    double a = acc[j];
    for (size_t k = 0; k < rows; ++k) a += static_cast<double>(v[k * cols + j]);
    acc[j] = a;
  }
}

/// The maximum (or minimum) of `init` and v[0, n), NaN propagating as the reference's MaxOf.
float ExtremeF32(bool is_max, const float* v, size_t n, float init) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  V acc = hn::Set(d, init);
  size_t i = 0;
  if (is_max) {
    for (; i + lanes <= n; i += lanes) acc = MaxOf(acc, hn::LoadU(d, v + i));
  } else {
    for (; i + lanes <= n; i += lanes) acc = MinOf(acc, hn::LoadU(d, v + i));
  }
  HWY_ALIGN float lane[kMaxLanes];
  if (i > 0 && i < n) {
    // The tail (shorter than a vector) in one more vector step, its missing lanes `init` (what
    // every lane started from, so folding it again changes nothing): the same extreme as a scalar
    // tail, NaN when any value is (a short row, a softmax over 40 keys, spent most of its time
    // in the scalar tail).
    for (size_t k = 0; k < lanes; ++k) lane[k] = i + k < n ? v[i + k] : init;
    const V t = hn::Load(d, lane);
    acc = is_max ? MaxOf(acc, t) : MinOf(acc, t);
    i = n;
  }
  hn::Store(acc, d, lane);
  float r = init;
  for (size_t k = 0; k < lanes && i > 0; ++k)
    r = is_max ? common::MaxOf(r, lane[k]) : common::MinOf(r, lane[k]);
  for (; i < n; ++i) r = is_max ? common::MaxOf(r, v[i]) : common::MinOf(r, v[i]);
  return r;
}

/// acc[i] = max(acc[i], v[i]) (or min), NaN propagating.
void ExtremeIntoF32(bool is_max, float* acc, const float* v, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const V a = hn::LoadU(d, acc + i), x = hn::LoadU(d, v + i);
    hn::StoreU(is_max ? MaxOf(a, x) : MinOf(a, x), d, acc + i);
  }
  for (; i < n; ++i) acc[i] = is_max ? common::MaxOf(acc[i], v[i]) : common::MinOf(acc[i], v[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(SumF64);
HWY_EXPORT(AddIntoF64);
HWY_EXPORT(AddRowsIntoF64);
HWY_EXPORT(ExtremeF32);
HWY_EXPORT(ExtremeIntoF32);

// Through the best target this CPU supports (the process's SIMD target gate, simd_target.h).
double SumSimd(const float* v, size_t n) { return HWY_DYNAMIC_DISPATCH(SumF64)(v, n); }

void AddIntoSimd(double* acc, const float* v, size_t n) { HWY_DYNAMIC_DISPATCH(AddIntoF64)(acc, v, n); }

void AddRowsIntoSimd(double* acc, const float* v, size_t rows, size_t cols) {
  HWY_DYNAMIC_DISPATCH(AddRowsIntoF64)(acc, v, rows, cols);
}

float ExtremeSimd(bool is_max, const float* v, size_t n, float init) {
  return HWY_DYNAMIC_DISPATCH(ExtremeF32)(is_max, v, n, init);
}

void ExtremeIntoSimd(bool is_max, float* acc, const float* v, size_t n) {
  HWY_DYNAMIC_DISPATCH(ExtremeIntoF32)(is_max, acc, v, n);
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
