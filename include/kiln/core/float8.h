#pragma once
/// @file
/// The two 8-bit float formats (OCP FP8), storage dtypes as the packed integers are: tensors hold
/// them, ConvertDType converts to and from them, Reshape keeps them; compute in a wider float.
///
/// - Float8E4M3FN: 1 sign, 4 exponent (bias 7) and 3 mantissa bits; no infinities; the only NaN
///   is S.1111.111; largest 448, smallest subnormal 2^-9.
/// - Float8E5M2: 1 sign, 5 exponent (bias 15) and 2 mantissa bits, IEEE-like with infinities and
///   NaN (the top byte of a float16); largest 57344, smallest subnormal 2^-16.
///
/// Conversions from wider floats round to nearest, ties to even. Values beyond the largest finite
/// one after rounding become NaN in E4M3FN (it has no infinity) and infinity in E5M2; infinities
/// become NaN in E4M3FN.

#include <cstdint>

namespace kiln {

/// The E4M3FN byte nearest to `value` (see the file's comment for overflow and NaN).
uint8_t Float8E4M3FNFromDouble(double value);
/// The value of an E4M3FN byte.
double Float8E4M3FNToDouble(uint8_t bits);
/// The E5M2 byte nearest to `value`.
uint8_t Float8E5M2FromDouble(double value);
/// The value of an E5M2 byte.
double Float8E5M2ToDouble(uint8_t bits);

}  // namespace kiln
