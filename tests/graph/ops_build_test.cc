// Tests of the graph frontend ops (include/kiln/graph/ops.h) at build time: result shapes and
// dtypes, the primitives each function emits, and every error path with its message. Nothing
// here executes a graph.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln::graph {
namespace {

using compute::OpType;
constexpr DType F32 = DType::Float32;
constexpr DType I32 = DType::Int32;

// Runs `fn`, expecting a kiln::Error whose message contains every one of `parts`.
using kiln::test::Throws;

// The message of the kiln::Error `fn` throws ("" and a failure if none).
std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const kiln::Error& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

Node P(Graph& g, DType dtype, std::vector<int64_t> dims) {
  return g.Parameter(Shape(dtype, std::move(dims)));
}
const compute::OpAttributes& Attrs(Node n) { return n.graph().instruction(n.id()).attrs; }
int Count(Graph& g, OpType op) {
  int n = 0;
  for (int id = 0; id < g.NumNodes(); ++id) n += g.instruction(id).op == op ? 1 : 0;
  return n;
}
// The scalar literal of a Constant node, as double.
double Literal(Node n) {
  EXPECT_EQ(n.op(), OpType::Constant);
  const Tensor& t = Attrs(n).literal;
  return DispatchDType(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>(static_cast<float>(t.Item<T>()));
  });
}

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
  EXPECT_EQ(ShiftLeft(u, v).op(), OpType::ShiftLeft);
  EXPECT_EQ(ShiftRightArithmetic(u, v).op(), OpType::ShiftRightArithmetic);
  EXPECT_EQ(ShiftRightLogical(u, v).op(), OpType::ShiftRightLogical);
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

// ---- Reductions --------------------------------------------------------------------------------------

TEST(OpsReduce, Primitives) {
  Graph g;
  Node x = P(g, F32, {2, 3, 4});
  Node all = ReduceSum(x);
  EXPECT_EQ(all.op(), OpType::ReduceSum);
  EXPECT_EQ(all.shape(), Shape(F32));
  EXPECT_EQ(Attrs(all).axes, (std::vector<int64_t>{0, 1, 2}));
  Node last = ReduceMax(x, {-1});
  EXPECT_EQ(last.shape(), Shape(F32, {2, 3}));
  EXPECT_EQ(Attrs(last).axes, (std::vector<int64_t>{2}));
  EXPECT_EQ(ReduceMin(x, {0, 2}).shape(), Shape(F32, {3}));
  EXPECT_EQ(ReduceProduct(x, {1}).op(), OpType::ReduceProduct);
  EXPECT_EQ(ReduceMultiply(x, {1}).op(), OpType::ReduceProduct);
  EXPECT_EQ(ReduceAllSum(x).shape(), Shape(F32));
  EXPECT_EQ(ReduceAllMax(x).op(), OpType::ReduceMax);
  EXPECT_EQ(ReduceAllMin(x).op(), OpType::ReduceMin);
  EXPECT_EQ(ReduceAllProduct(x).op(), OpType::ReduceProduct);
  Node b = P(g, DType::Bool, {2, 2});
  EXPECT_EQ(ReduceLogicalAnd(b, {0}).op(), OpType::ReduceLogicalAnd);
  EXPECT_EQ(ReduceLogicalOr(b).op(), OpType::ReduceLogicalOr);
  EXPECT_EQ(ReduceLogicalXor(b).op(), OpType::ReduceLogicalXor);
  Node u = P(g, DType::Uint8, {5});
  EXPECT_EQ(ReduceBitwiseAnd(u).op(), OpType::ReduceBitwiseAnd);
  EXPECT_EQ(ReduceBitwiseOr(u).op(), OpType::ReduceBitwiseOr);
  EXPECT_EQ(ReduceBitwiseXor(u).shape(), Shape(DType::Uint8));
  EXPECT_EQ(ReduceSum(P(g, I32, {0, 3}), {0}).shape(), Shape(I32, {3}));
  EXPECT_EQ(ReduceSum(P(g, I32, {})).shape(), Shape(I32));
}

TEST(OpsReduce, Errors) {
  Graph g;
  Node x = P(g, F32, {2, 3});
  EXPECT_TRUE(Throws([&] { ReduceSum(x, {2}); }, {"ReduceSum", "axis 2", "(Float32)[2, 3]"}));
  EXPECT_TRUE(Throws([&] { ReduceSum(x, {-3}); }, {"ReduceSum", "axis -3"}));
  EXPECT_TRUE(Throws([&] { ReduceMax(x, {1, -1}); }, {"ReduceMax", "twice"}));
  EXPECT_TRUE(Throws([&] { ReduceLogicalAnd(x); }, {"ReduceLogicalAnd", "Bool"}));
  EXPECT_TRUE(Throws([&] { ReduceMultiply(P(g, DType::Bool, {2})); }, {"ReduceMultiply", "ReduceProduct"}));
  EXPECT_TRUE(Throws([&] { ReduceSum(Node()); }, {"ReduceSum", "invalid"}));
  EXPECT_TRUE(Throws([&] { ReduceAllSum(P(g, DType::Bool, {2})); }, {"ReduceAllSum"}));
}

