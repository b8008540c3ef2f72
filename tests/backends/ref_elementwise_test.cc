// Tests of the reference backend's elementwise ops, unary and binary, on several dtypes: float math
// against <cmath>, rounding, NaN rules, half-precision rounding, wrapping integer arithmetic,
// division by zero, shifts, bitwise and logical ops, comparisons and Where.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/ref_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace ref_test;  // NOLINT

// ---- Elementwise unary ---------------------------------------------------------------------

TEST(RefUnaryTest, FloatMathMatchesCmath) {
  const std::vector<float> x = {0.25f, 0.5f, 1.0f, 2.0f, 3.5f};
  struct Case {
    OpType op;
    float (*f)(float);
  };
  const std::vector<Case> cases = {
      {OpType::Exp, [](float v) { return std::exp(v); }},
      {OpType::Expm1, [](float v) { return std::expm1(v); }},
      {OpType::Log, [](float v) { return std::log(v); }},
      {OpType::Log1p, [](float v) { return std::log1p(v); }},
      {OpType::Sqrt, [](float v) { return std::sqrt(v); }},
      {OpType::Rsqrt, [](float v) { return 1 / std::sqrt(v); }},
      {OpType::Sin, [](float v) { return std::sin(v); }},
      {OpType::Cos, [](float v) { return std::cos(v); }},
      {OpType::Tanh, [](float v) { return std::tanh(v); }},
      {OpType::Erf, [](float v) { return std::erf(v); }},
      {OpType::Logistic, [](float v) { return 1 / (1 + std::exp(-v)); }},
      {OpType::Tan, [](float v) { return std::tan(v); }},
      {OpType::Atan, [](float v) { return std::atan(v); }},
      {OpType::Sinh, [](float v) { return std::sinh(v); }},
      {OpType::Cosh, [](float v) { return std::cosh(v); }},
      {OpType::Asinh, [](float v) { return std::asinh(v); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(compute::OpName(c.op));
    const std::vector<float> got = RunOp(c.op, {V(x)}).ToVector<float>();
    const std::vector<double> got64 =
        RunOp(c.op, {V(std::vector<double>(x.begin(), x.end()))}).ToVector<double>();
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_FLOAT_EQ(got[i], c.f(x[i]));
      EXPECT_NEAR(got64[i], c.f(x[i]), 1e-6 * std::fabs(c.f(x[i])));
    }
  }
}

TEST(RefUnaryTest, RoundingFloorCeilNegAbs) {
  const std::vector<double> x = {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, -0.0};
  EXPECT_TRUE(SameFloats(RunOp(OpType::Round, {V(x)}), {0, 2, 2, -0.0, -2, 2, -3, -0.0}));  // Half to even.
  const std::vector<float> xf(x.begin(), x.end());
  EXPECT_TRUE(SameFloats(RunOp(OpType::Round, {V(xf)}), {0, 2, 2, -0.0, -2, 2, -3, -0.0}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Floor, {V(xf)}), {0, 1, 2, -1, -2, 2, -3, -0.0}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Ceil, {V(xf)}), {1, 2, 3, -0.0, -1, 3, -2, -0.0}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Neg, {V(xf)}), {-0.5, -1.5, -2.5, 0.5, 1.5, -2.4f, 2.6f, 0.0}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Abs, {V(xf)}), {0.5, 1.5, 2.5, 0.5, 1.5, 2.4f, 2.6f, 0.0}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Round, {V(std::vector<float16>{H(2.5f), H(-3.5f)})}), {2, -4}));
}

