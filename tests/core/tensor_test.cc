// Tests of kiln::Tensor: creation, reading and writing, reshape, clone, equality, finalization and
// locking. Printing, serialization and devices have their own files.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/tensor_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using kiln::testing::BytesOf;
using kiln::testing::BytesOfValues;
using kiln::testing::SameElement;
using kiln::testing::SameFlat;
using kiln::testing::ThrowsKilnError;

// ---- Typed tests over every C++ element type ------------------------------------------------------

// A C++ element type and the dtype the test expects for it (written out, not taken from DTypeOf).
template <typename T, DType D>
struct Case {
  using type = T;
  static constexpr DType dtype = D;
};

using AllCases =
    ::testing::Types<Case<bool, DType::Bool>, Case<int8_t, DType::Int8>, Case<int16_t, DType::Int16>,
                     Case<int32_t, DType::Int32>, Case<int64_t, DType::Int64>, Case<uint8_t, DType::Uint8>,
                     Case<uint16_t, DType::Uint16>, Case<uint32_t, DType::Uint32>,
                     Case<uint64_t, DType::Uint64>, Case<long, DType::Int64>,            // NOLINT
                     Case<long long, DType::Int64>, Case<unsigned long, DType::Uint64>,  // NOLINT
                     Case<unsigned long long, DType::Uint64>, Case<float, DType::Float32>,
                     Case<double, DType::Float64>, Case<float16, DType::Float16>,
                     Case<bfloat16, DType::BFloat16>>;

static_assert(sizeof(long) == 8, "these tests assume LP64 (long is 64 bits)");  // NOLINT

// The i-th test value of type T: small enough for every type, exact in float16 and bfloat16.
template <typename T>
T Val(int i) {
  if constexpr (std::is_same_v<T, bool>) {
    return i % 3 != 0;
  } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return T(static_cast<float>(i) * 0.5f - 3.0f);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(i) * static_cast<T>(0.5) - static_cast<T>(3.25);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(i % 2 ? -i : i);
  } else {
    return static_cast<T>(i * 3 + 1);
  }
}

template <typename T>
std::vector<T> Vals(int n, int first = 0) {
  std::vector<T> v;
  for (int i = 0; i < n; ++i) v.push_back(Val<T>(first + i));
  return v;
}

// Extreme values of T, for the round trips.
template <typename T>
std::vector<T> Extremes() {
  if constexpr (std::is_same_v<T, bool>) {
    return {true, false};
  } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return {T::FromBits(0x7BFF), T::FromBits(0x0001), T::FromBits(0x8000),
            T::FromBits(0x7C00), T::FromBits(0xFC00), T::FromBits(0x3C00)};
  } else {
    std::vector<T> v = {std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max(), T{0}};
    if constexpr (std::is_floating_point_v<T>) {
      v.push_back(std::numeric_limits<T>::denorm_min());
      v.push_back(-T{0});
      v.push_back(std::numeric_limits<T>::infinity());
    }
    return v;
  }
}

template <typename T>
using V1 = std::vector<T>;
template <typename T>
using V2 = std::vector<V1<T>>;
template <typename T>
using V3 = std::vector<V2<T>>;
template <typename T>
using V4 = std::vector<V3<T>>;

// The test's own flattening and dimension finding, to compare nested values.
template <typename T>
void FlattenInto(const T& v, std::vector<T>& out) {
  out.push_back(v);
}
inline void FlattenInto(const std::vector<bool>& v, std::vector<bool>& out) {
  for (bool b : v) out.push_back(b);
}
template <typename T, typename E>
void FlattenInto(const std::vector<T>& v, std::vector<E>& out) {
  for (const T& x : v) FlattenInto(x, out);
}
template <typename E, typename V>
std::vector<E> FlatOf(const V& v) {
  std::vector<E> out;
  FlattenInto(v, out);
  return out;
}

template <typename T>
class TensorTypedTest : public ::testing::Test {};
TYPED_TEST_SUITE(TensorTypedTest, AllCases);

