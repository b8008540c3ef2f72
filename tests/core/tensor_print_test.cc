// Tests of Tensor::ToString and operator<<: values printed as GoMLX prints them.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/tensor_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(TensorPrintTest, GoMLXExamples) {
  EXPECT_EQ(Tensor::FromScalar(5.0f).ToString(), "float32(5)");
  EXPECT_EQ(Tensor::FromValue(std::vector<float>{4, 12}).ToString(), "[2]float32{4, 12}");
  EXPECT_EQ(Tensor::FromValue(std::vector<std::vector<float>>{{1, 2}, {3, 4}}).ToString(),
            "[2][2]float32{{1, 2}, {3, 4}}");
}

TEST(TensorPrintTest, Rank3) {
  Tensor t = Tensor::FromValue(std::vector<std::vector<std::vector<int32_t>>>{{{1, 2}}, {{3, 4}}});
  EXPECT_EQ(t.ToString(), "[2][1][2]int32{{{1, 2}}, {{3, 4}}}");
  Tensor u =
      Tensor::FromValue(std::vector<std::vector<std::vector<int32_t>>>{{{1}, {2}}, {{3}, {4}}, {{5}, {6}}});
  EXPECT_EQ(u.ToString(), "[3][2][1]int32{{{1}, {2}}, {{3}, {4}}, {{5}, {6}}}");
}

TEST(TensorPrintTest, Integers) {
  EXPECT_EQ(Tensor::FromValue(std::vector<int64_t>{-3, 0, std::numeric_limits<int64_t>::max()}).ToString(),
            "[3]int64{-3, 0, 9223372036854775807}");
  EXPECT_EQ(Tensor::FromScalar(std::numeric_limits<int64_t>::min()).ToString(),
            "int64(-9223372036854775808)");
  // uint8 and int8 print as numbers, not characters.
  EXPECT_EQ(Tensor::FromValue(std::vector<uint8_t>{0, 65, 255}).ToString(), "[3]uint8{0, 65, 255}");
  EXPECT_EQ(Tensor::FromValue(std::vector<int8_t>{-128, 65, 127}).ToString(), "[3]int8{-128, 65, 127}");
  EXPECT_EQ(Tensor::FromScalar(uint8_t{7}).ToString(), "uint8(7)");
  EXPECT_EQ(Tensor::FromValue(std::vector<int16_t>{-32768, 32767}).ToString(), "[2]int16{-32768, 32767}");
  EXPECT_EQ(Tensor::FromValue(std::vector<uint16_t>{65535}).ToString(), "[1]uint16{65535}");
  EXPECT_EQ(Tensor::FromValue(std::vector<int32_t>{-2147483647 - 1}).ToString(), "[1]int32{-2147483648}");
  EXPECT_EQ(Tensor::FromValue(std::vector<uint32_t>{4294967295u}).ToString(), "[1]uint32{4294967295}");
  EXPECT_EQ(Tensor::FromValue(std::vector<uint64_t>{18446744073709551615ull}).ToString(),
            "[1]uint64{18446744073709551615}");
}

TEST(TensorPrintTest, Bool) {
  EXPECT_EQ(Tensor::FromValue(std::vector<bool>{true, false}).ToString(), "[2]bool{true, false}");
  EXPECT_EQ(Tensor::FromScalar(true).ToString(), "bool(true)");
  EXPECT_EQ(Tensor::FromScalar(false).ToString(), "bool(false)");
}

TEST(TensorPrintTest, FloatsShortestRoundTrip) {
  EXPECT_EQ(Tensor::FromScalar(0.1f).ToString(), "float32(0.1)");
  EXPECT_EQ(Tensor::FromScalar(0.1 + 0.2).ToString(), "float64(0.30000000000000004)");
  EXPECT_EQ(Tensor::FromScalar(0.1).ToString(), "float64(0.1)");
  EXPECT_EQ(Tensor::FromScalar(1e20f).ToString(), "float32(1e+20)");
  EXPECT_EQ(Tensor::FromScalar(1e20).ToString(), "float64(1e+20)");
  EXPECT_EQ(Tensor::FromScalar(-2.5f).ToString(), "float32(-2.5)");
  EXPECT_EQ(Tensor::FromScalar(3.0).ToString(), "float64(3)");
  // 0.1f as a float64 shows its float32 error.
  EXPECT_EQ(Tensor::FromScalar(static_cast<double>(0.1f)).ToString(), "float64(0.10000000149011612)");
}

