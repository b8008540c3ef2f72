// Tests of the graph frontend's constants (Const, Scalar, Zeros, Ones, Iota) and elementwise ops
// (unary, binary with broadcasting, Where, Clamp) at build time: result shapes and dtypes, the
// primitives each function emits, and every error path with its message.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops_build_test_util.h"
#include "kiln/kiln.h"

namespace kiln::graph {
namespace {

using namespace ops_build_test;  // NOLINT

// ---- Constants ----------------------------------------------------------------------------------

TEST(OpsConstants, ConstKeepsItsOwnCopy) {
  Graph g;
  Tensor t = Tensor::FromValue(std::vector<float>{1, 2, 3});
  Node c = Const(g, t);
  EXPECT_EQ(c.op(), OpType::Constant);
  EXPECT_EQ(c.shape(), Shape(F32, {3}));
  t.MutableFlatData<float>([](std::span<float> s) { s[0] = 7; });
  EXPECT_EQ(Attrs(c).literal.ToVector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(Const(g, std::vector<std::vector<int32_t>>{{1, 2}, {3, 4}}).shape(), Shape(I32, {2, 2}));
  EXPECT_TRUE(Throws([&] { Const(g, Tensor()); }, {"Const", "not Ok"}));
}

TEST(OpsConstants, ScalarTakesTheDType) {
  Graph g;
  Node s = Scalar(g, DType::Float16, 2);
  EXPECT_EQ(s.shape(), Shape(DType::Float16));
  EXPECT_EQ(Literal(s), 2.0);
  Node x = P(g, DType::Int8, {2});
  Node y = ScalarLike(x, 5u);
  EXPECT_EQ(y.dtype(), DType::Int8);
  EXPECT_EQ(Literal(y), 5.0);
  EXPECT_EQ(Attrs(Scalar(g, DType::Bool, true)).literal.Item<bool>(), true);
  EXPECT_EQ(Attrs(Scalar(g, DType::Uint64, std::numeric_limits<uint64_t>::max())).literal.Item<uint64_t>(),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(Attrs(Scalar(g, DType::Int64, -9.0e18)).literal.Item<int64_t>(), int64_t{-9000000000000000000});
}

TEST(OpsConstants, ScalarExactnessForIntegers) {
  Graph g;
  Node i = P(g, I32, {2});
  Node u8 = P(g, DType::Uint8, {2});
  Node u32 = P(g, DType::Uint32, {2});
  EXPECT_TRUE(Throws([&] { (void)(i * 0.5); }, {"0.5", "Int32", "fraction"}));
  EXPECT_TRUE(Throws([&] { (void)(u8 + 300); }, {"300", "Uint8", "range"}));
  EXPECT_TRUE(Throws([&] { (void)(i + std::nan("")); }, {"nan", "Int32"}));
  EXPECT_TRUE(Throws([&] { (void)(i + INFINITY); }, {"inf", "Int32"}));
  EXPECT_TRUE(Throws([&] { (void)(u32 - (-1)); }, {"-1", "negative"}));
  EXPECT_TRUE(Throws([&] { (void)(u32 * -2.0); }, {"negative"}));
  EXPECT_TRUE(Throws([&] { Scalar(g, DType::Int8, 128); }, {"128", "Int8", "[-128, 127]"}));
  EXPECT_TRUE(Throws([&] { Scalar(g, DType::Int64, 9.3e18); }, {"Int64", "range"}));
  EXPECT_TRUE(Throws([&] { Scalar(g, DType::Int32, uint64_t{1} << 40); }, {"Int32"}));
  EXPECT_EQ(Literal(Scalar(g, DType::Int8, -128)), -128.0);
  EXPECT_EQ(Literal(Scalar(g, DType::Int8, 127.0)), 127.0);
  EXPECT_EQ(Literal(Scalar(g, DType::Uint8, true)), 1.0);
  EXPECT_EQ(Literal(Scalar(g, DType::Int16, -0.0)), 0.0);
  EXPECT_NO_THROW((void)(i * 2));
  EXPECT_NO_THROW((void)(u8 + 255));
}

TEST(OpsConstants, ScalarForFloatsRoundsButChecksRange) {
  Graph g;
  EXPECT_FLOAT_EQ(static_cast<float>(Literal(Scalar(g, F32, 0.1))), 0.1f);
  EXPECT_EQ(Literal(Scalar(g, DType::Float16, 0.1)), static_cast<double>(static_cast<float>(float16(0.1f))));
  EXPECT_TRUE(std::isinf(Literal(Scalar(g, F32, INFINITY))));
  EXPECT_TRUE(std::isnan(Literal(Scalar(g, DType::BFloat16, NAN))));
  EXPECT_NO_THROW(Scalar(g, DType::BFloat16, 1e38));
  EXPECT_NO_THROW(Scalar(g, DType::Float64, 1e300));
  EXPECT_NO_THROW(Scalar(g, F32, int64_t{16777217}));  // Integers round into floats too.
  EXPECT_TRUE(Throws([&] { Scalar(g, DType::Float16, 1e5); }, {"Float16", "largest"}));
  EXPECT_TRUE(Throws([&] { Scalar(g, DType::Float16, 70000); }, {"Float16"}));
  EXPECT_TRUE(Throws([&] { Scalar(g, F32, 1e39); }, {"Float32", "largest"}));
  EXPECT_TRUE(Throws([&] { Scalar(g, DType::BFloat16, -1e39); }, {"BFloat16"}));
}

TEST(OpsConstants, ScalarForBoolAndPacked) {
  Graph g;
  Node b = P(g, DType::Bool, {2});
  EXPECT_EQ(Attrs(ScalarLike(b, 1)).literal.Item<bool>(), true);
  EXPECT_EQ(Attrs(ScalarLike(b, 0.0)).literal.Item<bool>(), false);
  EXPECT_TRUE(Throws([&] { ScalarLike(b, 2); }, {"Bool", "true/false"}));
  EXPECT_TRUE(Throws([&] { ScalarLike(b, 0.5); }, {"Bool"}));
  EXPECT_TRUE(Throws([&] { Scalar(g, DType::Int4, 1); }, {"Int4", "packed"}));
  EXPECT_TRUE(Throws([&] { Scalar(g, DType::Invalid, 1); }, {"invalid dtype"}));
}

TEST(OpsConstants, ZerosAndOnesBroadcastAScalar) {
  Graph g;
  const int before = g.NumNodes();
  Node z = Zeros(g, Shape(F32, {1000, 1000}));
  EXPECT_EQ(g.NumNodes(), before + 2);
  EXPECT_EQ(z.op(), OpType::BroadcastInDim);
  EXPECT_EQ(z.shape(), Shape(F32, {1000, 1000}));
  ASSERT_EQ(z.operands().size(), 1u);
  EXPECT_EQ(z.operands()[0].shape(), Shape(F32));
  EXPECT_EQ(Literal(z.operands()[0]), 0.0);
  Node one = Ones(g, Shape(I32));
  EXPECT_EQ(one.op(), OpType::Constant);
  EXPECT_EQ(Literal(one), 1.0);
  Node ob = Ones(g, Shape(DType::Bool, {2}));
  EXPECT_EQ(Attrs(ob.operands()[0]).literal.Item<bool>(), true);
  Node x = P(g, DType::Uint16, {0, 3});
  EXPECT_EQ(ZerosLike(x).shape(), Shape(x.shape()));
  EXPECT_EQ(OnesLike(x).shape(), Shape(x.shape()));
  Node packed = Zeros(g, Shape(DType::Int4, {4}));
  EXPECT_EQ(packed.op(), OpType::ConvertDType);
  EXPECT_EQ(packed.shape(), Shape(DType::Int4, {4}));
  EXPECT_TRUE(Throws([&] { Zeros(g, Shape()); }, {"Zeros", "invalid shape"}));
  EXPECT_TRUE(Throws([&] { ZerosLike(Node()); }, {"ZerosLike", "invalid"}));
}

TEST(OpsConstants, Iota) {
  Graph g;
  Node i = Iota(g, Shape(I32, {2, 3}), -1);
  EXPECT_EQ(i.op(), OpType::Iota);
  EXPECT_EQ(i.shape(), Shape(I32, {2, 3}));
  EXPECT_EQ(Attrs(i).axis, 1);
  EXPECT_TRUE(Throws([&] { Iota(g, Shape(F32, {2}), 1); }, {"Iota", "axis 1", "(Float32)[2]"}));
  EXPECT_TRUE(Throws([&] { Iota(g, Shape(DType::Bool, {2}), 0); }, {"Iota"}));
}

// Node::shape() refers into the graph, which grows as nodes are added: functions given such a
// reference (or holding one) must copy it before adding nodes. (The test copies its expected
// shapes with Shape(...): EXPECT_EQ may evaluate x.shape() before the call that grows the graph.)
TEST(OpsConstants, ShapeReferencesSurviveGraphGrowth) {
  Graph g;
  Node x = P(g, F32, {2, 3});
  Node r = P(g, F32, {1, 3});
  for (int i = 0; i < 70; ++i) {
    EXPECT_EQ(Zeros(g, x.shape()).shape(), Shape(x.shape()));
    EXPECT_EQ(OnesLike(x).shape(), Shape(x.shape()));
    EXPECT_EQ(BroadcastToShape(r, x.shape()).shape(), Shape(x.shape()));
    EXPECT_EQ(BroadcastToDims(r, x.shape().Dimensions()).shape(), Shape(x.shape()));
    EXPECT_EQ(MatMul(P(g, F32, {3}), P(g, F32, {4, 3, 2})).shape(), Shape(F32, {4, 2}));
    EXPECT_EQ(ReduceLogSumExp(x, {0}).shape(), Shape(F32, {3}));
  }
}

// ---- Unary ----------------------------------------------------------------------------------------

TEST(OpsUnary, ShapesAndPrimitives) {
  Graph g;
  Node x = P(g, F32, {2, 3});
  const std::vector<std::pair<Node (*)(Node), OpType>> ops = {
      {Neg, OpType::Neg},     {Abs, OpType::Abs},          {Sign, OpType::Sign},
      {Sqrt, OpType::Sqrt},   {Rsqrt, OpType::Rsqrt},      {Exp, OpType::Exp},
      {Expm1, OpType::Expm1}, {Log, OpType::Log},          {Log1p, OpType::Log1p},
      {Sin, OpType::Sin},     {Cos, OpType::Cos},          {Tanh, OpType::Tanh},
      {Erf, OpType::Erf},     {Floor, OpType::Floor},      {Ceil, OpType::Ceil},
      {Round, OpType::Round}, {Sigmoid, OpType::Logistic}, {StopGradient, OpType::StopGradient},
      {Tan, OpType::Tan},     {Asin, OpType::Asin},        {Acos, OpType::Acos},
      {Atan, OpType::Atan},   {Sinh, OpType::Sinh},        {Cosh, OpType::Cosh},
      {Asinh, OpType::Asinh}, {Acosh, OpType::Acosh},      {Atanh, OpType::Atanh}};
  for (const auto& [fn, op] : ops) {
    Node y = fn(x);
    EXPECT_EQ(y.op(), op);
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_EQ(y.operands()[0], x);
  }
  EXPECT_EQ(IsFinite(x).shape(), Shape(DType::Bool, {2, 3}));
  EXPECT_EQ(IsNaN(x).op(), OpType::IsNaN);
  Node b = P(g, DType::Bool, {});
  EXPECT_EQ(LogicalNot(b).shape(), Shape(DType::Bool));
  Node u = P(g, DType::Uint32, {4});
  EXPECT_EQ(BitwiseNot(u).op(), OpType::BitwiseNot);
  EXPECT_EQ(BitCount(u).shape(), Shape(u.shape()));
  EXPECT_EQ(Clz(u).op(), OpType::Clz);
  EXPECT_EQ(Neg(P(g, I32, {0})).shape(), Shape(I32, {0}));
}

TEST(OpsUnary, Composites) {
  Graph g;
  Node x = P(g, F32, {3});
  const int before = g.NumNodes();
  EXPECT_EQ(Identity(x), x);
  EXPECT_EQ(g.NumNodes(), before);
  Node sq = Square(x);
  EXPECT_EQ(sq.op(), OpType::Mul);
  EXPECT_EQ(sq.operands()[0], x);
  EXPECT_EQ(sq.operands()[1], x);
  Node r = Reciprocal(x);
  EXPECT_EQ(r.op(), OpType::Div);
  EXPECT_EQ(r.operands()[0].op(), OpType::BroadcastInDim);
  EXPECT_EQ(Literal(r.operands()[0].operands()[0]), 1.0);
  EXPECT_EQ(r.operands()[1], x);
  Node z = IsZero(x);
  EXPECT_EQ(z.op(), OpType::Equal);
  EXPECT_EQ(z.shape(), Shape(DType::Bool, {3}));
}

TEST(OpsUnary, Errors) {
  Graph g;
  Node i = P(g, I32, {2});
  EXPECT_TRUE(Throws([&] { Sigmoid(i); }, {"Sigmoid", "Logistic", "float"}));
  EXPECT_TRUE(Throws([&] { Sqrt(i); }, {"Sqrt", "float"}));
  EXPECT_TRUE(Throws([&] { Neg(P(g, DType::Bool, {2})); }, {"Neg", "Bool"}));
  EXPECT_TRUE(Throws([&] { LogicalNot(i); }, {"LogicalNot", "Bool"}));
  EXPECT_TRUE(Throws([&] { BitCount(P(g, F32, {})); }, {"BitCount", "integer"}));
  EXPECT_TRUE(Throws([&] { Exp(Node()); }, {"Exp", "invalid"}));
  EXPECT_TRUE(Throws([&] { Identity(Node()); }, {"Identity", "invalid"}));
  EXPECT_TRUE(Throws([&] { Reciprocal(P(g, DType::Bool, {})); }, {"Reciprocal"}));
}

// ---- Binary and broadcasting ---------------------------------------------------------------------

TEST(OpsBinary, EqualShapesPassThrough) {
  Graph g;
  Node a = P(g, F32, {2, 3}), b = P(g, F32, {2, 3});
  Node c = Add(a, b);
  EXPECT_EQ(c.op(), OpType::Add);
  EXPECT_EQ(c.operands(), (std::vector<Node>{a, b}));
  const std::vector<std::pair<Node (*)(Node, Node), OpType>> ops = {
      {Sub, OpType::Sub}, {Mul, OpType::Mul}, {Div, OpType::Div}, {Rem, OpType::Rem},
      {Pow, OpType::Pow}, {Max, OpType::Max}, {Min, OpType::Min}, {Atan2, OpType::Atan2}};
  for (const auto& [fn, op] : ops) {
    Node y = fn(a, b);
    EXPECT_EQ(y.op(), op);
    EXPECT_EQ(y.shape(), a.shape());
  }
  const std::vector<std::pair<Node (*)(Node, Node), OpType>> cmp = {
      {Equal, OpType::Equal},     {NotEqual, OpType::NotEqual},
      {Less, OpType::Less},       {LessOrEqual, OpType::LessOrEqual},
      {Greater, OpType::Greater}, {GreaterOrEqual, OpType::GreaterOrEqual}};
  for (const auto& [fn, op] : cmp) {
    Node y = fn(a, b);
    EXPECT_EQ(y.op(), op);
    EXPECT_EQ(y.shape(), Shape(DType::Bool, {2, 3}));
  }
  Node p = P(g, DType::Bool, {2}), q = P(g, DType::Bool, {2});
  EXPECT_EQ(LogicalAnd(p, q).op(), OpType::LogicalAnd);
  EXPECT_EQ(LogicalOr(p, q).op(), OpType::LogicalOr);
  EXPECT_EQ(LogicalXor(p, q).op(), OpType::LogicalXor);
  Node u = P(g, DType::Int64, {2}), v = P(g, DType::Int64, {2});
  EXPECT_EQ(BitwiseAnd(u, v).op(), OpType::BitwiseAnd);
  EXPECT_EQ(BitwiseOr(u, v).op(), OpType::BitwiseOr);
  EXPECT_EQ(BitwiseXor(u, v).op(), OpType::BitwiseXor);
  EXPECT_EQ(BitwiseShiftLeft(u, v).op(), OpType::ShiftLeft);
  EXPECT_EQ(BitwiseShiftRightArithmetic(u, v).op(), OpType::ShiftRightArithmetic);
  EXPECT_EQ(BitwiseShiftRightLogical(u, v).op(), OpType::ShiftRightLogical);
}

TEST(OpsBinary, ScalarBroadcasts) {
  Graph g;
  Node x = P(g, F32, {2, 3}), s = P(g, F32, {});
  Node y = Mul(s, x);
  EXPECT_EQ(y.shape(), x.shape());
  Node bs = y.operands()[0];
  EXPECT_EQ(bs.op(), OpType::BroadcastInDim);
  EXPECT_TRUE(Attrs(bs).axes.empty());
  EXPECT_EQ(bs.operands()[0], s);
  EXPECT_EQ(y.operands()[1], x);
  EXPECT_EQ(Add(s, s).shape(), Shape(F32));
  EXPECT_EQ(Add(P(g, F32, {0}), s).shape(), Shape(F32, {0}));
}

TEST(OpsBinary, SizeOneAxesBroadcast) {
  Graph g;
  Node a = P(g, F32, {2, 1}), b = P(g, F32, {1, 3});
  const int before = Count(g, OpType::BroadcastInDim);
  Node c = Add(a, b);
  EXPECT_EQ(c.shape(), Shape(F32, {2, 3}));
  EXPECT_EQ(Count(g, OpType::BroadcastInDim), before + 2);
  for (const Node& o : c.operands()) {
    EXPECT_EQ(o.op(), OpType::BroadcastInDim);
    EXPECT_EQ(o.shape(), Shape(F32, {2, 3}));
    EXPECT_EQ(Attrs(o).axes, (std::vector<int64_t>{0, 1}));
  }
  Node d = Sub(P(g, F32, {4, 3}), P(g, F32, {1, 3}));
  EXPECT_EQ(d.operands()[0].op(), OpType::Parameter);
  EXPECT_EQ(d.operands()[1].op(), OpType::BroadcastInDim);
  EXPECT_EQ(Add(P(g, F32, {0, 3}), P(g, F32, {1, 3})).shape(), Shape(F32, {0, 3}));
}

TEST(OpsBinary, BroadcastErrors) {
  Graph g;
  Node i = P(g, I32, {}), f = P(g, F32, {});
  const std::string msg = ErrorOf([&] { Add(i, f); });
  EXPECT_EQ(msg.substr(0, msg.find('\n')),
            "cannot broadcast Int32 and Float32 for \"Add\": they have different dtypes");
  EXPECT_TRUE(Throws(
      [&] {
        Add(P(g, F32, {2, 3}), P(g, F32, {3}));
      },
      {"Add", "(Float32)[2, 3]", "(Float32)[3]", "ExpandAxes", "BroadcastPrefix"}));
  EXPECT_TRUE(Throws(
      [&] {
        Mul(P(g, F32, {2, 3}), P(g, F32, {2, 4}));
      },
      {"Mul", "(Float32)[2, 3]", "(Float32)[2, 4]", "axis 1", "3 and 4"}));
  Graph other("other");
  EXPECT_TRUE(
      Throws([&] { Add(P(g, F32, {}), P(other, F32, {})); }, {"Add", "different graphs", "graph", "other"}));
  EXPECT_TRUE(Throws([&] { Add(Node(), f); }, {"Add", "operand 0", "invalid"}));
  EXPECT_TRUE(Throws([&] { Add(f, Node()); }, {"Add", "operand 1", "invalid"}));
  // A dtype the primitive rejects fails before any broadcast is added.
  Node b1 = P(g, DType::Bool, {2, 1}), b2 = P(g, DType::Bool, {1, 3});
  const int before = g.NumNodes();
  EXPECT_TRUE(Throws([&] { Add(b1, b2); }, {"Add", "Bool"}));
  EXPECT_EQ(g.NumNodes(), before);
  EXPECT_TRUE(Throws([&] { BitwiseAnd(f, f); }, {"BitwiseAnd", "integer"}));
  EXPECT_TRUE(Throws([&] { Atan2(i, i); }, {"Atan2", "float"}));
}

TEST(OpsBinary, Operators) {
  Graph g;
  Node x = P(g, I32, {3}), y = P(g, I32, {3});
  EXPECT_EQ((x + y).op(), OpType::Add);
  EXPECT_EQ((x - y).op(), OpType::Sub);
  EXPECT_EQ((x * y).op(), OpType::Mul);
  EXPECT_EQ((x / y).op(), OpType::Div);
  EXPECT_EQ((-x).op(), OpType::Neg);
  Node twice = x * 2;
  EXPECT_EQ(twice.dtype(), I32);
  EXPECT_EQ(Literal(twice.operands()[1].operands()[0]), 2.0);
  Node left = 10 - x;
  EXPECT_EQ(left.op(), OpType::Sub);
  EXPECT_EQ(left.operands()[0].op(), OpType::BroadcastInDim);
  EXPECT_EQ(left.operands()[1], x);
  Node f = P(g, DType::Float64, {});
  EXPECT_EQ((f / 2.5).shape(), Shape(DType::Float64));
  EXPECT_EQ((1 / f).op(), OpType::Div);
  EXPECT_EQ((3u + f).op(), OpType::Add);
  EXPECT_EQ(AddScalar(x, 1).op(), OpType::Add);
  EXPECT_EQ(SubScalar(x, 1).op(), OpType::Sub);
  EXPECT_EQ(MulScalar(x, 1).op(), OpType::Mul);
  EXPECT_EQ(DivScalar(x, 1).op(), OpType::Div);
  EXPECT_EQ(PowScalar(f, 2).op(), OpType::Pow);
  EXPECT_EQ(MaxScalar(x, 0).op(), OpType::Max);
  EXPECT_EQ(MinScalar(x, 0).op(), OpType::Min);
  EXPECT_EQ(ModScalar(x, 3).op(), OpType::Rem);
}

// ---- Selection -------------------------------------------------------------------------------------

TEST(OpsSelect, Where) {
  Graph g;
  Node c = P(g, DType::Bool, {2, 3}), a = P(g, F32, {2, 3}), b = P(g, F32, {2, 3});
  Node w = Where(c, a, b);
  EXPECT_EQ(w.op(), OpType::Where);
  EXPECT_EQ(w.operands(), (std::vector<Node>{c, a, b}));
  Node sc = P(g, DType::Bool, {});
  EXPECT_EQ(Where(sc, a, b).operands()[0].op(), OpType::BroadcastInDim);
  Node w2 = Where(c, P(g, F32, {}), b);
  EXPECT_EQ(w2.shape(), Shape(F32, {2, 3}));
  EXPECT_EQ(Where(P(g, DType::Bool, {2, 1}), a, P(g, F32, {1, 3})).shape(), Shape(F32, {2, 3}));
  EXPECT_EQ(Where(c, P(g, F32, {}), P(g, F32, {})).shape(), Shape(F32, {2, 3}));
  EXPECT_TRUE(Throws([&] { Where(a, a, b); }, {"Where", "Bool"}));
  const std::string msg = ErrorOf([&] { Where(c, a, P(g, I32, {2, 3})); });
  EXPECT_EQ(msg.substr(0, msg.find('\n')),
            "cannot broadcast Float32 and Int32 for \"Where\": they have different dtypes");
  EXPECT_TRUE(Throws([&] { Where(P(g, DType::Bool, {3}), a, b); }, {"Where", "ExpandAxes"}));
}

TEST(OpsSelect, ClampAndClip) {
  Graph g;
  Node x = P(g, F32, {2, 3});
  Node c = Clamp(P(g, F32, {}), x, P(g, F32, {1, 3}));
  EXPECT_EQ(c.op(), OpType::Max);
  EXPECT_EQ(c.shape(), x.shape());
  EXPECT_EQ(c.operands()[1].op(), OpType::Min);
  Node clip = Clip(x, -1.0, 1.0);
  EXPECT_EQ(clip.op(), OpType::Max);
  EXPECT_EQ(clip.shape(), x.shape());
  EXPECT_TRUE(Throws([&] { Clamp(P(g, I32, {}), x, x); }, {"Clamp", "different dtypes"}));
  EXPECT_TRUE(Throws([&] { Clamp(x, x, P(g, F32, {4})); }, {"Clamp"}));
}

}  // namespace
}  // namespace kiln::graph