TYPED_TEST(TensorTypedTest, FromValueScalar) {
  using T = typename TypeParam::type;
  const T value = Val<T>(5);
  Tensor t = Tensor::FromValue(value);
  EXPECT_TRUE(t.Ok());
  EXPECT_TRUE(t.HasLocal());
  EXPECT_EQ(t.dtype(), TypeParam::dtype);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.Size(), 1);
  EXPECT_TRUE(SameElement(t.template Item<T>(), value));
  EXPECT_TRUE(SameElement(t.template Value<T>(), value));
  EXPECT_EQ(BytesOf(t), BytesOfValues(std::vector<T>{value}));
}

TYPED_TEST(TensorTypedTest, FromValueVector) {
  using T = typename TypeParam::type;
  const std::vector<T> values = Vals<T>(7);
  Tensor t = Tensor::FromValue(values);
  EXPECT_EQ(t.shape(), Shape(TypeParam::dtype, {7}));
  EXPECT_TRUE(SameFlat(t.template ToVector<T>(), values));
  EXPECT_TRUE(SameFlat(t.template Value<std::vector<T>>(), values));
  EXPECT_EQ(BytesOf(t), BytesOfValues(values));

  const std::vector<T> extremes = Extremes<T>();
  Tensor e = Tensor::FromValue(extremes);
  EXPECT_EQ(e.Size(), static_cast<int64_t>(extremes.size()));
  EXPECT_TRUE(SameFlat(e.template ToVector<T>(), extremes));
  EXPECT_EQ(BytesOf(e), BytesOfValues(extremes));
}

TYPED_TEST(TensorTypedTest, FromValueRank2) {
  using T = typename TypeParam::type;
  V2<T> v(2);
  int n = 0;
  for (auto& row : v)
    for (int j = 0; j < 3; ++j) row.push_back(Val<T>(n++));
  Tensor t = Tensor::FromValue(v);
  EXPECT_EQ(t.shape(), Shape(TypeParam::dtype, {2, 3}));
  const std::vector<T> flat = Vals<T>(6);
  EXPECT_TRUE(SameFlat(t.template ToVector<T>(), flat));
  EXPECT_EQ(BytesOf(t), BytesOfValues(flat));
  const V2<T> back = t.template Value<V2<T>>();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].size(), 3u);
  EXPECT_EQ(back[1].size(), 3u);
  EXPECT_TRUE(SameFlat(FlatOf<T>(back), flat));
  // Row-major: element [1][0] is the 4th value.
  EXPECT_TRUE(SameElement<T>(back[1][0], Val<T>(3)));
}

TYPED_TEST(TensorTypedTest, FromValueRank3) {
  using T = typename TypeParam::type;
  V3<T> v(2, V2<T>(3));
  int n = 0;
  for (auto& a : v)
    for (auto& b : a)
      for (int k = 0; k < 4; ++k) b.push_back(Val<T>(n++));
  Tensor t = Tensor::FromValue(v);
  EXPECT_EQ(t.shape(), Shape(TypeParam::dtype, {2, 3, 4}));
  const std::vector<T> flat = Vals<T>(24);
  EXPECT_TRUE(SameFlat(t.template ToVector<T>(), flat));
  EXPECT_EQ(BytesOf(t), BytesOfValues(flat));
  const V3<T> back = t.template Value<V3<T>>();
  ASSERT_EQ(back.size(), 2u);
  ASSERT_EQ(back[1].size(), 3u);
  ASSERT_EQ(back[1][2].size(), 4u);
  EXPECT_TRUE(SameElement<T>(back[1][2][3], Val<T>(23)));
  EXPECT_TRUE(SameElement<T>(back[1][0][1], Val<T>(13)));
  EXPECT_TRUE(SameFlat(FlatOf<T>(back), flat));
}

