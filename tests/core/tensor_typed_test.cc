// Typed tests of kiln::Tensor over every C++ element type: creation from nested values, scalars,
// shapes and flat data, the dtype each type maps to, and reading values and bytes back.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <span>
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

}  // namespace
}  // namespace kiln
