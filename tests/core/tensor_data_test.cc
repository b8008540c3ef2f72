// Tests of kiln::Tensor's data: creation from values, shapes and bytes (Bool and packed dtypes
// included), reading and writing elements and bytes, reshape, clone and equality.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/tensor_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using kiln::testing::BytesOf;
using kiln::testing::ThrowsKilnError;

TEST(TensorTest, ApiContractExample) {
  Tensor t1 = Tensor::FromValue(std::vector<int64_t>{10, 20, 30});
  Tensor t2 = Tensor::FromValue(std::vector<std::vector<float>>{{1, 2}, {3, 4}});
  EXPECT_EQ(t1.shape().ToString(), "(Int64)[3]");
  EXPECT_EQ(t2.shape().ToString(), "(Float32)[2, 2]");
  EXPECT_TRUE(t2.HasLocal());
  EXPECT_EQ(t2.Value<std::vector<std::vector<float>>>()[1][0], 3.0f);
  Tensor filled = Tensor::FromScalarAndDimensions(1.0, {3, 5});
  EXPECT_EQ(filled.shape().ToString(), "(Float64)[3, 5]");
  EXPECT_EQ(filled.ToVector<double>(), std::vector<double>(15, 1.0));
  Tensor scalar = Tensor::FromScalar(3.14f);
  EXPECT_EQ(scalar.shape().ToString(), "(Float32)");
  EXPECT_EQ(scalar.Item<float>(), 3.14f);
}

