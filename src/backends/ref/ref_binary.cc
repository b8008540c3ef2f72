// Elementwise binary kernels (Binary, Compare and Select ops): float math in the element's
// compute type; integer arithmetic that wraps and never traps (division by zero and INT_MIN / -1
// have defined results); logical ops on Bool bytes.

#include <cmath>
#include <limits>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

/// A float op computed in T's compute type and rounded back to T.
template <typename T, typename F>
Kernel ZipFloat(int64_t n, F f) {
  return Zip<T, T>(n, [f](T a, T b) { return Store<T>(f(Load(a), Load(b))); });
}

/// Truncating division; x / 0 has all bits set (-1, or the unsigned maximum), INT_MIN / -1 wraps.
template <typename T>
T IntDiv(T a, T b) {
  if (b == 0) return FromBits<T>(~Wide<T>(0));
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::lowest() && b == T(-1)) return a;
  }
  return static_cast<T>(a / b);
}

/// Remainder with the dividend's sign; x % 0 is x, INT_MIN % -1 is 0.
template <typename T>
T IntRem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return 0;
  }
  return static_cast<T>(a % b);
}

/// Exponentiation by squaring, wrapping. Negative exponents give 1/base^-e truncated: 1 for
/// base 1, +-1 for base -1, 0 otherwise.
template <typename T>
T IntPow(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == T(-1)) return (exponent & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  Wide<T> result = 1, b = ToBits(base);
  for (auto e = static_cast<std::make_unsigned_t<T>>(exponent); e != 0; e >>= 1) {
    if (e & 1u) result *= b;
    b *= b;
  }
  return FromBits<T>(result);
}

template <typename T>
constexpr unsigned kBitWidth = sizeof(T) * 8;

/// The shift amount as unsigned: a negative amount becomes huge, hence >= the width.
template <typename T>
std::make_unsigned_t<T> ShiftAmount(T b) {
  return static_cast<std::make_unsigned_t<T>>(b);
}

template <typename T>
T ShiftLeft(T a, T b) {
  const auto s = ShiftAmount(b);
  return s >= kBitWidth<T> ? T(0) : FromBits<T>(ToBits(a) << s);
}

template <typename T>
T ShiftRightLogical(T a, T b) {
  const auto s = ShiftAmount(b);
  return s >= kBitWidth<T> ? T(0) : FromBits<T>(ToBits(a) >> s);
}

/// Shifts in copies of the top (sign) bit, for unsigned types too; by >= width: all sign bits.
template <typename T>
T ShiftRightArithmetic(T a, T b) {
  using S = std::make_signed_t<T>;
  const auto s = ShiftAmount(b);
  const auto signed_a = static_cast<S>(a);
  if (s >= kBitWidth<T>) return static_cast<T>(signed_a < 0 ? S(-1) : S(0));
  return static_cast<T>(static_cast<S>(signed_a >> s));  // >> of a negative is arithmetic in C++20.
}

template <typename T>
Kernel FloatBinary(OpType op, DType dtype, int64_t n) {
  using C = Compute<T>;
  switch (op) {
    case OpType::Add:
      return ZipFloat<T>(n, [](C a, C b) { return a + b; });
    case OpType::Sub:
      return ZipFloat<T>(n, [](C a, C b) { return a - b; });
    case OpType::Mul:
      return ZipFloat<T>(n, [](C a, C b) { return a * b; });
    case OpType::Div:
      return ZipFloat<T>(n, [](C a, C b) { return a / b; });
    case OpType::Rem:
      return ZipFloat<T>(n, [](C a, C b) { return std::fmod(a, b); });
    case OpType::Pow:
      return ZipFloat<T>(n, [](C a, C b) { return std::pow(a, b); });
    case OpType::Max:
      return ZipFloat<T>(n, [](C a, C b) { return MaxOf(a, b); });
    case OpType::Min:
      return ZipFloat<T>(n, [](C a, C b) { return MinOf(a, b); });
    case OpType::Atan2:
      return ZipFloat<T>(n, [](C y, C x) { return std::atan2(y, x); });
    case OpType::LogicalAnd:
    case OpType::LogicalOr:
    case OpType::LogicalXor:
    case OpType::BitwiseAnd:
    case OpType::BitwiseOr:
    case OpType::BitwiseXor:
    case OpType::ShiftLeft:
    case OpType::ShiftRightArithmetic:
    case OpType::ShiftRightLogical:
#define KILN_LISTED_Binary
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, dtype);
}

