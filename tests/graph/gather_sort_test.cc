// Tests of the gather/scatter, dynamic slice, sort, scan and softmax functions
// (kiln/graph/gather.h, kiln/graph/sort.h): result shapes, every error path, and spot checks of
// their execution on the reference backend with hand-computed values, hostile indices included.

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

using kiln::test::Throws;

Node P(Graph& g, DType dtype, std::vector<int64_t> dims) {
  return g.Parameter(Shape(dtype, std::move(dims)));
}

compute::BackendPtr Ref() {
  static compute::BackendPtr backend = compute::NewWithConfig("ref");
  return backend;
}

template <typename T>
Tensor T1(std::vector<int64_t> dims, const std::vector<T>& v) {
  return Tensor::FromFlat(Shape(DTypeOf<T>, std::move(dims)), v);
}

// Runs fn on `inputs` and returns the outputs.
std::vector<Tensor> RunGraph(const std::function<std::vector<Node>(const std::vector<Node>&)>& fn,
                             const std::vector<Tensor>& inputs) {
  Exec exec = NewExec(Ref(), [fn](const std::vector<Node>& p) { return fn(p); });
  return exec.Call(inputs);
}

// ---- Shapes and errors --------------------------------------------------------------------------

TEST(GatherShapes, GatherAndSlices) {
  Graph g;
  Node x = P(g, F32, {5, 3, 2});
  EXPECT_EQ(Gather(x, P(g, I32, {4, 1})).shape(), Shape(F32, {4, 3, 2}));
  EXPECT_EQ(Gather(x, P(g, DType::Uint8, {2, 7, 2})).shape(), Shape(F32, {2, 7, 2}));
  EXPECT_EQ(Gather(x, P(g, I32, {3})).shape(), Shape(F32, {}));
  EXPECT_EQ(Gather(x, P(g, I32, {0})).shape(), Shape(F32, {5, 3, 2}));
  EXPECT_EQ(GatherSlices(x, {1}, P(g, DType::Int64, {6, 1}), {2}).shape(), Shape(F32, {6, 5, 2, 2}));
  EXPECT_EQ(GatherSlices(x, {2, 0}, P(g, I32, {2}), {1, 3}).shape(), Shape(F32, {3, 3, 1}));
  Node gg = GatherGeneral(x, P(g, I32, {4}), 1, {0, 1}, {0}, {0}, {1, 3, 2});
  EXPECT_EQ(gg.shape(), Shape(F32, {3, 2, 4}));
  EXPECT_EQ(gg.op(), OpType::Gather);
}

