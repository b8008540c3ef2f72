// GoMLX's names beside kiln's: each alias builds what kiln's own function builds (the same
// values on every backend), the hint-taking forms ignore their hints, ExecOnce runs a function
// once, and the misuse of the new compositions is a kiln::Error naming the function.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln::graph {
namespace {

using kiln::test::Throws;

/// Runs fn on every registered backend and checks all give `want` (as doubles).
template <typename Fn>
void ExpectOnEveryBackend(Fn fn, const std::vector<Tensor>& inputs, const std::vector<double>& want) {
  kiln::test::ForEachBackend([&](const compute::BackendPtr& backend) {
    std::vector<Tensor> out = ExecOnce(backend, fn, inputs);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].ToDoubles(), want) << backend->Name();
  });
}

TEST(GoMLXNames, AliasesComputeWhatKilnsFunctionsDo) {
  const Tensor x = Tensor::FromValue(std::vector<float>{3, -1, 2, 0});
  const Tensor y = Tensor::FromValue(std::vector<float>{1, 1, 5, 0});
  // Each pair: GoMLX's name, kiln's; the difference of their results must be all zeros.
  ExpectOnEveryBackend(
      [](const std::vector<Node>& p) {
        Node a = p[0], b = p[1];
        Graph& g = a.graph();
        std::vector<Node> diffs = {
            ConvertDType(LessThan(a, b), DType::Float32) - ConvertDType(Less(a, b), DType::Float32),
            ConvertDType(GreaterThan(a, b), DType::Float32) - ConvertDType(Greater(a, b), DType::Float32),
            Logistic(a) - Sigmoid(a),
            Log1P(b) - Log1p(b),
            Mod(a, AddScalar(b, 1)) - Rem(a, AddScalar(b, 1)),
            Inverse(AddScalar(b, 1)) - Reciprocal(AddScalar(b, 1)),
            ReduceAllMultiply(a) - ReduceAllProduct(a),
            MaskedReduceAllMean(a, Greater(b, ScalarLike(b, 0))) -
                MaskedReduceMean(a, Greater(b, ScalarLike(b, 0))),
            MaskedReduceAllMin(a, Greater(b, ScalarLike(b, 0))) -
                MaskedReduceMin(a, Greater(b, ScalarLike(b, 0))),
            ReshapeWithShape(a, Shape(DType::Float32, {2, 2})) - Reshape(a, {2, 2}),
            TransposeAllDims(Reshape(a, {2, 2}), {1, 0}) - TransposeAllAxes(Reshape(a, {2, 2}), {1, 0}),
            ExpandDims(a, {0}) - InsertAxes(a, {0}),
            ConvertType(a, DType::Float32) - a,
            ConstAs(a, std::vector<int>{1, 2, 3, 4}) - Const(g, std::vector<float>{1, 2, 3, 4}),
            ConstTensor(g, Tensor::FromValue(2.5f)) - Scalar(g, DType::Float32, 2.5),
            Gather(a, Const(g, std::vector<std::vector<int32_t>>{{1}, {3}}), true) -
                Gather(a, Const(g, std::vector<std::vector<int32_t>>{{1}, {3}})),
            ScatterUpdate(a, Const(g, std::vector<std::vector<int32_t>>{{0}}),
                          Const(g, std::vector<float>{7}), true, true) -
                ScatterUpdate(a, Const(g, std::vector<std::vector<int32_t>>{{0}}),
                              Const(g, std::vector<float>{7})),
            OptimizationBarrier(a) - OptimizationBarriers({a})[0],
            DotGeneral(a, {0}, {}, b, {0}, {}) - DotProduct(a, b),
            Dot(Reshape(a, {2, 2}), Reshape(b, {2, 2})).MatMul() -
                MatMul(Reshape(a, {2, 2}), Reshape(b, {2, 2})),
        };
        Node total = ScalarLike(a, 0);
        for (Node d : diffs) total = total + ReduceAllSum(Abs(d));
        return total;
      },
      {x, y}, {0});
}

TEST(GoMLXNames, LogicalAliases) {
  ExpectOnEveryBackend(
      [](const std::vector<Node>& p) {
        Node a = Greater(p[0], ScalarLike(p[0], 0)), b = Greater(p[1], ScalarLike(p[1], 0));
        return ConvertDType(Or(And(a, b), Not(a)), DType::Int32);
      },
      {Tensor::FromValue(std::vector<float>{1, 1, -1}), Tensor::FromValue(std::vector<float>{1, -1, 1})},
      {1, 0, 1});
}

