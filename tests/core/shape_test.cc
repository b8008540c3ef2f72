// Tests for kiln::Shape: construction, dimensions, sizes, dynamic axes, equality, hashing,
// assertions and printing.

#include "kiln/core/shape.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/core/error.h"

namespace {

using kiln::DType;
using kiln::Shape;

// Returns the message of the kiln::Error `fn` throws (fails the test if it throws none).
template <typename Fn>
std::string ErrorMessage(Fn&& fn) {
  try {
    fn();
  } catch (const kiln::Error& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

std::string Streamed(const Shape& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

TEST(ShapeTest, DefaultIsInvalid) {
  const Shape s;
  EXPECT_FALSE(s.Ok());
  EXPECT_EQ(s.dtype(), DType::Invalid);
  EXPECT_EQ(s.Rank(), 0);
  EXPECT_TRUE(s.Dimensions().empty());
  EXPECT_EQ(s, Shape());
  EXPECT_NE(s, Shape(DType::Float32));
}

TEST(ShapeTest, Scalar) {
  const Shape s(DType::Float64);
  EXPECT_TRUE(s.Ok());
  EXPECT_EQ(s.dtype(), DType::Float64);
  EXPECT_EQ(s.Rank(), 0);
  EXPECT_TRUE(s.IsScalar());
  EXPECT_TRUE(s.Dimensions().empty());
  EXPECT_EQ(s.Size(), 1);
  EXPECT_EQ(s.ByteSize(), 8);
  EXPECT_FALSE(s.IsDynamic());
  EXPECT_EQ(s.ToString(), "(Float64)");
  EXPECT_EQ(Shape(DType::Int4).ByteSize(), 1);
  EXPECT_EQ(Shape(DType::Bool).ByteSize(), 1);
  EXPECT_EQ(Shape(DType::Int32, {}), Shape(DType::Int32));
  EXPECT_NE(Shape(DType::Int32, {1}), Shape(DType::Int32));
}

TEST(ShapeTest, DimensionsAndRank) {
  const Shape s(DType::Float32, {2, 3});
  EXPECT_TRUE(s.Ok());
  EXPECT_FALSE(s.IsScalar());
  EXPECT_EQ(s.Rank(), 2);
  EXPECT_EQ(s.Dimensions(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s.Dim(0), 2);
  EXPECT_EQ(s.Dim(1), 3);
  EXPECT_EQ(s.Dim(-1), 3);
  EXPECT_EQ(s.Dim(-2), 2);
  EXPECT_EQ(s.Size(), 6);
  EXPECT_EQ(s.ByteSize(), 24);
  EXPECT_FALSE(s.IsDynamic());

  const Shape r4(DType::Int16, {5, 1, 7, 2});
  EXPECT_EQ(r4.Rank(), 4);
  EXPECT_EQ(r4.Dim(2), 7);
  EXPECT_EQ(r4.Dim(-3), 1);
  EXPECT_EQ(r4.Dim(-4), 5);
  EXPECT_EQ(r4.Size(), 70);
  EXPECT_EQ(r4.ByteSize(), 140);
}

TEST(ShapeTest, DimOutOfRangeThrows) {
  const Shape s(DType::Float32, {2, 3});
  EXPECT_THROW(s.Dim(2), kiln::Error);
  EXPECT_THROW(s.Dim(3), kiln::Error);
  EXPECT_THROW(s.Dim(-3), kiln::Error);
  EXPECT_THROW(s.Dim(1000), kiln::Error);
  EXPECT_THROW(s.Dim(-1000), kiln::Error);
  const Shape scalar(DType::Float32);
  EXPECT_THROW(scalar.Dim(0), kiln::Error);
  EXPECT_THROW(scalar.Dim(-1), kiln::Error);
}

TEST(ShapeTest, NegativeDimensionsOtherThanDynamicThrow) {
  EXPECT_THROW(Shape(DType::Float32, {2, -2}), kiln::Error);
  EXPECT_THROW(Shape(DType::Float32, {-5}), kiln::Error);
  EXPECT_THROW(Shape(DType::Int8, {3, 4, INT64_MIN}), kiln::Error);
  EXPECT_NO_THROW(Shape(DType::Float32, {Shape::kDynamic, 3}));
  EXPECT_EQ(Shape::kDynamic, -1);
}

TEST(ShapeTest, ZeroSizedDimensions) {
  const Shape s(DType::Float32, {2, 0, 3});
  EXPECT_EQ(s.Rank(), 3);
  EXPECT_EQ(s.Size(), 0);
  EXPECT_EQ(s.ByteSize(), 0);
  EXPECT_FALSE(s.IsDynamic());
  EXPECT_EQ(Shape(DType::Bool, {0}).Size(), 0);
  EXPECT_EQ(Shape(DType::Int4, {0}).ByteSize(), 0);
}

TEST(ShapeTest, ByteSizeRoundsPackedTypesUp) {
  EXPECT_EQ(Shape(DType::Int4, {8}).ByteSize(), 4);
  EXPECT_EQ(Shape(DType::Int4, {3}).ByteSize(), 2);
  EXPECT_EQ(Shape(DType::Uint4, {1}).ByteSize(), 1);
  EXPECT_EQ(Shape(DType::Uint2, {5}).ByteSize(), 2);
  EXPECT_EQ(Shape(DType::Int2, {4}).ByteSize(), 1);
  EXPECT_EQ(Shape(DType::Bool, {3}).ByteSize(), 3);
  EXPECT_EQ(Shape(DType::BFloat16, {3}).ByteSize(), 6);
  // Packing runs over the flat element index: 9 Int4 take 5 bytes.
  EXPECT_EQ(Shape(DType::Int4, {3, 3}).Size(), 9);
  EXPECT_EQ(Shape(DType::Int4, {3, 3}).ByteSize(), 5);
  EXPECT_EQ(Shape(DType::Int4, {2, 3}).ByteSize(), 3);
}

TEST(ShapeTest, LargeSizesUseInt64) {
  const Shape s(DType::Float32, {int64_t{1} << 20, int64_t{1} << 20});
  EXPECT_EQ(s.Size(), int64_t{1} << 40);
  EXPECT_EQ(s.ByteSize(), int64_t{1} << 42);
}

TEST(ShapeTest, DynamicShapes) {
  const Shape s(DType::Float32, {Shape::kDynamic, 3});
  EXPECT_TRUE(s.Ok());
  EXPECT_TRUE(s.IsDynamic());
  EXPECT_EQ(s.Rank(), 2);
  EXPECT_EQ(s.Dim(0), Shape::kDynamic);
  EXPECT_EQ(s.Dim(1), 3);
  EXPECT_EQ(s.AxisName(0), "");
  EXPECT_EQ(s.AxisName(1), "");
  EXPECT_THROW(s.Size(), kiln::Error);
  EXPECT_THROW(s.ByteSize(), kiln::Error);
  EXPECT_EQ(s.ToString(), "(Float32)[?, 3]");
  // A dynamic axis of a packed type.
  EXPECT_THROW(Shape(DType::Int4, {4, Shape::kDynamic}).ByteSize(), kiln::Error);
}

TEST(ShapeTest, MakeDynamicNamesAxes) {
  const Shape s = Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""});
  EXPECT_TRUE(s.Ok());
  EXPECT_TRUE(s.IsDynamic());
  EXPECT_EQ(s.dtype(), DType::Float32);
  EXPECT_EQ(s.Dimensions(), (std::vector<int64_t>{Shape::kDynamic, 3}));
  EXPECT_EQ(s.AxisName(0), "batch");
  EXPECT_EQ(s.AxisName(1), "");
  EXPECT_EQ(s.ToString(), "(Float32)[batch, 3]");
  EXPECT_THROW(s.Size(), kiln::Error);

  const Shape two =
      Shape::MakeDynamic(DType::Int32, {Shape::kDynamic, Shape::kDynamic, 4}, {"batch", "", ""});
  EXPECT_EQ(two.AxisName(0), "batch");
  EXPECT_EQ(two.AxisName(1), "");
  EXPECT_EQ(two.AxisName(2), "");
  EXPECT_EQ(two.ToString(), "(Int32)[batch, ?, 4]");

  const Shape both =
      Shape::MakeDynamic(DType::Float16, {Shape::kDynamic, 8, Shape::kDynamic}, {"b", "", "seq"});
  EXPECT_EQ(both.AxisName(2), "seq");
  EXPECT_EQ(both.ToString(), "(Float16)[b, 8, seq]");

  // No names at all.
  const Shape unnamed = Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {});
  EXPECT_TRUE(unnamed.IsDynamic());
  EXPECT_EQ(unnamed.AxisName(0), "");
  EXPECT_EQ(unnamed.ToString(), "(Float32)[?, 3]");
  EXPECT_EQ(unnamed, Shape(DType::Float32, {Shape::kDynamic, 3}));

  // Static dims through MakeDynamic equal the plain shape.
  EXPECT_EQ(Shape::MakeDynamic(DType::Float32, {2, 3}, {}), Shape(DType::Float32, {2, 3}));
}

TEST(ShapeTest, MakeDynamicRejectsBadNames) {
  // A name on a static axis.
  EXPECT_THROW(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", "features"}), kiln::Error);
  EXPECT_THROW(Shape::MakeDynamic(DType::Float32, {2, 3}, {"x", ""}), kiln::Error);
  // Names of the wrong length.
  EXPECT_THROW(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch"}), kiln::Error);
  EXPECT_THROW(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", "", ""}), kiln::Error);
  EXPECT_THROW(Shape::MakeDynamic(DType::Float32, {}, {"batch"}), kiln::Error);
  // Bad dimensions.
  EXPECT_THROW(Shape::MakeDynamic(DType::Float32, {-2, 3}, {"", ""}), kiln::Error);
}

TEST(ShapeTest, WithDType) {
  const Shape s(DType::Float32, {2, 3});
  const Shape t = s.WithDType(DType::Int8);
  EXPECT_EQ(t, Shape(DType::Int8, {2, 3}));
  EXPECT_EQ(t.dtype(), DType::Int8);
  EXPECT_EQ(s.dtype(), DType::Float32) << "WithDType must not change the original";
  EXPECT_EQ(t.ByteSize(), 6);
  EXPECT_EQ(Shape(DType::Float32).WithDType(DType::Bool), Shape(DType::Bool));

  const Shape named = Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""});
  const Shape named64 = named.WithDType(DType::Float64);
  EXPECT_EQ(named64.dtype(), DType::Float64);
  EXPECT_EQ(named64.AxisName(0), "batch");
  EXPECT_EQ(named64.ToString(), "(Float64)[batch, 3]");
  EXPECT_EQ(named64, Shape::MakeDynamic(DType::Float64, {Shape::kDynamic, 3}, {"batch", ""}));
}

TEST(ShapeTest, EqualityCountsDTypeDimsAndNames) {
  const Shape a(DType::Float32, {2, 3});
  EXPECT_EQ(a, Shape(DType::Float32, {2, 3}));
  EXPECT_NE(a, Shape(DType::Float64, {2, 3}));
  EXPECT_NE(a, Shape(DType::Float32, {3, 2}));
  EXPECT_NE(a, Shape(DType::Float32, {2, 3, 1}));
  EXPECT_NE(a, Shape(DType::Float32, {6}));
  EXPECT_NE(a, Shape(DType::Float32, {Shape::kDynamic, 3}));

  const Shape batch = Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""});
  EXPECT_EQ(batch, Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""}));
  EXPECT_NE(batch, Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"seq", ""}));
  EXPECT_NE(batch, Shape(DType::Float32, {Shape::kDynamic, 3}));
  EXPECT_FALSE(batch == Shape(DType::Float32, {Shape::kDynamic, 3}));

  const Shape copy = batch;
  EXPECT_EQ(copy, batch);
}

