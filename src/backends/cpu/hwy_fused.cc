// The SIMD forms of the fused register machine's ops (Highway, dynamic dispatch over AVX3, AVX2
// and EMU128). Exact ops match the reference kernels bit for bit; transcendentals use Highway's
// contrib math (Exp, Expm1, Log, Log1p, Sin, Cos, Tanh) or our own (Logistic, Erf) within a few
// ulps, and fall back to the scalar std:: function for lanes outside the range where the SIMD
// form is accurate (overflow, subnormal results, NaN, huge arguments). Pow runs the scalar form.

// Targets: the best of AVX3 / AVX2 at run time; the portable baseline is EMU128 (HWY_SCALAR with
// GCC < 12.3, where Highway marks EMU128 broken).
#ifndef HWY_COMPILE_ALL_ATTAINABLE
#define HWY_COMPILE_ALL_ATTAINABLE
#endif
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/hwy_fused.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include <cmath>
#include <cstring>

#include "backends/cpu/fusion.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr size_t kMaxLanes = 64;

/// out[i] = f(a[i]) over n elements; the tail runs through a padded stack vector.
template <class F>
HWY_INLINE void Map1(const float* a, float* out, size_t n, F f) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, hn::LoadU(d, a + i)), d, out + i);
  if (i == n) return;
  HWY_ALIGN float ta[kMaxLanes] = {}, to[kMaxLanes];
  std::memcpy(ta, a + i, (n - i) * sizeof(float));
  hn::Store(f(d, hn::Load(d, ta)), d, to);
  std::memcpy(out + i, to, (n - i) * sizeof(float));
}

/// out[i] = f(a[i], b[i]).
template <class F>
HWY_INLINE void Map2(const float* a, const float* b, float* out, size_t n, F f) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  if (i == n) return;
  HWY_ALIGN float ta[kMaxLanes] = {}, tb[kMaxLanes] = {}, to[kMaxLanes];
  std::memcpy(ta, a + i, (n - i) * sizeof(float));
  std::memcpy(tb, b + i, (n - i) * sizeof(float));
  hn::Store(f(d, hn::Load(d, ta), hn::Load(d, tb)), d, to);
  std::memcpy(out + i, to, (n - i) * sizeof(float));
}

/// out[i] = f(a[i], b[i], c[i]).
template <class F>
HWY_INLINE void Map3(const float* a, const float* b, const float* c, float* out, size_t n, F f) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(f(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i), hn::LoadU(d, c + i)), d, out + i);
  if (i == n) return;
  HWY_ALIGN float ta[kMaxLanes] = {}, tb[kMaxLanes] = {}, tc[kMaxLanes] = {}, to[kMaxLanes];
  std::memcpy(ta, a + i, (n - i) * sizeof(float));
  std::memcpy(tb, b + i, (n - i) * sizeof(float));
  std::memcpy(tc, c + i, (n - i) * sizeof(float));
  hn::Store(f(d, hn::Load(d, ta), hn::Load(d, tb), hn::Load(d, tc)), d, to);
  std::memcpy(out + i, to, (n - i) * sizeof(float));
}

/// `r` with the lanes where `ok` is false recomputed by the scalar function `s` of `x`.
template <class M, class S>
HWY_INLINE V FixLanes(D d, V x, V r, M ok, S s) {
  if (HWY_LIKELY(hn::AllTrue(d, ok))) return r;
  HWY_ALIGN float xs[kMaxLanes], rs[kMaxLanes], oks[kMaxLanes];
  hn::Store(x, d, xs);
  hn::Store(r, d, rs);
  hn::Store(hn::VecFromMask(d, ok), d, oks);
  for (size_t k = 0; k < hn::Lanes(d); ++k) {
    uint32_t bits;
    std::memcpy(&bits, &oks[k], 4);
    if (bits == 0) rs[k] = s(xs[k]);
  }
  return hn::Load(d, rs);
}

/// `r`, with x itself where x is ±0: odd functions keep the sign of zero (Highway's forms may not).
HWY_INLINE V KeepZero(D d, V x, V r) { return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, r); }