TEST(TensorTest, VectorOfBool) {
  Tensor t = Tensor::FromValue(std::vector<bool>{true, false, true});
  EXPECT_EQ(t.shape(), Shape(DType::Bool, {3}));
  EXPECT_EQ(BytesOf(t), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(t.Value<std::vector<bool>>(), (std::vector<bool>{true, false, true}));
  Tensor m = Tensor::FromValue(std::vector<std::vector<bool>>{{true, false}, {false, false}, {true, true}});
  EXPECT_EQ(m.shape(), Shape(DType::Bool, {3, 2}));
  EXPECT_EQ(BytesOf(m), (std::vector<uint8_t>{1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(m.Value<std::vector<std::vector<bool>>>(),
            (std::vector<std::vector<bool>>{{true, false}, {false, false}, {true, true}}));
  EXPECT_TRUE(ThrowsKilnError([] {
    Tensor::FromValue(std::vector<std::vector<bool>>{{true}, {true, false}});
  }));

  Tensor f = Tensor::FromFlat(Shape(DType::Bool, {2, 2}), std::vector<bool>{false, true, true, false});
  EXPECT_EQ(BytesOf(f), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_TRUE(ThrowsKilnError([] {
    Tensor::FromFlat(Shape(DType::Bool, {3}), std::vector<bool>{false, true, true, false});
  }));
}

// FromFlat with a std::vector<bool> must check the dtype like every other FromFlat: 4 bools are
// neither an Int8[4] nor a Float32[1] (whose byte sizes happen to match).
TEST(TensorTest, FromFlatVectorBoolChecksDType) {
  const std::vector<bool> bools = {true, false, true, true};
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(Shape(DType::Int8, {4}), bools); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(Shape(DType::Uint8, {4}), bools); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(Shape(DType::Float32, {1}), bools); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(Shape(DType::Int4, {8}), bools); }));
}

TEST(TensorTest, LongAndLongLongAreInt64) {
  Tensor a = Tensor::FromValue(std::vector<long>{-1, 2});               // NOLINT
  Tensor b = Tensor::FromValue(std::vector<long long>{-1, 2});          // NOLINT
  Tensor c = Tensor::FromValue(std::vector<unsigned long>{1, 2});       // NOLINT
  Tensor d = Tensor::FromValue(std::vector<unsigned long long>{1, 2});  // NOLINT
  EXPECT_EQ(a.dtype(), DType::Int64);
  EXPECT_EQ(b.dtype(), DType::Int64);
  EXPECT_EQ(c.dtype(), DType::Uint64);
  EXPECT_EQ(d.dtype(), DType::Uint64);
  // The same data read through any 64-bit C++ spelling of the type.
  EXPECT_EQ(a.ToVector<int64_t>(), (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(b.ToVector<long>(), (std::vector<long>{-1, 2}));                             // NOLINT
  EXPECT_EQ(c.ToVector<unsigned long long>(), (std::vector<unsigned long long>{1, 2}));  // NOLINT
  EXPECT_EQ(d.ToVector<uint64_t>(), (std::vector<uint64_t>{1, 2}));
}

TEST(TensorTest, FromShapePackedIsZeros) {
  struct PackedCase {
    DType dtype;
    int64_t count;
    size_t bytes;
  };
  for (const PackedCase& c :
       {PackedCase{DType::Int4, 8, 4}, PackedCase{DType::Int4, 3, 2}, PackedCase{DType::Uint4, 1, 1},
        PackedCase{DType::Int2, 5, 2}, PackedCase{DType::Uint2, 8, 2}, PackedCase{DType::Uint2, 9, 3},
        PackedCase{DType::Int4, 0, 0}}) {
    SCOPED_TRACE(DTypeName(c.dtype));
    Tensor t = Tensor::FromShape(Shape(c.dtype, {c.count}));
    EXPECT_EQ(t.Size(), c.count);
    const std::vector<uint8_t> bytes = BytesOf(t);
    EXPECT_EQ(bytes.size(), c.bytes);
    for (uint8_t b : bytes) EXPECT_EQ(b, 0);
  }
  // Every dtype: zeros and the right byte count.
  for (DType d : kAllDTypes) {
    SCOPED_TRACE(DTypeName(d));
    Tensor t = Tensor::FromShape(Shape(d, {2, 8}));
    const std::vector<uint8_t> bytes = BytesOf(t);
    EXPECT_EQ(bytes.size(), static_cast<size_t>(16 * DTypeBits(d) / 8));
    for (uint8_t b : bytes) EXPECT_EQ(b, 0);
  }
}

TEST(TensorTest, ToDoublesReadsEveryRealDType) {
  EXPECT_EQ(Tensor::FromValue(std::vector<float>{1.5f, -2}).ToDoubles(), (std::vector<double>{1.5, -2}));
  EXPECT_EQ(Tensor::FromValue(std::vector<uint8_t>{0, 255}).ToDoubles(), (std::vector<double>{0, 255}));
  EXPECT_EQ(Tensor::FromValue(std::vector<int64_t>{-7, 9}).ToDoubles(), (std::vector<double>{-7, 9}));
  EXPECT_EQ(Tensor::FromValue(std::vector<bool>{true, false}).ToDoubles(), (std::vector<double>{1, 0}));
  EXPECT_EQ(Tensor::FromValue(std::vector<bfloat16>{bfloat16(0.5f), bfloat16(-3.0f)}).ToDoubles(),
            (std::vector<double>{0.5, -3}));
  // Packed: two Int4 per byte, the low nibble first; 0xF is -1, 0x8 is -8.
  const std::vector<uint8_t> raw{0x7F, 0x08};
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Int4, {3}), raw).ToDoubles(), (std::vector<double>{-1, 7, -8}));
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Uint4, {3}), raw).ToDoubles(), (std::vector<double>{15, 7, 8}));
  EXPECT_EQ(Tensor::FromBytes(Shape(DType::Uint2, {4}), std::vector<uint8_t>{0xE4}).ToDoubles(),
            (std::vector<double>{0, 1, 2, 3}));
  Tensor gone = Tensor::FromValue(std::vector<float>{1});
  gone.FinalizeAll();
  EXPECT_TRUE(ThrowsKilnError([&] { gone.ToDoubles(); }));
}

TEST(TensorTest, FromShapeRejectsInvalid) {
  EXPECT_TRUE(ThrowsKilnError([] { Tensor::FromShape(Shape()); }));
  EXPECT_TRUE(ThrowsKilnError([] { Tensor::FromBytes(Shape(), {}); }));
}

TEST(TensorTest, DynamicShapesAreRejected) {
  const Shape dynamic(DType::Float32, {Shape::kDynamic, 3});
  ASSERT_TRUE(dynamic.IsDynamic());
  const Shape named = Shape::MakeDynamic(DType::Int32, {2, Shape::kDynamic}, {"", "batch"});
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromShape(dynamic); }, {"dynamic"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromShape(named); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBytes(dynamic, {}); }));
  const std::vector<float> three = {1, 2, 3};
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(dynamic, three); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(dynamic, std::span<const float>(three)); }));
}