template <typename T>
Kernel IntBinary(OpType op, DType dtype, int64_t n) {
  switch (op) {
    case OpType::Add:
      return Zip<T, T>(n, [](T a, T b) { return FromBits<T>(ToBits(a) + ToBits(b)); });
    case OpType::Sub:
      return Zip<T, T>(n, [](T a, T b) { return FromBits<T>(ToBits(a) - ToBits(b)); });
    case OpType::Mul:
      return Zip<T, T>(n, [](T a, T b) { return FromBits<T>(ToBits(a) * ToBits(b)); });
    case OpType::Div:
      return Zip<T, T>(n, [](T a, T b) { return IntDiv(a, b); });
    case OpType::Rem:
      return Zip<T, T>(n, [](T a, T b) { return IntRem(a, b); });
    case OpType::Pow:
      return Zip<T, T>(n, [](T a, T b) { return IntPow(a, b); });
    case OpType::Max:
      return Zip<T, T>(n, [](T a, T b) { return MaxOf(a, b); });
    case OpType::Min:
      return Zip<T, T>(n, [](T a, T b) { return MinOf(a, b); });
    case OpType::BitwiseAnd:
      return Zip<T, T>(n, [](T a, T b) { return FromBits<T>(ToBits(a) & ToBits(b)); });
    case OpType::BitwiseOr:
      return Zip<T, T>(n, [](T a, T b) { return FromBits<T>(ToBits(a) | ToBits(b)); });
    case OpType::BitwiseXor:
      return Zip<T, T>(n, [](T a, T b) { return FromBits<T>(ToBits(a) ^ ToBits(b)); });
    case OpType::ShiftLeft:
      return Zip<T, T>(n, [](T a, T b) { return ShiftLeft(a, b); });
    case OpType::ShiftRightLogical:
      return Zip<T, T>(n, [](T a, T b) { return ShiftRightLogical(a, b); });
    case OpType::ShiftRightArithmetic:
      return Zip<T, T>(n, [](T a, T b) { return ShiftRightArithmetic(a, b); });
    case OpType::Atan2:
    case OpType::LogicalAnd:
    case OpType::LogicalOr:
    case OpType::LogicalXor:
#define KILN_LISTED_Binary
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, dtype);
}

/// Comparisons in the compute type (NaN compares false, except NotEqual), Bool results.
template <typename T>
Kernel Compare(OpType op, DType dtype, int64_t n) {
  auto cmp = [n](auto f) {
    return Zip<T, uint8_t>(n, [f](T a, T b) { return static_cast<uint8_t>(f(Load(a), Load(b))); });
  };
  switch (op) {
    case OpType::Equal:
      return cmp([](auto a, auto b) { return a == b; });
    case OpType::NotEqual:
      return cmp([](auto a, auto b) { return a != b; });
    case OpType::Less:
      return cmp([](auto a, auto b) { return a < b; });
    case OpType::LessOrEqual:
      return cmp([](auto a, auto b) { return a <= b; });
    case OpType::Greater:
      return cmp([](auto a, auto b) { return a > b; });
    case OpType::GreaterOrEqual:
      return cmp([](auto a, auto b) { return a >= b; });
#define KILN_LISTED_Compare
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, dtype);
}

/// Bool operands: any non-zero byte is true; results are 0 or 1.
Kernel BoolBinary(OpType op, int64_t n) {
  auto logical = [n](auto f) {
    return Zip<uint8_t, uint8_t>(
        n, [f](uint8_t a, uint8_t b) { return static_cast<uint8_t>(f(a != 0, b != 0)); });
  };
  switch (op) {
    case OpType::LogicalAnd:
      return logical([](bool a, bool b) { return a && b; });
    case OpType::LogicalOr:
      return logical([](bool a, bool b) { return a || b; });
    case OpType::LogicalXor:
    case OpType::NotEqual:
      return logical([](bool a, bool b) { return a != b; });
    case OpType::Equal:
      return logical([](bool a, bool b) { return a == b; });
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
    case OpType::Rem:
    case OpType::Pow:
    case OpType::Max:
    case OpType::Min:
    case OpType::Atan2:
    case OpType::BitwiseAnd:
    case OpType::BitwiseOr:
    case OpType::BitwiseXor:
    case OpType::ShiftLeft:
    case OpType::ShiftRightArithmetic:
    case OpType::ShiftRightLogical:
    case OpType::Less:
    case OpType::LessOrEqual:
    case OpType::Greater:
    case OpType::GreaterOrEqual:
#define KILN_LISTED_Binary
#define KILN_LISTED_Compare
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, DType::Bool);
}

/// Where(cond, a, b): copies the chosen element's bits (E is an unsigned type of its size).
template <typename E>
Kernel Select(int64_t n) {
  return [n](Operands in, uint8_t* out) {
    const uint8_t* cond = in[0];
    const E* a = reinterpret_cast<const E*>(in[1]);
    const E* b = reinterpret_cast<const E*>(in[2]);
    E* y = reinterpret_cast<E*>(out);
    for (int64_t i = 0; i < n; ++i) y[i] = cond[i] != 0 ? a[i] : b[i];
  };
}

}  // namespace

Kernel MakeBinaryKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpType op = inst.op;
  const int64_t n = inst.shape.Size();
  if (op == OpType::Where) {
    switch (DTypeBits(operands[1].dtype())) {
      case 8:
        return Select<uint8_t>(n);
      case 16:
        return Select<uint16_t>(n);
      case 32:
        return Select<uint32_t>(n);
      case 64:
        return Select<uint64_t>(n);
      case 128:
        return Select<Bits128>(n);
      default:
        NoKernel(op, operands[1].dtype());
    }
  }
  const DType dtype = operands[0].dtype();
  if (dtype == DType::Bool) return BoolBinary(op, n);
  if (IsComplex(dtype)) return MakeComplexElementwiseKernel(inst, operands);
  const bool compare = GetOpCategory(op) == OpCategory::Compare;
  return DispatchDType(dtype, [&](auto tag) -> Kernel {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      NoKernel(op, dtype);
    } else if (compare) {
      return Compare<T>(op, dtype, n);
    } else if constexpr (kIsFloat<T>) {
      return FloatBinary<T>(op, dtype, n);
    } else {
      return IntBinary<T>(op, dtype, n);
    }
  });
}

}  // namespace kiln::compute::ref