TYPED_TEST(TensorTypedTest, FromValueRank4) {
  using T = typename TypeParam::type;
  V4<T> v(2, V3<T>(1, V2<T>(3)));
  int n = 0;
  for (auto& a : v)
    for (auto& b : a)
      for (auto& c : b)
        for (int k = 0; k < 2; ++k) c.push_back(Val<T>(n++));
  Tensor t = Tensor::FromValue(v);
  EXPECT_EQ(t.shape(), Shape(TypeParam::dtype, {2, 1, 3, 2}));
  const std::vector<T> flat = Vals<T>(12);
  EXPECT_TRUE(SameFlat(t.template ToVector<T>(), flat));
  EXPECT_EQ(BytesOf(t), BytesOfValues(flat));
  const V4<T> back = t.template Value<V4<T>>();
  ASSERT_EQ(back.size(), 2u);
  ASSERT_EQ(back[1].size(), 1u);
  ASSERT_EQ(back[1][0].size(), 3u);
  ASSERT_EQ(back[1][0][2].size(), 2u);
  EXPECT_TRUE(SameElement<T>(back[1][0][2][1], Val<T>(11)));
  EXPECT_TRUE(SameFlat(FlatOf<T>(back), flat));
}

TYPED_TEST(TensorTypedTest, FromValueEmpty) {
  using T = typename TypeParam::type;
  Tensor a = Tensor::FromValue(V1<T>{});
  EXPECT_EQ(a.shape(), Shape(TypeParam::dtype, {0}));
  EXPECT_EQ(a.Size(), 0);
  EXPECT_TRUE(a.Ok());
  EXPECT_TRUE(a.template ToVector<T>().empty());
  EXPECT_TRUE(a.template Value<V1<T>>().empty());
  EXPECT_TRUE(BytesOf(a).empty());

  Tensor b = Tensor::FromValue(V2<T>{});
  EXPECT_EQ(b.shape(), Shape(TypeParam::dtype, {0, 0}));
  Tensor c = Tensor::FromValue(V2<T>(3));
  EXPECT_EQ(c.shape(), Shape(TypeParam::dtype, {3, 0}));
  const V2<T> back = c.template Value<V2<T>>();
  ASSERT_EQ(back.size(), 3u);
  for (const auto& row : back) EXPECT_TRUE(row.empty());
  Tensor d = Tensor::FromValue(V3<T>(2, V2<T>(0)));
  EXPECT_EQ(d.shape(), Shape(TypeParam::dtype, {2, 0, 0}));
}

TYPED_TEST(TensorTypedTest, FromValueIrregular) {
  using T = typename TypeParam::type;
  const T x = Val<T>(1);
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromValue(V2<T>{{x, x}, {x}}); }, {"irregular"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromValue(V2<T>{{x}, {x, x}}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromValue(V2<T>{{}, {x}}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromValue(V2<T>{{x}, {}}); }));
  // Level 1 of a rank-3 value.
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromValue(V3<T>{{{x}}, {{x}, {x}}}); }));
  // Level 2 of a rank-3 value.
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromValue(V3<T>{{{x, x}, {x, x}}, {{x, x}, {x}}}); }));
  // Level 3 of a rank-4 value (the last leaf).
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromValue(V4<T>{{{{x, x}}}, {{{x, x, x}}}}); }));
  // Level 1 of a rank-4 value.
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromValue(V4<T>{{{{x}}}, {}}); }));
}

TYPED_TEST(TensorTypedTest, FromShapeIsZeros) {
  using T = typename TypeParam::type;
  Tensor t = Tensor::FromShape(Shape(TypeParam::dtype, {3, 5}));
  EXPECT_TRUE(t.Ok());
  EXPECT_TRUE(t.HasLocal());
  EXPECT_EQ(t.Size(), 15);
  const std::vector<uint8_t> bytes = BytesOf(t);
  ASSERT_EQ(bytes.size(), 15 * (TypeParam::dtype == DType::Bool ? 1 : sizeof(T)));
  for (uint8_t b : bytes) EXPECT_EQ(b, 0);
  EXPECT_TRUE(SameFlat(t.template ToVector<T>(), std::vector<T>(15, T{})));
}

