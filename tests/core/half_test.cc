// Tests for kiln::float16 and kiln::bfloat16: every bit pattern against a reference decoder,
// round trips, ties-to-even at every midpoint, overflow, underflow and NaN.

#include "kiln/core/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using kiln::bfloat16;
using kiln::float16;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- Compile-time checks: the conversions are constexpr. ----
static_assert(float16{}.bits == 0);
static_assert(bfloat16{}.bits == 0);
static_assert(float16(1.0f).bits == 0x3C00);
static_assert(float16(-2.0f).bits == 0xC000);
static_assert(float16(0.5).bits == 0x3800);
static_assert(float16(65504.0f).bits == 0x7BFF);
static_assert(float16(65520.0f).bits == 0x7C00);
static_assert(float16(-0.0f).bits == 0x8000);
static_assert(static_cast<float>(float16::FromBits(0x3555)) == 0.333251953125f);
static_assert(static_cast<float>(float16::FromBits(0x0001)) == 0x1p-24f);
static_assert(static_cast<float>(float16::FromBits(0x0400)) == 0x1p-14f);
static_assert(bfloat16(1.0f).bits == 0x3F80);
static_assert(bfloat16(-2.0).bits == 0xC000);
static_assert(static_cast<float>(bfloat16::FromBits(0x4049)) == 3.140625f);
static_assert(static_cast<float>(bfloat16::FromBits(0x0001)) == 0x1p-133f);
static_assert(SameBits(float16(1.0f), float16::FromBits(0x3C00)));
static_assert(!SameBits(float16(0.0f), float16(-0.0f)));
static_assert(!SameBits(bfloat16(0.0f), bfloat16(-0.0f)));

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04X", v);
  return buf;
}

std::string FloatDesc(float f) {
  std::ostringstream os;
  os.precision(9);
  os << f << " (bits " << Hex(std::bit_cast<uint32_t>(f)) << ")";
  return os.str();
}

// Collects mismatches of an exhaustive loop, reports the first few and the total.
class Failures {
 public:
  template <typename... Parts>
  void Add(const Parts&... parts) {
    if (++count_ <= kMaxReported) {
      std::ostringstream os;
      (os << ... << parts);
      ADD_FAILURE() << os.str();
    }
  }
  ~Failures() { EXPECT_EQ(count_, 0) << "mismatches in total"; }

 private:
  static constexpr int kMaxReported = 10;
  int count_ = 0;
};

// ---- Reference decoders, written from the formats' definitions. ----

// binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
double RefHalfValue(uint16_t bits) {
  const bool negative = (bits & 0x8000u) != 0;
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  double magnitude;
  if (exponent == 0x1F) {
    magnitude = mantissa == 0 ? kInf : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -24);  // Subnormal (or zero).
  } else {
    magnitude = std::ldexp(static_cast<double>(1024 + mantissa), exponent - 15 - 10);
  }
  return negative ? -magnitude : magnitude;
}

// bfloat16: 1 sign, 8 exponent (bias 127), 7 mantissa bits.
double RefBFloat16Value(uint16_t bits) {
  const bool negative = (bits & 0x8000u) != 0;
  const int exponent = (bits >> 7) & 0xFF;
  const int mantissa = bits & 0x7F;
  double magnitude;
  if (exponent == 0xFF) {
    magnitude = mantissa == 0 ? kInf : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -126 - 7);
  } else {
    magnitude = std::ldexp(static_cast<double>(128 + mantissa), exponent - 127 - 7);
  }
  return negative ? -magnitude : magnitude;
}

struct Float16Format {
  using Type = float16;
  static constexpr uint16_t kMaxFinite = 0x7BFF;
  static constexpr uint16_t kInfBits = 0x7C00;
  static constexpr uint16_t kMantissaMask = 0x03FF;
  static double Ref(uint16_t bits) { return RefHalfValue(bits); }
};