TEST(RefUnaryTest, SignLogisticAndPredicates) {
  EXPECT_TRUE(SameFloats(RunOp(OpType::Sign, {V(std::vector<double>{-3, -0.0, 0.0, 2, kNaN, -kInf})}),
                         {-1, -0.0, 0.0, 1, kNaN, -1}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Sign, {V(std::vector<bfloat16>{B(-0.0f), B(5)})}), {-0.0, 1}));
  // Logistic is stable at both ends: tiny but not 0 (or NaN) for very negative inputs.
  const std::vector<float> l =
      RunOp(OpType::Logistic, {V(std::vector<float>{-100, 100, 0, -2})}).ToVector<float>();
  EXPECT_GT(l[0], 0.0f);
  EXPECT_FLOAT_EQ(l[0], std::exp(-100.0f));
  EXPECT_EQ(l[1], 1.0f);
  EXPECT_EQ(l[2], 0.5f);
  EXPECT_FLOAT_EQ(l[3], std::exp(-2.0f) / (1 + std::exp(-2.0f)));
  EXPECT_EQ(RunOp(OpType::Logistic, {V(std::vector<double>{-1000})}).ToVector<double>(),
            std::vector<double>{0});

  const std::vector<float> special = {1, static_cast<float>(kInf), static_cast<float>(-kInf),
                                      static_cast<float>(kNaN)};
  EXPECT_EQ(Ints(RunOp(OpType::IsFinite, {V(special)})), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::IsNaN, {V(special)})), (std::vector<int64_t>{0, 0, 0, 1}));
  std::vector<float16> special16;
  for (float f : special) special16.push_back(H(f));
  EXPECT_EQ(Ints(RunOp(OpType::IsFinite, {V(special16)})), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::IsNaN, {V(special16)})), (std::vector<int64_t>{0, 0, 0, 1}));
}

TEST(RefUnaryTest, HalfTypesComputeInFloatAndRoundToNearestEven) {
  // e is 2.71828...; the nearest Float16 (step 2^-9 in [2, 4)) and BFloat16 (step 2^-6) are both 2.71875.
  EXPECT_TRUE(SameFloats(RunOp(OpType::Exp, {V(std::vector<float16>{H(1)})}), {2.71875}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Exp, {V(std::vector<bfloat16>{B(1)})}), {2.71875}));
  // sqrt(2) = 1.41421...: Float16 step 2^-10 gives 1448/1024, BFloat16 step 2^-7 gives 181/128.
  EXPECT_TRUE(SameFloats(RunOp(OpType::Sqrt, {V(std::vector<float16>{H(2)})}), {1448.0 / 1024}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Sqrt, {V(std::vector<bfloat16>{B(2)})}), {181.0 / 128}));
}

