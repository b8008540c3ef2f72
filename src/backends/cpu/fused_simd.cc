// The SIMD forms of the fused register machine's ops (Highway, dynamic dispatch over AVX3, AVX2
// and EMU128), and the fused machine's other SIMD primitives (fused_simd.h) but the reductions'
// folds (fused_fold_simd.cc). Exact ops match the
// reference kernels bit for bit; transcendentals use Highway's contrib math or our own forms
// (Logistic, Erf, Tan, Cosh; Exp through ExpInRange, Highway's bits in fewer instructions on
// AVX-512) within a few ulps, and run the op's scalar form (fused_ops.def) for lanes outside the
// range where the SIMD form is accurate (overflow, subnormal results, NaN, huge arguments). Pow
// runs the scalar form. Each op is defined once on a vector (Apply); the per-instruction passes
// (RunOp) and the vector programs (RunProgram: the whole program per block of vectors held in
// registers) both reach it through the cases fused_ops.def generates.

// Targets: the best of AVX3 / AVX2 at run time; the portable baseline is EMU128 (HWY_SCALAR with
// GCC < 12.3, where Highway marks EMU128 broken).
#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/fused_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "backends/cpu/fused_simd.h"
#include "backends/cpu/simd_exp-inl.h"
#include "backends/cpu/simd_extreme-inl.h"
#include "backends/cpu/simd_target.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kiln/core/half.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One case of the switches over every op (RunOp, RunBlock). Inlined, they make those functions
// large enough that GCC's AddressSanitizer instrumentation at -O1 takes hours on this file, so
// under ASan each case is its own function (same code, one call per op).
#ifndef KILN_SIMD_CASE
#if defined(__SANITIZE_ADDRESS__)  // GCC
#define KILN_SIMD_ASAN 1
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
#define KILN_SIMD_ASAN 1
#endif
#endif
#if defined(KILN_SIMD_ASAN)
#define KILN_SIMD_CASE HWY_NOINLINE
#else
#define KILN_SIMD_CASE HWY_INLINE
#endif
#endif

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr size_t kMaxLanes = kMaxSimdLanes;

/// out[i] = f(a[i]) over n elements; the tail runs through a padded stack vector.
template <class F>
HWY_INLINE void Map1(const float* a, float* out, size_t n, F f) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  // Unrolled: the loop's own instructions weigh on the cheap ops (a load, an op and a store).
#pragma GCC unroll 4
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
#pragma GCC unroll 4
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
#pragma GCC unroll 4
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

/// The scalar form of unary op kOp (fused_ops.def), for FixLanes.
template <FOp kOp>
HWY_INLINE float Scalar1(float x) {
  return ScalarOp<kOp>(x, 0.0f, 0.0f);
}

/// Logistic from one Exp of -|x|, 1 / (1 + e) for x >= 0 and e / (1 + e) below, in one division:
/// within 2 ulps where |x| <= 87.
HWY_INLINE V Logistic(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V e = ExpInRange(d, hn::Neg(hn::Abs(x)));
  const V r = hn::Div(hn::IfThenElse(hn::Ge(x, hn::Zero(d)), one, e), hn::Add(one, e));
  return FixLanes(d, x, r, InRange(d, x, -87.0f, 87.0f), Scalar1<FOp::kLogistic>);
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
  const V large = hn::CopySign(hn::Sub(hn::Set(d, 1.0f), ExpInRange(d, r)), x);
  const V result = hn::IfThenElse(hn::Gt(hn::Abs(x), hn::Set(d, 0.921875f)), large, small);
  return FixLanes(d, x, result, hn::Not(hn::IsNaN(x)), Scalar1<FOp::kErf>);
}

/// tan(x) as sin(x) / cos(x), both from Highway's contrib math (its range reduction keeps the
/// small cosine near odd multiples of pi/2 accurate relative to itself).
HWY_INLINE V Tan(D d, V x) { return hn::Div(hn::Sin(d, x), hn::Cos(d, x)); }