TYPED_TEST(TensorTypedTest, FromScalar) {
  using T = typename TypeParam::type;
  const T value = Val<T>(4);
  Tensor t = Tensor::FromScalar(value);
  EXPECT_EQ(t.shape(), Shape(TypeParam::dtype));
  EXPECT_TRUE(SameElement(t.template Item<T>(), value));
}

TYPED_TEST(TensorTypedTest, FromScalarAndDimensions) {
  using T = typename TypeParam::type;
  const T value = Val<T>(7);
  Tensor t = Tensor::FromScalarAndDimensions(value, {2, 3});
  EXPECT_EQ(t.shape(), Shape(TypeParam::dtype, {2, 3}));
  EXPECT_TRUE(SameFlat(t.template ToVector<T>(), std::vector<T>(6, value)));
  Tensor s = Tensor::FromScalarAndDimensions(value, {});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_TRUE(SameElement(s.template Item<T>(), value));
  Tensor e = Tensor::FromScalarAndDimensions(value, {4, 0});
  EXPECT_EQ(e.Size(), 0);
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromScalarAndDimensions(value, {2, -3}); }));
}

TYPED_TEST(TensorTypedTest, FromFlat) {
  using T = typename TypeParam::type;
  const std::vector<T> values = Vals<T>(6);
  const Shape shape(TypeParam::dtype, {3, 2});
  Tensor a = Tensor::FromFlat(shape, values);  // std::vector (vector<bool> for bool).
  EXPECT_EQ(a.shape(), shape);
  EXPECT_TRUE(SameFlat(a.template ToVector<T>(), values));
  EXPECT_EQ(BytesOf(a), BytesOfValues(values));
  if constexpr (!std::is_same_v<T, bool>) {
    Tensor b = Tensor::FromFlat(shape, std::span<const T>(values));
    EXPECT_TRUE(SameFlat(b.template ToVector<T>(), values));
  } else {
    const bool raw[6] = {true, false, false, true, true, false};
    Tensor b = Tensor::FromFlat(shape, std::span<const bool>(raw, 6));
    EXPECT_EQ(b.ToVector<bool>(), std::vector<bool>({true, false, false, true, true, false}));
  }
  // Wrong number of values.
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(Shape(TypeParam::dtype, {4, 2}), values); }));
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(Shape(TypeParam::dtype, {5}), values); }));
  // Wrong dtype (same element count).
  const DType other = TypeParam::dtype == DType::Float32 ? DType::Float64 : DType::Float32;
  EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(Shape(other, {3, 2}), values); }));
  if constexpr (!std::is_same_v<T, bool>) {
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromFlat(Shape(other, {3, 2}), std::span<const T>(values)); }));
    EXPECT_TRUE(
        ThrowsKilnError([&] { Tensor::FromFlat(Shape(TypeParam::dtype, {7}), std::span<const T>(values)); }));
  }
}

TYPED_TEST(TensorTypedTest, ValueRejectsWrongRankOrDType) {
  using T = typename TypeParam::type;
  Tensor t = Tensor::FromValue(V2<T>{{Val<T>(1), Val<T>(2)}, {Val<T>(3), Val<T>(4)}});
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.template Value<T>(); }, {"rank"}));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.template Value<V1<T>>(); }, {"rank"}));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.template Value<V3<T>>(); }, {"rank"}));
  using Other = std::conditional_t<TypeParam::dtype == DType::Float32, double, float>;
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.template Value<V2<Other>>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.template ToVector<Other>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.template ConstFlatData<Other>([](std::span<const Other>) {}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.template MutableFlatData<Other>([](std::span<Other>) {}); }));
}

TYPED_TEST(TensorTypedTest, MutableFlatDataIsVisible) {
  using T = typename TypeParam::type;
  if constexpr (!std::is_same_v<T, bool>) {
    Tensor t = Tensor::FromShape(Shape(TypeParam::dtype, {4}));
    t.template MutableFlatData<T>([](std::span<T> flat) {
      ASSERT_EQ(flat.size(), 4u);
      for (size_t i = 0; i < flat.size(); ++i) flat[i] = Val<T>(static_cast<int>(i) + 10);
    });
    EXPECT_TRUE(SameFlat(t.template ToVector<T>(), Vals<T>(4, 10)));
    t.template ConstFlatData<T>([](std::span<const T> flat) {
      ASSERT_EQ(flat.size(), 4u);
      EXPECT_TRUE(SameElement<T>(flat[3], Val<T>(13)));
    });
  }
}