TEST(OpsReduce, Mean) {
  Graph g;
  Node x = P(g, F32, {2, 3});
  Node m = ReduceMean(x, {1});
  EXPECT_EQ(m.op(), OpType::Div);
  EXPECT_EQ(m.shape(), Shape(F32, {2}));
  EXPECT_EQ(m.operands()[0].op(), OpType::ReduceSum);
  EXPECT_EQ(Literal(m.operands()[1].operands()[0]), 3.0);
  Node all = ReduceAllMean(x);
  EXPECT_EQ(all.shape(), Shape(F32));
  EXPECT_EQ(Literal(all.operands()[1]), 6.0);
  Node big = ReduceMean(P(g, DType::Float16, {300, 300}));
  EXPECT_EQ(big.op(), OpType::Mul);  // 90000 does not fit Float16: multiplies by 1/90000.
  EXPECT_TRUE(Throws([&] { ReduceMean(P(g, I32, {2})); }, {"ReduceMean", "float", "(Int32)[2]"}));
  EXPECT_TRUE(Throws([&] { ReduceAllMean(P(g, I32, {2})); }, {"ReduceMean", "float"}));
}

TEST(OpsReduce, LogSumExpAndVariance) {
  Graph g;
  Node x = P(g, F32, {2, 3});
  const int stops = Count(g, OpType::StopGradient);
  Node lse = ReduceLogSumExp(x, {-1});
  EXPECT_EQ(lse.shape(), Shape(F32, {2}));
  EXPECT_EQ(lse.op(), OpType::Add);
  EXPECT_EQ(Count(g, OpType::StopGradient), stops + 1);
  EXPECT_GE(Count(g, OpType::IsFinite), 1);
  EXPECT_GE(Count(g, OpType::ReduceMax), 1);
  EXPECT_EQ(ReduceLogSumExp(x).shape(), Shape(F32));
  EXPECT_TRUE(Throws([&] { ReduceLogSumExp(P(g, I32, {2})); }, {"ReduceLogSumExp", "float"}));
  Node v = ReduceVariance(x, {0});
  EXPECT_EQ(v.shape(), Shape(F32, {3}));
  EXPECT_EQ(ReduceVariance(x).shape(), Shape(F32));
  EXPECT_TRUE(Throws([&] { ReduceVariance(P(g, I32, {2})); }, {"ReduceVariance", "float"}));
  EXPECT_TRUE(Throws([&] { ReduceVariance(x, {5}); }, {"ReduceVariance", "axis 5"}));
}

TEST(OpsReduce, AndKeep) {
  Graph g;
  Node x = P(g, F32, {2, 3, 4});
  Node k = ReduceAndKeep(x, [](Node n, const std::vector<int>& a) { return ReduceMax(n, a); }, {-2});
  EXPECT_EQ(k.shape(), Shape(F32, {2, 1, 4}));
  EXPECT_EQ(k.op(), OpType::Reshape);
  EXPECT_EQ(ReduceAndKeep(x, ReduceSum).shape(), Shape(F32, {1, 1, 1}));
  EXPECT_EQ(ReduceAndKeep(x, ReduceMean, {0, 2}).shape(), Shape(F32, {1, 3, 1}));
  EXPECT_TRUE(Throws([&] { ReduceAndKeep(x, [](Node n, const std::vector<int>&) { return n; }, {0}); },
                     {"ReduceAndKeep", "not a reduction"}));
  EXPECT_TRUE(Throws([&] { ReduceAndKeep(x, nullptr, {0}); }, {"ReduceAndKeep"}));
  EXPECT_TRUE(Throws([&] { ReduceAndKeep(x, ReduceSum, {3}); }, {"ReduceAndKeep", "axis 3"}));
}

TEST(OpsReduce, Masked) {
  Graph g;
  Node x = P(g, F32, {2, 3});
  Node mask = P(g, DType::Bool, {2, 3});
  Node s = MaskedReduceSum(x, mask, {1});
  EXPECT_EQ(s.shape(), Shape(F32, {2}));
  EXPECT_EQ(s.op(), OpType::ReduceSum);
  EXPECT_EQ(s.operands()[0].op(), OpType::Where);
  EXPECT_EQ(s.operands()[0].operands()[0], mask);
  Node row_mask = P(g, DType::Bool, {1, 3});
  Node m = MaskedReduceMean(x, row_mask);
  EXPECT_EQ(m.shape(), Shape(F32));
  EXPECT_EQ(m.op(), OpType::Div);
  EXPECT_EQ(m.operands()[1].op(), OpType::ReduceSum);
  EXPECT_EQ(m.operands()[1].operands()[0].op(), OpType::ConvertDType);
  Node mx = MaskedReduceMax(x, P(g, DType::Bool, {}), {0});
  EXPECT_EQ(mx.shape(), Shape(F32, {3}));
  const Node fill = mx.operands()[0].operands()[2];
  EXPECT_EQ(fill.op(), OpType::BroadcastInDim);
  EXPECT_EQ(Literal(fill.operands()[0]), -INFINITY);
  Node xi = P(g, DType::Int16, {4});
  Node mn = MaskedReduceMin(xi, P(g, DType::Bool, {4}));
  EXPECT_EQ(Literal(mn.operands()[0].operands()[2].operands()[0]), 32767.0);
  Node mxi = MaskedReduceMax(xi, P(g, DType::Bool, {4}));
  EXPECT_EQ(Literal(mxi.operands()[0].operands()[2].operands()[0]), -32768.0);
  Node mnu = MaskedReduceMin(P(g, DType::Uint8, {4}), P(g, DType::Bool, {4}));
  EXPECT_EQ(Literal(mnu.operands()[0].operands()[2].operands()[0]), 255.0);
  EXPECT_TRUE(Throws([&] { MaskedReduceSum(x, P(g, F32, {2, 3})); }, {"MaskedReduceSum", "Bool"}));
  EXPECT_TRUE(
      Throws([&] { MaskedReduceSum(x, P(g, DType::Bool, {3})); }, {"MaskedReduceSum", "ranks differ"}));
  EXPECT_TRUE(Throws([&] { MaskedReduceSum(P(g, F32, {1, 3}), mask); }, {"MaskedReduceSum", "axis 0"}));
  EXPECT_TRUE(Throws([&] { MaskedReduceMean(xi, P(g, DType::Bool, {4})); }, {"MaskedReduceMean", "float"}));
  EXPECT_TRUE(Throws([&] { MaskedReduceMax(P(g, DType::Bool, {4}), P(g, DType::Bool, {4})); },
                     {"MaskedReduceMax", "numeric"}));
  Graph other("other");
  EXPECT_TRUE(Throws([&] { MaskedReduceSum(x, P(other, DType::Bool, {})); },
                     {"MaskedReduceSum", "different graphs"}));
}

