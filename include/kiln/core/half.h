#pragma once
/// @file
/// kiln::float16 (IEEE 754 binary16) and kiln::bfloat16 (brain float): 16-bit storage types
/// that convert from and to float with round-to-nearest-even. Arithmetic goes through float.

#include <bit>
#include <cstdint>

namespace kiln {

namespace detail {

constexpr uint16_t FloatToHalfBits(float value) noexcept {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  const uint32_t abs = f & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // Inf or NaN: keep NaN quiet and non-zero.
    if (abs == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // Rounds to >= 65520: Inf.
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in half: value = abs * 2^24 units of 2^-24.
    if (abs < 0x33000000u) return sign;  // Below half of the smallest subnormal: +-0.
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24 for exponents 102..112.
    const uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    uint32_t rounded = result;
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++rounded;
    return static_cast<uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to even.
  const uint32_t rebased = abs - 0x38000000u;
  const uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

constexpr float HalfBitsToFloat(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalise into a float.
  uint32_t e = 113;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mantissa & 0x3FFu) << 13));
}

constexpr uint16_t FloatToBFloat16Bits(float value) noexcept {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // Quiet NaN.
  const uint32_t rounded = f + 0x7FFFu + ((f >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

constexpr float BFloat16BitsToFloat(uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

}  // namespace detail

/// IEEE 754 half precision (1 sign, 5 exponent, 10 mantissa bits).
struct float16 {
  /// The raw bit pattern (sign bit 15, exponent bits 14-10, mantissa bits 9-0).
  uint16_t bits = 0;

  /// Positive zero.
  constexpr float16() = default;
  /// Rounds to nearest, ties to even.
  constexpr explicit float16(float value) noexcept : bits(detail::FloatToHalfBits(value)) {}
  /// Converts through float32 (`value` rounded to float first, then to half).
  constexpr explicit float16(double value) noexcept : float16(static_cast<float>(value)) {}
  /// The exact float32 value (every half value is representable).
  constexpr explicit operator float() const noexcept { return detail::HalfBitsToFloat(bits); }
  /// Makes a float16 from its raw bit pattern.
  static constexpr float16 FromBits(uint16_t b) noexcept {
    float16 h;
    h.bits = b;
    return h;
  }
  /// Bitwise identity (so NaN == NaN here, and +0 != -0): for storage comparisons.
  friend constexpr bool SameBits(float16 a, float16 b) noexcept { return a.bits == b.bits; }
};

/// bfloat16: the upper half of a float32 (1 sign, 8 exponent, 7 mantissa bits).
struct bfloat16 {
  /// The raw bit pattern: the upper 16 bits of the float32 it stands for.
  uint16_t bits = 0;

  /// Positive zero.
  constexpr bfloat16() = default;
  /// Rounds to nearest, ties to even.
  constexpr explicit bfloat16(float value) noexcept : bits(detail::FloatToBFloat16Bits(value)) {}
  /// Converts through float32 (`value` rounded to float first, then to bfloat16).
  constexpr explicit bfloat16(double value) noexcept : bfloat16(static_cast<float>(value)) {}
  /// The exact float32 value (the bits shifted into the upper half).
  constexpr explicit operator float() const noexcept { return detail::BFloat16BitsToFloat(bits); }
  /// Makes a bfloat16 from its raw bit pattern.
  static constexpr bfloat16 FromBits(uint16_t b) noexcept {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  /// Bitwise identity (so NaN == NaN here, and +0 != -0): for storage comparisons.
  friend constexpr bool SameBits(bfloat16 a, bfloat16 b) noexcept { return a.bits == b.bits; }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);

}  // namespace kiln
