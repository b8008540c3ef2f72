// Tests of the reference backend's interpreter: each op family on several dtypes, the semantics
// every backend follows (wrapping integers, NaN rules, rounding, saturation...), packed dtypes,
// memory (intermediates freed after their last use), donation, errors and threads. Expected
// values are computed by hand (or with <cmath> on the same inputs), never by kiln.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "core/tensor_test_util.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

using kiln::test::RunProgram;

using compute::OpAttributes;
using compute::OpType;
using graph::Graph;
using graph::Node;
using kiln::testing::BytesOf;
using kiln::testing::ThrowsKilnError;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const compute::BackendPtr& Ref() { return kiln::test::Backend("ref"); }

/// One op over parameters holding `inputs`.
Tensor RunOp(OpType op, const std::vector<Tensor>& inputs, OpAttributes attrs = {}) {
  Graph g;
  std::vector<Node> params;
  for (const Tensor& t : inputs) params.push_back(g.Parameter(t.shape()));
  Node out = g.AddOp(op, params, std::move(attrs));
  return RunProgram(Ref(), g.Build({out}), inputs)[0];
}

template <typename T>
Tensor V(const std::vector<T>& values) {
  return Tensor::FromValue(values);
}
template <typename T>
Tensor V(const std::vector<T>& values, const std::vector<int64_t>& dims) {
  return Tensor::FromValue(values).Reshape(dims);
}
float16 H(float x) { return float16(x); }
bfloat16 B(float x) { return bfloat16(x); }

/// The elements of a tensor of any float dtype, as doubles.
std::vector<double> Floats(const Tensor& t) {
  std::vector<double> out;
  DispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      out = t.ToVector<double>();
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16> ||
                         std::is_same_v<T, float>) {
      for (T x : t.ToVector<T>()) out.push_back(static_cast<double>(static_cast<float>(x)));
    } else {
      ADD_FAILURE() << "not a float tensor: " << t.shape();
    }
  });
  return out;
}

/// The elements of an integer or Bool tensor, as int64 (Uint64 wraps).
std::vector<int64_t> Ints(const Tensor& t) {
  std::vector<int64_t> out;
  DispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      for (T x : t.ToVector<T>()) out.push_back(static_cast<int64_t>(x));
    } else {
      ADD_FAILURE() << "not an integer tensor: " << t.shape();
    }
  });
  return out;
}

/// Exact float comparison: NaN matches NaN, and zeros must carry the expected sign.
::testing::AssertionResult SameFloats(const Tensor& t, const std::vector<double>& want) {
  const std::vector<double> got = Floats(t);
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " elements, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(want[i])
                          ? std::isnan(got[i])
                          : got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]);
    if (!same)
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

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

// ---- Reductions ----------------------------------------------------------------------------

Tensor Reduce(OpType op, const Tensor& x, std::vector<int64_t> axes) {
  OpAttributes attrs;
  attrs.axes = std::move(axes);
  return RunOp(op, {x}, std::move(attrs));
}

TEST(RefReduceTest, SumOverAxes) {
  // x[i, j, k] = 12 i + 4 j + k over [2, 3, 4].
  std::vector<int32_t> x(24);
  for (int32_t i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = i;
  const Tensor t = V(x, {2, 3, 4});
  Tensor r = Reduce(OpType::ReduceSum, t, {0, 2});
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {3}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{60, 92, 124}));
  r = Reduce(OpType::ReduceSum, t, {1});
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {2, 4}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{12, 15, 18, 21, 48, 51, 54, 57}));
  r = Reduce(OpType::ReduceSum, t, {0, 1, 2});
  EXPECT_EQ(r.shape(), Shape(DType::Int32));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{276}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceSum, t, {})), (std::vector<int64_t>(x.begin(), x.end())));
  const std::vector<double> xd(x.begin(), x.end());
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceSum, V(xd, {2, 3, 4}), {2, 0}), {60, 92, 124}));
  std::vector<float16> xh;
  for (int32_t v : x) xh.push_back(H(static_cast<float>(v)));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceSum, V(xh, {2, 3, 4}), {1}), {12, 15, 18, 21, 48, 51, 54, 57}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMax, V(xh, {2, 3, 4}), {0, 1}), {20, 21, 22, 23}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMin, t, {2})), (std::vector<int64_t>{0, 4, 8, 12, 16, 20}));
}

TEST(RefReduceTest, FloatsAccumulateInDoubleIntegersWrap) {
  // In float, 1e8 + 1 is 1e8 again; in double the sum is exactly 1.
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceSum, V(std::vector<float>{1e8f, 1, -1e8f}), {0}), {1}));
  // Float16 2048 + 1 rounds back to 2048; accumulated in double, 2048 + 1 + 1 = 2050 is exact.
  EXPECT_TRUE(
      SameFloats(Reduce(OpType::ReduceSum, V(std::vector<float16>{H(2048), H(1), H(1)}), {0}), {2050}));
  EXPECT_TRUE(
      SameFloats(Reduce(OpType::ReduceSum, V(std::vector<bfloat16>{B(256), B(1), B(1)}), {0}), {258}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceProduct, V(std::vector<float>{2, 3, 0.5f}), {0}), {3}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceSum, V(std::vector<int8_t>{100, 100}), {0})),
            (std::vector<int64_t>{-56}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceProduct, V(std::vector<int32_t>{65536, 65536, 3}), {0})),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceProduct, V(std::vector<uint8_t>{15, 17}), {0})),
            (std::vector<int64_t>{255}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceProduct, V(std::vector<uint16_t>{65535, 65535}), {0})),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceSum, V(std::vector<int64_t>{kMax64, 1}), {0})),
            (std::vector<int64_t>{kMin64}));
}

TEST(RefReduceTest, MaxMinPropagateNaN) {
  const float nan = static_cast<float>(kNaN);
  const Tensor x = V(std::vector<float>{1, nan, 3, -1, -5, 2}, {2, 3});
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMax, x, {1}), {kNaN, 2}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMin, x, {1}), {kNaN, -5}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMax, x, {0}), {1, kNaN, 3}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMin, V(std::vector<bfloat16>{B(2), B(nan)}), {0}), {kNaN}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMax, V(std::vector<int16_t>{-3, -7}), {0})),
            (std::vector<int64_t>{-3}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMin, V(std::vector<uint64_t>{~uint64_t{0}, 9}), {0})),
            (std::vector<int64_t>{9}));
}