TEST(OpsReduce, ArgMaxArgMin) {
  Graph g;
  Node x = P(g, F32, {2, 3, 4});
  Node am = ArgMax(x, -1);
  EXPECT_EQ(am.op(), OpType::ArgMax);
  EXPECT_EQ(am.shape(), Shape(I32, {2, 3}));
  EXPECT_EQ(Attrs(am).axis, 2);
  Node an = ArgMin(x, 1, DType::Int64);
  EXPECT_EQ(an.shape(), Shape(DType::Int64, {2, 4}));
  EXPECT_TRUE(Throws([&] { ArgMax(x, 3); }, {"ArgMax", "axis 3", "(Float32)[2, 3, 4]"}));
  EXPECT_TRUE(Throws([&] { ArgMin(x, 0, F32); }, {"ArgMin", "integer"}));
  EXPECT_TRUE(Throws([&] { ArgMax(P(g, F32, {}), 0); }, {"ArgMax", "scalar"}));
}

// ---- Shape ops ---------------------------------------------------------------------------------------

TEST(OpsShape, Reshape) {
  Graph g;
  Node x = P(g, F32, {2, 3, 4});
  Node r = Reshape(x, {6, -1});
  EXPECT_EQ(r.op(), OpType::Reshape);
  EXPECT_EQ(r.shape(), Shape(F32, {6, 4}));
  EXPECT_EQ(Reshape(x, {-1}).shape(), Shape(F32, {24}));
  EXPECT_EQ(Reshape(x, {2, 3, 4}), x);
  EXPECT_EQ(Reshape(P(g, F32, {1}), {}).shape(), Shape(F32));
  EXPECT_EQ(Reshape(P(g, F32, {0, 3}), {3, 0}).shape(), Shape(F32, {3, 0}));
  EXPECT_TRUE(Throws([&] { Reshape(x, {-1, -1}); }, {"Reshape", "one -1", "(Float32)[2, 3, 4]"}));
  EXPECT_TRUE(Throws([&] { Reshape(x, {5, 5}); }, {"Reshape", "(Float32)[2, 3, 4]", "[5, 5]", "24", "25"}));
  EXPECT_TRUE(Throws([&] { Reshape(x, {5, -1}); }, {"Reshape", "[5, -1]"}));
  EXPECT_TRUE(Throws([&] { Reshape(P(g, F32, {0}), {0, -1}); }, {"Reshape", "cannot be inferred"}));
  EXPECT_TRUE(Throws([&] { Reshape(x, {-2, -12}); }, {"Reshape", "-2"}));
}

