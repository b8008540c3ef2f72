// The OCP FP8 formats: exact decoding and round-to-nearest-even encoding, in double arithmetic
// (every float8 value and every float32 value is exact in double).

#include "kiln/core/float8.h"

#include <cmath>

namespace kiln {

namespace {

struct Format {
  int mantissa_bits;
  int bias;
  bool has_inf;  // E5M2: exponent all ones is inf/NaN. E4M3FN: only S.1111.111 is NaN.
  double max_finite;
  uint8_t nan;
};

constexpr Format kE4M3FN{3, 7, false, 448.0, 0x7F};
constexpr Format kE5M2{2, 15, true, 57344.0, 0x7E};

uint8_t Encode(const Format& f, double value) {
  if (std::isnan(value)) return f.nan;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  double a = std::fabs(value);
  if (std::isinf(a))
    return f.has_inf ? static_cast<uint8_t>(sign | (0x7F & ~((1 << f.mantissa_bits) - 1))) : f.nan;
  if (a == 0) return sign;
  // Round to the quantum of a's binade (subnormals share the smallest normal binade's quantum).
  const int min_exp = 1 - f.bias;
  int e = std::ilogb(a);
  if (e < min_exp) e = min_exp;
  const double quantum = std::ldexp(1.0, e - f.mantissa_bits);
  a = std::nearbyint(a / quantum) * quantum;  // The default rounding mode: ties to even.
  if (a > f.max_finite)
    return f.has_inf ? static_cast<uint8_t>(sign | (0x7F & ~((1 << f.mantissa_bits) - 1))) : f.nan;
  if (a == 0) return sign;
  const int exp = std::ilogb(a);
  if (exp < min_exp) {  // Subnormal: exponent field 0.
    return static_cast<uint8_t>(sign | static_cast<int>(a / std::ldexp(1.0, min_exp - f.mantissa_bits)));
  }
  const int mantissa = static_cast<int>(a / std::ldexp(1.0, exp - f.mantissa_bits)) - (1 << f.mantissa_bits);
  return static_cast<uint8_t>(sign | ((exp + f.bias) << f.mantissa_bits) | mantissa);
}

double Decode(const Format& f, uint8_t bits) {
  const int exp_bits = 7 - f.mantissa_bits;
  const int exp_field = (bits >> f.mantissa_bits) & ((1 << exp_bits) - 1);
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  const int all_ones = (1 << exp_bits) - 1;
  if (f.has_inf && exp_field == all_ones) return mantissa == 0 ? sign * INFINITY : NAN;
  if (!f.has_inf && exp_field == all_ones && mantissa == (1 << f.mantissa_bits) - 1) return NAN;
  if (exp_field == 0) return sign * std::ldexp(mantissa, 1 - f.bias - f.mantissa_bits);
  return sign * std::ldexp((1 << f.mantissa_bits) + mantissa, exp_field - f.bias - f.mantissa_bits);
}

}  // namespace

uint8_t Float8E4M3FNFromDouble(double value) { return Encode(kE4M3FN, value); }
double Float8E4M3FNToDouble(uint8_t bits) { return Decode(kE4M3FN, bits); }
uint8_t Float8E5M2FromDouble(double value) { return Encode(kE5M2, value); }
double Float8E5M2ToDouble(uint8_t bits) { return Decode(kE5M2, bits); }

}  // namespace kiln