TEST(RefReduceTest, EmptyReductionsGiveTheIdentity) {
  const auto empty = [](DType d) { return Tensor::FromShape(Shape(d, {0, 2})); };
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceSum, empty(DType::Float32), {0}), {0, 0}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceProduct, empty(DType::Float64), {0}), {1, 1}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMax, empty(DType::Float16), {0}), {-kInf, -kInf}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMin, empty(DType::BFloat16), {0}), {kInf, kInf}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMax, empty(DType::Int32), {0})),
            (std::vector<int64_t>{kMin32, kMin32}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMin, empty(DType::Int32), {0})),
            (std::vector<int64_t>{kMax32, kMax32}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMax, empty(DType::Uint8), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMin, empty(DType::Uint8), {0})), (std::vector<int64_t>{255, 255}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceSum, empty(DType::Int64), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceProduct, empty(DType::Int8), {0})), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalAnd, empty(DType::Bool), {0})), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalOr, empty(DType::Bool), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalXor, empty(DType::Bool), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseAnd, empty(DType::Int16), {0})), (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseAnd, empty(DType::Uint32), {0})),
            (std::vector<int64_t>{0xFFFFFFFF, 0xFFFFFFFF}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseOr, empty(DType::Uint32), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseXor, empty(DType::Int8), {0})), (std::vector<int64_t>{0, 0}));
}

TEST(RefReduceTest, LogicalAndBitwise) {
  const Tensor b = V(std::vector<bool>{true, true, false, true, true, true}, {2, 3});
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalAnd, b, {1})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalOr, b, {1})), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalXor, b, {1})), (std::vector<int64_t>{0, 1}));
  const Tensor u = V(std::vector<uint8_t>{0xF0, 0x3C, 0x0F});
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseAnd, u, {0})), (std::vector<int64_t>{0x00}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseOr, u, {0})), (std::vector<int64_t>{0xFF}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseXor, u, {0})), (std::vector<int64_t>{0xC3}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseOr, V(std::vector<int64_t>{kMin64, 1}), {0})),
            (std::vector<int64_t>{kMin64 + 1}));
}

Tensor Arg(OpType op, const Tensor& x, int64_t axis, DType dtype) {
  OpAttributes attrs;
  attrs.axis = axis;
  attrs.dtype = dtype;
  return RunOp(op, {x}, std::move(attrs));
}

TEST(RefReduceTest, ArgMaxArgMin) {
  const float nan = static_cast<float>(kNaN);
  // Ties give the first index; NaN counts as both the max and the min, the first NaN winning.
  const Tensor x = V(std::vector<float>{1, 3, 3, 0, 2, nan, 5, nan}, {2, 4});
  Tensor r = Arg(OpType::ArgMax, x, 1, DType::Int32);
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMin, x, 1, DType::Int64)), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMin, V(std::vector<double>{2, 1, 1}), 0, DType::Uint8)),
            (std::vector<int64_t>{1}));
  const Tensor y = V(std::vector<int8_t>{1, 5, 4, 5, 4, -1}, {3, 2});
  r = Arg(OpType::ArgMax, y, 0, DType::Int16);
  EXPECT_EQ(r.shape(), Shape(DType::Int16, {2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMin, y, 0, DType::Uint64)), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMax, V(std::vector<float16>{H(1), H(nan), H(5)}), 0, DType::Int32)),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMin, V(std::vector<bfloat16>{B(1), B(-5), B(nan)}), 0, DType::Int32)),
            (std::vector<int64_t>{2}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMax, V(std::vector<uint32_t>{7, 4000000000u, 4000000000u}), 0, DType::Int8)),
            (std::vector<int64_t>{1}));
}

// ---- Data movement -------------------------------------------------------------------------

TEST(RefMovementTest, TransposeBroadcastReshape) {
  std::vector<int32_t> x(24);
  for (int32_t i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = i;
  OpAttributes t;
  t.permutation = {2, 0, 1};
  // Output [4, 2, 3]: out[a, b, c] = in[b, c, a] = 12 b + 4 c + a.
  const std::vector<int64_t> want = {0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                                     2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23};
  Tensor r = RunOp(OpType::Transpose, {V(x, {2, 3, 4})}, t);
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {4, 2, 3}));
  EXPECT_EQ(Ints(r), want);
  std::vector<float16> xh;
  for (int32_t v : x) xh.push_back(H(static_cast<float>(v)));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Transpose, {V(xh, {2, 3, 4})}, t),
                         std::vector<double>(want.begin(), want.end())));

  OpAttributes b;
  b.shape = Shape(DType::Float32, {2, 3});
  b.axes = {1};
  EXPECT_TRUE(
      SameFloats(RunOp(OpType::BroadcastInDim, {V(std::vector<float>{1, 2, 3})}, b), {1, 2, 3, 1, 2, 3}));
  b.axes = {0, 1};
  EXPECT_TRUE(SameFloats(RunOp(OpType::BroadcastInDim, {V(std::vector<float>{1, 2}, {2, 1})}, b),
                         {1, 1, 1, 2, 2, 2}));
  b.shape = Shape(DType::Int64, {3, 2});
  b.axes = {0};
  EXPECT_EQ(Ints(RunOp(OpType::BroadcastInDim, {V(std::vector<int64_t>{1, 2, 3})}, b)),
            (std::vector<int64_t>{1, 1, 2, 2, 3, 3}));
  b.shape = Shape(DType::Bool, {2, 2});
  b.axes = {};
  EXPECT_EQ(Ints(RunOp(OpType::BroadcastInDim, {Tensor::FromScalar(true)}, b)),
            (std::vector<int64_t>{1, 1, 1, 1}));

  OpAttributes re;
  re.shape = Shape(DType::Uint16, {3, 2});
  r = RunOp(OpType::Reshape, {V(std::vector<uint16_t>{1, 2, 3, 4, 5, 6}, {2, 3})}, re);
  EXPECT_EQ(r.shape(), re.shape);
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(RefMovementTest, SliceReverseConcatenate) {
  OpAttributes s;
  s.starts = {1};
  s.limits = {10};
  s.strides = {3};
  EXPECT_EQ(Ints(RunOp(OpType::Slice, {V(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}, s)),
            (std::vector<int64_t>{1, 4, 7}));
  s.starts = {1, 0};
  s.limits = {3, 4};
  s.strides = {1, 2};
  // Rows 1 and 2, columns 0 and 2 of [[0..3], [4..7], [8..11]].
  const std::vector<double> m = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_TRUE(SameFloats(RunOp(OpType::Slice, {V(m, {3, 4})}, s), {4, 6, 8, 10}));

  OpAttributes r;
  r.axes = {1};
  const std::vector<int16_t> x = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(Ints(RunOp(OpType::Reverse, {V(x, {2, 3})}, r)), (std::vector<int64_t>{3, 2, 1, 6, 5, 4}));
  r.axes = {0, 1};
  EXPECT_EQ(Ints(RunOp(OpType::Reverse, {V(x, {2, 3})}, r)), (std::vector<int64_t>{6, 5, 4, 3, 2, 1}));
  r.axes = {0};
  EXPECT_TRUE(SameFloats(RunOp(OpType::Reverse, {V(std::vector<bfloat16>{B(1), B(2), B(3)})}, r), {3, 2, 1}));

  OpAttributes c;
  c.axis = 0;
  const Tensor a = V(std::vector<uint8_t>{1, 2}, {1, 2});
  const Tensor b = V(std::vector<uint8_t>{3, 4, 5, 6}, {2, 2});
  const Tensor e = Tensor::FromShape(Shape(DType::Uint8, {0, 2}));
  Tensor out = RunOp(OpType::Concatenate, {a, e, b, a}, c);
  EXPECT_EQ(out.shape(), Shape(DType::Uint8, {4, 2}));
  EXPECT_EQ(Ints(out), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 1, 2}));
  c.axis = 1;
  out = RunOp(OpType::Concatenate,
              {V(std::vector<double>{1, 2}, {2, 1}), V(std::vector<double>{3, 4, 5, 6}, {2, 2})}, c);
  EXPECT_EQ(out.shape(), Shape(DType::Float64, {2, 3}));
  EXPECT_TRUE(SameFloats(out, {1, 3, 4, 2, 5, 6}));
}