TEST(OpsShape, Transpose) {
  Graph g;
  Node x = P(g, F32, {2, 3, 4});
  Node t = Transpose(x, 0, -1);
  EXPECT_EQ(t.op(), OpType::Transpose);
  EXPECT_EQ(t.shape(), Shape(F32, {4, 3, 2}));
  EXPECT_EQ(Attrs(t).permutation, (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(Transpose(x, 1, -2), x);
  EXPECT_EQ(TransposeAllAxes(x, {2, 0, 1}).shape(), Shape(F32, {4, 2, 3}));
  EXPECT_EQ(TransposeAllAxes(x, {-1, 0, 1}).shape(), Shape(F32, {4, 2, 3}));
  EXPECT_EQ(TransposeAllAxes(x, {0, 1, 2}), x);
  EXPECT_TRUE(Throws([&] { Transpose(x, 0, 3); }, {"Transpose", "axis 3"}));
  EXPECT_TRUE(Throws([&] { TransposeAllAxes(x, {0, 1}); }, {"TransposeAllAxes", "3 axes"}));
  EXPECT_TRUE(Throws([&] { TransposeAllAxes(x, {0, 1, 1}); }, {"TransposeAllAxes", "twice"}));
}

TEST(OpsShape, ExpandInsertSqueeze) {
  Graph g;
  Node v = P(g, F32, {3});
  EXPECT_EQ(ExpandAxes(v, {0}).shape(), Shape(F32, {1, 3}));
  EXPECT_EQ(ExpandAxes(v, {-1}).shape(), Shape(F32, {3, 1}));
  EXPECT_EQ(ExpandAxes(v, {0, -1}).shape(), Shape(F32, {1, 3, 1}));
  Node m = P(g, F32, {2, 3});
  EXPECT_EQ(ExpandAxes(m, {1, 2}).shape(), Shape(F32, {2, 1, 1, 3}));
  EXPECT_EQ(ExpandAxes(m, {}), m);
  EXPECT_EQ(ExpandAxes(P(g, F32, {}), {0}).shape(), Shape(F32, {1}));
  EXPECT_TRUE(Throws([&] { ExpandAxes(v, {2}); }, {"ExpandAxes", "axis 2"}));
  EXPECT_TRUE(Throws([&] { ExpandAxes(v, {0, -3}); }, {"ExpandAxes", "twice"}));

  EXPECT_EQ(InsertAxes(m, {0}).shape(), Shape(F32, {1, 2, 3}));
  EXPECT_EQ(InsertAxes(m, {-1}).shape(), Shape(F32, {2, 3, 1}));
  EXPECT_EQ(InsertAxes(m, {2}).shape(), Shape(F32, {2, 3, 1}));
  EXPECT_EQ(InsertAxes(m, {1, 1}).shape(), Shape(F32, {2, 1, 1, 3}));
  EXPECT_EQ(InsertAxes(m, {-2}).shape(), Shape(F32, {2, 1, 3}));
  EXPECT_TRUE(Throws([&] { InsertAxes(m, {3}); }, {"InsertAxes", "position 3"}));
  EXPECT_TRUE(Throws([&] { InsertAxes(m, {-4}); }, {"InsertAxes", "position -4"}));

  Node s = P(g, F32, {1, 2, 1, 3});
  EXPECT_EQ(Squeeze(s).shape(), Shape(F32, {2, 3}));
  EXPECT_EQ(Squeeze(s, {0}).shape(), Shape(F32, {2, 1, 3}));
  EXPECT_EQ(Squeeze(s, {-2}).shape(), Shape(F32, {1, 2, 3}));
  EXPECT_EQ(Squeeze(P(g, F32, {1, 1})).shape(), Shape(F32));
  EXPECT_EQ(Squeeze(m), m);
  EXPECT_TRUE(Throws([&] { Squeeze(s, {1}); }, {"Squeeze", "axis 1", "size 2"}));
  EXPECT_TRUE(Throws([&] { Squeeze(s, {4}); }, {"Squeeze", "axis 4"}));
}

TEST(OpsShape, Broadcasts) {
  Graph g;
  Node s = P(g, F32, {});
  Node b = BroadcastToDims(s, {2, 3});
  EXPECT_EQ(b.op(), OpType::BroadcastInDim);
  EXPECT_EQ(b.shape(), Shape(F32, {2, 3}));
  Node r = P(g, F32, {1, 3});
  EXPECT_EQ(BroadcastToDims(r, {4, 3}).shape(), Shape(F32, {4, 3}));
  EXPECT_EQ(BroadcastToDims(r, {1, 3}), r);
  EXPECT_EQ(BroadcastToShape(r, Shape(DType::Int8, {2, 3})).shape(), Shape(F32, {2, 3}));
  EXPECT_TRUE(Throws(
      [&] {
        BroadcastToDims(P(g, F32, {3}), {2, 3});
      },
      {"BroadcastToDims", "(Float32)[3]", "[2, 3]", "ExpandAxes"}));
  EXPECT_TRUE(Throws([&] { BroadcastToDims(P(g, F32, {2}), {3}); }, {"BroadcastToDims", "axis 0"}));
  EXPECT_TRUE(Throws([&] { BroadcastToShape(r, Shape()); }, {"BroadcastToShape"}));
  Node v = P(g, F32, {3});
  Node p = BroadcastPrefix(v, {2, 4});
  EXPECT_EQ(p.shape(), Shape(F32, {2, 4, 3}));
  EXPECT_EQ(Attrs(p).axes, (std::vector<int64_t>{2}));
  EXPECT_EQ(BroadcastPrefix(v, {}), v);
  EXPECT_EQ(BroadcastPrefix(s, {5}).shape(), Shape(F32, {5}));
  EXPECT_TRUE(Throws([&] { BroadcastPrefix(v, {-1}); }, {"BroadcastPrefix"}));
}

TEST(OpsShape, ConcatenateStackSplit) {
  Graph g;
  Node a = P(g, F32, {2, 3}), b = P(g, F32, {4, 3}), c = P(g, F32, {2, 5});
  Node ab = Concatenate({a, b}, 0);
  EXPECT_EQ(ab.op(), OpType::Concatenate);
  EXPECT_EQ(ab.shape(), Shape(F32, {6, 3}));
  EXPECT_EQ(Concatenate({a, c}, -1).shape(), Shape(F32, {2, 8}));
  EXPECT_EQ(Concatenate({a}, 1), a);
  EXPECT_TRUE(Throws([&] { Concatenate({}, 0); }, {"Concatenate", "at least one"}));
  EXPECT_TRUE(Throws(
      [&] {
        Concatenate({a, b}, 1);
      },
      {"Concatenate", "(Float32)[2, 3]", "(Float32)[4, 3]", "axis 0"}));
  EXPECT_TRUE(Throws([&] { Concatenate({a, P(g, I32, {2, 3})}, 0); }, {"Concatenate", "dtypes"}));
  EXPECT_TRUE(Throws([&] { Concatenate({a, P(g, F32, {3})}, 0); }, {"Concatenate", "ranks"}));
  EXPECT_TRUE(Throws([&] { Concatenate({P(g, F32, {}), P(g, F32, {})}, 0); }, {"Concatenate", "scalars"}));
  EXPECT_TRUE(Throws([&] { Concatenate({a, a}, 2); }, {"Concatenate", "axis 2"}));

  Node st = Stack({a, a, a}, 0);
  EXPECT_EQ(st.shape(), Shape(F32, {3, 2, 3}));
  EXPECT_EQ(Stack({a, a}, -1).shape(), Shape(F32, {2, 3, 2}));
  EXPECT_EQ(Stack({P(g, F32, {}), P(g, F32, {})}, 0).shape(), Shape(F32, {2}));
  EXPECT_EQ(Stack({a}, 1).shape(), Shape(F32, {2, 1, 3}));
  EXPECT_TRUE(Throws([&] { Stack({a, b}, 0); }, {"Stack", "(Float32)[4, 3]", "equal shapes"}));
  EXPECT_TRUE(Throws([&] { Stack({}, 0); }, {"Stack"}));
  EXPECT_TRUE(Throws([&] { Stack({a, a}, 3); }, {"Stack", "axis 3"}));

  Node x = P(g, F32, {6, 2});
  std::vector<Node> parts = Split(x, 0, 3);
  ASSERT_EQ(parts.size(), 3u);
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].op(), OpType::Slice);
    EXPECT_EQ(parts[i].shape(), Shape(F32, {2, 2}));
    EXPECT_EQ(Attrs(parts[i]).starts, (std::vector<int64_t>{static_cast<int64_t>(2 * i), 0}));
  }
  EXPECT_EQ(Split(x, -1, 2)[1].shape(), Shape(F32, {6, 1}));
  EXPECT_EQ(Split(x, 0, 1)[0], x);
  EXPECT_TRUE(Throws([&] { Split(x, 0, 4); }, {"Split", "4 equal parts", "(Float32)[6, 2]"}));
  EXPECT_TRUE(Throws([&] { Split(x, 0, 0); }, {"Split"}));
}