/// Whether lo <= x <= hi (false for NaN).
HWY_INLINE hn::Mask<D> InRange(D d, V x, float lo, float hi) {
  return hn::And(hn::Ge(x, hn::Set(d, lo)), hn::Le(x, hn::Set(d, hi)));
}

/// 1 / (1 + e^-x) as the reference computes it (e^x / (1 + e^x) for negative x).
HWY_INLINE float ScalarLogistic(float x) {
  if (x >= 0) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

/// Logistic from one Exp of -|x|: within 2 ulps where |x| <= 87.
HWY_INLINE V Logistic(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V e = hn::Exp(d, hn::Neg(hn::Abs(x)));
  const V denom = hn::Add(one, e);
  const V r = hn::IfThenElse(hn::Ge(x, hn::Zero(d)), hn::Div(one, denom), hn::Div(e, denom));
  return FixLanes(d, x, r, InRange(d, x, -87.0f, 87.0f), ScalarLogistic);
}

/// erf(x): a minimax polynomial in x^2 for |x| < 0.921875, else 1 - exp(poly(|x|)) with the
/// sign of x (|x| clamped to 4, where erf rounds to 1 in float32). Within 2 ulps (see the sweep
/// test); NaN lanes run std::erf.
HWY_INLINE V Erf(D d, V x) {
  const V t = hn::Min(hn::Abs(x), hn::Set(d, 4.0f));
  const V s = hn::Mul(x, x);
  // Small |x|.
  V p = hn::Set(d, -5.96761703e-4f);
  p = hn::MulAdd(p, s, hn::Set(d, 4.99119423e-3f));
  p = hn::MulAdd(p, s, hn::Set(d, -2.67681349e-2f));
  p = hn::MulAdd(p, s, hn::Set(d, 1.12819925e-1f));
  p = hn::MulAdd(p, s, hn::Set(d, -3.76125336e-1f));
  p = hn::MulAdd(p, s, hn::Set(d, 1.28379166e-1f));
  const V small = hn::MulAdd(p, x, x);
  // Large |x|.
  const V t2 = hn::Mul(t, t);
  V r = hn::MulAdd(hn::Set(d, -1.72853470e-5f), t, hn::Set(d, 3.83197126e-4f));
  const V u = hn::MulAdd(hn::Set(d, -3.88396438e-3f), t, hn::Set(d, 2.42546219e-2f));
  r = hn::MulAdd(r, t2, u);
  r = hn::MulAdd(r, t, hn::Set(d, -1.06777877e-1f));
  r = hn::MulAdd(r, t, hn::Set(d, -6.34846687e-1f));
  r = hn::MulAdd(r, t, hn::Set(d, -1.28717512e-1f));
  r = hn::MulAdd(r, t, hn::Neg(t));
  const V large = hn::CopySign(hn::Sub(hn::Set(d, 1.0f), hn::Exp(d, r)), x);
  const V result = hn::IfThenElse(hn::Gt(hn::Abs(x), hn::Set(d, 0.921875f)), large, small);
  return FixLanes(d, x, result, hn::Not(hn::IsNaN(x)), [](float v) { return std::erf(v); });
}

/// Max and Min as the reference: NaN propagates (the first operand's first), and between equal
/// values (zeros of either sign) Max prefers +0 (the bits' AND) and Min -0 (the bits' OR).
HWY_INLINE V MaxOf(V a, V b) {
  const V r = hn::IfThenElse(hn::Eq(a, b), hn::And(a, b), hn::IfThenElse(hn::Gt(a, b), a, b));
  return hn::IfThenElse(hn::IsNaN(a), a, r);
}
HWY_INLINE V MinOf(V a, V b) {
  const V r = hn::IfThenElse(hn::Eq(a, b), hn::Or(a, b), hn::IfThenElse(hn::Lt(a, b), a, b));
  return hn::IfThenElse(hn::IsNaN(a), a, r);
}

/// a != b, true for NaN as in C++ (Highway's Ne is an ordered compare on some targets).
HWY_INLINE hn::Mask<D> NotEq(V a, V b) { return hn::Not(hn::Eq(a, b)); }

/// 1 where the mask is set, else 0.
template <class M>
HWY_INLINE V OneIf(D d, M m) {
  return hn::IfThenElseZero(m, hn::Set(d, 1.0f));
}

/// Rounds to the nearest bfloat16 (ties to even), NaN kept quiet, as kiln::bfloat16(float).
HWY_INLINE V RoundBF16(D d, V v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto high = hn::Set(du, 0xFFFF0000u);
  const auto rounded = hn::And(hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), lsb), high);
  const auto nan = hn::Or(hn::And(bits, high), hn::Set(du, 0x00400000u));
  return hn::BitCast(d, hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), nan, rounded));
}