TEST(RefMovementTest, PadWithInteriorAndCropping) {
  OpAttributes p;
  // Axis 0: low 1, interior 1 -> rows [fill, x0, fill, x1]. Axis 1: low -1 crops column 0,
  // interior 1 and high 2 -> [x1, fill, x2] shifted: columns [fill, x1, fill, x2, fill, fill].
  p.padding = {compute::PadAxis{1, 0, 1}, compute::PadAxis{-1, 2, 1}};
  const Tensor x = V(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = RunOp(OpType::Pad, {x, Tensor::FromScalar(0.5f)}, p);
  EXPECT_EQ(r.shape(), Shape(DType::Float32, {4, 6}));
  const double f = 0.5;
  EXPECT_TRUE(SameFloats(r, {f, f, f, f, f, f, f, 2, f, 3, f, f, f, f, f, f, f, f, f, 5, f, 6, f, f}));
  p.padding = {compute::PadAxis{-2, -1, 0}};
  EXPECT_EQ(
      Ints(RunOp(OpType::Pad, {V(std::vector<int8_t>{1, 2, 3, 4, 5}), Tensor::FromScalar(int8_t{0})}, p)),
      (std::vector<int64_t>{3, 4}));
  p.padding = {compute::PadAxis{2, 1, 2}};
  EXPECT_EQ(Ints(RunOp(OpType::Pad, {V(std::vector<bool>{true, true}), Tensor::FromScalar(false)}, p)),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 1, 0}));
  // Cropping more than the data leaves only fill.
  p.padding = {compute::PadAxis{-3, 2, 0}};
  EXPECT_EQ(Ints(RunOp(OpType::Pad, {V(std::vector<int64_t>{1, 2}), Tensor::FromScalar(int64_t{9})}, p)),
            (std::vector<int64_t>{9}));
}

// ---- Conversions ---------------------------------------------------------------------------

Tensor Convert(const Tensor& x, DType to) {
  OpAttributes attrs;
  attrs.dtype = to;
  return RunOp(OpType::ConvertDType, {x}, std::move(attrs));
}

Tensor Bitcast(const Tensor& x, DType to) {
  OpAttributes attrs;
  attrs.dtype = to;
  return RunOp(OpType::Bitcast, {x}, std::move(attrs));
}

TEST(RefConvertTest, FloatToIntegerSaturates) {
  const float nan = static_cast<float>(kNaN), inf = static_cast<float>(kInf);
  EXPECT_EQ(Ints(Convert(V(std::vector<float>{300, -300, nan, 2.9f, -2.9f, inf, -inf}), DType::Int8)),
            (std::vector<int64_t>{127, -128, 0, 2, -2, 127, -128}));
  EXPECT_EQ(Ints(Convert(V(std::vector<double>{-1, 5e9, 3.99, -0.5}), DType::Uint32)),
            (std::vector<int64_t>{0, 4294967295, 3, 0}));
  // 2^63 is a float; it is one past the Int64 maximum.
  EXPECT_EQ(Ints(Convert(V(std::vector<float>{1e20f, -1e20f, 9223372036854775808.0f}), DType::Int64)),
            (std::vector<int64_t>{kMax64, kMin64, kMax64}));
  EXPECT_EQ(Convert(V(std::vector<double>{18446744073709551616.0, 18446744073709549568.0}), DType::Uint64)
                .ToVector<uint64_t>(),
            (std::vector<uint64_t>{~uint64_t{0}, 18446744073709549568ull}));
  EXPECT_EQ(Ints(Convert(V(std::vector<float16>{H(nan), H(-2.5f), H(65504)}), DType::Int32)),
            (std::vector<int64_t>{0, -2, 65504}));
  EXPECT_EQ(Ints(Convert(V(std::vector<bfloat16>{B(300), B(-1)}), DType::Uint8)),
            (std::vector<int64_t>{255, 0}));
}

TEST(RefConvertTest, BoolsAndIntegers) {
  const float nan = static_cast<float>(kNaN);
  EXPECT_EQ(Ints(Convert(V(std::vector<float>{0, -0.0f, nan, 0.1f}), DType::Bool)),
            (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(Ints(Convert(V(std::vector<float16>{H(0), H(nan)}), DType::Bool)), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Ints(Convert(V(std::vector<int32_t>{0, 5, -1, 256}), DType::Bool)),
            (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<bool>{true, false}), DType::Float32), {1, 0}));
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<bool>{true}), DType::BFloat16), {1}));
  EXPECT_EQ(Ints(Convert(V(std::vector<bool>{true, false}), DType::Int64)), (std::vector<int64_t>{1, 0}));
  // Integer to integer wraps (keeps the low bits).
  EXPECT_EQ(Ints(Convert(V(std::vector<int32_t>{300, -1, 128}), DType::Int8)),
            (std::vector<int64_t>{44, -1, -128}));
  EXPECT_EQ(Ints(Convert(V(std::vector<int32_t>{-1, 65536}), DType::Uint16)),
            (std::vector<int64_t>{65535, 0}));
  EXPECT_EQ(Ints(Convert(V(std::vector<uint64_t>{0x1FF}), DType::Int8)), (std::vector<int64_t>{-1}));
  EXPECT_EQ(Convert(V(std::vector<int8_t>{-1}), DType::Uint64).ToVector<uint64_t>(),
            (std::vector<uint64_t>{~uint64_t{0}}));
}