TEST(ShapeTest, HashAgreesWithEquality) {
  const std::hash<Shape> hasher;
  EXPECT_EQ(hasher(Shape(DType::Float32, {2, 3})), hasher(Shape(DType::Float32, {2, 3})));
  EXPECT_EQ(Shape(DType::Int8, {4}).Hash(), Shape(DType::Int8, {4}).Hash());
  EXPECT_EQ(hasher(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic}, {"n"})),
            hasher(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic}, {"n"})));

  std::unordered_set<Shape> set;
  set.insert(Shape(DType::Float32, {2, 3}));
  set.insert(Shape(DType::Float32, {2, 3}));
  set.insert(Shape(DType::Float32, {3, 2}));
  set.insert(Shape(DType::Float64, {2, 3}));
  set.insert(Shape(DType::Float32));
  set.insert(Shape(DType::Float32));
  set.insert(Shape(DType::Float32, {Shape::kDynamic, 3}));
  set.insert(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""}));
  set.insert(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""}));
  set.insert(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"seq", ""}));
  EXPECT_EQ(set.size(), 7u);
  EXPECT_EQ(set.count(Shape(DType::Float32, {2, 3})), 1u);
  EXPECT_EQ(set.count(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"seq", ""})), 1u);
  EXPECT_EQ(set.count(Shape(DType::Int32, {2, 3})), 0u);
  EXPECT_EQ(set.count(Shape(DType::Float32, {2, 3, 1})), 0u);

  // Many distinct shapes stay distinct.
  std::unordered_set<Shape> many;
  for (int64_t i = 0; i < 50; ++i) {
    for (int64_t j = 0; j < 20; ++j) many.insert(Shape(DType::Float32, {i, j}));
  }
  EXPECT_EQ(many.size(), 1000u);
  for (int64_t i = 0; i < 50; ++i) many.insert(Shape(DType::Float32, {i, 0}));
  EXPECT_EQ(many.size(), 1000u);
}