// ---- Non-typed tests -------------------------------------------------------------------------------

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
  EXPECT_TRUE(ThrowsKilnError([&] { p.ConstFlatData<int8_t>([](std::span<const int8_t>) {}); }, {"packed"}));
  EXPECT_TRUE(ThrowsKilnError([&] { p.ConstFlatData<uint8_t>([](std::span<const uint8_t>) {}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { p.MutableFlatData<int8_t>([](std::span<int8_t>) {}); }));
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

TEST(TensorTest, DefaultTensorIsNotOk) {
  Tensor t;
  EXPECT_FALSE(t.Ok());
  EXPECT_FALSE(t.HasLocal());
  EXPECT_FALSE(t.IsShared());
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.ToVector<float>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.ConstBytes([](std::span<const uint8_t>) {}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.MutableBytes([](std::span<uint8_t>) {}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.Reshape({}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.MaterializeLocal(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.Clone(); }));
  t.FinalizeAll();  // Harmless.
  EXPECT_FALSE(t.Ok());
}

TEST(TensorTest, FinalizeAll) {
  Tensor t = Tensor::FromValue(std::vector<std::vector<float>>{{1, 2}, {3, 4}});
  Tensor copy = t;
  Tensor reshaped = t.Reshape({4});
  Tensor clone = t.Clone();
  ASSERT_TRUE(copy.Ok() && reshaped.Ok());
  t.FinalizeAll();
  for (Tensor* x : {&t, &copy, &reshaped}) {
    EXPECT_FALSE(x->Ok());
    EXPECT_FALSE(x->HasLocal());
    EXPECT_FALSE(x->IsShared());
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->ToVector<float>(); }, {"finalized"}));
    EXPECT_TRUE(ThrowsKilnError([&] { x->ConstFlatData<float>([](std::span<const float>) {}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { x->MutableFlatData<float>([](std::span<float>) {}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { x->ConstBytes([](std::span<const uint8_t>) {}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { x->MutableBytes([](std::span<uint8_t>) {}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->Clone(); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->Reshape({2, 2}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { x->MaterializeLocal(); }));
    // Comparing needs the data when the shapes match.
    Tensor same_shape = clone.Reshape(x->shape().Dimensions());
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->Equal(same_shape); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)same_shape.Equal(*x); }));
  }
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.Value<std::vector<std::vector<float>>>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)reshaped.Value<std::vector<float>>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.Item<float>(); }));
  // The shape stays readable.
  EXPECT_EQ(t.shape(), Shape(DType::Float32, {2, 2}));
  EXPECT_EQ(reshaped.shape(), Shape(DType::Float32, {4}));
  // Twice is harmless, also through another handle.
  t.FinalizeAll();
  copy.FinalizeAll();
  reshaped.FinalizeAll();
  EXPECT_FALSE(t.Ok());
  // A clone is independent.
  EXPECT_TRUE(clone.Ok());
  EXPECT_EQ(clone.ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  // Finalizing a reshape finalizes the original.
  Tensor u = Tensor::FromScalarAndDimensions(int32_t{3}, {2, 2});
  Tensor v = u.Reshape({4});
  v.FinalizeAll();
  EXPECT_FALSE(u.Ok());
}

TEST(TensorTest, MaterializeLocalOnHostTensor) {
  Tensor t = Tensor::FromValue(std::vector<int32_t>{1, 2});
  t.MaterializeLocal();
  EXPECT_TRUE(t.HasLocal());
  EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{1, 2}));
}