TEST(RefConvertTest, ToFloatRoundsToNearestEven) {
  // 2^24 + 1 is halfway between two floats: the even one is 2^24.
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<int32_t>{16777217, -16777217, 16777219}), DType::Float32),
                         {16777216, -16777216, 16777220}));
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<int64_t>{(int64_t{1} << 53) + 1}), DType::Float64),
                         {9007199254740992.0}));
  // Float16 has 11 significant bits: 2049 ties to 2048, 2051 to 2052; 65520 ties to the next
  // binade, which overflows to inf.
  EXPECT_TRUE(
      SameFloats(Convert(V(std::vector<int64_t>{2049, 2051, 65519, 65520, -2049, 70000}), DType::Float16),
                 {2048, 2052, 65504, kInf, -2048, kInf}));
  EXPECT_TRUE(
      SameFloats(Convert(V(std::vector<int32_t>{257, 259, -257}), DType::BFloat16), {256, 260, -256}));
  EXPECT_TRUE(
      SameFloats(Convert(V(std::vector<uint64_t>{~uint64_t{0}}), DType::BFloat16), {18446744073709551616.0}));
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<uint64_t>{~uint64_t{0}}), DType::Float16), {kInf}));
  const double u = std::ldexp(1.0, -11);
  EXPECT_TRUE(
      SameFloats(Convert(V(std::vector<float>{static_cast<float>(1 + u), static_cast<float>(1 + 3 * u)}),
                         DType::Float16),
                 {1, 1 + 4 * u}));
  // Rounded once: 1 + 2^-11 + 2^-40 is just above the tie, so it goes up (a detour through float
  // would drop the 2^-40 and then round the tie down to 1).
  EXPECT_TRUE(
      SameFloats(Convert(V(std::vector<double>{1 + u + std::ldexp(1.0, -40)}), DType::Float16), {1 + 2 * u}));
  const double v = std::ldexp(1.0, -8);
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<double>{1 + v + std::ldexp(1.0, -40)}), DType::BFloat16),
                         {1 + 2 * v}));
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<float>{static_cast<float>(1 + v)}), DType::BFloat16), {1}));
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<double>{1e300, -1e-300}), DType::Float32), {kInf, -0.0}));
  EXPECT_TRUE(SameFloats(Convert(V(std::vector<float16>{H(0.1f)}), DType::Float64), {0.0999755859375}));
}

TEST(RefConvertTest, Bitcast) {
  EXPECT_EQ(Ints(Bitcast(V(std::vector<float>{1, -2}), DType::Int32)),
            (std::vector<int64_t>{0x3F800000, -1073741824}));
  Tensor r = Bitcast(V(std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 128}, {2, 4}), DType::Int32);
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, kMin32}));
  r = Bitcast(V(std::vector<int32_t>{0x01020304}), DType::Uint8);
  EXPECT_EQ(r.shape(), Shape(DType::Uint8, {1, 4}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{4, 3, 2, 1}));
  EXPECT_EQ(Ints(Bitcast(V(std::vector<float16>{H(1)}), DType::Int16)), (std::vector<int64_t>{0x3C00}));
  EXPECT_EQ(Ints(Bitcast(V(std::vector<bfloat16>{B(1)}), DType::Uint16)), (std::vector<int64_t>{0x3F80}));
  EXPECT_EQ(Ints(Bitcast(V(std::vector<double>{1}), DType::Uint32)), (std::vector<int64_t>{0, 0x3FF00000}));
}

Tensor Packed(DType dtype, std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
  return Tensor::FromBytes(Shape(dtype, std::move(dims)), bytes);
}