TEST(ShapeTest, AssertDims) {
  const Shape s(DType::Float32, {2, 3});
  EXPECT_NO_THROW(s.AssertDims({2, 3}));
  EXPECT_NO_THROW(s.AssertDims({-1, 3}));
  EXPECT_NO_THROW(s.AssertDims({2, -1}));
  EXPECT_NO_THROW(s.AssertDims({-1, -1}));
  EXPECT_THROW(s.AssertDims({2, 4}), kiln::Error);
  EXPECT_THROW(s.AssertDims({3, 3}), kiln::Error);
  EXPECT_THROW(s.AssertDims({2}), kiln::Error);
  EXPECT_THROW(s.AssertDims({2, 3, 1}), kiln::Error);
  EXPECT_THROW(s.AssertDims({-1}), kiln::Error);
  EXPECT_THROW(s.AssertDims({}), kiln::Error);
  EXPECT_NO_THROW(Shape(DType::Int8).AssertDims({}));
  EXPECT_THROW(Shape(DType::Int8).AssertDims({1}), kiln::Error);

  const std::string message = ErrorMessage([&] { s.AssertDims({2, 17}); });
  EXPECT_NE(message.find("(Float32)[2, 3]"), std::string::npos) << message;
  EXPECT_TRUE(std::regex_search(message, std::regex("2,? 17"))) << message;
}