TEST(TensorTest, FromBytes) {
  const std::vector<uint8_t> raw = {1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF};
  Tensor t = Tensor::FromBytes(Shape(DType::Int32, {2}), raw);
  EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{1, -1}));
  EXPECT_EQ(BytesOf(t), raw);
  // The tensor holds a copy.
  std::vector<uint8_t> mutable_raw = raw;
  Tensor c = Tensor::FromBytes(Shape(DType::Uint8, {8}), mutable_raw);
  mutable_raw[0] = 42;
  EXPECT_EQ(c.ToVector<uint8_t>()[0], 1);

  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBytes(Shape(DType::Int32, {3}), raw); }, {"bytes"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBytes(Shape(DType::Int32, {1}), raw); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBytes(Shape(DType::Int4, {8}), raw); }));  // Needs 4 bytes.
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBytes(Shape(DType::Int32, {}), {}); }));
  Tensor empty = Tensor::FromBytes(Shape(DType::Float64, {0, 4}), {});
  EXPECT_EQ(empty.Size(), 0);
  EXPECT_TRUE(empty.Ok());
}

TEST(TensorTest, FromBytesNormalisesBool) {
  const std::vector<uint8_t> raw = {0, 1, 2, 255, 0x80, 0};
  Tensor t = Tensor::FromBytes(Shape(DType::Bool, {6}), raw);
  EXPECT_EQ(BytesOf(t), (std::vector<uint8_t>{0, 1, 1, 1, 1, 0}));
  EXPECT_EQ(t.ToVector<bool>(), (std::vector<bool>{false, true, true, true, true, false}));
  EXPECT_TRUE(t.Equal(Tensor::FromValue(std::vector<bool>{false, true, true, true, true, false})));
}

TEST(TensorTest, MutableBytesKeepsBoolCanonical) {
  Tensor t = Tensor::FromShape(Shape(DType::Bool, {3}));
  t.MutableBytes([](std::span<uint8_t> b) {
    b[0] = 7;
    b[2] = 1;
  });
  EXPECT_EQ(BytesOf(t), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(t.ToVector<bool>(), (std::vector<bool>{true, false, true}));
}

TEST(TensorTest, ToVectorAndItem) {
  Tensor t = Tensor::FromValue(std::vector<std::vector<int16_t>>{{1, -2, 3}, {4, 5, -6}});
  EXPECT_EQ(t.ToVector<int16_t>(), (std::vector<int16_t>{1, -2, 3, 4, 5, -6}));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.ToVector<int32_t>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.Item<int16_t>(); }, {"1"}));

  EXPECT_EQ(Tensor::FromValue(std::vector<double>{2.5}).Item<double>(), 2.5);
  EXPECT_EQ(Tensor::FromValue(std::vector<std::vector<uint32_t>>{{7}}).Item<uint32_t>(), 7u);
  EXPECT_EQ(Tensor::FromScalar(int8_t{-8}).Item<int8_t>(), -8);
  EXPECT_TRUE(ThrowsKilnError([] { (void)Tensor::FromValue(std::vector<float>{}).Item<float>(); }));
  EXPECT_TRUE(ThrowsKilnError([] { (void)Tensor::FromScalar(1.0f).Item<double>(); }));
}

TEST(TensorTest, FlatDataRejectsPackedAndWrongDType) {
  Tensor p = Tensor::FromShape(Shape(DType::Int4, {8}));
  EXPECT_TRUE(
      ThrowsKilnError([&] { p.ConstFlatData<int8_t>([](std::span<const int8_t>) {}); }, {"storage-only"}));
  EXPECT_TRUE(ThrowsKilnError([&] { p.ConstFlatData<uint8_t>([](std::span<const uint8_t>) {}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { p.MutableFlatData<int8_t>([](std::span<int8_t>) {}); }));
  // The 8-bit floats have no C++ element type either; their values read as doubles.
  Tensor f8 = Tensor::FromBytes(Shape(DType::Float8E4M3FN, {3}), std::vector<uint8_t>{0x38, 0xC0, 0x7F});
  EXPECT_TRUE(
      ThrowsKilnError([&] { f8.ConstFlatData<uint8_t>([](std::span<const uint8_t>) {}); }, {"storage-only"}));
  const std::vector<double> v = f8.ToDoubles();
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[1], -2.0);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(f8.ToString(), "[3]float8e4m3fn{1, -2, NaN}");
  EXPECT_TRUE(ThrowsKilnError([&] { (void)p.ToVector<uint8_t>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)p.Value<std::vector<int8_t>>(); }));
  Tensor u = Tensor::FromShape(Shape(DType::Uint2, {4}));
  EXPECT_TRUE(ThrowsKilnError([&] { u.ConstFlatData<uint8_t>([](std::span<const uint8_t>) {}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)u.Item<uint8_t>(); }));

  Tensor f = Tensor::FromValue(std::vector<float>{1, 2});
  bool called = false;
  EXPECT_TRUE(
      ThrowsKilnError([&] { f.ConstFlatData<int32_t>([&](std::span<const int32_t>) { called = true; }); }));
  EXPECT_TRUE(
      ThrowsKilnError([&] { f.MutableFlatData<uint32_t>([&](std::span<uint32_t>) { called = true; }); }));
  EXPECT_FALSE(called);
}