TEST(RefConvertTest, PackedTypes) {
  // Element i sits at bits (i % k) * bits of byte i / k; signed ones are sign-extended.
  EXPECT_EQ(Ints(Convert(Packed(DType::Int4, {4}, {0x21, 0xF8}), DType::Int32)),
            (std::vector<int64_t>{1, 2, -8, -1}));
  EXPECT_EQ(Ints(Convert(Packed(DType::Uint4, {4}, {0x21, 0xF8}), DType::Int32)),
            (std::vector<int64_t>{1, 2, 8, 15}));
  EXPECT_EQ(Ints(Convert(Packed(DType::Int2, {4}, {0xE4}), DType::Int8)),
            (std::vector<int64_t>{0, 1, -2, -1}));
  EXPECT_EQ(Ints(Convert(Packed(DType::Uint2, {3}, {0xE4}), DType::Uint64)), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(SameFloats(Convert(Packed(DType::Int4, {4}, {0x21, 0xF8}), DType::Float16), {1, 2, -8, -1}));
  EXPECT_EQ(Ints(Convert(Packed(DType::Int4, {4}, {0x01, 0xF0}), DType::Bool)),
            (std::vector<int64_t>{1, 0, 0, 1}));
  // To packed: integers wrap to the low bits (9 -> -7), floats saturate, Bool is 0/1.
  EXPECT_EQ(BytesOf(Convert(V(std::vector<int32_t>{1, 2, -8, -1, 9}), DType::Int4)),
            (std::vector<uint8_t>{0x21, 0xF8, 0x09}));
  EXPECT_EQ(BytesOf(Convert(V(std::vector<float>{100, -100, static_cast<float>(kNaN), 3.7f}), DType::Int4)),
            (std::vector<uint8_t>{0x87, 0x30}));
  EXPECT_EQ(BytesOf(Convert(V(std::vector<float>{-3, 20}), DType::Uint4)), (std::vector<uint8_t>{0xF0}));
  EXPECT_EQ(BytesOf(Convert(V(std::vector<bool>{true, false, true}), DType::Int2)),
            (std::vector<uint8_t>{0x11}));
  EXPECT_EQ(BytesOf(Convert(Packed(DType::Int4, {4}, {0x21, 0xF8}), DType::Uint2)),
            (std::vector<uint8_t>{0xC9}));
  std::vector<int8_t> all;
  for (int v = -8; v < 8; ++v) all.push_back(static_cast<int8_t>(v));
  EXPECT_EQ(Ints(Convert(Convert(V(all), DType::Int4), DType::Int8)), Ints(V(all)));

  // Reshape, Parameter outputs and Constants of packed types are byte copies.
  OpAttributes re;
  re.shape = Shape(DType::Int4, {2, 2});
  const Tensor r = RunOp(OpType::Reshape, {Packed(DType::Int4, {4}, {0x21, 0xF8})}, re);
  EXPECT_EQ(r.shape(), re.shape);
  EXPECT_EQ(BytesOf(r), (std::vector<uint8_t>{0x21, 0xF8}));
  Graph g;
  Node x = g.Parameter(Shape(DType::Uint4, {3}));
  OpAttributes c;
  c.literal = Packed(DType::Uint2, {3}, {0x39});
  Node k = g.AddOp(OpType::Constant, {}, c);
  const std::vector<Tensor> out =
      RunProgram(Ref(), g.Build({x, k}), {Packed(DType::Uint4, {3}, {0xBA, 0x0C})});
  EXPECT_EQ(BytesOf(out[0]), (std::vector<uint8_t>{0xBA, 0x0C}));
  EXPECT_EQ(BytesOf(out[1]), (std::vector<uint8_t>{0x39}));
}

// ---- Contractions ---------------------------------------------------------------------------

Tensor Dot(const Tensor& a, const Tensor& b, std::vector<int64_t> lc, std::vector<int64_t> rc,
           std::vector<int64_t> lb = {}, std::vector<int64_t> rb = {}) {
  OpAttributes attrs;
  attrs.lhs_contracting = std::move(lc);
  attrs.rhs_contracting = std::move(rc);
  attrs.lhs_batch = std::move(lb);
  attrs.rhs_batch = std::move(rb);
  return RunOp(OpType::DotGeneral, {a, b}, std::move(attrs));
}

TEST(RefDotTest, MatmulBatchAndGeneralAxes) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  Tensor r = Dot(V(a, {2, 3}), V(b, {3, 2}), {1}, {0});
  EXPECT_EQ(r.shape(), Shape(DType::Float32, {2, 2}));
  EXPECT_TRUE(SameFloats(r, {58, 64, 139, 154}));
  std::vector<bfloat16> ab, bb;
  for (float f : a) ab.push_back(B(f));
  for (float f : b) bb.push_back(B(f));
  EXPECT_TRUE(SameFloats(Dot(V(ab, {2, 3}), V(bb, {3, 2}), {1}, {0}), {58, 64, 139, 154}));
  // Contracting the first axes: a^T (3x2 viewed as [3, 2]) . b ([3, 2]) = [[89, 98], [116, 128]].
  EXPECT_TRUE(SameFloats(
      Dot(V(a, {3, 2}), V(b, {3, 2}), {0}, {0}),
      {1 * 7 + 3 * 9 + 5 * 11, 1 * 8 + 3 * 10 + 5 * 12, 2 * 7 + 4 * 9 + 6 * 11, 2 * 8 + 4 * 10 + 6 * 12}));
  // lhs [k=3, b=2], rhs [b=2, k=3, n=2]: out[b, n] = sum_k lhs[k, b] * rhs[b, k, n].
  const std::vector<int32_t> l = {1, 2, 3, 4, 5, 6};
  const std::vector<int32_t> rr = {1, 0, 0, 1, 1, 1, 2, 1, 1, 2, 0, 0};
  r = Dot(V(l, {3, 2}), V(rr, {2, 3, 2}), {0}, {1}, {1}, {0});
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {2, 2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{6, 8, 8, 10}));
  // Batch, then lhs free, then rhs free: [2] x [2, 1, 2] -> out[b, m, n] with no contraction.
  r = Dot(V(std::vector<int64_t>{2, 3}), V(std::vector<int64_t>{1, 10, 100, 1000}, {2, 1, 2}), {}, {}, {0},
          {0});
  EXPECT_EQ(r.shape(), Shape(DType::Int64, {2, 1, 2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{2, 20, 300, 3000}));
  // Outer product, and a contraction over an empty axis (sum of nothing: 0).
  EXPECT_EQ(Ints(Dot(V(std::vector<int16_t>{1, 2}), V(std::vector<int16_t>{3, 4, 5}), {}, {})),
            (std::vector<int64_t>{3, 4, 5, 6, 8, 10}));
  EXPECT_TRUE(SameFloats(Dot(Tensor::FromShape(Shape(DType::Float64, {2, 0})),
                             Tensor::FromShape(Shape(DType::Float64, {0})), {1}, {0}),
                         {0, 0}));
}

TEST(RefDotTest, AccumulatesInDoubleOrWraps) {
  EXPECT_TRUE(SameFloats(
      Dot(V(std::vector<float16>{H(2048), H(1), H(1)}), V(std::vector<float16>{H(1), H(1), H(1)}), {0}, {0}),
      {2050}));
  EXPECT_TRUE(
      SameFloats(Dot(V(std::vector<float>{1e8f, 1, -1e8f}), V(std::vector<float>{1, 1, 1}), {0}, {0}), {1}));
  EXPECT_EQ(Ints(Dot(V(std::vector<int8_t>{100, 100}), V(std::vector<int8_t>{1, 1}), {0}, {0})),
            (std::vector<int64_t>{-56}));
  EXPECT_EQ(Ints(Dot(V(std::vector<uint8_t>{16, 1}), V(std::vector<uint8_t>{16, 3}), {0}, {0})),
            (std::vector<int64_t>{3}));
  EXPECT_EQ(Ints(Dot(V(std::vector<uint16_t>{65535}), V(std::vector<uint16_t>{65535}), {0}, {0})),
            (std::vector<int64_t>{1}));
}

// ---- Leaves --------------------------------------------------------------------------------

Tensor Iota(const Shape& shape, int64_t axis) {
  Graph g;
  OpAttributes attrs;
  attrs.shape = shape;
  attrs.axis = axis;
  Node n = g.AddOp(OpType::Iota, {}, attrs);
  return RunProgram(Ref(), g.Build({n}), {})[0];
}