TEST(GatherShapes, Errors) {
  Graph g;
  Node x = P(g, F32, {5, 3});
  EXPECT_TRUE(Throws([&] { Gather(x, P(g, F32, {2, 1})); }, {"Gather", "integer"}));
  EXPECT_TRUE(Throws([&] { Gather(x, P(g, I32, {})); }, {"Gather", "at least one axis"}));
  EXPECT_TRUE(Throws([&] { Gather(x, P(g, I32, {2, 3})); }, {"Gather", "length 3"}));
  EXPECT_TRUE(Throws([&] { Gather(P(g, F32, {0, 3}), P(g, I32, {2, 1})); }, {"Gather", "empty"}));
  Node idx = P(g, I32, {4});
  EXPECT_TRUE(Throws(
      [&] {
        GatherGeneral(x, idx, 2, {0}, {0}, {0}, {1, 3});
      },
      {"GatherGeneral", "index_vector_dim"}));
  EXPECT_TRUE(Throws([&] { GatherGeneral(x, idx, 1, {1}, {0}, {0, 1}, {1, 3}); }, {"start_index_map"}));
  EXPECT_TRUE(Throws(
      [&] {
        GatherGeneral(x, idx, 1, {1}, {0}, {2}, {1, 3});
      },
      {"start_index_map", "out of range"}));
  EXPECT_TRUE(Throws([&] { GatherGeneral(x, idx, 1, {1}, {0}, {0}, {1}); }, {"slice_sizes"}));
  EXPECT_TRUE(Throws([&] { GatherGeneral(x, idx, 1, {1}, {0}, {0}, {1, 4}); }, {"slice size 4"}));
  EXPECT_TRUE(Throws([&] { GatherGeneral(x, idx, 1, {1}, {0}, {0}, {2, 3}); }, {"collapsed axis 0"}));
  EXPECT_TRUE(Throws([&] { GatherGeneral(x, idx, 1, {1, 2}, {0}, {0}, {1, 3}); }, {"offset_dims"}));
  EXPECT_TRUE(Throws(
      [&] {
        GatherGeneral(x, idx, 1, {2}, {0}, {0}, {1, 3});
      },
      {"offset_dims", "out of range"}));
  EXPECT_TRUE(Throws([&] { GatherGeneral(x, idx, 1, {0, 3}, {}, {0}, {1, 3}); }, {"offset_dims"}));
  EXPECT_TRUE(Throws(
      [&] {
        GatherGeneral(x, idx, 1, {0, 1}, {1, 1}, {0}, {1, 1});
      },
      {"collapsed_slice_dims"}));
  EXPECT_TRUE(Throws([&] { GatherSlices(x, {0}, P(g, I32, {2, 2}), {1}); }, {"GatherSlices", "size 1"}));
  EXPECT_TRUE(Throws([&] { GatherSlices(x, {0}, P(g, I32, {2, 1}), {1, 2}); }, {"GatherSlices", "sizes"}));
  EXPECT_TRUE(Throws([&] { GatherSlices(x, {0}, P(g, I32, {2, 1}), {6}); }, {"GatherSlices", "size 6"}));
  EXPECT_TRUE(Throws([&] { GatherSlices(x, {2}, P(g, I32, {2, 1}), {1}); }, {"GatherSlices", "axis 2"}));
  EXPECT_TRUE(Throws(
      [&] {
        GatherSlices(x, {0}, P(g, DType::Bool, {2, 1}), {1});
      },
      {"GatherSlices", "integer"}));
}

TEST(ScatterShapes, ShapesAndErrors) {
  Graph g;
  Node x = P(g, F32, {5, 3});
  EXPECT_EQ(ScatterAdd(x, P(g, I32, {4, 1}), P(g, F32, {4, 3})).shape(), x.shape());
  EXPECT_EQ(ScatterUpdate(x, P(g, DType::Int8, {2, 2}), P(g, F32, {2})).shape(), x.shape());
  EXPECT_EQ(ScatterMax(x, P(g, I32, {1}), P(g, F32, {3})).op(), OpType::Scatter);
  EXPECT_EQ(Scatter(P(g, I32, {2, 1}), P(g, F32, {2, 3}), Shape(F32, {4, 3})).shape(), Shape(F32, {4, 3}));
  EXPECT_EQ(ScatterUpdate(P(g, DType::Bool, {3}), P(g, I32, {1, 1}), P(g, DType::Bool, {1})).shape(),
            Shape(DType::Bool, {3}));
  EXPECT_TRUE(Throws(
      [&] {
        ScatterAdd(x, P(g, F32, {4, 1}), P(g, F32, {4, 3}));
      },
      {"ScatterAdd", "integer"}));
  EXPECT_TRUE(
      Throws([&] { ScatterAdd(x, P(g, I32, {}), P(g, F32, {3})); }, {"ScatterAdd", "at least one axis"}));
  EXPECT_TRUE(Throws([&] { ScatterMin(x, P(g, I32, {4, 3}), P(g, F32, {4})); }, {"ScatterMin", "length 3"}));
  EXPECT_TRUE(Throws([&] { ScatterMax(x, P(g, I32, {4, 1}), P(g, F32, {4, 2})); }, {"ScatterMax", "[4, 3]"}));
  EXPECT_TRUE(Throws([&] { ScatterAdd(x, P(g, I32, {4, 1}), P(g, DType::Float64, {4, 3})); }, {"dtype"}));
  EXPECT_TRUE(Throws(
      [&] {
        ScatterAdd(P(g, DType::Bool, {3}), P(g, I32, {1, 1}), P(g, DType::Bool, {1}));
      },
      {"ScatterAdd", "numeric"}));
  EXPECT_TRUE(Throws(
      [&] {
        Scatter(P(g, I32, {2, 1}), P(g, F32, {2, 3}), Shape(DType::Int32, {4, 3}));
      },
      {"Scatter", "dtype"}));
}