TEST(TensorTest, PackedBytes) {
  // Int4: 8 values in 4 bytes; element i at bits (i % 2) * 4 of byte i / 2.
  const std::vector<uint8_t> raw = {0x10, 0x32, 0x54, 0xF7};
  Tensor t = Tensor::FromBytes(Shape(DType::Int4, {8}), raw);
  EXPECT_EQ(t.shape().ByteSize(), 4);
  std::vector<uint8_t> seen;
  t.ConstBytes([&](std::span<const uint8_t> b) { seen.assign(b.begin(), b.end()); });
  EXPECT_EQ(seen, raw);
  t.MutableBytes([](std::span<uint8_t> b) {
    ASSERT_EQ(b.size(), 4u);
    b[3] = 0x9A;
  });
  EXPECT_EQ(BytesOf(t), (std::vector<uint8_t>{0x10, 0x32, 0x54, 0x9A}));

  // Uint2: 5 values in 2 bytes.
  Tensor u = Tensor::FromShape(Shape(DType::Uint2, {5}));
  u.MutableBytes([](std::span<uint8_t> b) {
    ASSERT_EQ(b.size(), 2u);
    b[0] = 0xE4;  // Values 0, 1, 2, 3.
    b[1] = 0x02;  // Value 2.
  });
  EXPECT_EQ(BytesOf(u), (std::vector<uint8_t>{0xE4, 0x02}));
  Tensor reshaped = u.Reshape({5, 1});
  EXPECT_EQ(BytesOf(reshaped), (std::vector<uint8_t>{0xE4, 0x02}));
  Tensor clone = u.Clone();
  EXPECT_TRUE(clone.Equal(u));
  EXPECT_EQ(clone.dtype(), DType::Uint2);
}

TEST(TensorTest, ConstBytesOfOrdinaryTypes) {
  Tensor t = Tensor::FromValue(std::vector<uint16_t>{0x0102, 0xA0B0});
  EXPECT_EQ(BytesOf(t), (std::vector<uint8_t>{0x02, 0x01, 0xB0, 0xA0}));  // Little-endian.
  t.MutableBytes([](std::span<uint8_t> b) { b[3] = 0x0C; });
  EXPECT_EQ(t.ToVector<uint16_t>(), (std::vector<uint16_t>{0x0102, 0x0CB0}));
  Tensor h = Tensor::FromValue(std::vector<float16>{float16(1.0f), float16(-2.0f)});
  EXPECT_EQ(BytesOf(h), (std::vector<uint8_t>{0x00, 0x3C, 0x00, 0xC0}));
  Tensor b = Tensor::FromValue(std::vector<bfloat16>{bfloat16(1.0f), bfloat16(-2.0f)});
  EXPECT_EQ(BytesOf(b), (std::vector<uint8_t>{0x80, 0x3F, 0x00, 0xC0}));
}