TEST(TensorTest, RecursiveReadInsideCallback) {
  Tensor t = Tensor::FromValue(std::vector<float>{1, 2, 3});
  float total = 0;
  t.ConstFlatData<float>([&](std::span<const float> outer) {
    // Reading the same tensor again from the callback must not deadlock.
    const std::vector<float> again = t.ToVector<float>();
    t.ConstFlatData<float>([&](std::span<const float> inner) { total = inner[2] + again[1] + outer[0]; });
    EXPECT_EQ(t.ToString().empty(), false);
    EXPECT_TRUE(t.Equal(t));
  });
  EXPECT_EQ(total, 6.0f);
  // And from a write callback, through a reshape of the same storage.
  Tensor r = t.Reshape({3, 1});
  t.MutableFlatData<float>([&](std::span<float> f) { f[0] = r.ToVector<float>()[2] * 10; });
  EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{30, 2, 3}));
}

TEST(TensorTest, ConcurrentMutationsAreSerialised) {
  Tensor t = Tensor::FromScalar(int64_t{0});
  constexpr int kIterations = 10000;
  auto work = [&t] {
    for (int i = 0; i < kIterations; ++i) {
      t.MutableFlatData<int64_t>([](std::span<int64_t> f) {
        const int64_t v = f[0];
        f[0] = v + 1;
      });
    }
  };
  std::thread a(work);
  std::thread b(work);
  a.join();
  b.join();
  EXPECT_EQ(t.Item<int64_t>(), 2 * kIterations);
}

TEST(TensorTest, WriterWaitsForReader) {
  Tensor t = Tensor::FromScalar(int32_t{1});
  std::atomic<bool> reading{false};
  std::atomic<bool> writer_started{false};
  int32_t seen_after_wait = 0;
  std::thread reader([&] {
    t.ConstFlatData<int32_t>([&](std::span<const int32_t> f) {
      reading = true;
      while (!writer_started) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      seen_after_wait = f[0];  // The writer must still be blocked.
    });
  });
  while (!reading) std::this_thread::yield();
  std::thread writer([&] {
    writer_started = true;
    t.MutableFlatData<int32_t>([](std::span<int32_t> f) { f[0] = 2; });
  });
  reader.join();
  writer.join();
  EXPECT_EQ(seen_after_wait, 1);
  EXPECT_EQ(t.Item<int32_t>(), 2);
}

// a.Equal(b) and b.Equal(a) at the same time must not deadlock (each locks both tensors). The
// threads are detached and their state leaked so that a deadlock fails the test instead of
// hanging the binary.
TEST(TensorTest, ConcurrentEqualInOppositeOrderDoesNotDeadlock) {
  struct State {
    Tensor a = Tensor::FromValue(std::vector<float>{1, 2, 3});
    Tensor b = Tensor::FromValue(std::vector<float>{1, 2, 3});
    std::atomic<int> ready{0};
    std::atomic<int> done{0};
  };
  auto state = std::make_shared<State>();
  constexpr int kIterations = 200000;
  auto compare = [](std::shared_ptr<State> s, bool forward) {
    ++s->ready;
    while (s->ready < 2) std::this_thread::yield();  // Start together so the loops overlap.
    for (int i = 0; i < kIterations; ++i) (void)(forward ? s->a.Equal(s->b) : s->b.Equal(s->a));
    ++s->done;
  };
  std::thread(compare, state, true).detach();
  std::thread(compare, state, false).detach();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (state->done < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(state->done.load(), 2) << "a.Equal(b) and b.Equal(a) in two threads deadlocked";
}

TEST(TensorTest, ExceptionInsideCallbackReleasesTheLock) {
  Tensor t = Tensor::FromValue(std::vector<int32_t>{1, 2});
  EXPECT_THROW(t.ConstFlatData<int32_t>([](std::span<const int32_t>) { throw std::runtime_error("boom"); }),
               std::runtime_error);
  // Another thread can still take the lock.
  std::thread other([&] { t.MutableFlatData<int32_t>([](std::span<int32_t> f) { f[0] = 5; }); });
  other.join();
  EXPECT_EQ(t.ToVector<int32_t>()[0], 5);
}

}  // namespace
}  // namespace kiln