TEST(GoMLXNames, BitShiftAmountTakesXsDType) {
  // GoMLX converts the shift amount to x's dtype.
  ExpectOnEveryBackend(
      [](Node x, Node n) { return BitwiseShiftLeft(x, n); },
      {Tensor::FromValue(std::vector<uint16_t>{1, 3}), Tensor::FromValue(std::vector<int32_t>{4, 1})},
      {16, 6});
}

TEST(GoMLXNames, RNGStateNames) {
  const Tensor t = RNGStateFromSeed(uint64_t{7});
  EXPECT_EQ(t.ToVector<uint64_t>(), (std::vector<uint64_t>{7, 0, 0}));
  EXPECT_EQ(RNGState().shape(), RNGStateShape());
  // Two OS-seeded states differ (a chance of 2^-64 of a false failure).
  EXPECT_NE(RNGState().ToVector<uint64_t>(), RNGState().ToVector<uint64_t>());
  Graph g;
  EXPECT_EQ(RNGStateFromSeedForGraph(g, 7).shape(), RNGStateShape());
  EXPECT_EQ(RNGStateForGraph(g).shape(), RNGStateShape());
}

TEST(GoMLXNames, ExecOnceRunsEveryOutput) {
  std::vector<Tensor> out = ExecOnce(
      kiln::test::Backend("ref"),
      [](Node a) {
        return std::vector<Node>{a + 1.0f, a * 2.0f};
      },
      Tensor::FromValue(std::vector<float>{1, 2}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(out[1].ToVector<float>(), (std::vector<float>{2, 4}));
}

TEST(GoMLXNames, ConvBuilderSpellings) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {1, 6, 6, 2})),
       k = g.Parameter(Shape(DType::Float32, {3, 3, 2, 4}));
  EXPECT_EQ(Convolve(x, k).NoPadding().Done().shape(), Convolve(x, k).PadValid().Done().shape());
  EXPECT_EQ(Convolve(x, k).StridePerAxis({2, 1}).PaddingPerDim({{1, 1}, {0, 2}}).Done().shape(),
            Shape(DType::Float32, {1, 3, 6, 4}));
  EXPECT_EQ(Convolve(x, k).DilationPerAxis({2, 1}).Done().shape(), Shape(DType::Float32, {1, 2, 4, 4}));
  EXPECT_EQ(Convolve(x, k).InputDilationPerAxis({2, 1}).Done().shape(), Shape(DType::Float32, {1, 9, 4, 4}));
  Node xf = g.Parameter(Shape(DType::Float32, {1, 2, 6, 6})),
       kf = g.Parameter(Shape(DType::Float32, {4, 1, 3, 3}));
  EXPECT_EQ(
      Convolve(xf, kf).ChannelsAxis(images::ChannelsFirst).FeatureGroupCount(2).PadSame().Done().shape(),
      Shape(DType::Float32, {1, 4, 6, 6}));
  EXPECT_EQ(MaxPool(x)
                .ChannelsAxis(images::ChannelsLast)
                .WindowPerAxis({2, 3})
                .StridePerAxis({2, 3})
                .Done()
                .shape(),
            Shape(DType::Float32, {1, 3, 2, 2}));
  EXPECT_EQ(MeanPool(x).Window(2).NoPadding().Done().shape(), Shape(DType::Float32, {1, 3, 3, 2}));
  EXPECT_EQ(Interpolate(x, {12, 12}).AlignCorner(true).Done().shape(), Shape(DType::Float32, {1, 12, 12, 2}));
}

