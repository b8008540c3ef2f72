// The shape rules on dynamic axes (compute::InferShape) and compute::Specialize, on programs
// written by hand: names propagate, derived sizes get deterministic names, what cannot be decided
// while building is checked when the program is specialised.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/compute/dynamic.h"
#include "kiln/compute/shape_inference.h"
#include "kiln/core/error.h"
#include "test_util.h"

namespace {

using namespace kiln;
using compute::InferShape;
using compute::OpAttributes;
using compute::OpType;

constexpr int64_t D = Shape::kDynamic;

Shape Dyn(std::vector<int64_t> dims, std::vector<std::string> names, DType dt = DType::Float32) {
  return Shape::MakeDynamic(dt, std::move(dims), std::move(names));
}

using kiln::test::ErrorOf;

TEST(DynamicRulesTest, ElementwiseMeetsStaticAndDynamicAxes) {
  const Shape a = Dyn({D, 3}, {"batch", ""});
  EXPECT_EQ(InferShape(OpType::Add, {a, a}, {}), a);
  // A static size wins over a dynamic one; it is checked when the program runs.
  EXPECT_EQ(InferShape(OpType::Mul, {a, Shape(DType::Float32, {5, 3})}, {}), Shape(DType::Float32, {5, 3}));
  EXPECT_EQ(InferShape(OpType::Less, {a, a}, {}), a.WithDType(DType::Bool));
  // Static sizes that differ are still errors at build time.
  EXPECT_NE(ErrorOf([&] {
              InferShape(OpType::Add, {a, Dyn({D, 4}, {"batch", ""})}, {});
            }).find("different shapes"),
            std::string::npos);
  OpAttributes sum;
  sum.axes = {1};
  EXPECT_EQ(InferShape(OpType::ReduceSum, {a}, sum), Dyn({D}, {"batch"}));
}

TEST(DynamicRulesTest, MovementOpsNameDerivedSizes) {
  const Shape x = Dyn({D, D}, {"batch", "seq"});
  OpAttributes cat;
  cat.axis = 1;
  EXPECT_EQ(InferShape(OpType::Concatenate, {x, Dyn({D, 2}, {"batch", ""})}, cat).ToString(),
            "(Float32)[batch, seq+2]");
  OpAttributes tr;
  tr.permutation = {1, 0};
  EXPECT_EQ(InferShape(OpType::Transpose, {x}, tr).ToString(), "(Float32)[seq, batch]");
  OpAttributes sl;
  sl.starts = {0, 1};
  sl.limits = {D, 3};
  sl.strides = {1, 1};
  EXPECT_EQ(InferShape(OpType::Slice, {x}, sl).ToString(), "(Float32)[batch, 2]");
  // A dynamic axis sliced to a huge static limit with a huge stride: one element, no int64
  // overflow in the size arithmetic (a graph_fuzz finding).
  OpAttributes huge;
  huge.starts = {3, 0};
  huge.limits = {INT64_MAX, 3};
  huge.strides = {INT64_MAX, 2};
  EXPECT_EQ(InferShape(OpType::Slice, {x}, huge).ToString(), "(Float32)[1, 2]");
  OpAttributes pad;
  pad.padding = {{0, 0, 0}, {1, 1, 1}};
  EXPECT_EQ(InferShape(OpType::Pad, {x, Shape(DType::Float32)}, pad).ToString(),
            "(Float32)[batch, pad(seq,1,1,1)]");
  OpAttributes dot;
  dot.lhs_contracting = {1};
  dot.rhs_contracting = {0};
  EXPECT_EQ(InferShape(OpType::DotGeneral, {x, Dyn({D, 4}, {"seq", ""})}, dot).ToString(),
            "(Float32)[batch, 4]");
  // Reshape: counts that differ whatever the sizes are errors now; others are checked later.
  OpAttributes rs;
  rs.shape = Dyn({D, 6}, {"batch", ""});
  EXPECT_EQ(InferShape(OpType::Reshape, {Dyn({D, 2, 3}, {"batch", "", ""})}, rs), rs.shape);
  rs.shape = Dyn({D, 5}, {"batch", ""});
  EXPECT_NE(ErrorOf([&] {
              InferShape(OpType::Reshape, {Dyn({D, 2, 3}, {"batch", "", ""})}, rs);
            }).find("element counts differ"),
            std::string::npos);
  // Static sizes whose product overflows int64 beside a dynamic axis: an error, not a wrapped
  // count (a graph_fuzz finding: INT64_MAX * 2).
  rs.shape = Dyn({D, INT64_MAX, 2}, {"batch", "", ""});
  EXPECT_NE(ErrorOf([&] {
              InferShape(OpType::Reshape, {Dyn({D, 2, 3}, {"batch", "", ""})}, rs);
            }).find("does not fit in int64"),
            std::string::npos);
}

TEST(DynamicRulesTest, TrialSizesInferGatherAndConvolution) {
  // Gather rows of a [5, 3] table by indices [batch, seq, 1].
  OpAttributes g;
  g.gather.offset_dims = {2};
  g.gather.collapsed_slice_dims = {0};
  g.gather.start_index_map = {0};
  g.gather.slice_sizes = {1, 3};
  g.gather.index_vector_dim = 2;
  EXPECT_EQ(InferShape(OpType::Gather,
                       {Shape(DType::Float32, {5, 3}), Dyn({D, D, 1}, {"batch", "seq", ""}, DType::Int32)}, g)
                .ToString(),
            "(Float32)[batch, seq, 3]");
}

TEST(DynamicSpecializeTest, ResolvesAttributesAndChecksNames) {
  // p0 [batch, 3], p1 [batch]; out = Reshape(p0, [batch*3]) and BroadcastInDim(p1 -> [batch, 3]).
  std::vector<compute::Instruction> insts;
  OpAttributes a0;
  a0.index = 0;
  a0.shape = Dyn({D, 3}, {"batch", ""});
  insts.push_back({OpType::Parameter, {}, a0, a0.shape, {}, {}});
  OpAttributes a1;
  a1.index = 1;
  a1.shape = Dyn({D}, {"batch"});
  insts.push_back({OpType::Parameter, {}, a1, a1.shape, {}, {}});
  OpAttributes rs;
  rs.shape = Dyn({D}, {"3*batch"});
  insts.push_back({OpType::Reshape, {0}, rs, rs.shape, {}, {}});
  OpAttributes bc;
  bc.axes = {0};
  bc.shape = Dyn({D, 3}, {"batch", ""});
  insts.push_back({OpType::BroadcastInDim, {1}, bc, bc.shape, {}, {}});
  compute::Program p(std::move(insts), {2, 3}, {});
  p.Verify();
  EXPECT_TRUE(compute::IsDynamic(p));

  auto concrete = compute::Specialize(p, {Shape(DType::Float32, {4, 3}), Shape(DType::Float32, {4})});
  EXPECT_FALSE(compute::IsDynamic(*concrete));
  EXPECT_EQ(concrete->OutputShape(0), Shape(DType::Float32, {12}));
  EXPECT_EQ(concrete->OutputShape(1), Shape(DType::Float32, {4, 3}));
  concrete->Verify();

  std::string e = ErrorOf([&] {
    compute::Specialize(p, {Shape(DType::Float32, {4, 3}), Shape(DType::Float32, {5})});
  });
  EXPECT_NE(e.find("input 1: axis 0 \"batch\" has size 5, but input 0 axis 0 of the same name has size 4"),
            std::string::npos)
      << e;
  e = ErrorOf([&] { compute::Specialize(p, {Shape(DType::Float32, {4, 2}), Shape(DType::Float32, {4})}); });
  EXPECT_NE(e.find("input 0: axis 1 has size 2 at run time, but the program was built for 3"),
            std::string::npos)
      << e;
  e = ErrorOf([&] { compute::Specialize(p, {Shape(DType::Int32, {4, 3}), Shape(DType::Float32, {4})}); });
  EXPECT_NE(e.find("input 0: has shape (Int32)[4, 3] at run time"), std::string::npos) << e;
  e = ErrorOf([&] { compute::Specialize(p, {Shape(DType::Float32, {4, 3})}); });
  EXPECT_NE(e.find("1 input shapes for a program of 2 parameters"), std::string::npos) << e;
}

TEST(DynamicSpecializeTest, StaticExecutablesCheckTheirInputShapes) {
  std::vector<compute::Instruction> insts;
  OpAttributes a0;
  a0.index = 0;
  a0.shape = Shape(DType::Float32, {2});
  insts.push_back({OpType::Parameter, {}, a0, a0.shape, {}, {}});
  auto p =
      std::make_shared<const compute::Program>(std::move(insts), std::vector<int>{0}, std::vector<bool>{});
  EXPECT_FALSE(compute::IsDynamic(*p));
  compute::BackendPtr ref = compute::NewWithConfig("ref");
  auto exe = ref->Compile(p);
  std::vector<Shape> out;
  const float data[3] = {1, 2, 3};
  auto buf = ref->BufferFromHost(0, data, 12);
  const std::string e =
      ErrorOf([&] { exe->ExecuteWithShapes({buf}, {Shape(DType::Float32, {3})}, {false}, 0, out); });
  EXPECT_NE(e.find("input 0 has shape (Float32)[3], but the program's parameter 0 is (Float32)[2]"),
            std::string::npos)
      << e;
}

}  // namespace