struct BFloat16Format {
  using Type = bfloat16;
  static constexpr uint16_t kMaxFinite = 0x7F7F;
  static constexpr uint16_t kInfBits = 0x7F80;
  static constexpr uint16_t kMantissaMask = 0x007F;
  static double Ref(uint16_t bits) { return RefBFloat16Value(bits); }
};

template <typename Format>
bool IsNaNBits(uint16_t bits) {
  return (bits & Format::kInfBits) == Format::kInfBits && (bits & Format::kMantissaMask) != 0;
}

template <typename Format>
uint16_t ToBits(float f) {
  return typename Format::Type(f).bits;
}

template <typename Format>
float ToFloat(uint16_t bits) {
  return static_cast<float>(Format::Type::FromBits(bits));
}

// Reference rounding of a float to the format: the nearest of all finite values (ties to the
// even bit pattern), Inf from the largest finite value plus half an ulp on.
template <typename Format>
uint16_t RefRound(float x, const std::vector<double>& positives) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return Format::kInfBits | 0x1;  // Caller treats any NaN alike.
  const double a = std::fabs(static_cast<double>(x));
  const double max_finite = positives[Format::kMaxFinite];
  const double overflow = max_finite + (max_finite - positives[Format::kMaxFinite - 1]) / 2;
  if (a >= overflow) return sign | Format::kInfBits;
  if (a >= max_finite) return sign | Format::kMaxFinite;
  const auto it = std::lower_bound(positives.begin(), positives.end(), a);
  const auto hi = static_cast<uint16_t>(it - positives.begin());
  if (positives[hi] == a) return sign | hi;
  const auto lo = static_cast<uint16_t>(hi - 1);
  const double below = a - positives[lo];
  const double above = positives[hi] - a;
  if (below < above) return sign | lo;
  if (above < below) return sign | hi;
  return sign | ((lo & 1) == 0 ? lo : hi);
}

template <typename Format>
std::vector<double> PositiveFiniteValues() {
  std::vector<double> values;
  for (uint32_t b = 0; b <= Format::kMaxFinite; ++b) values.push_back(Format::Ref(static_cast<uint16_t>(b)));
  return values;
}

// (a) to-float matches the reference for every bit pattern.
template <typename Format>
void CheckAllToFloat() {
  Failures failures;
  int nans = 0;
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float got = ToFloat<Format>(bits);
    const double ref = Format::Ref(bits);
    if (std::isnan(ref)) {
      ++nans;
      if (!std::isnan(got)) failures.Add(Hex(bits), ": NaN pattern converted to ", FloatDesc(got));
      continue;
    }
    if (static_cast<double>(got) != ref || std::signbit(got) != std::signbit(ref)) {
      failures.Add(Hex(bits), ": to float gave ", FloatDesc(got), ", want ", ref);
    }
  }
  // Sanity of the reference: 2 * (2^mantissa_bits - 1) NaN patterns.
  EXPECT_EQ(nans, 2 * Format::kMantissaMask);
}

// (b) to-float then back gives the same bits (a NaN for NaN patterns).
template <typename Format>
void CheckAllRoundTrip() {
  Failures failures;
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const uint16_t back = ToBits<Format>(ToFloat<Format>(bits));
    if (IsNaNBits<Format>(bits)) {
      if (!IsNaNBits<Format>(back)) failures.Add(Hex(bits), ": NaN round-tripped to ", Hex(back));
    } else if (back != bits) {
      failures.Add(Hex(bits), ": round-tripped to ", Hex(back));
    }
  }
}