TEST(ShapeTest, AssertRank) {
  const Shape s(DType::Float32, {2, 3});
  EXPECT_NO_THROW(s.AssertRank(2));
  EXPECT_THROW(s.AssertRank(1), kiln::Error);
  EXPECT_THROW(s.AssertRank(3), kiln::Error);
  EXPECT_THROW(s.AssertRank(0), kiln::Error);
  EXPECT_NO_THROW(Shape(DType::Float32).AssertRank(0));
  EXPECT_THROW(Shape(DType::Float32).AssertRank(1), kiln::Error);
  EXPECT_NO_THROW(Shape(DType::Float32, {Shape::kDynamic, 3, 4}).AssertRank(3));
}

TEST(ShapeTest, ToStringAndStream) {
  EXPECT_EQ(Shape(DType::Float32, {2, 3}).ToString(), "(Float32)[2, 3]");
  EXPECT_EQ(Shape(DType::Float64).ToString(), "(Float64)");
  EXPECT_EQ(Shape(DType::Int4, {8}).ToString(), "(Int4)[8]");
  EXPECT_EQ(Shape(DType::Bool, {0}).ToString(), "(Bool)[0]");
  EXPECT_EQ(Shape(DType::BFloat16, {1, 2, 3}).ToString(), "(BFloat16)[1, 2, 3]");
  EXPECT_EQ(Shape(DType::Uint8, {Shape::kDynamic, 3}).ToString(), "(Uint8)[?, 3]");
  EXPECT_EQ(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""}).ToString(),
            "(Float32)[batch, 3]");

  EXPECT_EQ(Streamed(Shape(DType::Float32, {2, 3})), "(Float32)[2, 3]");
  EXPECT_EQ(Streamed(Shape(DType::Float64)), "(Float64)");
  EXPECT_EQ(Streamed(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""})),
            "(Float32)[batch, 3]");
  EXPECT_EQ(Streamed(Shape(DType::Float32, {Shape::kDynamic, 3})), "(Float32)[?, 3]");
}

}  // namespace