TEST(TensorPrintTest, NaNAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const double dinf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Tensor::FromScalar(std::numeric_limits<float>::quiet_NaN()).ToString(), "float32(NaN)");
  EXPECT_EQ(Tensor::FromScalar(-std::numeric_limits<double>::quiet_NaN()).ToString(), "float64(NaN)");
  EXPECT_EQ(Tensor::FromValue(std::vector<float>{inf, -inf, 1}).ToString(), "[3]float32{+Inf, -Inf, 1}");
  EXPECT_EQ(Tensor::FromValue(std::vector<double>{dinf, -dinf}).ToString(), "[2]float64{+Inf, -Inf}");
}

TEST(TensorPrintTest, HalfTypesPrintThroughFloat) {
  EXPECT_EQ(Tensor::FromScalar(float16(0.5f)).ToString(), "float16(0.5)");
  EXPECT_EQ(Tensor::FromScalar(bfloat16(0.5f)).ToString(), "bfloat16(0.5)");
  EXPECT_EQ(Tensor::FromValue(std::vector<float16>{float16(1.0f), float16(-2.25f)}).ToString(),
            "[2]float16{1, -2.25}");
  EXPECT_EQ(Tensor::FromValue(std::vector<bfloat16>{bfloat16(3.0f), bfloat16(-0.125f)}).ToString(),
            "[2]bfloat16{3, -0.125}");
  // float16(0.1f) is 0.0999755859375; printed as the shortest float that reads back to it.
  EXPECT_EQ(Tensor::FromScalar(float16::FromBits(0x2E66)).ToString(), "float16(0.099975586)");
  EXPECT_EQ(Tensor::FromScalar(float16::FromBits(0x7C00)).ToString(), "float16(+Inf)");
  EXPECT_EQ(Tensor::FromScalar(float16::FromBits(0xFC00)).ToString(), "float16(-Inf)");
  EXPECT_EQ(Tensor::FromScalar(float16::FromBits(0x7E00)).ToString(), "float16(NaN)");
  EXPECT_EQ(Tensor::FromScalar(bfloat16::FromBits(0x7FC0)).ToString(), "bfloat16(NaN)");
  EXPECT_EQ(Tensor::FromScalar(bfloat16::FromBits(0xFF80)).ToString(), "bfloat16(-Inf)");
  EXPECT_EQ(Tensor::FromScalar(float16::FromBits(0x7BFF)).ToString(), "float16(65504)");
}

TEST(TensorPrintTest, PackedValuesUnpacked) {
  // Element i sits at bits (i % 2) * 4 of byte i / 2; Int4 is sign-extended.
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Int4, {2}), std::vector<uint8_t>{0xF7}).ToString(),
            "[2]int4{7, -1}");
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Uint4, {2}), std::vector<uint8_t>{0xF7}).ToString(),
            "[2]uint4{7, 15}");
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Int4, {3}), std::vector<uint8_t>{0x21, 0x08}).ToString(),
            "[3]int4{1, 2, -8}");
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Int4, {2, 2}), std::vector<uint8_t>{0x98, 0x10}).ToString(),
            "[2][2]int4{{-8, -7}, {0, 1}}");
  // Two bits: 0xE4 = 0b11'10'01'00 holds 0, 1, 2, 3 from the low bits up.
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Int2, {4}), std::vector<uint8_t>{0xE4}).ToString(),
            "[4]int2{0, 1, -2, -1}");
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Uint2, {4}), std::vector<uint8_t>{0xE4}).ToString(),
            "[4]uint2{0, 1, 2, 3}");
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Uint2, {5}), std::vector<uint8_t>{0xE4, 0x03}).ToString(),
            "[5]uint2{0, 1, 2, 3, 3}");
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Int4), std::vector<uint8_t>{0x0A}).ToString(), "int4(-6)");
  EXPECT_EQ(Tensor::FromShape(Shape(DType::Uint4, {3})).ToString(), "[3]uint4{0, 0, 0}");
}

