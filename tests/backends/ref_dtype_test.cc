// Tests of the reference backend's dtype conversions (saturation, rounding, bitcasts, packed
// dtypes) and sweeps running each op on every dtype it accepts, on arbitrary bit patterns.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/ref_test_util.h"
#include "core/tensor_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace ref_test;  // NOLINT
using kiln::testing::BytesOf;

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
      if (IsStorageOnly(dtype)) continue;
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
    if (IsStorageOnly(via) || via == DType::Bool) continue;
    SCOPED_TRACE(DTypeName(via));
    EXPECT_EQ(Ints(Convert(Convert(V(all), via), DType::Int8)), Ints(V(all)));
  }
  // The 8-bit floats hold the integers up to 16 (E4M3FN) and 8 (E5M2) exactly, beyond which they
  // round to nearest even: 17 -> 16 and 18 -> 18 in E4M3FN (quantum 2), 9 -> 8 and 11 -> 12 in E5M2.
  const std::vector<int8_t> small = {-16, -9, 0, 1, 7, 8, 9, 11, 16, 17, 18, 127};
  EXPECT_EQ(Ints(Convert(Convert(V(small), DType::Float8E4M3FN), DType::Int8)),
            (std::vector<int64_t>{-16, -9, 0, 1, 7, 8, 9, 11, 16, 16, 18, 127}));
  EXPECT_EQ(Ints(Convert(Convert(V(small), DType::Float8E5M2), DType::Int8)),
            (std::vector<int64_t>{-16, -8, 0, 1, 7, 8, 8, 12, 16, 16, 16, 127}));
}

// Movement ops copy elements as bits whatever the dtype (sizes 1, 2, 4 and 8 bytes).
TEST(RefSweepTest, MovementOnEveryDType) {
  for (DType dtype : kAllDTypes) {
    if (IsStorageOnly(dtype)) continue;
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

}  // namespace
}  // namespace kiln