TEST(GoMLXNames, FunctionsAndClosuresCheckTheirUse) {
  Graph g("main");
  Node x = g.Parameter(Shape(DType::Float32, {3})), i = g.Parameter(Shape(DType::Int32, {3}));
  Function f = NewFunction(g, "twice", [](Graph& fg) {
    return std::vector<Node>{Parameter(fg, "v", Shape(DType::Float32, {3})) * 2.0f};
  });
  EXPECT_EQ(f.Name(), "twice");
  EXPECT_FALSE(f.IsClosure());
  EXPECT_EQ(f.ParameterShapes(), (std::vector<Shape>{Shape(DType::Float32, {3})}));
  EXPECT_EQ(g.NumParameters(), 2);  // Making and calling a function adds no graph input.
  EXPECT_EQ(f.Call({x})[0].shape(), x.shape());
  EXPECT_EQ(g.NumParameters(), 2);
  EXPECT_TRUE(Throws([&] { f.Call({i}); }, {"twice", "declared", "Int32"}));
  EXPECT_TRUE(Throws([&] { f.Call({x, x}); }, {"twice", "takes 1 inputs, called with 2"}));
  // A function cannot use the enclosing graph's nodes (GoMLX's rule); a closure given to SortFunc can.
  EXPECT_TRUE(Throws(
      [&] {
        NewFunction(g, "captures",
                    [&](Graph& fg) { return std::vector<Node>{x + Parameter(fg, "v", x.shape())}; });
      },
      {"main"}));
  Function cmp = NewClosure(g, [&](Graph& cg) {
    Node l = Parameter(cg, "l", Shape(DType::Float32, {})), r = Parameter(cg, "r", Shape(DType::Float32, {}));
    return std::vector<Node>{LessThan(l * ReduceSum(x), r * ReduceSum(x))};
  });
  EXPECT_TRUE(cmp.IsClosure());
  EXPECT_TRUE(Throws([&] { cmp.Call({x, x}); }, {"closure", "cannot be called directly"}));
  EXPECT_EQ(SortFunc(cmp, 0, true, {x})[0].shape(), x.shape());
  EXPECT_TRUE(Throws([&] { SortFunc(f, 0, true, {x}); }, {"SortFunc", "closure"}));
  EXPECT_TRUE(Throws(
      [&] {
        SortFunc(cmp, 0, true, {x, i});
      },
      {"closure", "declares 2 parameters", "4 inputs"}));
  Function not_elementwise = NewClosure(g, [](Graph& cg) {
    Node l = Parameter(cg, "l", Shape(DType::Float32, {})), r = Parameter(cg, "r", Shape(DType::Float32, {}));
    return std::vector<Node>{ReduceLogicalAnd(Less(l, r))};
  });
  EXPECT_TRUE(Throws([&] { SortFunc(not_elementwise, 0, true, {x}); }, {"SortFunc", "elementwise"}));
  Function vector_params = NewClosure(g, [](Graph& cg) {
    Node l = Parameter(cg, "l", Shape(DType::Float32, {3})),
         r = Parameter(cg, "r", Shape(DType::Float32, {3}));
    return std::vector<Node>{Less(l, r)};
  });
  EXPECT_TRUE(Throws([&] { SortFunc(vector_params, 0, true, {x}); }, {"scalars"}));
}

TEST(GoMLXNames, MisuseNamesTheFunction) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3})), i = g.Parameter(Shape(DType::Int32, {2, 3}));
  EXPECT_TRUE(Throws([&] { ShiftWithScalar(x, 1, ShiftDirLeft, 4, 0); }, {"ShiftWithScalar", "4"}));
  EXPECT_TRUE(Throws([&] { ShiftWithValue(x, 0, ShiftDirLeft, 1, i); }, {"ShiftWithValue", "dtype"}));
  EXPECT_TRUE(Throws([&] { Infinity(g, DType::Float32, 0); }, {"Infinity", "sign"}));
  EXPECT_TRUE(Throws([&] { L2Norm(i); }, {"L2Norm", "float"}));
  EXPECT_TRUE(
      Throws([&] { CosineSimilarity(x, Transpose(x, 0, 1), 0); }, {"CosineSimilarity", "same shape"}));
  EXPECT_TRUE(Throws([&] { CrossCosineSimilarity(x, x, 1, 1); }, {"CrossCosineSimilarity", "differ"}));
  EXPECT_TRUE(Throws([&] { IndicesForShape(g, Shape(DType::Float32)); }, {"IndicesForShape"}));
  EXPECT_TRUE(Throws([&] { TakeLowerTriangular(Reshape(x, {6}), 0); }, {"TakeLowerTriangular", "rank"}));
  EXPECT_TRUE(Throws([&] { ExpandAndBroadcast(x, {2, 3}, {0}); }, {"ExpandAndBroadcast"}));
  EXPECT_TRUE(Throws([&] { ExpandAndBroadcast(x, {2, 4, 3}, {2}); }, {"ExpandAndBroadcast", "must be 1"}));
  EXPECT_TRUE(Throws([&] { NormalizeIndices(x, x, 0); }, {"NormalizeIndices", "integer"}));
  EXPECT_TRUE(Throws(
      [&] {
        ReshapeWithShape(x, Shape(DType::Int32, {3, 2}));
      },
      {"ReshapeWithShape", "dtype"}));
  EXPECT_TRUE(Throws([&] { MakeRagged2D(2, x, i); }, {"MakeRagged2D"}));
  EXPECT_TRUE(
      Throws([&] { MakeRagged2D(2, Reshape(x, {6}), Reshape(x, {6})); }, {"MakeRagged2D", "integer"}));
  EXPECT_TRUE(Throws([&] { ConcatPool(x).Window(2).Done(); }, {"ConcatPool", "rank"}));
  EXPECT_TRUE(Throws(
      [&] {
        MaxPool(Reshape(x, {1, 2, 3})).Window(2).PaddingPerDim({{0, 1}, {0, 1}}).Done();
      },
      {"MaxPool", "PaddingPerDim"}));
}

}  // namespace
}  // namespace kiln::graph