TEST(RefLeafTest, IotaAndConstant) {
  EXPECT_TRUE(SameFloats(Iota(Shape(DType::Float32, {2, 3}), 1), {0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Ints(Iota(Shape(DType::Int64, {2, 3}), 0)), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(Ints(Iota(Shape(DType::Int8, {2, 2, 2}), 1)), (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}));
  EXPECT_TRUE(SameFloats(Iota(Shape(DType::Float16, {3}), 0), {0, 1, 2}));
  const std::vector<int64_t> u8 = Ints(Iota(Shape(DType::Uint8, {300}), 0));
  EXPECT_EQ(u8[255], 255);
  EXPECT_EQ(u8[299], 43);  // Wraps: 299 - 256.
  const std::vector<double> bf = Floats(Iota(Shape(DType::BFloat16, {300}), 0));
  EXPECT_EQ(bf[257], 256);  // 8 significant bits: ties to even.
  EXPECT_EQ(bf[259], 260);

  Graph g;
  Node x = g.Parameter(Shape(DType::Float64, {2}));
  OpAttributes c;
  c.literal = V(std::vector<double>{1.5, -2});
  Node k = g.AddOp(OpType::Constant, {}, c);
  Node sum = g.AddOp(OpType::Add, {x, k});
  const std::vector<Tensor> out = RunProgram(Ref(), g.Build({sum, k}), {V(std::vector<double>{1, 1})});
  EXPECT_TRUE(SameFloats(out[0], {2.5, -1}));
  EXPECT_TRUE(SameFloats(out[1], {1.5, -2}));
}

// ---- Every op on every dtype its shape rule accepts ------------------------------------------

/// Deterministic pseudo-random bytes (every bit pattern: NaNs, infinities, subnormals, extreme
/// integers); Bool elements are 0 or 1.
Tensor RandomTensor(const Shape& shape, uint32_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(shape.ByteSize()));
  uint32_t state = seed * 2654435761u + 1;
  for (uint8_t& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(state >> 24);
    if (shape.dtype() == DType::Bool) b &= 1;
  }
  return Tensor::FromBytes(shape, bytes);
}

// Runs each elementwise and reduction op on each dtype the shape rules accept, on arbitrary bit
// patterns: every combination has a kernel, and (under UBSan) none has undefined behaviour.
TEST(RefSweepTest, ElementwiseAndReductionsOnEveryAcceptedDType) {
  int runs = 0;
  for (OpType op : compute::AllOps()) {
    const compute::OpCategory category = compute::GetOpCategory(op);
    using compute::OpCategory;
    if (category != OpCategory::Unary && category != OpCategory::UnaryPredicate &&
        category != OpCategory::Binary && category != OpCategory::Compare && category != OpCategory::Select &&
        category != OpCategory::Reduce && category != OpCategory::ArgReduce) {
      continue;
    }
    for (DType dtype : kAllDTypes) {
      if (IsPacked(dtype)) continue;
      const Shape shape(dtype, {3, 5});
      std::vector<Shape> shapes(static_cast<size_t>(compute::OpArity(op)), shape);
      if (op == OpType::Where) shapes[0] = shape.WithDType(DType::Bool);
      OpAttributes attrs;
      attrs.axes = {1};
      attrs.axis = 1;
      attrs.dtype = DType::Int32;
      Shape want;
      try {
        want = compute::InferShape(op, shapes, attrs);
      } catch (const Error&) {
        continue;  // Not accepted by the shape rule.
      }
      SCOPED_TRACE(fmt::format("{} on {}", compute::OpName(op), DTypeName(dtype)));
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < shapes.size(); ++i)
        inputs.push_back(RandomTensor(shapes[i], static_cast<uint32_t>(runs * 3 + i)));
      const Tensor out = RunOp(op, inputs, attrs);
      EXPECT_EQ(out.shape(), want);
      ++runs;
    }
  }
  EXPECT_GT(runs, 450);
}

// ConvertDType between every pair of dtypes, packed ones included, on arbitrary bit patterns;
// Int8 values survive a round trip through every type that holds them (or wraps both ways).
TEST(RefSweepTest, ConvertBetweenEveryPairOfDTypes) {
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      SCOPED_TRACE(fmt::format("{} -> {}", DTypeName(from), DTypeName(to)));
      const Tensor out = Convert(
          RandomTensor(Shape(from, {7}), static_cast<uint32_t>(from) * 31 + static_cast<uint32_t>(to)), to);
      EXPECT_EQ(out.shape(), Shape(to, {7}));
    }
  }
  std::vector<int8_t> all;
  for (int v = -128; v < 128; ++v) all.push_back(static_cast<int8_t>(v));
  for (DType via : kAllDTypes) {
    if (IsPacked(via) || via == DType::Bool) continue;
    SCOPED_TRACE(DTypeName(via));
    EXPECT_EQ(Ints(Convert(Convert(V(all), via), DType::Int8)), Ints(V(all)));
  }
}

// Movement ops copy elements as bits whatever the dtype (sizes 1, 2, 4 and 8 bytes).
TEST(RefSweepTest, MovementOnEveryDType) {
  for (DType dtype : kAllDTypes) {
    if (IsPacked(dtype)) continue;
    SCOPED_TRACE(DTypeName(dtype));
    const size_t size = static_cast<size_t>(DTypeBits(dtype) / 8);
    const Tensor x = RandomTensor(Shape(dtype, {2, 3}), static_cast<uint32_t>(dtype));
    const std::vector<uint8_t> in = BytesOf(x);
    auto element = [&](const std::vector<uint8_t>& bytes, size_t i) {
      return std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(i * size),
                                  bytes.begin() + static_cast<std::ptrdiff_t>((i + 1) * size));
    };
    OpAttributes t;
    t.permutation = {1, 0};
    const std::vector<uint8_t> transposed = BytesOf(RunOp(OpType::Transpose, {x}, t));
    OpAttributes r;
    r.axes = {1};
    const std::vector<uint8_t> reversed = BytesOf(RunOp(OpType::Reverse, {x}, r));
    OpAttributes c;
    c.axis = 0;
    const std::vector<uint8_t> doubled = BytesOf(RunOp(OpType::Concatenate, {x, x}, c));
    for (size_t i = 0; i < 2; ++i) {
      for (size_t j = 0; j < 3; ++j) {
        EXPECT_EQ(element(transposed, j * 2 + i), element(in, i * 3 + j));
        EXPECT_EQ(element(reversed, i * 3 + (2 - j)), element(in, i * 3 + j));
        EXPECT_EQ(element(doubled, 6 + i * 3 + j), element(in, i * 3 + j));
      }
    }
  }
}