TEST(ScatterShapes, PrimitiveRuleErrors) {
  using compute::InferShape;
  compute::OpAttributes at;
  at.reduce_kind = compute::ReduceKind::Set;
  at.scatter.index_vector_dim = 1;
  at.scatter.inserted_window_dims = {0};
  at.scatter.scatter_dims_to_operand_dims = {0};
  at.scatter.update_window_dims = {1};
  const Shape x(F32, {5, 3}), idx(I32, {4, 1}), up(F32, {4, 3});
  EXPECT_EQ(InferShape(OpType::Scatter, {x, idx, up}, at), x);
  auto bad = [&](compute::OpAttributes a, std::vector<Shape> in, const std::string& part) {
    return Throws([&] { InferShape(OpType::Scatter, in, a); }, {"Scatter", part});
  };
  {
    auto a = at;
    a.reduce_kind = compute::ReduceKind::Product;
    EXPECT_TRUE(bad(a, {x, idx, up}, "reduce_kind"));
    a.reduce_kind = compute::ReduceKind::Sum;
    a.scatter.index_vector_dim = 3;
    EXPECT_TRUE(bad(a, {x, idx, up}, "index_vector_dim"));
  }
  {
    auto a = at;
    a.scatter.scatter_dims_to_operand_dims = {0, 1};
    EXPECT_TRUE(bad(a, {x, idx, up}, "scatter_dims_to_operand_dims"));
    a.scatter.scatter_dims_to_operand_dims = {2};
    EXPECT_TRUE(bad(a, {x, idx, up}, "out of range"));
  }
  {
    auto a = at;
    a.scatter.inserted_window_dims = {};
    EXPECT_TRUE(bad(a, {x, idx, up}, "add up"));
    a.scatter.inserted_window_dims = {0};
    a.scatter.update_window_dims = {2};
    EXPECT_TRUE(bad(a, {x, idx, up}, "update_window_dims"));
  }
  EXPECT_TRUE(bad(at, {x, idx, Shape(F32, {4})}, "rank"));
  EXPECT_TRUE(bad(at, {x, idx, Shape(F32, {4, 4})}, "larger"));
  EXPECT_TRUE(bad(at, {x, idx, Shape(F32, {3, 3})}, "scatter axes"));
}