TEST(OpsShape, Slice) {
  Graph g;
  Node v = P(g, F32, {5});
  EXPECT_EQ(Slice(v, {AxisRange(1, 3)}).shape(), Shape(F32, {2}));
  EXPECT_EQ(Slice(v, {AxisRange(-2)}).shape(), Shape(F32, {2}));
  EXPECT_EQ(Attrs(Slice(v, {AxisRange(-2)})).starts, (std::vector<int64_t>{3}));
  EXPECT_EQ(Slice(v, {AxisRange(0, -1)}).shape(), Shape(F32, {4}));
  EXPECT_EQ(Slice(v, {AxisRange().Stride(2)}).shape(), Shape(F32, {3}));
  EXPECT_EQ(Slice(v, {AxisRange(1).Stride(3)}).shape(), Shape(F32, {2}));
  EXPECT_EQ(Slice(v, {AxisRange(-10, 100)}), v);  // Clamped like Python: the whole axis.
  EXPECT_EQ(Slice(v, {AxisRange(3, 1)}).shape(), Shape(F32, {0}));
  EXPECT_EQ(Slice(v, {AxisRange(7)}).shape(), Shape(F32, {0}));
  Node m = P(g, F32, {5, 3});
  Node e = Slice(m, {AxisElem(-1)});
  EXPECT_EQ(e.shape(), Shape(F32, {1, 3}));
  EXPECT_EQ(Attrs(e).starts, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(Attrs(e).limits, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(Slice(m, {AxisRange(), AxisElem(1)}).shape(), Shape(F32, {5, 1}));
  EXPECT_EQ(Slice(m, {}), m);
  EXPECT_TRUE(Throws([&] { Slice(m, {AxisElem(5)}); }, {"Slice", "AxisElem(5)", "axis 0"}));
  EXPECT_TRUE(Throws([&] { Slice(m, {AxisElem(-6)}); }, {"Slice", "AxisElem(-6)"}));
  EXPECT_TRUE(Throws([&] { Slice(m, {AxisRange().Stride(0)}); }, {"Slice", "stride 0"}));
  EXPECT_TRUE(Throws(
      [&] {
        Slice(m, {AxisRange(), AxisRange(), AxisRange()});
      },
      {"Slice", "3 ranges", "2 axes"}));
}

TEST(OpsShape, PadReverseConvert) {
  Graph g;
  Node x = P(g, F32, {2, 3});
  Node fill = Scalar(g, F32, 0);
  Node p = Pad(x, fill, {{1, 2, 0}, {0, 0, 1}});
  EXPECT_EQ(p.op(), OpType::Pad);
  EXPECT_EQ(p.shape(), Shape(F32, {5, 5}));
  EXPECT_EQ(Pad(x, fill, {{-1, 0, 0}}).shape(), Shape(F32, {1, 3}));
  EXPECT_TRUE(Throws([&] { Pad(x, Scalar(g, I32, 0), {}); }, {"Pad", "scalar Float32", "(Int32)"}));
  EXPECT_TRUE(Throws([&] { Pad(x, P(g, F32, {1}), {}); }, {"Pad", "scalar"}));
  EXPECT_TRUE(Throws([&] { Pad(x, fill, {{}, {}, {}}); }, {"Pad", "3 padding entries"}));
  EXPECT_TRUE(Throws([&] { Pad(x, fill, {{-3, 0, 0}}); }, {"Pad", "negative"}));

  Node r = Reverse(x, {-1});
  EXPECT_EQ(r.op(), OpType::Reverse);
  EXPECT_EQ(Attrs(r).axes, (std::vector<int64_t>{1}));
  EXPECT_EQ(Reverse(x, {}), x);
  EXPECT_TRUE(Throws([&] { Reverse(x, {0, 0}); }, {"Reverse", "twice"}));

  EXPECT_EQ(ConvertDType(x, F32), x);
  Node c = ConvertDType(x, DType::Int8);
  EXPECT_EQ(c.op(), OpType::ConvertDType);
  EXPECT_EQ(c.shape(), Shape(DType::Int8, {2, 3}));
  EXPECT_TRUE(Throws([&] { ConvertDType(x, DType::Invalid); }, {"ConvertDType"}));
  EXPECT_EQ(Bitcast(x, I32).shape(), Shape(I32, {2, 3}));
  EXPECT_EQ(Bitcast(x, DType::Uint8).shape(), Shape(DType::Uint8, {2, 3, 4}));
  EXPECT_EQ(Bitcast(x, F32), x);
  EXPECT_TRUE(Throws([&] { Bitcast(x, DType::Float64); }, {"Bitcast", "last axis of size 2"}));
}

TEST(OpsShape, OneHot) {
  Graph g;
  Node idx = P(g, I32, {2, 3});
  Node h = OneHot(idx, 5, F32);
  EXPECT_EQ(h.shape(), Shape(F32, {2, 3, 5}));
  EXPECT_EQ(h.op(), OpType::ConvertDType);
  Node eq = h.operands()[0];
  EXPECT_EQ(eq.op(), OpType::Equal);
  EXPECT_EQ(eq.operands()[1].op(), OpType::Iota);
  EXPECT_EQ(Attrs(eq.operands()[1]).axis, 2);
  Node hb = OneHot(P(g, DType::Int64, {4}), 3, DType::Bool);
  EXPECT_EQ(hb.op(), OpType::Equal);
  EXPECT_EQ(hb.shape(), Shape(DType::Bool, {4, 3}));
  Node wide = OneHot(P(g, DType::Uint8, {4}), 300, DType::Int32);
  EXPECT_EQ(wide.shape(), Shape(I32, {4, 300}));
  EXPECT_EQ(wide.operands()[0].operands()[1].dtype(), DType::Int64);  // The iota widened.
  EXPECT_EQ(OneHot(P(g, I32, {}), 4, F32).shape(), Shape(F32, {4}));
  EXPECT_TRUE(Throws([&] { OneHot(P(g, F32, {2}), 3, F32); }, {"OneHot", "integers"}));
  EXPECT_TRUE(Throws([&] { OneHot(idx, -1, F32); }, {"OneHot", "depth"}));
}

// ---- Contractions -----------------------------------------------------------------------------------

TEST(OpsDot, Product) {
  Graph g;
  Node v = P(g, F32, {3}), m = P(g, F32, {2, 3}), n = P(g, F32, {3, 4});
  Node vv = Dot(v, v).Product();
  EXPECT_EQ(vv.op(), OpType::DotGeneral);
  EXPECT_EQ(vv.shape(), Shape(F32));
  EXPECT_EQ(Dot(m, v).Product().shape(), Shape(F32, {2}));
  EXPECT_EQ(Dot(v, n).Product().shape(), Shape(F32, {4}));
  EXPECT_EQ(Dot(m, n).Product().shape(), Shape(F32, {2, 4}));
  Node ba = P(g, F32, {5, 2, 3}), bb = P(g, F32, {5, 3, 4});
  Node bd = Dot(ba, bb).Product();
  EXPECT_EQ(bd.shape(), Shape(F32, {5, 2, 4}));
  EXPECT_EQ(Attrs(bd).lhs_batch, (std::vector<int64_t>{0}));
  EXPECT_EQ(Attrs(bd).lhs_contracting, (std::vector<int64_t>{2}));
  EXPECT_EQ(Attrs(bd).rhs_contracting, (std::vector<int64_t>{1}));
  EXPECT_EQ(Dot(P(g, F32, {0, 3}), n).Product().shape(), Shape(F32, {0, 4}));
  // API example 02: [2, 3]·[4, 5] must throw.
  EXPECT_TRUE(Throws(
      [&] {
        Dot(m, P(g, F32, {4, 5})).Product();
      },
      {"Dot", "(Float32)[2, 3]", "(Float32)[4, 5]"}));
  EXPECT_TRUE(Throws([&] { Dot(ba, n).Product(); }, {"Dot", "(Float32)[5, 2, 3]", "MatMul"}));
  EXPECT_TRUE(Throws([&] { Dot(ba, P(g, F32, {6, 3, 4})).Product(); }, {"Dot", "batch axis 0"}));
  EXPECT_TRUE(Throws([&] { Dot(v, P(g, DType::Float64, {3})).Product(); }, {"Dot", "different dtypes"}));
  EXPECT_TRUE(Throws([&] { Dot(P(g, F32, {}), v).Product(); }, {"Dot", "rank 1"}));
  EXPECT_TRUE(Throws([&] { Dot(v, Node()).Product(); }, {"Dot", "invalid"}));
}

TEST(OpsDot, GeneralAndDotProduct) {
  Graph g;
  Node a = P(g, F32, {5, 2, 3}), b = P(g, F32, {5, 4, 3});
  Node d = Dot(a, b).General({-1}, {0}, {2}, {0});
  EXPECT_EQ(d.shape(), Shape(F32, {5, 2, 4}));
  EXPECT_EQ(Attrs(d).lhs_contracting, (std::vector<int64_t>{2}));
  EXPECT_EQ(Dot(a, b).General({}, {}, {}, {}).shape(), Shape(F32, {5, 2, 3, 5, 4, 3}));
  EXPECT_TRUE(Throws([&] { Dot(a, b).General({2}, {}, {}, {}); }, {"Dot.General", "contracting"}));
  EXPECT_TRUE(
      Throws([&] { Dot(a, b).General({1}, {}, {1}, {}); }, {"Dot.General", "contracting dimensions"}));
  EXPECT_TRUE(Throws([&] { Dot(a, b).General({3}, {}, {2}, {}); }, {"Dot.General", "axis 3"}));

  Node v = P(g, F32, {3});
  EXPECT_EQ(DotProduct(v, v).shape(), Shape(F32));
  Node m = P(g, F32, {2, 3});
  Node dp = DotProduct(m, m);
  EXPECT_EQ(dp.shape(), Shape(F32, {2}));
  EXPECT_EQ(Attrs(dp).lhs_batch, (std::vector<int64_t>{0}));
  EXPECT_TRUE(Throws([&] { DotProduct(v, P(g, F32, {4})); }, {"DotProduct", "(Float32)[3]", "(Float32)[4]"}));
  EXPECT_TRUE(Throws([&] { DotProduct(P(g, F32, {}), P(g, F32, {})); }, {"DotProduct"}));
}

TEST(OpsDot, MatMul) {
  Graph g;
  Node m = P(g, F32, {2, 3}), n = P(g, F32, {3, 4}), v = P(g, F32, {3});
  EXPECT_EQ(MatMul(m, n).shape(), Shape(F32, {2, 4}));
  EXPECT_EQ(MatMul(v, n).shape(), Shape(F32, {4}));
  EXPECT_EQ(MatMul(m, v).shape(), Shape(F32, {2}));
  EXPECT_EQ(MatMul(v, v).shape(), Shape(F32));
  // Batched on the left only: one DotGeneral, no broadcast.
  Node x = P(g, F32, {5, 2, 3});
  const int broadcasts = Count(g, OpType::BroadcastInDim);
  Node xn = MatMul(x, n);
  EXPECT_EQ(xn.op(), OpType::DotGeneral);
  EXPECT_EQ(xn.shape(), Shape(F32, {5, 2, 4}));
  EXPECT_EQ(Count(g, OpType::BroadcastInDim), broadcasts);
  // Batched on the right: the left operand is broadcast over the batch.
  Node mb = MatMul(m, P(g, F32, {5, 3, 4}));
  EXPECT_EQ(mb.shape(), Shape(F32, {5, 2, 4}));
  EXPECT_EQ(mb.operands()[0].op(), OpType::BroadcastInDim);
  EXPECT_EQ(MatMul(P(g, F32, {7, 1, 2, 3}), P(g, F32, {5, 3, 4})).shape(), Shape(F32, {7, 5, 2, 4}));
  EXPECT_EQ(MatMul(P(g, F32, {1, 2, 3}), P(g, F32, {6, 3, 4})).shape(), Shape(F32, {6, 2, 4}));
  EXPECT_EQ(MatMul(v, P(g, F32, {5, 3, 2})).shape(), Shape(F32, {5, 2}));
  EXPECT_EQ(MatMul(x, v).shape(), Shape(F32, {5, 2}));
  Node same = MatMul(x, P(g, F32, {5, 3, 4}));
  EXPECT_EQ(same.operands()[0], x);
  EXPECT_TRUE(Throws(
      [&] {
        MatMul(m, P(g, F32, {4, 5}));
      },
      {"MatMul", "(Float32)[2, 3]", "(Float32)[4, 5]"}));
  EXPECT_TRUE(Throws(
      [&] {
        MatMul(P(g, F32, {2, 2, 3}), P(g, F32, {3, 3, 4}));
      },
      {"MatMul", "batch", "2 and 3"}));
  EXPECT_TRUE(Throws([&] { MatMul(P(g, F32, {}), m); }, {"MatMul", "scalars"}));
  EXPECT_TRUE(Throws([&] { MatMul(m, P(g, I32, {3, 4})); }, {"MatMul", "different dtypes"}));
}

TEST(OpsDot, Einsum) {
  Graph g;
  Node a = P(g, F32, {2, 3}), b = P(g, F32, {3, 4});
  Node ik = Einsum("ij,jk->ik", a, b);
  EXPECT_EQ(ik.op(), OpType::DotGeneral);
  EXPECT_EQ(ik.shape(), Shape(F32, {2, 4}));
  Node ki = Einsum("ij,jk->ki", a, b);
  EXPECT_EQ(ki.op(), OpType::Transpose);
  EXPECT_EQ(ki.shape(), Shape(F32, {4, 2}));
  Node ba = P(g, F32, {5, 2, 3}), bb = P(g, F32, {5, 3, 4});
  EXPECT_EQ(Einsum("bij,bjk->bik", ba, bb).shape(), Shape(F32, {5, 2, 4}));
  EXPECT_EQ(Einsum("bij, bjk -> kbi", ba, bb).shape(), Shape(F32, {4, 5, 2}));
  Node v = P(g, F32, {3});
  EXPECT_EQ(Einsum("i,i->", v, v).shape(), Shape(F32));
  Node x = P(g, F32, {5, 2}), y = P(g, F32, {5, 3});
  Node outer = Einsum("bi,bj->bij", x, y);
  EXPECT_EQ(outer.shape(), Shape(F32, {5, 2, 3}));
  EXPECT_EQ(outer.op(), OpType::DotGeneral);
  EXPECT_EQ(Einsum("ij,kl->ijkl", a, b).shape(), Shape(F32, {2, 3, 3, 4}));
  EXPECT_EQ(Einsum("bi,bj->jib", x, y).shape(), Shape(F32, {3, 2, 5}));
  // A label in one operand only and not in the output is summed first.
  Node summed = Einsum("ij,j->", a, v);
  EXPECT_EQ(summed.shape(), Shape(F32));
  EXPECT_EQ(summed.operands()[0].op(), OpType::ReduceSum);
  EXPECT_EQ(Einsum("ij,k->ik", a, P(g, F32, {7})).shape(), Shape(F32, {2, 7}));
}

TEST(OpsDot, EinsumErrors) {
  Graph g;
  Node a = P(g, F32, {2, 3}), b = P(g, F32, {3, 4});
  EXPECT_TRUE(Throws([&] { Einsum("ij,jk", a, b); }, {"Einsum(\"ij,jk\")", "->"}));
  EXPECT_TRUE(Throws([&] { Einsum("ij->ij", a, b); }, {"Einsum(\"ij->ij\")", "two operands"}));
  EXPECT_TRUE(Throws([&] { Einsum("ij,jk,kl->il", a, b); }, {"two operands"}));
  EXPECT_TRUE(Throws([&] { Einsum("i1,jk->ik", a, b); }, {"Einsum(\"i1,jk->ik\")", "'1'"}));
  EXPECT_TRUE(Throws([&] { Einsum("...j,jk->ik", a, b); }, {"\"...\""}));
  EXPECT_TRUE(Throws([&] { Einsum("ii,jk->ik", P(g, F32, {3, 3}), b); }, {"'i'", "repeats", "traces"}));
  EXPECT_TRUE(Throws([&] { Einsum("ij,jk->ii", a, b); }, {"'i'", "repeats"}));
  EXPECT_TRUE(Throws([&] { Einsum("ijk,jk->ik", a, b); }, {"operand 0", "\"ijk\"", "3 labels"}));
  EXPECT_TRUE(Throws([&] { Einsum("ij,jk->iz", a, b); }, {"'z'", "no operand"}));
  EXPECT_TRUE(Throws([&] { Einsum("ij,kj->ik", a, b); }, {"Einsum(\"ij,kj->ik\")", "'j'", "size 3", "4"}));
  EXPECT_TRUE(Throws([&] { Einsum("ij,jk->ik", a, P(g, I32, {3, 4})); }, {"Einsum", "different dtypes"}));
  EXPECT_TRUE(Throws([&] { Einsum("ij,jk->ik", Node(), b); }, {"Einsum", "invalid"}));
}

// ---- Execution smoke tests (the reference backend) -----------------------------------------------
// A few composites run end to end to check their lowering; the ops' numerics are tested with the
// backends.

class OpsExecSmoke : public ::testing::Test {
 protected:
  template <typename Fn, typename... Args>
  std::string Run(Fn&& fn, Args&&... args) {
    Exec exec = NewExec(compute::NewWithConfig("ref"), std::forward<Fn>(fn));
    return exec.Call1(std::forward<Args>(args)...).ToString();
  }
  using V = std::vector<float>;
  using M = std::vector<V>;
  const M a_{{1, 2, 3}, {4, 5, 6}};
  const M b_{{1, 0}, {0, 1}, {1, 1}};
};

TEST_F(OpsExecSmoke, Contractions) {
  EXPECT_EQ(Run([](Node x, Node y) { return Sqrt(ReduceAllSum(Square(Sub(x, y)))); }, V{1, 2}, V{4, 6}),
            "float32(5)");
  EXPECT_EQ(Run([](Node x, Node y) { return MatMul(x, y); }, a_, b_), "[2][2]float32{{4, 5}, {10, 11}}");
  EXPECT_EQ(Run([](Node x, Node y) { return Einsum("ij,jk->ki", x, y); }, a_, b_),
            "[2][2]float32{{4, 10}, {5, 11}}");
  EXPECT_EQ(Run([](Node x, Node y) { return Einsum("ij,j->", x, y); }, a_, V{1, 1, 1}), "float32(21)");
  EXPECT_EQ(Run([](Node x, Node y) { return Dot(x, y).Product(); }, a_, V{1, 1, 1}), "[2]float32{6, 15}");
  EXPECT_EQ(Run([](Node x, Node y) { return MatMul(x, y); }, V{1, 1, 1}, std::vector<M>{b_, b_}),
            "[2][2]float32{{2, 2}, {2, 2}}");
}

TEST_F(OpsExecSmoke, Reductions) {
  EXPECT_EQ(Run([](Node x) { return ReduceLogSumExp(x, {1}); }, M{{-INFINITY, -INFINITY}, {0, 0}}),
            "[2]float32{-Inf, 0.6931472}");
  EXPECT_EQ(Run([](Node x) { return ReduceVariance(x, {1}); }, a_), "[2]float32{0.6666667, 0.6666667}");
  EXPECT_EQ(Run([](Node x) { return ReduceMean(x, {0}); }, a_), "[3]float32{2.5, 3.5, 4.5}");
  const std::vector<std::vector<bool>> mask{{true, false, true}};
  EXPECT_EQ(Run([](Node x, Node m) { return MaskedReduceMax(x, m, {1}); }, a_, mask), "[2]float32{3, 6}");
  EXPECT_EQ(Run([](Node x, Node m) { return MaskedReduceMean(x, m, {1}); }, a_, mask), "[2]float32{2, 5}");
}

TEST_F(OpsExecSmoke, ShapeOps) {
  EXPECT_EQ(Run(
                [](Node x) {
                  return Slice(x, {AxisRange(), AxisRange(-2)});
                },
                a_),
            "[2][2]float32{{2, 3}, {5, 6}}");
  EXPECT_EQ(Run([](Node x) { return OneHot(x, 4, DType::Float32); }, std::vector<int32_t>{0, 3, 1}),
            "[3][4]float32{{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 1, 0, 0}}");
  EXPECT_EQ(Run(
                [](Node x) {
                  return Pad(x, ScalarLike(x, 9), {{1, 0, 0}, {0, 1, 1}});
                },
                a_),
            "[3][6]float32{{9, 9, 9, 9, 9, 9}, {1, 9, 2, 9, 3, 9}, {4, 9, 5, 9, 6, 9}}");
  EXPECT_EQ(Run([](Node x, Node y) { return x + y; }, M{{1}, {2}}, M{{10, 20, 30}}),
            "[2][3]float32{{11, 21, 31}, {12, 22, 32}}");
  EXPECT_EQ(Run([](Node x) { return Stack({x, x * 2}, -1); }, V{1, 2}), "[2][2]float32{{1, 2}, {2, 4}}");
}

}  // namespace
}  // namespace kiln::graph