// ---- Memory --------------------------------------------------------------------------------

constexpr int64_t kMiB = 1 << 20;

TEST(RefMemoryTest, ElementwiseChainKeepsFewBuffersLive) {
  const compute::BackendPtr backend = compute::NewWithConfig("ref");
  const Shape shape(DType::Float32, {kMiB / 4});
  Graph g;
  Node y = g.Parameter(shape);
  for (int i = 0; i < 20; ++i) y = g.AddOp(OpType::Exp, {y});
  std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build({y}));
  const std::vector<float> host(static_cast<size_t>(kMiB / 4), -1000.0f);
  compute::BufferPtr in = backend->BufferFromHost(0, host.data(), kMiB);
  backend->ResetPeakMemory();
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {false}, 0);
  const compute::MemoryUsage usage = backend->MemoryStats();
  EXPECT_LE(usage.peak_bytes, 3 * kMiB);  // The input and at most two values, not 20.
  EXPECT_EQ(usage.live_bytes, 2 * kMiB);  // The input and the output.
  EXPECT_EQ(usage.live_buffers, 2);
  std::vector<float> result(host.size());
  backend->BufferToHost(*out[0], result.data());
  // exp(-1000) = 0, then 1, e, e^e = 15.2, e^15.2 = 3.8e6, then inf from the sixth step on.
  EXPECT_EQ(result[0], std::numeric_limits<float>::infinity());
  out.clear();
  in.reset();
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
}

TEST(RefMemoryTest, IntermediatesAreFreedAfterTheirLastUse) {
  // Transposes cannot run in place: each step holds its operand and its result, nothing older.
  const compute::BackendPtr backend = compute::NewWithConfig("ref");
  const Shape shape(DType::Float32, {512, 512});
  Graph g;
  Node y = g.Parameter(shape);
  OpAttributes t;
  t.permutation = {1, 0};
  for (int i = 0; i < 10; ++i) y = g.AddOp(OpType::Transpose, {y}, t);
  // A value used twice, far apart, lives until its last use.
  Node x0 = g.ParameterNode(0);
  Node z = g.AddOp(OpType::Add, {y, x0});
  std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build({z}));
  compute::BufferPtr in = backend->NewSharedBuffer(0, kMiB);
  backend->ResetPeakMemory();
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {false}, 0);
  EXPECT_LE(backend->MemoryStats().peak_bytes, 3 * kMiB);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 2);
}

// ---- Donation and aliasing -----------------------------------------------------------------

struct Fixture {
  compute::BackendPtr backend = compute::NewWithConfig("ref");
  compute::BufferPtr Input(const std::vector<float>& v) {
    return backend->BufferFromHost(0, v.data(), static_cast<int64_t>(v.size() * sizeof(float)));
  }
  std::vector<float> Read(const compute::BufferPtr& b) {
    std::vector<float> v(static_cast<size_t>(b->ByteSize()) / sizeof(float));
    backend->BufferToHost(*b, v.data());
    return v;
  }
};

TEST(RefDonationTest, OutputThatIsAParameterCopiesUnlessDonated) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {4}));
  OpAttributes re;
  re.shape = Shape(DType::Float32, {2, 2});
  Node r = g.AddOp(OpType::Reshape, {x}, re);
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({x}, {true}));
  std::unique_ptr<compute::Executable> exe_reshape = f.backend->Compile(g.Build({r}, {true}));
  compute::BufferPtr in = f.Input({1, 2, 3, 4});
  for (compute::Executable* e : {exe.get(), exe_reshape.get()}) {
    std::vector<compute::BufferPtr> out = e->Execute({in}, {false}, 0);
    EXPECT_NE(out[0], in);
    EXPECT_NE(out[0]->HostData(), in->HostData());
    EXPECT_EQ(f.Read(out[0]), (std::vector<float>{1, 2, 3, 4}));
    static_cast<float*>(out[0]->HostData())[0] = 9;  // Writing the output leaves the input alone.
    EXPECT_EQ(f.Read(in)[0], 1.0f);
  }
  // Donated: the very buffer comes back.
  EXPECT_EQ(exe->Execute({in}, {true}, 0)[0], in);
  EXPECT_EQ(exe_reshape->Execute({in}, {true}, 0)[0], in);
}

TEST(RefDonationTest, ElementwiseResultReusesTheDonatedBuffer) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {kMiB / 4}));
  Node y = g.AddOp(OpType::Neg, {g.AddOp(OpType::Exp, {x})});
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({y}, {true}));
  compute::BufferPtr in = f.Input(std::vector<float>(kMiB / 4, 0.0f));
  f.backend->ResetPeakMemory();
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {true}, 0);
  EXPECT_EQ(out[0], in);
  EXPECT_EQ(f.backend->MemoryStats().peak_bytes, kMiB);  // Nothing else was allocated.
  EXPECT_EQ(f.Read(out[0])[5], -1.0f);
  // Not donated: a new buffer, the input unchanged.
  compute::BufferPtr in2 = f.Input(std::vector<float>(kMiB / 4, 0.0f));
  out = exe->Execute({in2}, {false}, 0);
  EXPECT_NE(out[0], in2);
  EXPECT_EQ(f.Read(in2)[5], 0.0f);
}

TEST(RefDonationTest, DonationNeedsTheProgramsPermissionAndAnUnsharedBuffer) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  Node y = g.Parameter(Shape(DType::Float32, {2}));
  Node sum = g.AddOp(OpType::Add, {x, y});
  // The program does not let parameter 0 be reused: donating it changes nothing.
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({sum}, {false, false}));
  compute::BufferPtr a = f.Input({1, 2}), b = f.Input({10, 20});
  std::vector<compute::BufferPtr> out = exe->Execute({a, b}, {true, false}, 0);
  EXPECT_NE(out[0], a);
  EXPECT_EQ(f.Read(out[0]), (std::vector<float>{11, 22}));
  // The same buffer passed twice, donated once: still read as an input, so never overwritten.
  exe = f.backend->Compile(g.Build({sum}, {true, true}));
  out = exe->Execute({a, a}, {true, false}, 0);
  EXPECT_NE(out[0], a);
  EXPECT_EQ(f.Read(out[0]), (std::vector<float>{2, 4}));
  EXPECT_EQ(f.Read(a), (std::vector<float>{1, 2}));
  // A donated parameter that is output twice: once itself, once a copy.
  exe = f.backend->Compile(g.Build({x, x}, {true, true}));
  out = exe->Execute({a, b}, {true, true}, 0);
  EXPECT_EQ(out[0], a);
  EXPECT_NE(out[1], a);
  EXPECT_EQ(f.Read(out[1]), (std::vector<float>{1, 2}));
}