TEST(DynamicSliceShapes, ShapesAndErrors) {
  Graph g;
  Node x = P(g, F32, {5, 3});
  Node i = P(g, I32, {}), j = P(g, DType::Uint64, {});
  EXPECT_EQ(DynamicSlice(x, {i, j}, {2, 3}).shape(), Shape(F32, {2, 3}));
  EXPECT_EQ(DynamicUpdateSlice(x, P(g, F32, {1, 2}), {i, j}).shape(), x.shape());
  EXPECT_TRUE(Throws([&] { DynamicSlice(x, {i}, {2, 3}); }, {"DynamicSlice", "one start index"}));
  EXPECT_TRUE(Throws([&] { DynamicSlice(x, {i, j}, {6, 3}); }, {"DynamicSlice", "size 6"}));
  EXPECT_TRUE(Throws([&] { DynamicSlice(x, {i, j}, {-1, 3}); }, {"DynamicSlice"}));
  EXPECT_TRUE(Throws(
      [&] {
        DynamicSlice(x, {i, P(g, F32, {})}, {1, 1});
      },
      {"DynamicSlice", "integer scalar"}));
  EXPECT_TRUE(Throws(
      [&] {
        DynamicSlice(x, {i, P(g, I32, {1})}, {1, 1});
      },
      {"DynamicSlice", "integer scalar"}));
  EXPECT_TRUE(Throws([&] { DynamicUpdateSlice(x, P(g, F32, {1, 2}), {i}); }, {"DynamicUpdateSlice"}));
  EXPECT_TRUE(Throws(
      [&] {
        DynamicUpdateSlice(x, P(g, F32, {6, 2}), {i, j});
      },
      {"DynamicUpdateSlice", "larger"}));
  EXPECT_TRUE(Throws(
      [&] {
        DynamicUpdateSlice(x, P(g, I32, {1, 2}), {i, j});
      },
      {"DynamicUpdateSlice", "dtype"}));
  EXPECT_TRUE(Throws([&] { DynamicUpdateSlice(x, P(g, F32, {2}), {i, j}); }, {"DynamicUpdateSlice", "rank"}));
}

TEST(SortShapes, ShapesAndErrors) {
  Graph g;
  Node x = P(g, F32, {4, 3});
  EXPECT_EQ(ArgSort(x, 0).shape(), Shape(I32, {4, 3}));
  EXPECT_EQ(Sort(x, -1, false).shape(), x.shape());
  auto [v, i] = TopK(x, 2);
  EXPECT_EQ(v.shape(), Shape(F32, {4, 2}));
  EXPECT_EQ(i.shape(), Shape(I32, {4, 2}));
  EXPECT_EQ(BottomK(x, 1, 0).values.shape(), Shape(F32, {1, 3}));
  EXPECT_EQ(SortMany({x, P(g, DType::Int8, {4, 3})}, 0)[1].shape(), Shape(DType::Int8, {4, 3}));
  EXPECT_EQ(CumSum(P(g, DType::Uint16, {3}), 0, true).shape(), Shape(DType::Uint16, {3}));
  EXPECT_EQ(Softmax(x).shape(), x.shape());
  EXPECT_EQ(LogSoftmax(x, {0, 1}).shape(), x.shape());
  EXPECT_EQ(MaskedSoftmax(x, P(g, DType::Bool, {1, 3})).shape(), x.shape());
  EXPECT_TRUE(Throws([&] { ArgSort(x, 2); }, {"ArgSort", "axis 2"}));
  EXPECT_TRUE(Throws([&] { ArgSort(P(g, DType::Bool, {3}), 0); }, {"ArgSort", "numeric"}));
  EXPECT_TRUE(Throws([&] { Sort(P(g, F32, {}), 0); }, {"Sort", "scalar"}));
  EXPECT_TRUE(Throws([&] { TopK(x, 4); }, {"TopK", "k = 4"}));
  EXPECT_TRUE(Throws([&] { BottomK(x, -1); }, {"BottomK", "k = -1"}));
  EXPECT_TRUE(Throws([&] { SortMany({}, 0); }, {"SortMany"}));
  EXPECT_TRUE(Throws([&] { SortMany({x, P(g, F32, {3, 4})}, 0); }, {"SortMany", "dimensions"}));
  EXPECT_TRUE(Throws([&] { TakeAlongAxis(x, P(g, F32, {4, 3}), 0); }, {"TakeAlongAxis", "integer"}));
  EXPECT_TRUE(Throws([&] { TakeAlongAxis(x, P(g, I32, {4}), 0); }, {"TakeAlongAxis", "rank"}));
  EXPECT_TRUE(Throws([&] { TakeAlongAxis(x, P(g, I32, {2, 2}), 0); }, {"TakeAlongAxis", "axis 1"}));
  EXPECT_TRUE(Throws([&] { CumSum(x, -3); }, {"CumSum", "axis -3"}));
  EXPECT_TRUE(Throws([&] { CumSum(P(g, DType::Bool, {3}), 0); }, {"CumSum", "numeric"}));
  EXPECT_TRUE(Throws([&] { Softmax(P(g, I32, {3})); }, {"Softmax", "float"}));
  EXPECT_TRUE(Throws([&] { LogSoftmax(x, {2}); }, {"LogSoftmax", "axis 2"}));
  EXPECT_TRUE(Throws([&] { MaskedSoftmax(x, P(g, I32, {4, 3})); }, {"MaskedSoftmax", "Bool"}));
  EXPECT_TRUE(Throws([&] { MaskedSoftmax(x, P(g, DType::Bool, {3})); }, {"MaskedSoftmax", "rank"}));
  EXPECT_TRUE(Throws([&] { MaskedSoftmax(x, P(g, DType::Bool, {2, 3})); }, {"MaskedSoftmax"}));
}

