#pragma once
// The scalar formulas of the float ops whose definition is more than one C++ call, written once:
// the reference kernels, the cpu backend's fused scalar path, its SIMD fallback lanes and its
// contraction epilogues all compute these, so every path gives the same value.

#include <cmath>
#include <type_traits>

namespace kiln::compute::common {

/// 1 / (1 + e^-x). For negative x the equal form e^x / (1 + e^x): e^-x would overflow to +inf
/// below x = -88 and give 0 where the true value is a small (possibly subnormal) number.
template <typename C>
C Logistic(C x) {
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

/// +-1 by the sign of x; NaN stays NaN and zeros keep their sign.
template <typename C>
C Sign(C x) {
  return std::isnan(x) || x == 0 ? x : std::copysign(C(1), x);
}

/// 1 / sqrt(x), rounded twice as the two operations are (no approximate reciprocal).
template <typename C>
C Rsqrt(C x) {
  return C(1) / std::sqrt(x);
}

/// Max propagates NaN (the first operand's first); between equal values (zeros of either sign)
/// it prefers +0, so Max(a, b) == Max(b, a) bit for bit. Integers compare plainly.
template <typename C>
C MaxOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    if (a == b) return std::signbit(a) ? b : a;
  }
  return a > b ? a : b;
}

/// Min as MaxOf, preferring -0 between zeros.
template <typename C>
C MinOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    if (a == b) return std::signbit(a) ? a : b;
  }
  return a < b ? a : b;
}

}  // namespace kiln::compute::common