TEST(RefDonationTest, SpareDonatedBufferHoldsALaterResult) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 2}));
  OpAttributes t;
  t.permutation = {1, 0};
  Node y = g.AddOp(OpType::Transpose, {x}, t);
  Node z = g.AddOp(OpType::Transpose, {y}, t);
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({z}, {true}));
  compute::BufferPtr in = f.Input({1, 2, 3, 4});
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {true}, 0);
  EXPECT_EQ(out[0], in);  // x is dead after the first Transpose; the second one writes into it.
  EXPECT_EQ(f.Read(out[0]), (std::vector<float>{1, 2, 3, 4}));
}

// ---- Errors, threads, shared buffers -------------------------------------------------------

TEST(RefExecuteTest, BadInputsAreErrors) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  Node y = g.Parameter(Shape(DType::Float32, {3}));
  Node s = g.AddOp(OpType::ReduceSum, {y}, [] {
    OpAttributes a;
    a.axes = {0};
    return a;
  }());
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({x, s}));
  compute::BufferPtr two = f.Input({1, 2}), three = f.Input({1, 2, 3});
  EXPECT_TRUE(ThrowsKilnError([&] { exe->Execute({two}, {false}, 0); }, {"takes 2 inputs", "given 1"}));
  EXPECT_TRUE(ThrowsKilnError(
      [&] {
        exe->Execute({two, two}, {false, false}, 0);
      },
      {"parameter 1", "8 bytes", "12"}));
  EXPECT_TRUE(ThrowsKilnError([&] { exe->Execute({two, three}, {false}, 0); }, {"donation flags"}));
  EXPECT_TRUE(ThrowsKilnError([&] { exe->Execute({two, three}, {false, false}, 1); }));
  compute::BackendPtr other = compute::NewWithConfig("ref");
  std::vector<float> v = {1, 2, 3};
  EXPECT_TRUE(ThrowsKilnError(
      [&] {
        exe->Execute({two, other->BufferFromHost(0, v.data(), 12)}, {false, false}, 0);
      },
      {"another backend"}));
  const std::vector<compute::BufferPtr> out =
      exe->Execute({two, three}, {}, 0);  // No flags: nothing donated.
  EXPECT_EQ(f.Read(out[1]), (std::vector<float>{6}));
}

TEST(RefExecuteTest, SubProgramsAreRejected) {
  Graph inner;
  Node p = inner.Parameter(Shape(DType::Float32));
  std::shared_ptr<const compute::Program> body = inner.Build({p});
  std::vector<compute::Instruction> insts;
  OpAttributes pa;
  pa.index = 0;
  pa.shape = Shape(DType::Float32, {2});
  insts.push_back(compute::Instruction{OpType::Parameter, {}, pa, pa.shape, {}});
  insts.push_back(compute::Instruction{OpType::Neg, {0}, {}, pa.shape, {body}});
  auto program =
      std::make_shared<const compute::Program>(std::move(insts), std::vector<int>{1}, std::vector<bool>{});
  EXPECT_TRUE(ThrowsKilnError([&] { Ref()->Compile(program); }, {"#1", "Neg", "sub-programs"}));
}

TEST(RefExecuteTest, CompileVerifiesTheProgram) {
  std::vector<compute::Instruction> insts;
  OpAttributes pa;
  pa.index = 0;
  pa.shape = Shape(DType::Float32, {2});
  insts.push_back(compute::Instruction{OpType::Parameter, {}, pa, pa.shape, {}});
  insts.push_back(
      compute::Instruction{OpType::Neg, {0}, {}, Shape(DType::Float32, {3}), {}});  // Wrong shape.
  auto program =
      std::make_shared<const compute::Program>(std::move(insts), std::vector<int>{1}, std::vector<bool>{});
  EXPECT_TRUE(ThrowsKilnError([&] { Ref()->Compile(program); }, {"Verify", "#1"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Ref()->Compile(nullptr); }, {"null"}));
}

TEST(RefExecuteTest, ConcurrentExecutions) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Int64, {1000}));
  OpAttributes a;
  a.axes = {0};
  Node s = g.AddOp(OpType::ReduceSum, {g.AddOp(OpType::Mul, {x, g.AddOp(OpType::Neg, {x})})}, a);
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({s}, {true}));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 50; ++iter) {
        const int64_t k = t * 100 + iter;
        const std::vector<int64_t> v(1000, k);
        compute::BufferPtr in = f.backend->BufferFromHost(0, v.data(), 8000);
        const std::vector<compute::BufferPtr> out = exe->Execute({in}, {iter % 2 == 0}, 0);
        int64_t got = 0;
        f.backend->BufferToHost(*out[0], &got);
        if (got != -1000 * k * k) ++failures[static_cast<size_t>(t)];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(f.backend->MemoryStats().live_bytes, 0);
}

TEST(RefExecuteTest, OutputsAreBackendBuffersSharedWithTensors) {
  for (const char* config : {"ref", "ref:shared=false"}) {
    SCOPED_TRACE(config);
    const compute::BackendPtr backend = compute::NewWithConfig(config);
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {3}));
    Node y = g.AddOp(OpType::Add, {x, x});
    const std::shared_ptr<const compute::Program> program = g.Build({y});
    const std::vector<Tensor> out = RunProgram(backend, program, {V(std::vector<float>{1, 2, 3})});
    EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{2, 4, 6}));
    EXPECT_EQ(out[0].IsShared(), backend->HasSharedBuffers());
    compute::BufferPtr buffer = out[0].DeviceBuffer(backend, 0);
    EXPECT_EQ(buffer->backend(), backend.get());
    EXPECT_EQ(buffer->HostData() != nullptr, backend->HasSharedBuffers());
  }
}

TEST(RefExecuteTest, CapabilitiesCoverEveryOpAndDType) {
  const compute::BackendCapabilities& caps = Ref()->Capabilities();
  EXPECT_EQ(caps.ops.size(), static_cast<size_t>(compute::kNumOps));
  // Packed dtypes too: ref runs the storage ops, the only ones their shape rules accept.
  for (DType d : kAllDTypes) EXPECT_TRUE(caps.HasDType(d)) << DTypeName(d);
  EXPECT_EQ(caps.dynamic_shapes, compute::DynamicShapes::None);
}

}  // namespace
}  // namespace kiln