/// One op over n elements. Floor, Ceil and Round keep the sign of x (as std:: does, -0 included;
/// HWY_SCALAR's forms lose it at zero).
void RunOp(FOp op, const float* a, const float* b, const float* c, float* out, size_t n) {
  switch (op) {
    case FOp::kNeg:
      return Map1(a, out, n, [](D, V x) { return hn::Neg(x); });
    case FOp::kAbs:
      return Map1(a, out, n, [](D, V x) { return hn::Abs(x); });
    case FOp::kSign:
      return Map1(a, out, n, [](D d, V x) {
        return hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::Eq(x, hn::Zero(d))), x,
                              hn::CopySign(hn::Set(d, 1.0f), x));
      });
    case FOp::kSqrt:
      return Map1(a, out, n, [](D, V x) { return hn::Sqrt(x); });
    case FOp::kRsqrt:
      return Map1(a, out, n, [](D d, V x) { return hn::Div(hn::Set(d, 1.0f), hn::Sqrt(x)); });
    case FOp::kExp:
      return Map1(a, out, n, [](D d, V x) {
        return FixLanes(d, x, hn::Exp(d, x), InRange(d, x, -87.0f, 88.5f),
                        [](float v) { return std::exp(v); });
      });
    case FOp::kExpm1:
      return Map1(a, out, n, [](D d, V x) {
        return FixLanes(d, x, KeepZero(d, x, hn::Expm1(d, x)), InRange(d, x, -87.0f, 88.5f),
                        [](float v) { return std::expm1(v); });
      });
    case FOp::kLog:
      return Map1(a, out, n, [](D d, V x) {
        return FixLanes(d, x, hn::Log(d, x), InRange(d, x, 1.17549435e-38f, 3.40282347e38f),
                        [](float v) { return std::log(v); });
      });
    case FOp::kLog1p:
      return Map1(a, out, n, [](D d, V x) {
        return FixLanes(d, x, KeepZero(d, x, hn::Log1p(d, x)), InRange(d, x, 0.0f, 3.40282347e38f),
                        [](float v) { return std::log1p(v); });
      });
    case FOp::kSin:
      return Map1(a, out, n, [](D d, V x) {
        return FixLanes(d, x, KeepZero(d, x, hn::Sin(d, x)), InRange(d, x, -39000.0f, 39000.0f),
                        [](float v) { return std::sin(v); });
      });
    case FOp::kCos:
      return Map1(a, out, n, [](D d, V x) {
        return FixLanes(d, x, hn::Cos(d, x), InRange(d, x, -39000.0f, 39000.0f),
                        [](float v) { return std::cos(v); });
      });
    case FOp::kTanh:
      return Map1(a, out, n, [](D d, V x) {
        return FixLanes(d, x, KeepZero(d, x, hn::Tanh(d, x)), hn::IsFinite(x),
                        [](float v) { return std::tanh(v); });
      });
    case FOp::kLogistic:
      return Map1(a, out, n, [](D d, V x) { return Logistic(d, x); });
    case FOp::kErf:
      return Map1(a, out, n, [](D d, V x) { return KeepZero(d, x, Erf(d, x)); });
    case FOp::kFloor:
      return Map1(a, out, n, [](D, V x) { return hn::CopySign(hn::Floor(x), x); });
    case FOp::kCeil:
      return Map1(a, out, n, [](D, V x) { return hn::CopySign(hn::Ceil(x), x); });
    case FOp::kRound:
      return Map1(a, out, n, [](D, V x) { return hn::CopySign(hn::Round(x), x); });
    case FOp::kIsFinite:
      return Map1(a, out, n, [](D d, V x) { return OneIf(d, hn::IsFinite(x)); });
    case FOp::kIsNaN:
      return Map1(a, out, n, [](D d, V x) { return OneIf(d, hn::IsNaN(x)); });
    case FOp::kLogicalNot:
      return Map1(a, out, n, [](D d, V x) { return OneIf(d, hn::Eq(x, hn::Zero(d))); });
    case FOp::kNotZero:
      return Map1(a, out, n, [](D d, V x) { return OneIf(d, NotEq(x, hn::Zero(d))); });
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
    case FOp::kRoundF16:  // F16C's conversion rounds to nearest even (the portable ones truncate).
      return Map1(a, out, n, [](D d, V x) {
        const hn::Rebind<hwy::float16_t, D> dh;
        return hn::IfThenElse(hn::IsNaN(x), x, hn::PromoteTo(d, hn::DemoteTo(dh, x)));
      });
