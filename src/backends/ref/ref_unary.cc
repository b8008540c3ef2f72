// Elementwise unary kernels (Unary and UnaryPredicate ops): float math in the element's compute
// type, integer ops on two's complement bits, LogicalNot on Bool bytes.

#include <bit>
#include <cmath>
#include <cstring>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

/// A float op computed in T's compute type (float for half types) and rounded back to T.
template <typename T, typename F>
Kernel MapFloat(int64_t n, F f) {
  return Map<T, T>(n, [f](T x) { return Store<T>(f(Load(x))); });
}

template <typename T>
Kernel FloatUnary(OpType op, DType dtype, int64_t n) {
  using C = Compute<T>;
  switch (op) {
    case OpType::Neg:
      return MapFloat<T>(n, [](C x) { return -x; });
    case OpType::Abs:
      return MapFloat<T>(n, [](C x) { return std::fabs(x); });
    case OpType::Sign:
      // NaN stays NaN and zeros keep their sign; everything else is +-1.
      return MapFloat<T>(n, [](C x) { return common::Sign(x); });
    case OpType::Sqrt:
      return MapFloat<T>(n, [](C x) { return std::sqrt(x); });
    case OpType::Rsqrt:
      return MapFloat<T>(n, [](C x) { return common::Rsqrt(x); });
    case OpType::Exp:
      return MapFloat<T>(n, [](C x) { return std::exp(x); });
    case OpType::Expm1:
      return MapFloat<T>(n, [](C x) { return std::expm1(x); });
    case OpType::Log:
      return MapFloat<T>(n, [](C x) { return std::log(x); });
    case OpType::Log1p:
      return MapFloat<T>(n, [](C x) { return std::log1p(x); });
    case OpType::Sin:
      return MapFloat<T>(n, [](C x) { return std::sin(x); });
    case OpType::Cos:
      return MapFloat<T>(n, [](C x) { return std::cos(x); });
    case OpType::Tan:
      return MapFloat<T>(n, [](C x) { return std::tan(x); });
    case OpType::Asin:
      return MapFloat<T>(n, [](C x) { return std::asin(x); });
    case OpType::Acos:
      return MapFloat<T>(n, [](C x) { return std::acos(x); });
    case OpType::Atan:
      return MapFloat<T>(n, [](C x) { return std::atan(x); });
    case OpType::Sinh:
      return MapFloat<T>(n, [](C x) { return std::sinh(x); });
    case OpType::Cosh:
      return MapFloat<T>(n, [](C x) { return std::cosh(x); });
    case OpType::Tanh:
      return MapFloat<T>(n, [](C x) { return std::tanh(x); });
    case OpType::Asinh:
      return MapFloat<T>(n, [](C x) { return std::asinh(x); });
    case OpType::Acosh:
      return MapFloat<T>(n, [](C x) { return std::acosh(x); });
    case OpType::Atanh:
      return MapFloat<T>(n, [](C x) { return std::atanh(x); });
    case OpType::Logistic:
      return MapFloat<T>(n, [](C x) { return common::Logistic(x); });
    case OpType::Erf:
      return MapFloat<T>(n, [](C x) { return std::erf(x); });
    case OpType::Floor:
      return MapFloat<T>(n, [](C x) { return std::floor(x); });
    case OpType::Ceil:
      return MapFloat<T>(n, [](C x) { return std::ceil(x); });
    case OpType::Round:
      // Half to even: nearbyint rounds in the current mode, which is round-to-nearest-even.
      return MapFloat<T>(n, [](C x) { return std::nearbyint(x); });
    case OpType::IsFinite:
      return Map<T, uint8_t>(n, [](T x) { return static_cast<uint8_t>(std::isfinite(Load(x))); });
    case OpType::IsNaN:
      return Map<T, uint8_t>(n, [](T x) { return static_cast<uint8_t>(std::isnan(Load(x))); });
    case OpType::LogicalNot:
    case OpType::BitwiseNot:
    case OpType::BitCount:
    case OpType::Clz:
    case OpType::StopGradient:
#define KILN_LISTED_Unary
#define KILN_LISTED_UnaryPredicate
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, dtype);
}

template <typename T>
Kernel IntUnary(OpType op, DType dtype, int64_t n) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case OpType::Neg:
      // In unsigned arithmetic: -INT_MIN wraps to INT_MIN.
      return Map<T, T>(n, [](T x) { return FromBits<T>(Wide<T>(0) - ToBits(x)); });
    case OpType::Abs:
      if constexpr (std::is_signed_v<T>) {
        return Map<T, T>(n, [](T x) { return x < 0 ? FromBits<T>(Wide<T>(0) - ToBits(x)) : x; });
      } else {
        return Map<T, T>(n, [](T x) { return x; });
      }
    case OpType::Sign:
      if constexpr (std::is_signed_v<T>) {
        return Map<T, T>(n, [](T x) { return static_cast<T>((x > 0) - (x < 0)); });
      } else {
        return Map<T, T>(n, [](T x) { return static_cast<T>(x != 0); });
      }
    case OpType::BitwiseNot:
      return Map<T, T>(n, [](T x) { return FromBits<T>(~ToBits(x)); });
    case OpType::BitCount:
      return Map<T, T>(n, [](T x) { return static_cast<T>(std::popcount(static_cast<U>(x))); });
    case OpType::Clz:
      // In the operand's own width: Clz of 0 is the width.
      return Map<T, T>(n, [](T x) { return static_cast<T>(std::countl_zero(static_cast<U>(x))); });
    case OpType::Sqrt:
    case OpType::Rsqrt:
    case OpType::Exp:
    case OpType::Expm1:
    case OpType::Log:
    case OpType::Log1p:
    case OpType::Sin:
    case OpType::Cos:
    case OpType::Tan:
    case OpType::Asin:
    case OpType::Acos:
    case OpType::Atan:
    case OpType::Sinh:
    case OpType::Cosh:
    case OpType::Asinh:
    case OpType::Acosh:
    case OpType::Atanh:
    case OpType::Tanh:
    case OpType::Logistic:
    case OpType::Erf:
    case OpType::Floor:
    case OpType::Ceil:
    case OpType::Round:
    case OpType::LogicalNot:
    case OpType::StopGradient:
    case OpType::IsFinite:
    case OpType::IsNaN:
#define KILN_LISTED_Unary
#define KILN_LISTED_UnaryPredicate
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, dtype);
}

}  // namespace

Kernel MakeUnaryKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpType op = inst.op;
  const DType dtype = operands[0].dtype();
  const int64_t n = operands[0].Size();
  if (op == OpType::StopGradient) {
    const auto bytes = static_cast<size_t>(operands[0].ByteSize());
    return [bytes](Operands in, uint8_t* out) {
      if (out != in[0] && bytes > 0) std::memcpy(out, in[0], bytes);
    };
  }
  if (IsComplex(dtype)) return MakeComplexElementwiseKernel(inst, operands);
  if (dtype == DType::Bool) {
    if (op != OpType::LogicalNot) NoKernel(op, dtype);
    return Map<uint8_t, uint8_t>(n, [](uint8_t x) { return static_cast<uint8_t>(x == 0); });
  }
  return DispatchDType(dtype, [&](auto tag) -> Kernel {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      return FloatUnary<T>(op, dtype, n);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return IntUnary<T>(op, dtype, n);
    } else {
      NoKernel(op, dtype);
    }
  });
}

}  // namespace kiln::compute::ref