/// cosh(x) = (e^|x| + e^-|x|) / 2 from one Exp, for |x| <= 88 (where e^|x| is finite).
HWY_INLINE V Cosh(D d, V x) {
  const V e = ExpInRange(d, hn::Abs(x));
  return hn::Mul(hn::Set(d, 0.5f), hn::Add(e, hn::Div(hn::Set(d, 1.0f), e)));
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

/// The op on lanes through its scalar form (Pow; RoundF16 where no F16C conversion exists).
HWY_INLINE V LaneWise(D d, FOp op, V x, V y, V z) {
  HWY_ALIGN float xs[kMaxLanes], ys[kMaxLanes], zs[kMaxLanes], rs[kMaxLanes];
  hn::Store(x, d, xs);
  hn::Store(y, d, ys);
  hn::Store(z, d, zs);
  RunFusedOpScalar(op, xs, ys, zs, rs, hn::Lanes(d));
  return hn::Load(d, rs);
}

/// Whether the op runs through LaneWise on this target.
constexpr bool ScalarOnly(FOp op) {
  return op == FOp::kPow || (op == FOp::kRoundF16 && (HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128));
}

/// The op on one vector (unary ops read x; binary x, y; kWhere x ? y : z): the one definition both
/// evaluators use. Floor, Ceil and Round keep the sign of x (as std:: does, -0 included;
/// HWY_SCALAR's forms lose it at zero).
template <FOp kOp>
HWY_INLINE V Apply(D d, V x, V y, V z) {
  (void)y;
  (void)z;
  if constexpr (ScalarOnly(kOp)) {
    return LaneWise(d, kOp, x, y, z);
  } else if constexpr (kOp == FOp::kNeg) {
    return hn::Neg(x);
  } else if constexpr (kOp == FOp::kAbs) {
    return hn::Abs(x);
  } else if constexpr (kOp == FOp::kSign) {
    return hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::Eq(x, hn::Zero(d))), x, hn::CopySign(hn::Set(d, 1.0f), x));
  } else if constexpr (kOp == FOp::kSqrt) {
    return hn::Sqrt(x);
  } else if constexpr (kOp == FOp::kRsqrt) {
    return hn::Div(hn::Set(d, 1.0f), hn::Sqrt(x));
  } else if constexpr (kOp == FOp::kExp) {
    return FixLanes(d, x, ExpInRange(d, x), InRange(d, x, -87.0f, 88.5f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kExpm1) {
    return FixLanes(d, x, KeepZero(d, x, hn::Expm1(d, x)), InRange(d, x, -87.0f, 88.5f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kLog) {
    return FixLanes(d, x, hn::Log(d, x), InRange(d, x, 1.17549435e-38f, 3.40282347e38f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kLog1p) {
    return FixLanes(d, x, KeepZero(d, x, hn::Log1p(d, x)), InRange(d, x, 0.0f, 3.40282347e38f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kSin) {
    return FixLanes(d, x, KeepZero(d, x, hn::Sin(d, x)), InRange(d, x, -39000.0f, 39000.0f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kCos) {
    return FixLanes(d, x, hn::Cos(d, x), InRange(d, x, -39000.0f, 39000.0f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kTan) {
    return FixLanes(d, x, KeepZero(d, x, Tan(d, x)), InRange(d, x, -39000.0f, 39000.0f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kAsin) {
    return FixLanes(d, x, KeepZero(d, x, hn::Asin(d, x)), InRange(d, x, -1.0f, 1.0f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kAcos) {
    return FixLanes(d, x, hn::Acos(d, x), InRange(d, x, -1.0f, 1.0f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kAtan) {
    return FixLanes(d, x, KeepZero(d, x, hn::Atan(d, x)), hn::IsFinite(x), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kSinh) {
    return FixLanes(d, x, KeepZero(d, x, hn::Sinh(d, x)), InRange(d, x, -88.0f, 88.0f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kCosh) {
    return FixLanes(d, x, Cosh(d, x), InRange(d, x, -88.0f, 88.0f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kAsinh) {
    return FixLanes(d, x, KeepZero(d, x, hn::Asinh(d, x)), hn::IsFinite(x), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kAcosh) {
    return FixLanes(d, x, hn::Acosh(d, x), InRange(d, x, 1.0f, 3.40282347e38f), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kAtanh) {
    return FixLanes(d, x, KeepZero(d, x, hn::Atanh(d, x)), hn::Lt(hn::Abs(x), hn::Set(d, 1.0f)),
                    Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kTanh) {
    return FixLanes(d, x, KeepZero(d, x, hn::Tanh(d, x)), hn::IsFinite(x), Scalar1<kOp>);
  } else if constexpr (kOp == FOp::kLogistic) {
    return Logistic(d, x);
  } else if constexpr (kOp == FOp::kErf) {
    return KeepZero(d, x, Erf(d, x));
  } else if constexpr (kOp == FOp::kFloor) {
    return hn::CopySign(hn::Floor(x), x);
  } else if constexpr (kOp == FOp::kCeil) {
    return hn::CopySign(hn::Ceil(x), x);
  } else if constexpr (kOp == FOp::kRound) {
    return hn::CopySign(hn::Round(x), x);
  } else if constexpr (kOp == FOp::kIsFinite) {
    return OneIf(d, hn::IsFinite(x));
  } else if constexpr (kOp == FOp::kIsNaN) {
    return OneIf(d, hn::IsNaN(x));
  } else if constexpr (kOp == FOp::kLogicalNot) {
    return OneIf(d, hn::Eq(x, hn::Zero(d)));
  } else if constexpr (kOp == FOp::kNotZero) {
    return OneIf(d, NotEq(x, hn::Zero(d)));
  } else if constexpr (kOp == FOp::kRoundF16) {
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
    // F16C's conversion rounds to nearest even (the portable ones truncate).
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::IfThenElse(hn::IsNaN(x), x, hn::PromoteTo(d, hn::DemoteTo(dh, x)));
#else
    return x;  // Unreachable: ScalarOnly.
#endif
  } else if constexpr (kOp == FOp::kRoundBF16) {
    return RoundBF16(d, x);
  } else if constexpr (kOp == FOp::kAdd) {
    return hn::Add(x, y);
  } else if constexpr (kOp == FOp::kSub) {
    return hn::Sub(x, y);
  } else if constexpr (kOp == FOp::kMul) {
    return hn::Mul(x, y);
  } else if constexpr (kOp == FOp::kDiv) {
    return hn::Div(x, y);
  } else if constexpr (kOp == FOp::kMax) {
    return MaxOf(x, y);
  } else if constexpr (kOp == FOp::kMin) {
    return MinOf(x, y);
  } else if constexpr (kOp == FOp::kLogicalAnd) {
    return OneIf(d, hn::And(NotEq(x, hn::Zero(d)), NotEq(y, hn::Zero(d))));
  } else if constexpr (kOp == FOp::kLogicalOr) {
    return OneIf(d, hn::Or(NotEq(x, hn::Zero(d)), NotEq(y, hn::Zero(d))));
  } else if constexpr (kOp == FOp::kLogicalXor) {
    return OneIf(d, hn::Xor(NotEq(x, hn::Zero(d)), NotEq(y, hn::Zero(d))));
  } else if constexpr (kOp == FOp::kEqual) {
    return OneIf(d, hn::Eq(x, y));
  } else if constexpr (kOp == FOp::kNotEqual) {
    return OneIf(d, NotEq(x, y));
  } else if constexpr (kOp == FOp::kLess) {
    return OneIf(d, hn::Lt(x, y));
  } else if constexpr (kOp == FOp::kLessOrEqual) {
    return OneIf(d, hn::Le(x, y));
  } else if constexpr (kOp == FOp::kGreater) {
    return OneIf(d, hn::Gt(x, y));
  } else if constexpr (kOp == FOp::kGreaterOrEqual) {
    return OneIf(d, hn::Ge(x, y));
  } else {
    static_assert(kOp == FOp::kWhere, "not a compute op");
    return hn::IfThenElse(NotEq(x, hn::Zero(d)), y, z);
  }
}

/// One compute op over n elements, one pass.
template <FOp kOp, int kArity>
KILN_SIMD_CASE void RunOne(const float* a, const float* b, const float* c, float* out, size_t n) {
  if constexpr (ScalarOnly(kOp)) {
    RunFusedOpScalar(kOp, a, b, c, out, n);
  } else if constexpr (kArity == 1) {
    Map1(a, out, n, [](D d, V x) { return Apply<kOp>(d, x, x, x); });
  } else if constexpr (kArity == 2) {
    Map2(a, b, out, n, [](D d, V x, V y) { return Apply<kOp>(d, x, y, y); });
  } else {
    Map3(a, b, c, out, n, [](D d, V x, V y, V z) { return Apply<kOp>(d, x, y, z); });
  }
}

/// One op over n elements, one pass.
void RunOp(FOp op, const float* a, const float* b, const float* c, float* out, size_t n) {
  switch (op) {
#define KILN_FUSED_OP(Name, Arity, ...) \
  case FOp::k##Name:                    \
    return RunOne<FOp::k##Name, Arity>(a, b, c, out, n);
#include "backends/cpu/fused_ops.def"
    case FOp::kInput:
    case FOp::kImm:
      break;
  }
  RunFusedOpScalar(op, a, b, c, out, n);  // Not a compute op: the scalar pass names it.
}

/// Four vectors (a block of the vector program, as separate values the compiler keeps in
/// registers).
struct Quad {
  V v0, v1, v2, v3;
};

/// One vector (T = V) or four consecutive ones (T = Quad) loaded from p.
template <class T>
HWY_INLINE T LoadT(D d, const float* p) {
  if constexpr (std::is_same_v<T, Quad>) {
    const size_t lanes = hn::Lanes(d);
    return Quad{hn::LoadU(d, p), hn::LoadU(d, p + lanes), hn::LoadU(d, p + 2 * lanes),
                hn::LoadU(d, p + 3 * lanes)};
  } else {
    return hn::LoadU(d, p);
  }
}

/// Stores one vector or four consecutive ones at p.
template <class T>
HWY_INLINE void StoreT(D d, const T& v, float* p) {
  if constexpr (std::is_same_v<T, Quad>) {
    const size_t lanes = hn::Lanes(d);
    hn::StoreU(v.v0, d, p);
    hn::StoreU(v.v1, d, p + lanes);
    hn::StoreU(v.v2, d, p + 2 * lanes);
    hn::StoreU(v.v3, d, p + 3 * lanes);
  } else {
    hn::StoreU(v, d, p);
  }
}

/// Where operand `w` of `ins` is in memory (InMemory(ins.src[w])), at element `at` of the piece.
HWY_INLINE const float* MemOperand(const VInstr& ins, int w, const float* const* in, const float* slots,
                                   size_t at, size_t lanes) {
  return ins.src[w] == VSrc::kInput ? in[ins.idx[w]] + at : slots + size_t{ins.idx[w]} * 4 * lanes;
}

/// One vector, or four, all v.
template <class T>
HWY_INLINE T Splat(V v) {
  if constexpr (std::is_same_v<T, Quad>) {
    return Quad{v, v, v, v};
  } else {
    return v;
  }
}

/// Operand `w` of `ins` at element `at` of the piece (`acc` for an unused operand), for K = 1 or
/// 4 vectors.
template <class T>
HWY_INLINE T Fetch(D d, const VInstr& ins, int w, const T& acc, const float* const* in, const float* slots,
                   size_t at) {
  switch (ins.src[w]) {
    case VSrc::kInput:
    case VSrc::kSlot:
      return LoadT<T>(d, MemOperand(ins, w, in, slots, at, hn::Lanes(d)));
    case VSrc::kImm:
      return Splat<T>(hn::Set(d, ins.imm[w]));
    default:
      return acc;
  }
}

/// Op kOp on one vector (T = V) or four (T = Quad).
template <FOp kOp, class T>
HWY_INLINE T ApplyT(D d, const T& x, const T& y, const T& z) {
  if constexpr (std::is_same_v<T, Quad>) {
    return Quad{Apply<kOp>(d, x.v0, y.v0, z.v0), Apply<kOp>(d, x.v1, y.v1, z.v1),
                Apply<kOp>(d, x.v2, y.v2, z.v2), Apply<kOp>(d, x.v3, y.v3, z.v3)};
  } else {
    return Apply<kOp>(d, x, y, z);
  }
}

/// f on one vector (T = V) or on each of four (T = Quad).
template <class T, class F>
HWY_INLINE T MapT(const T& x, F f) {
  if constexpr (std::is_same_v<T, Quad>) {
    return Quad{f(x.v0), f(x.v1), f(x.v2), f(x.v3)};
  } else {
    return f(x);
  }
}

/// Whether Max or Min with an immediate operand runs in one x86 instruction (ExtremeImm).
constexpr bool kExtremeImm = HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2;

/// Max(x, c) or Min(x, c) for an immediate c that is not NaN (either operand order: the result is
/// the same for such a c), on x86. VMAXPS(c, x) is c > x ? c : x and VMINPS(c, x) c < x ? c : x:
/// a NaN x comes through, and between equal values x is the reference's choice except for
/// Max(-0, +0), which adding `zero` (+0 for c = +0, else -0, an identity) turns into +0, and
/// Min(+0, -0), which the caller leaves to the general form (c = -0).
template <FOp kOp>
HWY_INLINE V ExtremeImm(V x, V c, V zero) {
  if constexpr (kOp == FOp::kMax) {
    return hn::Add(hn::Max(c, x), zero);
  } else {
    return hn::Min(c, x);
  }
}

/// One instruction of a vector program. Max and Min with an immediate take ExtremeImm's form; the
/// arithmetic ops whose operands are the accumulator or a value in memory, with an immediate or a
/// value in memory, read them directly (Fetch's result, merged from its cases, goes through the
/// stack); the rest fetch only the operands their op reads (fewer live vectors, fewer spills),
/// then apply the op.
template <FOp kOp, int kArity, class T>
KILN_SIMD_CASE T Step(D d, const VInstr& ins, const T& acc, const float* const* in, const float* slots,
                      size_t at) {
  const size_t lanes = hn::Lanes(d);
  if constexpr (kExtremeImm && (kOp == FOp::kMax || kOp == FOp::kMin)) {
    const int w = ins.src[1] == VSrc::kImm ? 1 : ins.src[0] == VSrc::kImm ? 0 : -1;
    const float c = w >= 0 ? ins.imm[w] : 0.0f;
    if (w >= 0 && !std::isnan(c) && !(kOp == FOp::kMin && c == 0.0f && std::signbit(c))) {
      const V cv = hn::Set(d, c);
      const V zero = hn::Set(d, c == 0.0f && !std::signbit(c) ? 0.0f : -0.0f);
      const auto f = [&](V v) { return ExtremeImm<kOp>(v, cv, zero); };
      if (ins.src[1 - w] == VSrc::kAcc) return MapT(acc, f);
      if (InMemory(ins.src[1 - w])) return MapT(LoadT<T>(d, MemOperand(ins, 1 - w, in, slots, at, lanes)), f);
      return MapT(Fetch<T>(d, ins, 1 - w, acc, in, slots, at), f);
    }
  }
  if constexpr (kArity == 2 && (kOp == FOp::kAdd || kOp == FOp::kSub || kOp == FOp::kMul ||
                                kOp == FOp::kDiv || kOp == FOp::kMax || kOp == FOp::kMin)) {
    if (ins.src[1] == VSrc::kImm || InMemory(ins.src[1])) {
      const T y = ins.src[1] == VSrc::kImm ? Splat<T>(hn::Set(d, ins.imm[1]))
                                           : LoadT<T>(d, MemOperand(ins, 1, in, slots, at, lanes));
      if (ins.src[0] == VSrc::kAcc) return ApplyT<kOp, T>(d, acc, y, y);
      if (InMemory(ins.src[0]))
        return ApplyT<kOp, T>(d, LoadT<T>(d, MemOperand(ins, 0, in, slots, at, lanes)), y, y);
    }
  }
  const T x = Fetch<T>(d, ins, 0, acc, in, slots, at);
  if constexpr (kArity == 1) {
    return ApplyT<kOp, T>(d, x, x, x);
  } else if constexpr (kArity == 2) {
    const T y = Fetch<T>(d, ins, 1, acc, in, slots, at);
    return ApplyT<kOp, T>(d, x, y, y);
  } else {
    const T y = Fetch<T>(d, ins, 1, acc, in, slots, at);
    const T z = Fetch<T>(d, ins, 2, acc, in, slots, at);
    return ApplyT<kOp, T>(d, x, y, z);
  }
}

/// The whole program over one vector (T = V) or four (T = Quad) at element `at`, the result
/// stored at `out`.
template <class T>
HWY_INLINE void RunBlock(D d, const VProgram& prog, const float* const* in, float* slots, size_t at,
                         float* out) {
  const size_t lanes = hn::Lanes(d);
  T acc;
  if constexpr (std::is_same_v<T, Quad>) {
    acc = Quad{hn::Zero(d), hn::Zero(d), hn::Zero(d), hn::Zero(d)};
  } else {
    acc = hn::Zero(d);
  }
  for (const VInstr& ins : prog.code) {
    switch (ins.op) {
#define KILN_FUSED_OP(Name, Arity, ...)                             \
  case FOp::k##Name:                                                \
    acc = Step<FOp::k##Name, Arity, T>(d, ins, acc, in, slots, at); \
    break;
#include "backends/cpu/fused_ops.def"
      case FOp::kInput:
      case FOp::kImm:
        break;
    }
    if (ins.save >= 0) StoreT(d, acc, slots + static_cast<size_t>(ins.save) * 4 * lanes);
  }
  if (prog.result_src == VSrc::kSlot) acc = LoadT<T>(d, slots + size_t{prog.result_idx} * 4 * lanes);
  StoreT(d, acc, out);
}

/// Whether the vector program pays on this target: with 32 vector registers a block of four
/// vectors stays in registers; elsewhere the per-instruction passes cost fewer instructions.
bool VectorProgramPays() { return HWY_TARGET == HWY_AVX3; }

/// The program over n elements: blocks of four vectors, single vectors, then the last partial
/// vector through zero-padded copies of the inputs.
void RunProgram(const VProgram& prog, const float* const* in, float* out, size_t n, float* slots, float* tail,
                const float** tail_in) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) RunBlock<Quad>(d, prog, in, slots, i, out + i);
  for (; i + lanes <= n; i += lanes) RunBlock<V>(d, prog, in, slots, i, out + i);
  if (i == n) return;
  const size_t rest = n - i;
  for (int k = 0; k < prog.num_inputs; ++k) {
    float* t = tail + static_cast<size_t>(k) * kMaxLanes;
    tail_in[k] = t;
    if (in[k] == nullptr) continue;
    std::memcpy(t, in[k] + i, rest * sizeof(float));
    std::memset(t + rest, 0, (kMaxLanes - rest) * sizeof(float));
  }
  float* t = tail + static_cast<size_t>(prog.num_inputs) * kMaxLanes;
  RunBlock<V>(d, prog, tail_in, slots, 0, t);
  std::memcpy(out + i, t, rest * sizeof(float));
}

/// dst[i] = src[i] as float32, for a Float16, BFloat16 or Bool source (Float32 is a copy).
void ToF32(DType dtype, const uint8_t* src, float* dst, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  if (dtype == DType::Float16) {
    // F16C's conversion; the portable targets' PromoteTo maps infinities and NaNs to finite
    // values, so there the scalar form below converts every element.
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
    const hn::Rebind<hwy::float16_t, D> dh;
    const auto* p = reinterpret_cast<const hwy::float16_t*>(src);
    for (; i + lanes <= n; i += lanes) hn::StoreU(hn::PromoteTo(d, hn::LoadU(dh, p + i)), d, dst + i);
#endif
  } else if (dtype == DType::BFloat16) {
    const hn::RebindToUnsigned<D> du;
    const hn::Rebind<uint16_t, D> d16;
    const auto* p = reinterpret_cast<const uint16_t*>(src);
    for (; i + lanes <= n; i += lanes)
      hn::StoreU(hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p + i)))), d, dst + i);
  } else if (dtype == DType::Float32) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  for (; i < n; ++i) dst[i] = LoadAsF32(dtype, src, static_cast<int64_t>(i));
}

/// dst[i] = src[i] rounded to the nearest Float16 or BFloat16 (ties to even; NaN stays NaN), or
/// as Bool (1 where src[i] != 0).
void FromF32(DType dtype, const float* src, uint8_t* dst, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  if (dtype == DType::BFloat16) {
    const hn::RebindToSigned<D> di;
    const hn::Rebind<uint16_t, D> d16;
    auto* p = reinterpret_cast<uint16_t*>(dst);
    for (; i + lanes <= n; i += lanes) {
      const auto bits =
          hn::ShiftRight<16>(hn::BitCast(hn::RebindToUnsigned<D>(), RoundBF16(d, hn::LoadU(d, src + i))));
      hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, bits)), d16, p + i);
    }
  }
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  if (dtype == DType::Float16) {  // F16C rounds to nearest even.
    const hn::Rebind<hwy::float16_t, D> dh;
    auto* p = reinterpret_cast<hwy::float16_t*>(dst);
    for (; i + lanes <= n; i += lanes) {
      const V x = hn::LoadU(d, src + i);
      if (!hn::AllFalse(d, hn::IsNaN(x))) break;  // NaN payloads: the scalar form below.
      hn::StoreU(hn::DemoteTo(dh, x), dh, p + i);
    }
  }
#endif
  for (; i < n; ++i) StoreFromF32(dtype, src[i], dst, static_cast<int64_t>(i));
}

/// dst[0, n) = v.
void Fill(float* dst, float v, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  const V x = hn::Set(d, v);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(x, d, dst + i);
  for (; i < n; ++i) dst[i] = v;
}

/// The compiled target's name.
const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(RunOp);
HWY_EXPORT(RunProgram);
HWY_EXPORT(VectorProgramPays);
HWY_EXPORT(TargetName);
HWY_EXPORT(ToF32);
HWY_EXPORT(Fill);
HWY_EXPORT(FromF32);

// Through the best target this CPU supports.
void RunFusedOpSimd(FOp op, const float* a, const float* b, const float* c, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(RunOp)(op, a, b, c, out, n);
}

void RunVProgramSimd(const VProgram& prog, const float* const* in, float* out, size_t n, float* slots,
                     float* tail, const float** tail_in) {
  HWY_DYNAMIC_DISPATCH(RunProgram)(prog, in, out, n, slots, tail, tail_in);
}

bool UseVProgramSimd() { return HWY_DYNAMIC_DISPATCH(VectorProgramPays)(); }

// Room for the largest block (4 vectors of at most 64 lanes) per register.
size_t VProgram::SlotFloats() const { return static_cast<size_t>(std::max(num_regs, 1)) * 4 * kMaxSimdLanes; }

size_t VProgram::TailFloats() const { return static_cast<size_t>(num_inputs + 1) * kMaxSimdLanes; }

const char* FusedSimdTarget() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

void ConvertToF32Simd(DType dtype, const uint8_t* src, float* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(ToF32)(dtype, src, dst, n);
}

void ConvertFromF32Simd(DType dtype, const float* src, uint8_t* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(FromF32)(dtype, src, dst, n);
}

void StorePieceSimd(DType dtype, const float* v, uint8_t* data, int64_t start, int64_t len) {
  if (dtype == DType::Float32) {
    float* dst = reinterpret_cast<float*>(data) + start;
    if (dst != v) std::memcpy(dst, v, static_cast<size_t>(len) * 4);
  } else {
    ConvertFromF32Simd(dtype, v, data + start * DTypeBits(dtype) / 8, static_cast<size_t>(len));
  }
}

void FillSimd(float* dst, float v, size_t n) { HWY_DYNAMIC_DISPATCH(Fill)(dst, v, n); }

// Each target through the process's SIMD target gate (simd_target.h).
void ForEachFusedSimdTarget(const std::function<void(const char* target)>& fn) {
  for (const SimdTarget& target : SimdTargets()) {  // Not Highway's list: a scope may narrow it.
    const SimdTargetScope scope(target.bits);
    fn(hwy::TargetName(target.bits));
  }
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