Tensor Iota(int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return Tensor::FromValue(v);
}

TEST(TensorPrintTest, LongAxesAreElided) {
  EXPECT_EQ(Iota(8).ToString(), "[8]int32{0, 1, 2, 3, 4, 5, 6, 7}");
  EXPECT_EQ(Iota(9).ToString(), "[9]int32{0, 1, 2, 3, ..., 5, 6, 7, 8}");
  EXPECT_EQ(Iota(10).ToString(), "[10]int32{0, 1, 2, 3, ..., 6, 7, 8, 9}");
  EXPECT_EQ(Iota(1000).ToString(), "[1000]int32{0, 1, 2, 3, ..., 996, 997, 998, 999}");
}

TEST(TensorPrintTest, LongOuterAxesAreElided) {
  // [10][1]: the outer axis is elided row by row.
  EXPECT_EQ(Iota(10).Reshape({10, 1}).ToString(),
            "[10][1]int32{{0}, {1}, {2}, {3}, ..., {6}, {7}, {8}, {9}}");
  // [2][10]: each row is elided.
  EXPECT_EQ(Iota(20).Reshape({2, 10}).ToString(),
            "[2][10]int32{{0, 1, 2, 3, ..., 6, 7, 8, 9}, {10, 11, 12, 13, ..., 16, 17, 18, 19}}");
}

TEST(TensorPrintTest, Empty) {
  EXPECT_EQ(Tensor::FromShape(Shape(DType::Float32, {0})).ToString(), "[0]float32{}");
  EXPECT_EQ(Tensor::FromShape(Shape(DType::Float32, {2, 0})).ToString(), "[2][0]float32{{}, {}}");
  EXPECT_EQ(Tensor::FromShape(Shape(DType::Float32, {0, 2})).ToString(), "[0][2]float32{}");
  EXPECT_EQ(Tensor::FromValue(std::vector<bool>{}).ToString(), "[0]bool{}");
}

TEST(TensorPrintTest, StreamOperatorEqualsToString) {
  for (const Tensor& t : {Tensor::FromScalar(5.0f), Tensor::FromValue(std::vector<int64_t>{1, 2, 3}),
                          Iota(12), Tensor::FromShape(Shape(DType::BFloat16, {2, 3}))}) {
    std::ostringstream os;
    os << t;
    EXPECT_EQ(os.str(), t.ToString());
  }
}

TEST(TensorPrintTest, ReshapePrintsItsShape) {
  EXPECT_EQ(Iota(4).Reshape({2, 2}).ToString(), "[2][2]int32{{0, 1}, {2, 3}}");
}

TEST(TensorPrintTest, FinalizedAndEmptyHandlesPrint) {
  Tensor t = Tensor::FromValue(std::vector<float>{1, 2});
  t.FinalizeAll();
  std::string s;
  EXPECT_NO_THROW(s = t.ToString());
  EXPECT_FALSE(s.empty());
  std::ostringstream os;
  EXPECT_NO_THROW(os << t);
  EXPECT_EQ(os.str(), s);
  Tensor empty;
  EXPECT_NO_THROW(s = empty.ToString());
  EXPECT_FALSE(s.empty());
}

TEST(TensorPrintTest, FullPrintsEveryElement) {
  std::vector<int32_t> v(10);
  for (int i = 0; i < 10; ++i) v[static_cast<size_t>(i)] = i;
  const Tensor t = Tensor::FromValue(v);
  EXPECT_EQ(t.ToString(), "[10]int32{0, 1, 2, 3, ..., 6, 7, 8, 9}");
  EXPECT_EQ(t.ToString(true), "[10]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}");
  EXPECT_EQ(t.ToString(false), t.ToString());
}

}  // namespace
}  // namespace kiln