// ---- Execution ----------------------------------------------------------------------------------

TEST(GatherRun, RowsWithHostileIndicesClamp) {
  const Tensor x = T1<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto gather = [](const std::vector<Node>& p) { return std::vector<Node>{Gather(p[0], p[1])}; };
  EXPECT_EQ(RunGraph(gather, {x, T1<int32_t>({4, 1}, {2, 0, -7, 99})})[0].ToVector<float>(),
            (std::vector<float>{5, 6, 1, 2, 1, 2, 5, 6}));
  EXPECT_EQ(RunGraph(gather, {x, T1<int64_t>({2, 2}, {INT64_MIN, INT64_MAX, 1, 1})})[0].ToVector<float>(),
            (std::vector<float>{2, 4}));
  EXPECT_EQ(RunGraph(gather, {x, T1<uint64_t>({2, 1}, {UINT64_MAX, 1})})[0].ToVector<float>(),
            (std::vector<float>{5, 6, 3, 4}));
  EXPECT_EQ(RunGraph(gather, {x, T1<int8_t>({2, 1}, {INT8_MIN, INT8_MAX})})[0].ToVector<float>(),
            (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(RunGraph(gather, {x, T1<uint32_t>({1, 1}, {UINT32_MAX})})[0].ToVector<float>(),
            (std::vector<float>{5, 6}));
}

TEST(GatherRun, SlicesClampToFit) {
  const Tensor x = T1<int32_t>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto fn = [](const std::vector<Node>& p) { return std::vector<Node>{GatherSlices(p[0], {1}, p[1], {3})}; };
  Tensor out = RunGraph(fn, {x, T1<int16_t>({3, 1}, {1, 2, INT16_MIN})})[0];
  EXPECT_EQ(out.shape(), Shape(I32, {3, 2, 3}));
  EXPECT_EQ(out.ToVector<int32_t>(),
            (std::vector<int32_t>{1, 2, 3, 5, 6, 7, 1, 2, 3, 5, 6, 7, 0, 1, 2, 4, 5, 6}));
}

TEST(ScatterRun, DuplicatesAndSkippedIndices) {
  const Tensor x = T1<float>({4}, {10, 20, 30, 40});
  const Tensor idx = T1<int32_t>({5, 1}, {1, 1, -1, 4, INT32_MIN});
  const Tensor up = T1<float>({5}, {1, 5, 100, 100, 100});
  auto run = [&](std::function<Node(Node, Node, Node)> f) {
    return RunGraph([f](const std::vector<Node>& p) { return std::vector<Node>{f(p[0], p[1], p[2])}; },
                    {x, idx, up})[0]
        .ToVector<float>();
  };
  EXPECT_EQ(run([](Node a, Node i, Node u) { return ScatterAdd(a, i, u); }),
            (std::vector<float>{10, 26, 30, 40}));
  EXPECT_EQ(run([](Node a, Node i, Node u) { return ScatterUpdate(a, i, u); }),
            (std::vector<float>{10, 5, 30, 40}));
  EXPECT_EQ(run([](Node a, Node i, Node u) { return ScatterMax(a, i, u); }),
            (std::vector<float>{10, 20, 30, 40}));
  EXPECT_EQ(run([](Node a, Node i, Node u) { return ScatterMin(a, i, u); }),
            (std::vector<float>{10, 1, 30, 40}));
  Tensor s = RunGraph(
      [](const std::vector<Node>& p) {
        return std::vector<Node>{Scatter(p[0], p[1], Shape(I32, {2, 2}))};
      },
      {T1<uint64_t>({3, 1}, {1, UINT64_MAX, 1}), T1<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6})})[0];
  EXPECT_EQ(s.ToVector<int32_t>(), (std::vector<int32_t>{0, 0, 6, 8}));
  // Integer sums wrap.
  Tensor w =
      RunGraph([](const std::vector<Node>& p) { return std::vector<Node>{ScatterAdd(p[0], p[1], p[2])}; },
               {T1<int8_t>({1}, {127}), T1<int8_t>({1, 1}, {0}), T1<int8_t>({1}, {1})})[0];
  EXPECT_EQ(w.ToVector<int8_t>(), (std::vector<int8_t>{-128}));
}