#endif
    case FOp::kRoundBF16:
      return Map1(a, out, n, [](D d, V x) { return RoundBF16(d, x); });
    case FOp::kAdd:
      return Map2(a, b, out, n, [](D, V x, V y) { return hn::Add(x, y); });
    case FOp::kSub:
      return Map2(a, b, out, n, [](D, V x, V y) { return hn::Sub(x, y); });
    case FOp::kMul:
      return Map2(a, b, out, n, [](D, V x, V y) { return hn::Mul(x, y); });
    case FOp::kDiv:
      return Map2(a, b, out, n, [](D, V x, V y) { return hn::Div(x, y); });
    case FOp::kMax:
      return Map2(a, b, out, n, [](D, V x, V y) { return MaxOf(x, y); });
    case FOp::kMin:
      return Map2(a, b, out, n, [](D, V x, V y) { return MinOf(x, y); });
    case FOp::kLogicalAnd:
      return Map2(a, b, out, n, [](D d, V x, V y) {
        return OneIf(d, hn::And(NotEq(x, hn::Zero(d)), NotEq(y, hn::Zero(d))));
      });
    case FOp::kLogicalOr:
      return Map2(a, b, out, n, [](D d, V x, V y) {
        return OneIf(d, hn::Or(NotEq(x, hn::Zero(d)), NotEq(y, hn::Zero(d))));
      });
    case FOp::kLogicalXor:
      return Map2(a, b, out, n, [](D d, V x, V y) {
        return OneIf(d, hn::Xor(NotEq(x, hn::Zero(d)), NotEq(y, hn::Zero(d))));
      });
    case FOp::kEqual:
      return Map2(a, b, out, n, [](D d, V x, V y) { return OneIf(d, hn::Eq(x, y)); });
    case FOp::kNotEqual:
      return Map2(a, b, out, n, [](D d, V x, V y) { return OneIf(d, NotEq(x, y)); });
    case FOp::kLess:
      return Map2(a, b, out, n, [](D d, V x, V y) { return OneIf(d, hn::Lt(x, y)); });
    case FOp::kLessOrEqual:
      return Map2(a, b, out, n, [](D d, V x, V y) { return OneIf(d, hn::Le(x, y)); });
    case FOp::kGreater:
      return Map2(a, b, out, n, [](D d, V x, V y) { return OneIf(d, hn::Gt(x, y)); });
    case FOp::kGreaterOrEqual:
      return Map2(a, b, out, n, [](D d, V x, V y) { return OneIf(d, hn::Ge(x, y)); });
    case FOp::kWhere:
      return Map3(a, b, c, out, n,
                  [](D d, V x, V y, V z) { return hn::IfThenElse(NotEq(x, hn::Zero(d)), y, z); });
    default:  // Pow (no SIMD form yet), RoundF16 on the portable targets; kInput / kImm.
      return RunFusedOpScalar(op, a, b, c, out, n);
  }
}

/// The compiled target's name.
const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(RunOp);
HWY_EXPORT(TargetName);

// Through the best target this CPU supports.
void RunFusedOpSimd(FOp op, const float* a, const float* b, const float* c, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(RunOp)(op, a, b, c, out, n);
}

const char* FusedSimdTarget() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

// Highway's test mock of the supported targets.
void ForEachFusedSimdTarget(const std::function<void(const char* target)>& fn) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    fn(hwy::TargetName(target));
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