TEST(RefUnaryTest, IntegerOpsWrapAndCountBits) {
  EXPECT_EQ(Ints(RunOp(OpType::Neg, {V(std::vector<int8_t>{-128, 5, 0})})),
            (std::vector<int64_t>{-128, -5, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::Neg, {V(std::vector<uint8_t>{1, 0})})), (std::vector<int64_t>{255, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::Abs, {V(std::vector<int32_t>{kMin32, -7, 7})})),
            (std::vector<int64_t>{kMin32, 7, 7}));
  EXPECT_EQ(Ints(RunOp(OpType::Abs, {V(std::vector<int64_t>{kMin64, -1})})),
            (std::vector<int64_t>{kMin64, 1}));
  EXPECT_EQ(Ints(RunOp(OpType::Neg, {V(std::vector<int64_t>{kMin64, kMax64})})),
            (std::vector<int64_t>{kMin64, -kMax64}));
  EXPECT_EQ(Ints(RunOp(OpType::Sign, {V(std::vector<int16_t>{-5, 0, 9})})), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(Ints(RunOp(OpType::Sign, {V(std::vector<uint32_t>{0, 7})})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Ints(RunOp(OpType::BitwiseNot, {V(std::vector<int8_t>{0, -1, 5})})),
            (std::vector<int64_t>{-1, 0, -6}));
  EXPECT_EQ(Ints(RunOp(OpType::BitwiseNot, {V(std::vector<uint16_t>{0})})), (std::vector<int64_t>{65535}));
  EXPECT_EQ(Ints(RunOp(OpType::BitCount, {V(std::vector<int8_t>{-1, 0, 5})})),
            (std::vector<int64_t>{8, 0, 2}));
  EXPECT_EQ(RunOp(OpType::BitCount, {V(std::vector<uint64_t>{~uint64_t{0}, 6})}).ToVector<uint64_t>(),
            (std::vector<uint64_t>{64, 2}));
  // Clz counts in the operand's own width; Clz(0) is the width.
  EXPECT_EQ(Ints(RunOp(OpType::Clz, {V(std::vector<int8_t>{0, 1, -1})})), (std::vector<int64_t>{8, 7, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::Clz, {V(std::vector<uint16_t>{256, 0})})), (std::vector<int64_t>{7, 16}));
  EXPECT_EQ(Ints(RunOp(OpType::Clz, {V(std::vector<int32_t>{0, 1})})), (std::vector<int64_t>{32, 31}));
  EXPECT_EQ(Ints(RunOp(OpType::Clz, {V(std::vector<uint64_t>{0, 1})})), (std::vector<int64_t>{64, 63}));
}

TEST(RefUnaryTest, LogicalNotAndStopGradient) {
  EXPECT_EQ(RunOp(OpType::LogicalNot, {V(std::vector<bool>{true, false})}).ToVector<bool>(),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(Ints(RunOp(OpType::StopGradient, {V(std::vector<int64_t>{kMin64, 3})})),
            (std::vector<int64_t>{kMin64, 3}));
  EXPECT_EQ(RunOp(OpType::StopGradient, {V(std::vector<bool>{true, false})}).ToVector<bool>(),
            (std::vector<bool>{true, false}));
  EXPECT_TRUE(
      SameFloats(RunOp(OpType::StopGradient, {V(std::vector<float16>{H(-0.0f), H(1.5f)})}), {-0.0, 1.5}));
}

// ---- Elementwise binary --------------------------------------------------------------------

TEST(RefBinaryTest, FloatArithmetic) {
  const std::vector<double> a = {7, -7, 5.5, 2, -8, 1};
  const std::vector<double> b = {2, 2, 2, 0.5, 3, 0};
  EXPECT_TRUE(SameFloats(RunOp(OpType::Add, {V(a), V(b)}), {9, -5, 7.5, 2.5, -5, 1}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Sub, {V(a), V(b)}), {5, -9, 3.5, 1.5, -11, 1}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Mul, {V(a), V(b)}), {14, -14, 11, 1, -24, 0}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Div, {V(a), V(b)}), {3.5, -3.5, 2.75, 4, -8.0 / 3, kInf}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Rem, {V(a), V(b)}), {1, -1, 1.5, 0, -2, kNaN}));  // fmod.
  EXPECT_TRUE(SameFloats(RunOp(OpType::Pow, {V(a), V(b)}), {49, 49, 30.25, std::sqrt(2.0), -512, 1}));
  const std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
  EXPECT_TRUE(SameFloats(RunOp(OpType::Mul, {V(af), V(bf)}), {14, -14, 11, 1, -24, 0}));
  // Atan2(y, x): operand 0 is y.
  const std::vector<float> atan =
      RunOp(OpType::Atan2, {V(std::vector<float>{1, 0, -1}), V(std::vector<float>{0, -1, -1})})
          .ToVector<float>();
  EXPECT_FLOAT_EQ(atan[0], std::atan2(1.0f, 0.0f));
  EXPECT_FLOAT_EQ(atan[1], std::atan2(0.0f, -1.0f));
  EXPECT_FLOAT_EQ(atan[2], std::atan2(-1.0f, -1.0f));
}

TEST(RefBinaryTest, MaxMinPropagateNaN) {
  const std::vector<float> a = {1, static_cast<float>(kNaN), 3, -2};
  const std::vector<float> b = {static_cast<float>(kNaN), 1, 2, 5};
  EXPECT_TRUE(SameFloats(RunOp(OpType::Max, {V(a), V(b)}), {kNaN, kNaN, 3, 5}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Min, {V(a), V(b)}), {kNaN, kNaN, 2, -2}));
  std::vector<float16> ah, bh;
  for (float f : a) ah.push_back(H(f));
  for (float f : b) bh.push_back(H(f));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Max, {V(ah), V(bh)}), {kNaN, kNaN, 3, 5}));
  EXPECT_EQ(Ints(RunOp(OpType::Max, {V(std::vector<int8_t>{-128, 5}), V(std::vector<int8_t>{127, -3})})),
            (std::vector<int64_t>{127, 5}));
  EXPECT_EQ(
      Ints(RunOp(OpType::Min, {V(std::vector<uint32_t>{4000000000u, 5}), V(std::vector<uint32_t>{1, 7})})),
      (std::vector<int64_t>{1, 5}));
}

TEST(RefBinaryTest, HalfTypesRoundEachOp) {
  // 1 + 2^-11 is halfway between Float16 1 and 1 + 2^-10: ties go to the even significand.
  const float u = std::ldexp(1.0f, -11);
  EXPECT_TRUE(SameFloats(
      RunOp(OpType::Add, {V(std::vector<float16>{H(1), H(1 + 2 * u)}), V(std::vector<float16>{H(u), H(u)})}),
      {1, 1 + 4 * u}));
  EXPECT_TRUE(SameFloats(
      RunOp(OpType::Mul, {V(std::vector<float16>{H(300)}), V(std::vector<float16>{H(300)})}), {kInf}));
  const float v = std::ldexp(1.0f, -8);
  EXPECT_TRUE(SameFloats(RunOp(OpType::Add, {V(std::vector<bfloat16>{B(1), B(1 + 2 * v)}),
                                             V(std::vector<bfloat16>{B(v), B(v)})}),
                         {1, 1 + 4 * v}));
}