TEST(DynamicSliceRun, ClampsEveryIndexDType) {
  const Tensor x = T1<int16_t>({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  auto slice = [](const std::vector<Node>& p) {
    return std::vector<Node>{DynamicSlice(p[0], {p[1], p[2]}, {2, 2})};
  };
  EXPECT_EQ(
      RunGraph(slice, {x, Tensor::FromScalar(int8_t(-128)), Tensor::FromScalar(uint64_t(UINT64_MAX))})[0]
          .ToVector<int16_t>(),
      (std::vector<int16_t>{1, 2, 4, 5}));
  EXPECT_EQ(RunGraph(slice, {x, Tensor::FromScalar(INT32_MAX), Tensor::FromScalar(int64_t(INT64_MIN))})[0]
                .ToVector<int16_t>(),
            (std::vector<int16_t>{3, 4, 6, 7}));
  auto update = [](const std::vector<Node>& p) {
    return std::vector<Node>{DynamicUpdateSlice(p[0], p[1], {p[2], p[3]})};
  };
  EXPECT_EQ(RunGraph(update, {x, T1<int16_t>({1, 2}, {-1, -2}), Tensor::FromScalar(uint8_t(255)),
                              Tensor::FromScalar(int16_t(-5))})[0]
                .ToVector<int16_t>(),
            (std::vector<int16_t>{0, 1, 2, 3, 4, 5, -1, -2, 8}));
}

TEST(SortRun, StableWithNaNAndZeros) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = T1<float>({6}, {2, nan, -0.0f, 1, 0.0f, 2});
  auto fn = [](const std::vector<Node>& p) {
    return std::vector<Node>{ArgSort(p[0], 0), ArgSort(p[0], 0, /*ascending=*/false), Sort(p[0], 0)};
  };
  std::vector<Tensor> out = RunGraph(fn, {x});
  EXPECT_EQ(out[0].ToVector<int32_t>(), (std::vector<int32_t>{2, 4, 3, 0, 5, 1}));
  EXPECT_EQ(out[1].ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 5, 3, 2, 4}));
  std::vector<float> sorted = out[2].ToVector<float>();
  EXPECT_TRUE(std::signbit(sorted[0]));
  EXPECT_TRUE(std::isnan(sorted[5]));
  EXPECT_EQ(sorted[3], 2.0f);
}

