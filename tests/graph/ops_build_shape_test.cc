// Tests of the graph frontend's shape ops (Reshape, Transpose, broadcasts, Concatenate, Slice, Pad,
// OneHot...) at build time, and a few composites run end to end on the reference backend.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops_build_test_util.h"
#include "kiln/kiln.h"

namespace kiln::graph {
namespace {

using namespace ops_build_test;  // NOLINT

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
  // Sizes whose product overflows are an error, not a wrapped-around count.
  EXPECT_TRUE(Throws([&] { Reshape(x, {int64_t{1} << 40, int64_t{1} << 40, -1}); }, {"Reshape", "overflow"}));
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
