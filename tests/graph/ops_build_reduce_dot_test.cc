// Tests of the graph frontend's reductions (sums, means, LogSumExp, masked, ArgMax) and
// contractions (Dot, MatMul, Einsum) at build time: result shapes and dtypes, the primitives each
// function emits, and every error path with its message.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/ops_build_test_util.h"
#include "kiln/kiln.h"

namespace kiln::graph {
namespace {

using namespace ops_build_test;  // NOLINT

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

}  // namespace
}  // namespace kiln::graph