TEST(SortRun, EmptyAxisGivesEmptyResults) {
  const Tensor x = Tensor::FromShape(Shape(DType::Float32, {2, 0}));
  auto fn = [](const std::vector<Node>& p) {
    return std::vector<Node>{Sort(p[0], 1), ArgSort(p[0], 1), TopK(p[0], 0, 1).values};
  };
  std::vector<Tensor> out = RunGraph(fn, {x});
  EXPECT_EQ(out[0].shape(), Shape(DType::Float32, {2, 0}));
  EXPECT_EQ(out[1].shape(), Shape(DType::Int32, {2, 0}));
  EXPECT_EQ(out[2].shape(), Shape(DType::Float32, {2, 0}));
}

TEST(SortRun, ManyTopKBottomKAlongAxes) {
  const Tensor x = T1<int32_t>({2, 3}, {3, 1, 3, 0, 5, 0});
  auto fn = [](const std::vector<Node>& p) {
    std::vector<Node> many = SortMany({p[0], p[1]}, 1, /*ascending=*/false);
    auto [tv, ti] = TopK(p[0], 2);
    auto [bv, bi] = BottomK(p[0], 1, 0);
    return std::vector<Node>{many[0], many[1], tv, ti, bv, bi};
  };
  std::vector<Tensor> out = RunGraph(fn, {x, T1<float>({2, 3}, {10, 11, 12, 13, 14, 15})});
  EXPECT_EQ(out[0].ToVector<int32_t>(), (std::vector<int32_t>{3, 3, 1, 5, 0, 0}));
  EXPECT_EQ(out[1].ToVector<float>(), (std::vector<float>{10, 12, 11, 14, 13, 15}));
  EXPECT_EQ(out[2].ToVector<int32_t>(), (std::vector<int32_t>{3, 3, 5, 0}));
  EXPECT_EQ(out[3].ToVector<int32_t>(), (std::vector<int32_t>{0, 2, 1, 0}));
  EXPECT_EQ(out[4].ToVector<int32_t>(), (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(out[5].ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 1}));
}

TEST(CumSumRun, ForwardReverseAndWrap) {
  auto fn = [](const std::vector<Node>& p) {
    return std::vector<Node>{CumSum(p[0], 1), CumSum(p[0], 0, true), CumSum(p[1], 0)};
  };
  std::vector<Tensor> out =
      RunGraph(fn, {T1<double>({2, 3}, {1, 2, 3, 4, 5, 6}), T1<uint8_t>({3}, {200, 100, 1})});
  EXPECT_EQ(out[0].ToVector<double>(), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(out[1].ToVector<double>(), (std::vector<double>{5, 7, 9, 4, 5, 6}));
  EXPECT_EQ(out[2].ToVector<uint8_t>(), (std::vector<uint8_t>{200, 44, 45}));
  // A leading -0 keeps its sign (the running sum starts from the identity -0).
  Tensor z = RunGraph([](const std::vector<Node>& p) { return std::vector<Node>{CumSum(p[0], 0)}; },
                      {T1<float>({2}, {-0.0f, -0.0f})})[0];
  EXPECT_TRUE(std::signbit(z.ToVector<float>()[1]));
}

TEST(SoftmaxRun, StableMaskedAndInfinite) {
  const float inf = std::numeric_limits<float>::infinity();
  auto fn = [](const std::vector<Node>& p) {
    return std::vector<Node>{Softmax(p[0]), LogSoftmax(p[0]), MaskedSoftmax(p[0], p[1])};
  };
  std::vector<Tensor> out =
      RunGraph(fn, {T1<float>({2, 2}, {1000, 1000, -inf, 0}), T1<bool>({2, 2}, {true, false, false, false})});
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{0.5f, 0.5f, 0, 1}));
  std::vector<float> log = out[1].ToVector<float>();
  EXPECT_NEAR(log[0], -std::log(2.0f), 1e-6);
  EXPECT_EQ(log[2], -inf);
  EXPECT_EQ(log[3], 0.0f);
  EXPECT_EQ(out[2].ToVector<float>(), (std::vector<float>{1, 0, 0, 0}));
}

}  // namespace
}  // namespace kiln::graph