TEST(TensorTest, ReshapeSharesData) {
  Tensor t = Tensor::FromValue(std::vector<std::vector<int32_t>>{{1, 2, 3}, {4, 5, 6}});
  Tensor r = t.Reshape({3, 2});
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {3, 2}));
  EXPECT_EQ(r.Value<std::vector<std::vector<int32_t>>>(),
            (std::vector<std::vector<int32_t>>{{1, 2}, {3, 4}, {5, 6}}));
  EXPECT_EQ(t.shape(), Shape(DType::Int32, {2, 3}));  // The original keeps its shape.

  r.MutableFlatData<int32_t>([](std::span<int32_t> f) { f[5] = 60; });
  EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 60}));
  t.MutableFlatData<int32_t>([](std::span<int32_t> f) { f[0] = 10; });
  EXPECT_EQ(r.ToVector<int32_t>()[0], 10);

  EXPECT_EQ(t.Reshape({-1}).shape(), Shape(DType::Int32, {6}));
  EXPECT_EQ(t.Reshape({-1, 3}).shape(), Shape(DType::Int32, {2, 3}));
  EXPECT_EQ(t.Reshape({2, -1, 1}).shape(), Shape(DType::Int32, {2, 3, 1}));
  EXPECT_EQ(t.Reshape({1, 6, 1, 1}).shape(), Shape(DType::Int32, {1, 6, 1, 1}));
  EXPECT_TRUE(ThrowsKilnError([&] { t.Reshape({-1, -1}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.Reshape({4}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.Reshape({7}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.Reshape({-1, 4}); }));  // 6 is not a multiple of 4.
  EXPECT_TRUE(ThrowsKilnError([&] { t.Reshape({-2, -3}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.Reshape({}); }));

  Tensor one = Tensor::FromValue(std::vector<float>{5});
  Tensor scalar = one.Reshape({});
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.Item<float>(), 5.0f);
  Tensor empty = Tensor::FromShape(Shape(DType::Float32, {0, 3}));
  EXPECT_EQ(empty.Reshape({3, 0}).Size(), 0);
  EXPECT_EQ(empty.Reshape({-1, 3}).shape(), Shape(DType::Float32, {0, 3}));
}

TEST(TensorTest, CloneIsDeep) {
  Tensor t = Tensor::FromValue(std::vector<double>{1, 2, 3});
  Tensor c = t.Clone();
  EXPECT_TRUE(c.Equal(t));
  EXPECT_EQ(c.shape(), t.shape());
  c.MutableFlatData<double>([](std::span<double> f) { f[0] = 100; });
  EXPECT_EQ(t.ToVector<double>(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(c.ToVector<double>(), (std::vector<double>{100, 2, 3}));
  t.MutableFlatData<double>([](std::span<double> f) { f[2] = -3; });
  EXPECT_EQ(c.ToVector<double>()[2], 3.0);
  // The clone survives the original's finalization.
  t.FinalizeAll();
  EXPECT_TRUE(c.Ok());
  EXPECT_EQ(c.ToVector<double>(), (std::vector<double>{100, 2, 3}));
  // Clone of a reshape has the reshape's shape.
  Tensor m = Tensor::FromValue(std::vector<int8_t>{1, 2, 3, 4}).Reshape({2, 2}).Clone();
  EXPECT_EQ(m.shape(), Shape(DType::Int8, {2, 2}));
}

TEST(TensorTest, Equal) {
  Tensor a = Tensor::FromValue(std::vector<std::vector<int32_t>>{{1, 2, 3}, {4, 5, 6}});
  Tensor b = Tensor::FromValue(std::vector<std::vector<int32_t>>{{1, 2, 3}, {4, 5, 6}});
  Tensor c = Tensor::FromValue(std::vector<std::vector<int32_t>>{{1, 2, 3}, {4, 5, 7}});
  EXPECT_TRUE(a.Equal(b));
  EXPECT_TRUE(b.Equal(a));
  EXPECT_TRUE(a.Equal(a));
  EXPECT_FALSE(a.Equal(c));
  EXPECT_FALSE(a.Equal(a.Reshape({3, 2})));  // Same bytes, other shape.
  EXPECT_FALSE(a.Equal(a.Reshape({6})));
  // Same bytes, other dtype.
  Tensor zi = Tensor::FromShape(Shape(DType::Int32, {2}));
  Tensor zf = Tensor::FromShape(Shape(DType::Float32, {2}));
  EXPECT_FALSE(zi.Equal(zf));
  // Bitwise: NaNs with the same bits are equal, +0 and -0 are not.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(
      Tensor::FromValue(std::vector<float>{nan, 1}).Equal(Tensor::FromValue(std::vector<float>{nan, 1})));
  EXPECT_FALSE(Tensor::FromScalar(0.0f).Equal(Tensor::FromScalar(-0.0f)));
  // Empty tensors of one shape are equal.
  EXPECT_TRUE(Tensor::FromShape(Shape(DType::Int8, {0})).Equal(Tensor::FromValue(std::vector<int8_t>{})));
}

}  // namespace
}  // namespace kiln