TEST(RefBinaryTest, IntegerArithmeticWraps) {
  EXPECT_EQ(Ints(RunOp(OpType::Add, {V(std::vector<int8_t>{100, -100}), V(std::vector<int8_t>{100, -100})})),
            (std::vector<int64_t>{-56, 56}));
  EXPECT_EQ(Ints(RunOp(OpType::Add, {V(std::vector<int32_t>{kMax32}), V(std::vector<int32_t>{1})})),
            (std::vector<int64_t>{kMin32}));
  EXPECT_EQ(Ints(RunOp(OpType::Sub, {V(std::vector<uint8_t>{0}), V(std::vector<uint8_t>{1})})),
            (std::vector<int64_t>{255}));
  EXPECT_EQ(Ints(RunOp(OpType::Sub, {V(std::vector<int16_t>{-32768}), V(std::vector<int16_t>{1})})),
            (std::vector<int64_t>{32767}));
  // 65535^2 = 0xFFFE0001: the low 16 bits are 1 (and no signed int overflow on the way).
  EXPECT_EQ(Ints(RunOp(OpType::Mul, {V(std::vector<uint16_t>{65535}), V(std::vector<uint16_t>{65535})})),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(
      Ints(RunOp(OpType::Mul, {V(std::vector<int64_t>{kMax64, kMin64}), V(std::vector<int64_t>{2, -1})})),
      (std::vector<int64_t>{-2, kMin64}));
  EXPECT_EQ(RunOp(OpType::Mul, {V(std::vector<uint64_t>{1ull << 63}), V(std::vector<uint64_t>{2})})
                .ToVector<uint64_t>(),
            (std::vector<uint64_t>{0}));
}

TEST(RefBinaryTest, IntegerDivisionAndRemainder) {
  const std::vector<int32_t> a = {7, -7, 7, -7, 5, kMin32, kMin32, 0, -5};
  const std::vector<int32_t> b = {2, 2, -2, -2, 0, -1, 1, 0, 0};
  EXPECT_EQ(Ints(RunOp(OpType::Div, {V(a), V(b)})),
            (std::vector<int64_t>{3, -3, -3, 3, -1, kMin32, kMin32, -1, -1}));
  EXPECT_EQ(Ints(RunOp(OpType::Rem, {V(a), V(b)})), (std::vector<int64_t>{1, -1, 1, -1, 5, 0, 0, 0, -5}));
  const std::vector<int8_t> a8 = {-128, -128, 9, -9};
  const std::vector<int8_t> b8 = {-1, 0, 0, 4};
  EXPECT_EQ(Ints(RunOp(OpType::Div, {V(a8), V(b8)})), (std::vector<int64_t>{-128, -1, -1, -2}));
  EXPECT_EQ(Ints(RunOp(OpType::Rem, {V(a8), V(b8)})), (std::vector<int64_t>{0, -128, 9, -1}));
  const std::vector<int64_t> a64 = {kMin64, kMin64, 100};
  const std::vector<int64_t> b64 = {-1, 0, -7};
  EXPECT_EQ(Ints(RunOp(OpType::Div, {V(a64), V(b64)})), (std::vector<int64_t>{kMin64, -1, -14}));
  EXPECT_EQ(Ints(RunOp(OpType::Rem, {V(a64), V(b64)})), (std::vector<int64_t>{0, kMin64, 2}));
  // Unsigned x / 0 is the maximum value (all bits set); x % 0 is x.
  EXPECT_EQ(Ints(RunOp(OpType::Div, {V(std::vector<uint32_t>{7, 5}), V(std::vector<uint32_t>{2, 0})})),
            (std::vector<int64_t>{3, 4294967295}));
  EXPECT_EQ(Ints(RunOp(OpType::Rem, {V(std::vector<uint32_t>{7, 5}), V(std::vector<uint32_t>{2, 0})})),
            (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(
      RunOp(OpType::Div, {V(std::vector<uint64_t>{1}), V(std::vector<uint64_t>{0})}).ToVector<uint64_t>(),
      (std::vector<uint64_t>{~uint64_t{0}}));
  EXPECT_EQ(Ints(RunOp(OpType::Div, {V(std::vector<uint8_t>{200}), V(std::vector<uint8_t>{0})})),
            (std::vector<int64_t>{255}));
}

TEST(RefBinaryTest, Shifts) {
  // Amounts >= the width, or negative (huge as unsigned), shift everything out.
  EXPECT_EQ(Ints(RunOp(OpType::ShiftLeft,
                       {V(std::vector<int8_t>{1, 1, 1, 1, -1}), V(std::vector<int8_t>{3, 7, 8, 100, -1})})),
            (std::vector<int64_t>{8, -128, 0, 0, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::ShiftRightLogical,
                       {V(std::vector<int8_t>{-128, -128, -1, 64}), V(std::vector<int8_t>{7, 8, -3, 1})})),
            (std::vector<int64_t>{1, 0, 0, 32}));
  // Arithmetic shifts fill with the sign bit, also past the width.
  EXPECT_EQ(Ints(RunOp(OpType::ShiftRightArithmetic, {V(std::vector<int8_t>{-128, -128, -128, 64, 64, -1}),
                                                      V(std::vector<int8_t>{1, 8, -1, 1, 9, 3})})),
            (std::vector<int64_t>{-64, -1, -1, 32, 0, -1}));
  EXPECT_EQ(Ints(RunOp(OpType::ShiftRightArithmetic,
                       {V(std::vector<uint32_t>{0x80000000u, 0x80000000u, 0x40000000u}),
                        V(std::vector<uint32_t>{4, 32, 40})})),
            (std::vector<int64_t>{0xF8000000u, 0xFFFFFFFFu, 0}));
  EXPECT_EQ(
      Ints(RunOp(OpType::ShiftLeft, {V(std::vector<int64_t>{1, 1, 3}), V(std::vector<int64_t>{63, 64, 1})})),
      (std::vector<int64_t>{kMin64, 0, 6}));
  EXPECT_EQ(Ints(RunOp(OpType::ShiftLeft, {V(std::vector<uint16_t>{0xFFFF}), V(std::vector<uint16_t>{4})})),
            (std::vector<int64_t>{0xFFF0}));
  EXPECT_EQ(
      Ints(RunOp(OpType::ShiftRightLogical, {V(std::vector<int32_t>{-1}), V(std::vector<int32_t>{28})})),
      (std::vector<int64_t>{15}));
}

TEST(RefBinaryTest, IntegerPow) {
  const std::vector<int32_t> base = {3, 2, 2, 0, 0, 1, -1, -1, 2, 5, -2};
  const std::vector<int32_t> exponent = {4, 31, 32, 0, -1, -5, -3, -2, -1, 0, 3};
  EXPECT_EQ(Ints(RunOp(OpType::Pow, {V(base), V(exponent)})),
            (std::vector<int64_t>{81, kMin32, 0, 1, 0, 1, -1, 1, 0, 1, -8}));
  // 3^6 = 729 = 2 * 256 + 217.
  EXPECT_EQ(Ints(RunOp(OpType::Pow, {V(std::vector<uint8_t>{3, 3, 2}), V(std::vector<uint8_t>{5, 6, 8})})),
            (std::vector<int64_t>{243, 217, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::Pow, {V(std::vector<int8_t>{-2}), V(std::vector<int8_t>{7})})),
            (std::vector<int64_t>{-128}));
  // 3^40 = 12157665459056928801, which wraps to 12157665459056928801 - 2^64.
  EXPECT_EQ(Ints(RunOp(OpType::Pow, {V(std::vector<int64_t>{3}), V(std::vector<int64_t>{40})})),
            (std::vector<int64_t>{-6289078614652622815}));
  EXPECT_EQ(Ints(RunOp(OpType::Pow, {V(std::vector<uint16_t>{65535}), V(std::vector<uint16_t>{3})})),
            (std::vector<int64_t>{65535}));  // (-1)^3 modulo 2^16.
}

TEST(RefBinaryTest, BitwiseAndLogical) {
  const std::vector<int16_t> a = {0x0F0F, -1, 0};
  const std::vector<int16_t> b = {0x00FF, 0x1234, -1};
  EXPECT_EQ(Ints(RunOp(OpType::BitwiseAnd, {V(a), V(b)})), (std::vector<int64_t>{0x000F, 0x1234, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::BitwiseOr, {V(a), V(b)})), (std::vector<int64_t>{0x0FFF, -1, -1}));
  EXPECT_EQ(Ints(RunOp(OpType::BitwiseXor, {V(a), V(b)})), (std::vector<int64_t>{0x0FF0, ~0x1234, -1}));
  EXPECT_EQ(RunOp(OpType::BitwiseXor, {V(std::vector<uint64_t>{~uint64_t{0}}), V(std::vector<uint64_t>{1})})
                .ToVector<uint64_t>(),
            (std::vector<uint64_t>{~uint64_t{1}}));
  const std::vector<bool> p = {false, false, true, true}, q = {false, true, false, true};
  EXPECT_EQ(RunOp(OpType::LogicalAnd, {V(p), V(q)}).ToVector<bool>(),
            (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(RunOp(OpType::LogicalOr, {V(p), V(q)}).ToVector<bool>(),
            (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(RunOp(OpType::LogicalXor, {V(p), V(q)}).ToVector<bool>(),
            (std::vector<bool>{false, true, true, false}));
}

TEST(RefBinaryTest, ComparisonsAndNaN) {
  const float nan = static_cast<float>(kNaN);
  const std::vector<float> a = {1, nan, 2, nan, 3};
  const std::vector<float> b = {1, 1, 3, nan, 2};
  EXPECT_EQ(Ints(RunOp(OpType::Equal, {V(a), V(b)})), (std::vector<int64_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::NotEqual, {V(a), V(b)})), (std::vector<int64_t>{0, 1, 1, 1, 1}));
  EXPECT_EQ(Ints(RunOp(OpType::Less, {V(a), V(b)})), (std::vector<int64_t>{0, 0, 1, 0, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::LessOrEqual, {V(a), V(b)})), (std::vector<int64_t>{1, 0, 1, 0, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::Greater, {V(a), V(b)})), (std::vector<int64_t>{0, 0, 0, 0, 1}));
  EXPECT_EQ(Ints(RunOp(OpType::GreaterOrEqual, {V(a), V(b)})), (std::vector<int64_t>{1, 0, 0, 0, 1}));
  EXPECT_EQ(Ints(RunOp(OpType::NotEqual,
                       {V(std::vector<bfloat16>{B(nan), B(1)}), V(std::vector<bfloat16>{B(nan), B(1)})})),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::Less, {V(std::vector<int8_t>{-1, 5}), V(std::vector<int8_t>{1, 5})})),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Ints(RunOp(OpType::Greater, {V(std::vector<uint8_t>{255}), V(std::vector<uint8_t>{1})})),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(
      Ints(RunOp(OpType::LessOrEqual, {V(std::vector<uint64_t>{~uint64_t{0}}), V(std::vector<uint64_t>{1})})),
      (std::vector<int64_t>{0}));
  const std::vector<bool> p = {false, true, true}, q = {false, false, true};
  EXPECT_EQ(Ints(RunOp(OpType::Equal, {V(p), V(q)})), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(Ints(RunOp(OpType::NotEqual, {V(p), V(q)})), (std::vector<int64_t>{0, 1, 0}));
}

TEST(RefBinaryTest, Where) {
  const Tensor cond = V(std::vector<bool>{true, false, true});
  EXPECT_EQ(Ints(RunOp(OpType::Where,
                       {cond, V(std::vector<int64_t>{1, 2, 3}), V(std::vector<int64_t>{-1, -2, -3})})),
            (std::vector<int64_t>{1, -2, 3}));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Where, {cond, V(std::vector<float16>{H(1), H(2), H(3)}),
                                               V(std::vector<float16>{H(-1), H(-2), H(-3)})}),
                         {1, -2, 3}));
  EXPECT_EQ(RunOp(OpType::Where,
                  {cond, V(std::vector<bool>{false, false, false}), V(std::vector<bool>{true, true, true})})
                .ToVector<bool>(),
            (std::vector<bool>{false, true, false}));
  EXPECT_EQ(
      Ints(RunOp(OpType::Where, {cond, V(std::vector<uint8_t>{1, 2, 3}), V(std::vector<uint8_t>{4, 5, 6})})),
      (std::vector<int64_t>{1, 5, 3}));
}

}  // namespace
}  // namespace kiln
