// Tests for Graph, Node, compute::Program and the op table.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using compute::OpType;

TEST(GraphTest, NodesKnowShapeDTypeRankAndGraph) {
  Graph g("g1");
  Node x = g.Parameter(Shape(DType::Float32, {2, 3}), "x");
  EXPECT_EQ(x.shape(), Shape(DType::Float32, {2, 3}));
  EXPECT_EQ(x.dtype(), DType::Float32);
  EXPECT_EQ(x.rank(), 2);
  EXPECT_EQ(&x.graph(), &g);
  EXPECT_EQ(x.op(), OpType::Parameter);
  EXPECT_EQ(g.NumParameters(), 1);
  EXPECT_EQ(g.ParameterNode(0), x);
  EXPECT_THROW(g.ParameterNode(1), kiln::Error);
  Node y = Exp(x);
  EXPECT_EQ(y.ToString(), "#1 Exp(#0) -> (Float32)[2, 3]");
  EXPECT_EQ(y.operands().size(), 1u);
  EXPECT_EQ(y.operands()[0], x);
}

TEST(GraphTest, ShapeReferencesStayValidWhileTheGraphGrows) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {4}));
  const Shape& shape = x.shape();
  for (int i = 0; i < 1000; ++i) x = Neg(x);
  EXPECT_EQ(shape, Shape(DType::Float32, {4}));
}

TEST(GraphTest, InvalidNodesAndNodesOfAnotherGraphAreErrors) {
  Graph a("a"), b("b");
  Node x = a.Parameter(Shape(DType::Float32, {}));
  Node y = b.Parameter(Shape(DType::Float32, {}));
  EXPECT_THROW(Add(x, y), kiln::Error);
  Node invalid;
  EXPECT_FALSE(invalid.Ok());
  EXPECT_THROW(invalid.shape(), kiln::Error);
  EXPECT_EQ(invalid.ToString(), "<invalid node>");
  EXPECT_THROW(a.AddOp(OpType::Neg, {invalid}), kiln::Error);
}

TEST(GraphTest, BuildKeepsWhatTheOutputsNeedAndEveryParameter) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {3}));
  Node unused_param = g.Parameter(Shape(DType::Int32, {}));
  Node dead = Exp(x);  // Not needed by the output.
  Node out = Sqrt(x);
  (void)dead;
  (void)unused_param;
  auto program = g.Build({out});
  ASSERT_EQ(program->Instructions().size(), 3u);  // Two parameters and Sqrt.
  EXPECT_EQ(program->Parameters().size(), 2u);
  EXPECT_EQ(program->ParameterShape(1), Shape(DType::Int32, {}));
  EXPECT_EQ(program->Outputs().size(), 1u);
  EXPECT_EQ(program->Instructions()[program->Outputs()[0]].op, OpType::Sqrt);
  EXPECT_EQ(program->Donatable(), (std::vector<bool>{false, false}));
  EXPECT_NO_THROW(program->Verify());
  EXPECT_THROW(g.Build({}), kiln::Error);
}

TEST(ProgramTest, ToStringListsInstructionsWithAttributes) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3}));
  Node s = ReduceSum(x, {1});
  auto program = g.Build({s});
  const std::string text = program->ToString();
  EXPECT_NE(text.find("#0 = Parameter{index=0, shape=(Float32)[2, 3]}() -> (Float32)[2, 3]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ReduceSum{axes=[1]}(#0) -> (Float32)[2]"), std::string::npos) << text;
}

TEST(ProgramTest, VerifyRejectsInconsistentPrograms) {
  compute::Instruction param{OpType::Parameter, {}, {}, Shape(DType::Float32, {2}), {}};
  param.attrs.index = 0;
  param.attrs.shape = Shape(DType::Float32, {2});
  compute::Instruction neg{OpType::Neg, {0}, {}, Shape(DType::Float32, {3}), {}};  // Wrong shape.
  compute::Program bad_shape({param, neg}, {1}, {});
  EXPECT_THROW(bad_shape.Verify(), kiln::Error);
  compute::Instruction forward{OpType::Neg, {1}, {}, Shape(DType::Float32, {2}), {}};  // Uses itself.
  compute::Program bad_order({param, forward}, {1}, {});
  EXPECT_THROW(bad_order.Verify(), kiln::Error);
  EXPECT_THROW(compute::Program({param}, {5}, {}), kiln::Error);            // Output out of range.
  EXPECT_THROW(compute::Program({param}, {0}, {true, true}), kiln::Error);  // Flags for 2 of 1 parameters.
}

TEST(OpTableTest, NamesArityAndCategoriesComeFromOpsDef) {
  EXPECT_EQ(static_cast<int>(compute::AllOps().size()), compute::kNumOps);
  std::set<std::string> names;
  for (OpType op : compute::AllOps()) names.insert(std::string(compute::OpName(op)));
  EXPECT_EQ(static_cast<int>(names.size()), compute::kNumOps);  // Distinct names.
  EXPECT_EQ(compute::OpName(OpType::DotGeneral), "DotGeneral");
  EXPECT_EQ(compute::OpArity(OpType::Where), 3);
  EXPECT_EQ(compute::OpArity(OpType::Concatenate), -1);
  EXPECT_EQ(compute::GetOpCategory(OpType::ReduceMax), compute::OpCategory::Reduce);
}

TEST(ShapeInferenceTest, PrimitiveRulesNameTheOp) {
  const Shape f(DType::Float32, {2, 3});
  const Shape i(DType::Int32, {2, 3});
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const kiln::Error& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_EQ(compute::InferShape(OpType::Add, {f, f}, {}), f);
  EXPECT_NE(message([&] { compute::InferShape(OpType::Add, {f, i}, {}); }).find("Add"), std::string::npos);
  EXPECT_NE(message([&] { compute::InferShape(OpType::Sqrt, {i}, {}); }).find("Sqrt"), std::string::npos);
  EXPECT_NE(message([&] {
              compute::InferShape(OpType::Neg, {f, f}, {});
            }).find("operand"),
            std::string::npos);
  compute::OpAttributes reduce;
  reduce.axes = {2};
  EXPECT_NE(message([&] { compute::InferShape(OpType::ReduceSum, {f}, reduce); }).find("out of range"),
            std::string::npos);
  EXPECT_EQ(compute::InferShape(OpType::Less, {i, i}, {}), Shape(DType::Bool, {2, 3}));
  const Shape packed(DType::Int4, {4});
  EXPECT_THROW(compute::InferShape(OpType::Neg, {packed}, {}), kiln::Error);
  compute::OpAttributes convert;
  convert.dtype = DType::Float32;
  EXPECT_EQ(compute::InferShape(OpType::ConvertDType, {packed}, convert), Shape(DType::Float32, {4}));
  compute::OpAttributes bitcast;
  bitcast.dtype = DType::Uint8;
  EXPECT_EQ(compute::InferShape(OpType::Bitcast, {f}, bitcast), Shape(DType::Uint8, {2, 3, 4}));
  bitcast.dtype = DType::Float64;
  EXPECT_THROW(compute::InferShape(OpType::Bitcast, {f}, bitcast), kiln::Error);  // Last axis must be 2.
}

}  // namespace