// (c) at every midpoint between adjacent finite values of one sign: the tie goes to the even
// pattern, the floats just beside it go to the nearer value.
template <typename Format>
void CheckAllMidpoints() {
  Failures failures;
  int checked = 0;
  for (const uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
    for (uint32_t m = 0; m < Format::kMaxFinite; ++m) {
      const auto lo = static_cast<uint16_t>(sign | m);
      const auto hi = static_cast<uint16_t>(sign | (m + 1));
      const double mid = (Format::Ref(lo) + Format::Ref(hi)) / 2;
      const auto mid_f = static_cast<float>(mid);
      if (static_cast<double>(mid_f) != mid) {
        failures.Add("test bug: midpoint ", mid, " of ", Hex(lo), " and ", Hex(hi), " is not a float");
        continue;
      }
      const uint16_t even = (lo & 1) == 0 ? lo : hi;
      const float outward = std::nextafter(
          mid_f, sign ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
      const float inward = std::nextafter(mid_f, 0.0f);
      const uint16_t got_mid = ToBits<Format>(mid_f);
      const uint16_t got_out = ToBits<Format>(outward);
      const uint16_t got_in = ToBits<Format>(inward);
      if (got_mid != even) {
        failures.Add("midpoint ", FloatDesc(mid_f), " of ", Hex(lo), " and ", Hex(hi), " gave ", Hex(got_mid),
                     ", want ", Hex(even));
      }
      if (got_out != hi) {
        failures.Add("just past midpoint ", FloatDesc(outward), " of ", Hex(lo), " and ", Hex(hi), " gave ",
                     Hex(got_out), ", want ", Hex(hi));
      }
      if (got_in != lo) {
        failures.Add("just short of midpoint ", FloatDesc(inward), " of ", Hex(lo), " and ", Hex(hi),
                     " gave ", Hex(got_in), ", want ", Hex(lo));
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * Format::kMaxFinite);
}

// Floats spread over the whole 32-bit pattern space against the reference rounding.
template <typename Format>
void CheckSampledFloats() {
  const std::vector<double> positives = PositiveFiniteValues<Format>();
  ASSERT_TRUE(std::is_sorted(positives.begin(), positives.end()));
  Failures failures;
  constexpr uint64_t kStride = 331;  // Prime: hits every low-bit residue along the way.
  for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += kStride) {
    const auto f = std::bit_cast<float>(static_cast<uint32_t>(u));
    const uint16_t got = ToBits<Format>(f);
    if (std::isnan(f)) {
      if (!IsNaNBits<Format>(got)) failures.Add("NaN ", FloatDesc(f), " gave ", Hex(got));
      continue;
    }
    const uint16_t want = RefRound<Format>(f, positives);
    if (got != want) failures.Add(FloatDesc(f), " gave ", Hex(got), ", want ", Hex(want));
  }
}

// NaNs with assorted payloads (quiet and signalling, either sign) stay NaN.
template <typename Format>
void CheckNaNPayloads() {
  for (const uint32_t pattern : {0x7FC00000u, 0x7F800001u, 0x7F802000u, 0x7F808000u, 0x7F80FFFFu, 0x7FA00000u,
                                 0x7FFFFFFFu, 0xFF800001u, 0xFFC00001u, 0xFF80FFFFu, 0xFFFFFFFFu}) {
    const auto nan = std::bit_cast<float>(pattern);
    ASSERT_TRUE(std::isnan(nan));
    const uint16_t got = ToBits<Format>(nan);
    EXPECT_TRUE(IsNaNBits<Format>(got)) << Hex(pattern) << " gave " << Hex(got);
    EXPECT_TRUE(std::isnan(ToFloat<Format>(got))) << Hex(pattern);
  }
  EXPECT_TRUE(IsNaNBits<Format>(ToBits<Format>(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsNaNBits<Format>(ToBits<Format>(std::numeric_limits<float>::signaling_NaN())));
  EXPECT_TRUE(IsNaNBits<Format>(ToBits<Format>(-std::numeric_limits<float>::quiet_NaN())));
}

// ---- float16 ----

TEST(Float16Test, AllBitPatternsToFloatMatchReference) { CheckAllToFloat<Float16Format>(); }
TEST(Float16Test, AllBitPatternsRoundTrip) { CheckAllRoundTrip<Float16Format>(); }
TEST(Float16Test, AllMidpointsRoundToNearestEven) { CheckAllMidpoints<Float16Format>(); }
TEST(Float16Test, SampledFloatsRoundLikeReference) { CheckSampledFloats<Float16Format>(); }
TEST(Float16Test, NaNWithPayloadStaysNaN) { CheckNaNPayloads<Float16Format>(); }

TEST(Float16Test, KnownValues) {
  EXPECT_EQ(float16(0.0f).bits, 0x0000);
  EXPECT_EQ(float16(-0.0f).bits, 0x8000);
  EXPECT_EQ(float16(1.0f).bits, 0x3C00);
  EXPECT_EQ(float16(-1.5f).bits, 0xBE00);
  EXPECT_EQ(float16(0.1f).bits, 0x2E66);
  EXPECT_EQ(float16(1.0f / 3.0f).bits, 0x3555);
  EXPECT_EQ(float16(0x1p-14f).bits, 0x0400);    // Smallest normal.
  EXPECT_EQ(float16(0x1p-24f).bits, 0x0001);    // Smallest subnormal.
  EXPECT_EQ(float16(0x3FFp-24f).bits, 0x03FF);  // Largest subnormal.
  EXPECT_EQ(static_cast<float>(float16::FromBits(0x7BFF)), 65504.0f);
  EXPECT_EQ(static_cast<float>(float16::FromBits(0xC000)), -2.0f);
  EXPECT_EQ(static_cast<float>(float16::FromBits(0x7C00)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(static_cast<float>(float16::FromBits(0xFC00)), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(static_cast<float>(float16::FromBits(0x7E00))));
  EXPECT_TRUE(std::signbit(static_cast<float>(float16::FromBits(0x8000))));
  // Ties inside the normal range: 1 + 2^-11 lies between 0x3C00 (even) and 0x3C01.
  EXPECT_EQ(float16(1.0f + 0x1p-11f).bits, 0x3C00);
  EXPECT_EQ(float16(1.0f + 3 * 0x1p-11f).bits, 0x3C02);
}

TEST(Float16Test, OverflowRoundsToInfinity) {
  EXPECT_EQ(float16(65504.0f).bits, 0x7BFF);
  EXPECT_EQ(float16(65505.0f).bits, 0x7BFF);
  EXPECT_EQ(float16(65519.99f).bits, 0x7BFF);
  EXPECT_EQ(float16(std::nextafter(65520.0f, 0.0f)).bits, 0x7BFF);
  EXPECT_EQ(float16(65520.0f).bits, 0x7C00);
  EXPECT_EQ(float16(-65520.0f).bits, 0xFC00);
  EXPECT_EQ(float16(-65519.99f).bits, 0xFBFF);
  EXPECT_EQ(float16(65536.0f).bits, 0x7C00);
  EXPECT_EQ(float16(1e10f).bits, 0x7C00);
  EXPECT_EQ(float16(FLT_MAX).bits, 0x7C00);
  EXPECT_EQ(float16(-FLT_MAX).bits, 0xFC00);
  EXPECT_EQ(float16(std::numeric_limits<float>::infinity()).bits, 0x7C00);
  EXPECT_EQ(float16(-std::numeric_limits<float>::infinity()).bits, 0xFC00);
}

TEST(Float16Test, TinyValuesRoundToSignedZero) {
  const float half_smallest = 0x1p-25f;  // Half the smallest subnormal: a tie, goes to even 0.
  EXPECT_EQ(float16(half_smallest).bits, 0x0000);
  EXPECT_EQ(float16(-half_smallest).bits, 0x8000);
  EXPECT_EQ(float16(std::nextafter(half_smallest, 0.0f)).bits, 0x0000);
  EXPECT_EQ(float16(-std::nextafter(half_smallest, 0.0f)).bits, 0x8000);
  EXPECT_EQ(float16(std::nextafter(half_smallest, 1.0f)).bits, 0x0001);
  EXPECT_EQ(float16(-std::nextafter(half_smallest, 1.0f)).bits, 0x8001);
  EXPECT_EQ(float16(3 * 0x1p-26f).bits, 0x0001);
  EXPECT_EQ(float16(1e-10f).bits, 0x0000);
  EXPECT_EQ(float16(-1e-10f).bits, 0x8000);
  EXPECT_EQ(float16(FLT_MIN).bits, 0x0000);
  EXPECT_EQ(float16(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
  EXPECT_EQ(float16(-std::numeric_limits<float>::denorm_min()).bits, 0x8000);
}

TEST(Float16Test, DoubleConstructor) {
  EXPECT_EQ(float16(1.0).bits, 0x3C00);
  EXPECT_EQ(float16(-2.0).bits, 0xC000);
  EXPECT_EQ(float16(-0.0).bits, 0x8000);
  EXPECT_EQ(float16(1.0 + 1.0 / 1024).bits, 0x3C01);
  EXPECT_EQ(float16(0.1).bits, 0x2E66);
  EXPECT_EQ(float16(65504.0).bits, 0x7BFF);
  EXPECT_EQ(float16(65520.0).bits, 0x7C00);
  EXPECT_EQ(float16(1e300).bits, 0x7C00);
  EXPECT_EQ(float16(-1e300).bits, 0xFC00);
  EXPECT_EQ(float16(1e-300).bits, 0x0000);
  EXPECT_EQ(float16(-1e-300).bits, 0x8000);
  EXPECT_EQ(float16(std::numeric_limits<double>::infinity()).bits, 0x7C00);
  EXPECT_TRUE(IsNaNBits<Float16Format>(float16(std::numeric_limits<double>::quiet_NaN()).bits));
}

// ---- bfloat16 ----

TEST(BFloat16Test, AllBitPatternsToFloatMatchReference) {
  CheckAllToFloat<BFloat16Format>();
  // The second reference: a bfloat16 is the upper half of a float32, bit for bit.
  Failures failures;
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const float got = ToFloat<BFloat16Format>(static_cast<uint16_t>(b));
    const auto want = std::bit_cast<float>(b << 16);
    if (std::isnan(want) ? !std::isnan(got) : std::bit_cast<uint32_t>(got) != (b << 16)) {
      failures.Add(Hex(b), ": to float gave ", FloatDesc(got), ", want ", FloatDesc(want));
    }
  }
}
TEST(BFloat16Test, AllBitPatternsRoundTrip) { CheckAllRoundTrip<BFloat16Format>(); }
TEST(BFloat16Test, AllMidpointsRoundToNearestEven) { CheckAllMidpoints<BFloat16Format>(); }
TEST(BFloat16Test, SampledFloatsRoundLikeReference) { CheckSampledFloats<BFloat16Format>(); }
TEST(BFloat16Test, NaNWithPayloadStaysNaN) { CheckNaNPayloads<BFloat16Format>(); }

TEST(BFloat16Test, KnownValues) {
  EXPECT_EQ(bfloat16(0.0f).bits, 0x0000);
  EXPECT_EQ(bfloat16(-0.0f).bits, 0x8000);
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3F80);
  EXPECT_EQ(bfloat16(-1.5f).bits, 0xBFC0);
  EXPECT_EQ(bfloat16(3.14159265f).bits, 0x4049);
  EXPECT_EQ(static_cast<float>(bfloat16::FromBits(0x4049)), 3.140625f);
  EXPECT_EQ(static_cast<float>(bfloat16::FromBits(0x7F80)), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16::FromBits(0x7FC0))));
  // Ties: 1 + 2^-8 lies between 0x3F80 (even) and 0x3F81; 1 + 3 * 2^-8 between 0x3F81 and 0x3F82.
  EXPECT_EQ(bfloat16(1.0f + 0x1p-8f).bits, 0x3F80);
  EXPECT_EQ(bfloat16(1.0f + 3 * 0x1p-8f).bits, 0x3F82);
  EXPECT_EQ(bfloat16(std::nextafter(1.0f + 0x1p-8f, 2.0f)).bits, 0x3F81);
}

TEST(BFloat16Test, OverflowRoundsToInfinity) {
  const auto max_finite = std::bit_cast<float>(0x7F7F0000u);
  const auto overflow = std::bit_cast<float>(0x7F7F8000u);  // Largest finite + half an ulp.
  EXPECT_EQ(bfloat16(max_finite).bits, 0x7F7F);
  EXPECT_EQ(bfloat16(std::nextafter(overflow, 0.0f)).bits, 0x7F7F);
  EXPECT_EQ(bfloat16(overflow).bits, 0x7F80);
  EXPECT_EQ(bfloat16(-overflow).bits, 0xFF80);
  EXPECT_EQ(bfloat16(FLT_MAX).bits, 0x7F80);
  EXPECT_EQ(bfloat16(-FLT_MAX).bits, 0xFF80);
  EXPECT_EQ(bfloat16(std::numeric_limits<float>::infinity()).bits, 0x7F80);
  EXPECT_EQ(bfloat16(-std::numeric_limits<float>::infinity()).bits, 0xFF80);
  EXPECT_EQ(bfloat16(65520.0f).bits, 0x4780);  // Far from bfloat16's range end.
}

TEST(BFloat16Test, TinyValuesRoundToSignedZero) {
  const float half_smallest = 0x1p-134f;  // Half the smallest bfloat16 subnormal (2^-133).
  EXPECT_EQ(bfloat16(half_smallest).bits, 0x0000);
  EXPECT_EQ(bfloat16(-half_smallest).bits, 0x8000);
  EXPECT_EQ(bfloat16(std::nextafter(half_smallest, 0.0f)).bits, 0x0000);
  EXPECT_EQ(bfloat16(std::nextafter(half_smallest, 1.0f)).bits, 0x0001);
  EXPECT_EQ(bfloat16(-std::nextafter(half_smallest, 1.0f)).bits, 0x8001);
  EXPECT_EQ(bfloat16(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
  EXPECT_EQ(bfloat16(-std::numeric_limits<float>::denorm_min()).bits, 0x8000);
}

TEST(BFloat16Test, DoubleConstructor) {
  EXPECT_EQ(bfloat16(1.0).bits, 0x3F80);
  EXPECT_EQ(bfloat16(-2.0).bits, 0xC000);
  EXPECT_EQ(bfloat16(-0.0).bits, 0x8000);
  EXPECT_EQ(bfloat16(3.140625).bits, 0x4049);
  EXPECT_EQ(bfloat16(0.1).bits, bfloat16(0.1f).bits);
  EXPECT_EQ(bfloat16(0.1).bits, 0x3DCD);
  EXPECT_EQ(bfloat16(1e300).bits, 0x7F80);
  EXPECT_EQ(bfloat16(-1e300).bits, 0xFF80);
  EXPECT_EQ(bfloat16(1e-300).bits, 0x0000);
  EXPECT_EQ(bfloat16(-1e-300).bits, 0x8000);
  EXPECT_TRUE(IsNaNBits<BFloat16Format>(bfloat16(std::numeric_limits<double>::quiet_NaN()).bits));
}

// ---- Both ----

TEST(HalfTest, SameBitsComparesStorage) {
  EXPECT_TRUE(SameBits(float16::FromBits(0x7E00), float16::FromBits(0x7E00)));
  EXPECT_FALSE(SameBits(float16::FromBits(0x7E00), float16::FromBits(0x7E01)));
  EXPECT_TRUE(SameBits(bfloat16::FromBits(0x7FC0), bfloat16::FromBits(0x7FC0)));
  EXPECT_FALSE(SameBits(bfloat16(1.0f), bfloat16(2.0f)));
  EXPECT_EQ(sizeof(float16), 2u);
  EXPECT_EQ(sizeof(bfloat16), 2u);
}

}  // namespace
