// Dynamic shapes through graph::Exec and model::Exec on every backend with native dynamic shapes:
// one build serves every size, results equal the static build's, names are checked at run time,
// gradients flow through dynamic axes, and static-only backends fall back to building per shape.

#include <gtest/gtest.h>

#include <any>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

class DynamicShapesTest : public ::testing::TestWithParam<std::string> {
 protected:
  compute::BackendPtr backend_ = compute::NewWithConfig(GetParam());
};

using kiln::test::ErrorOf;

/// A [rows, cols] float tensor with values row * 10 + col - 7 (some negative).
Tensor Grid(int64_t rows, int64_t cols) {
  std::vector<float> v;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v.push_back(static_cast<float>(r * 10 + c) - 7.0f);
  return Tensor::FromFlat(Shape(DType::Float32, {rows, cols}), v);
}

void ExpectNear(const Tensor& got, const Tensor& want, float tol = 1e-5f) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<float> g = got.ToVector<float>(), w = want.ToVector<float>();
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

/// A function mixing the structural ops over a dynamic batch axis 0 and a dynamic axis 1.
std::vector<Node> Mixed(Node x) {
  Node soft = Softmax(x, {1});                                            // Reduce + broadcast back.
  Node centred = x - ExpandAxes(ReduceMean(x, {1}), {-1});                // Mean over a dynamic axis.
  Node joined = Concatenate({x, centred}, 1);                             // [batch, seq+seq]
  Node first = Slice(joined, {AxisRange(), AxisRange(0, 2)});             // A static range of it.
  Node flat = Reshape(x, {-1});                                           // [batch*seq]
  Node dot = Dot(x, Transpose(x, 0, 1)).Product();                        // [batch, batch]
  Node masked = Where(Greater(x, ScalarLike(x, 0.0f)), x, ZerosLike(x));  // Where, ZerosLike.
  Node tops = ReduceMax(x, {0});                                          // [seq]
  Node best = ConvertDType(TopKMask(x, 2, 1), DType::Float32);            // Two per row.
  Node top1 = TopK(x, 1, 1).values;                                       // [batch, 1]
  Node lifted = ExpandLeftToRank(x, 3);                                   // [1, batch, seq]
  return {soft,
          centred,
          joined,
          first,
          flat,
          dot,
          masked,
          tops,
          best,
          top1,
          lifted,
          DimensionSize(x, 0),
          DimensionSize(x, 1)};
}

TEST_P(DynamicShapesTest, OneBuildServesEverySizeAndMatchesTheStaticBuild) {
  Exec dynamic = NewExec(backend_, Mixed);
  dynamic.WithDynamicAxes({{"batch", "seq"}});
  Exec fixed = NewExec(backend_, Mixed);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 4}, {1, 2}, {5, 3}, {3, 4}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const Tensor x = Grid(rows, cols);
    std::vector<Tensor> got = dynamic.Call(x);
    std::vector<Tensor> want = fixed.Call(x);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i + 2 < got.size(); ++i) ExpectNear(got[i], want[i]);
    EXPECT_EQ(got[11].Item<int64_t>(), rows);
    EXPECT_EQ(got[12].Item<int64_t>(), cols);
  }
  EXPECT_EQ(dynamic.NumBuilds(), 1);
  EXPECT_EQ(fixed.NumBuilds(), 3);
}

TEST_P(DynamicShapesTest, ShapesKeepAxisNamesAndDeriveNamesForNewSizes) {
  std::vector<std::string> printed;
  Exec exec = NewExec(backend_, [&](Node x, Node y) -> std::vector<Node> {
    printed.push_back(x.shape().ToString());
    printed.push_back(Concatenate({x, y}, 1).shape().ToString());
    printed.push_back(Reshape(x, {-1}).shape().ToString());
    printed.push_back(
        DynamicReshape(x, {DimensionSpecFor(x, 0), StaticDim(1), InferredDim()}).shape().ToString());
    printed.push_back(
        Pad(x, Scalar(x.graph(), DType::Float32, 0), {{0, 0, 0}, {1, 2, 0}}).shape().ToString());
    printed.push_back(Slice(x, {AxisRange(), AxisRange(1)}).shape().ToString());
    printed.push_back(IotaLike(x, 1).shape().ToString());
    return {Concatenate({x, y}, 1)};
  });
  exec.WithDynamicAxes({{"batch", "seq"}, {"batch", ""}});
  Tensor out = exec.Call1(Grid(2, 3), Grid(2, 1));
  EXPECT_EQ(out.shape(), Shape(DType::Float32, {2, 4}));
  EXPECT_EQ(printed, (std::vector<std::string>{"(Float32)[batch, seq]", "(Float32)[batch, seq+1]",
                                               "(Float32)[batch*seq]", "(Float32)[batch, 1, seq]",
                                               "(Float32)[batch, seq+3]", "(Float32)[batch, seq[1::1]]",
                                               "(Float32)[batch, seq]"}));
}

TEST_P(DynamicShapesTest, PrefixMeanOfTheContract) {
  Exec exec = NewExec(backend_, [](Node values, Node lengths) -> std::vector<Node> {
    Node positions = IotaLike(values, 1);
    Node mask = Less(positions, ExpandAxes(ConvertDType(lengths, DType::Float32), {-1}));
    return {Div(MaskedReduceSum(values, mask, {1}), ReduceSum(ConvertDType(mask, DType::Float32), {1}))};
  });
  exec.WithDynamicAxes({{"batch", "seq"}, {"batch"}});
  EXPECT_EQ(
      exec.Call1(std::vector<std::vector<float>>{{1, 2, 3, 4}, {5, 6, 7, 8}}, std::vector<int32_t>{2, 4})
          .ToVector<float>(),
      (std::vector<float>{1.5f, 6.5f}));
  EXPECT_EQ(exec.Call1(std::vector<std::vector<float>>{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}},
                       std::vector<int32_t>{1, 2, 3})
                .ToVector<float>(),
            (std::vector<float>{1, 4.5f, 8}));
  EXPECT_EQ(exec.NumBuilds(), 1);
}

TEST_P(DynamicShapesTest, RunTimeSizesThatContradictTheGraphAreErrors) {
  // Two inputs sharing "batch" through the graph only (not through Exec's names): y's axis is "b2",
  // and the Add meets them, so the sizes are checked when the program runs.
  Exec add = NewExec(backend_, [](Node x, Node y) { return x + y; });
  add.WithDynamicAxes({{"batch"}, {"b2"}});
  EXPECT_EQ(add.Call1(std::vector<float>{1, 2}, std::vector<float>{3, 4}).ToVector<float>(),
            (std::vector<float>{4, 6}));
  std::string e = ErrorOf([&] { add.Call(std::vector<float>{1, 2}, std::vector<float>{3, 4, 5}); });
  EXPECT_NE(e.find("Add at run time"), std::string::npos) << e;
  EXPECT_NE(e.find("(Float32)[2] and (Float32)[3]"), std::string::npos) << e;

  // A static size the graph relies on.
  Exec reshape = NewExec(backend_, [](Node x) { return DynamicReshape(x, {StaticDim(2), InferredDim()}); });
  reshape.WithDynamicAxes({{"n"}});
  EXPECT_EQ(reshape.Call1(std::vector<float>{1, 2, 3, 4}).shape(), Shape(DType::Float32, {2, 2}));
  e = ErrorOf([&] { reshape.Call(std::vector<float>{1, 2, 3}); });
  EXPECT_NE(e.find("Reshape"), std::string::npos) << e;
  EXPECT_NE(e.find("3 is not a multiple of 2"), std::string::npos) << e;

  // A slice to a static end beyond the run-time size.
  Exec slice = NewExec(backend_, [](Node x) { return Slice(x, {AxisRange(0, 3)}); });
  slice.WithDynamicAxes({{"n"}});
  EXPECT_EQ(slice.Call1(std::vector<float>{1, 2, 3, 4}).ToVector<float>(), (std::vector<float>{1, 2, 3}));
  e = ErrorOf([&] { slice.Call(std::vector<float>{1, 2}); });
  EXPECT_NE(e.find("Slice at run time"), std::string::npos) << e;
  EXPECT_NE(e.find("range [0, 3)"), std::string::npos) << e;
}

TEST_P(DynamicShapesTest, GradientsFlowThroughDynamicAxes) {
  // loss = mean over batch of sum over features of (x·w)^2; d/dw = 2/batch · xᵀ(x·w).
  auto fn = [](Node x, Node w) -> std::vector<Node> {
    Node y = Dot(x, w).Product();
    Node loss = ReduceMean(ReduceSum(Square(y), {1}), {0});
    return {loss, Gradient(loss, {w})[0]};
  };
  Exec dynamic = NewExec(backend_, fn);
  dynamic.WithDynamicAxes({{"batch", ""}, {}});
  Exec fixed = NewExec(backend_, fn);
  const Tensor w = Tensor::FromValue(std::vector<std::vector<float>>{{0.5f, -1}, {0.25f, 2}, {1, 0}});
  for (int64_t batch : {1, 4, 9}) {
    const Tensor x = Grid(batch, 3);
    std::vector<Tensor> got = dynamic.Call(x, w);
    std::vector<Tensor> want = fixed.Call(x, w);
    ExpectNear(got[0], want[0]);
    ExpectNear(got[1], want[1]);
    // The analytic gradient, as a check of the static one too.
    const std::vector<float> xv = x.ToVector<float>(), wv = w.ToVector<float>();
    std::vector<float> grad(6, 0);
    for (int64_t b = 0; b < batch; ++b) {
      for (int j = 0; j < 2; ++j) {
        float y = 0;
        for (int k = 0; k < 3; ++k)
          y += xv[static_cast<size_t>(b * 3 + k)] * wv[static_cast<size_t>(k * 2 + j)];
        for (int k = 0; k < 3; ++k)
          grad[static_cast<size_t>(k * 2 + j)] +=
              2 * y * xv[static_cast<size_t>(b * 3 + k)] / static_cast<float>(batch);
      }
    }
    ExpectNear(got[1], Tensor::FromFlat(Shape(DType::Float32, {3, 2}), grad), 1e-4f);
  }
  EXPECT_EQ(dynamic.NumBuilds(), 1);
}

TEST_P(DynamicShapesTest, ConvolutionPoolingAndSliceGradientsOnADynamicBatch) {
  // A small CNN's loss and its gradients: conv (same padding), relu, max pool, a slice of the
  // dynamic batch and a dense layer, against the static build.
  auto fn = [](Node x, Node kernel, Node w) -> std::vector<Node> {
    Node h = activations::Relu(Convolve(x, kernel).PadSame().Done());  // [batch, 4, 4, 2]
    h = MaxPool(h).Window(2).Done();                                   // [batch, 2, 2, 2]
    h = DynamicReshape(h, {DimensionSpecFor(h, 0), InferredDim()});    // [batch, 8]
    Node first = Slice(h, {AxisRange(0, 1)});                          // The first example again.
    Node logits = Dot(Concatenate({h, first}, 0), w).Product();        // [batch+1, 3]
    Node loss = ReduceMean(Square(logits), {});
    std::vector<Node> grads = Gradient(loss, {kernel, w, x});
    return {loss, grads[0], grads[1], grads[2]};
  };
  Exec dynamic = NewExec(backend_, fn);
  dynamic.WithDynamicAxes({{"batch", "", "", ""}, {}, {}});
  Exec fixed = NewExec(backend_, fn);
  std::vector<float> kv, wv;
  for (int i = 0; i < 3 * 3 * 1 * 2; ++i) kv.push_back(std::cos(0.7f * static_cast<float>(i)));
  for (int i = 0; i < 8 * 3; ++i) wv.push_back(std::sin(0.3f * static_cast<float>(i)));
  const Tensor kernel = Tensor::FromFlat(Shape(DType::Float32, {3, 3, 1, 2}), kv);
  const Tensor w = Tensor::FromFlat(Shape(DType::Float32, {8, 3}), wv);
  for (int64_t batch : {1, 3, 2}) {
    SCOPED_TRACE(batch);
    std::vector<float> xv;
    for (int64_t i = 0; i < batch * 16; ++i) xv.push_back(std::sin(0.11f * static_cast<float>(i * i % 37)));
    const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {batch, 4, 4, 1}), xv);
    std::vector<Tensor> got = dynamic.Call(x, kernel, w);
    std::vector<Tensor> want = fixed.Call(x, kernel, w);
    for (size_t i = 0; i < got.size(); ++i) ExpectNear(got[i], want[i], 1e-5f);
  }
  EXPECT_EQ(dynamic.NumBuilds(), 1);
}

TEST_P(DynamicShapesTest, DenseLayerOnADynamicBatch) {
  model::Store store;
  auto fn = [](model::Scope scope, Node x) {
    Node y = layers::Dense(scope.In("dense"), x, true, 6);
    return DynamicReshape(y, {DimensionSpecFor(x, 0), StaticDim(2), InferredDim()});
  };
  model::Exec dynamic = model::NewExec(backend_, store, fn);
  dynamic.WithDynamicAxes({{"batch", ""}});
  model::Exec fixed = model::NewExec(backend_, store, fn);
  for (int64_t batch : {1, 7, 64}) {
    const Tensor x = Grid(batch, 4);
    Tensor got = dynamic.Call1(x);
    EXPECT_EQ(got.shape(), Shape(DType::Float32, {batch, 2, 3}));
    ExpectNear(got, fixed.Call1(x));
  }
  EXPECT_EQ(dynamic.NumBuilds(), 1);
}

TEST_P(DynamicShapesTest, NormalisationEmbeddingLossesAndMetricsOnADynamicBatch) {
  // Training mode: batch normalisation takes the batch's statistics and updates its averages.
  auto fn = [](model::Scope scope, Node ids, Node labels) -> std::vector<Node> {
    Node e = layers::Embedding(scope.In("emb"), ids, 11, 6);  // [batch, seq, 6]
    Node h = layers::LayerNorm(scope.In("ln"), e).Done();
    h = ReduceMean(h, {1});  // [batch, 6]
    h = layers::BatchNorm(scope.In("bn"), layers::Dense(scope.In("d"), h, true, 4)).Done();
    Node loss = losses::SparseCategoricalCrossEntropyLogits({labels}, {h});
    Node acc = metrics::SparseCategoricalAccuracy({labels}, {h});
    return {h, loss, acc};
  };
  model::Store dynamic_store, fixed_store;
  model::Exec dynamic = model::NewExec(backend_, dynamic_store, fn);
  dynamic.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  dynamic.WithDynamicAxes({{"batch", "seq"}, {"batch"}});
  model::Exec fixed = model::NewExec(backend_, fixed_store, fn);
  fixed.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{4, 3}, {2, 5}, {7, 1}}) {
    SCOPED_TRACE(std::to_string(batch) + "x" + std::to_string(seq));
    std::vector<int32_t> ids, labels;
    for (int64_t i = 0; i < batch * seq; ++i) ids.push_back(static_cast<int32_t>((i * 7 + 3) % 11));
    for (int64_t b = 0; b < batch; ++b) labels.push_back(static_cast<int32_t>(b % 4));
    const Tensor idt = Tensor::FromFlat(Shape(DType::Int32, {batch, seq}), ids);
    const Tensor lt = Tensor::FromFlat(Shape(DType::Int32, {batch}), labels);
    std::vector<Tensor> got = dynamic.Call(idt, lt);
    std::vector<Tensor> want = fixed.Call(idt, lt);
    for (size_t i = 0; i < got.size(); ++i) ExpectNear(got[i], want[i], 1e-5f);
  }
  // The moving averages were updated alike.
  ExpectNear(dynamic_store.GetVariable("/bn/mean").Value(), fixed_store.GetVariable("/bn/mean").Value(),
             1e-5f);
  EXPECT_EQ(dynamic.NumBuilds(), 1);
}

TEST_P(DynamicShapesTest, EmbeddingAndConvolutionOnADynamicBatch) {
  // Gather (embedding lookup) and a convolution: their shape rules run with trial sizes.
  auto fn = [](Node ids, Node table, Node images, Node kernel) -> std::vector<Node> {
    Node emb = Gather(table, ExpandAxes(ids, {-1}));  // [batch, seq, 3]
    Node conv = Convolve(images, kernel).Done();      // [batch, 2, 2, 1]
    return {emb, conv};
  };
  Exec dynamic = NewExec(backend_, fn);
  dynamic.WithDynamicAxes({{"batch", "seq"}, {}, {"batch", "", "", ""}, {}});
  Exec fixed = NewExec(backend_, fn);
  const Tensor table = Grid(5, 3);
  const Tensor kernel =
      Tensor::FromFlat(Shape(DType::Float32, {2, 2, 1, 1}), std::vector<float>{1, -1, 0.5f, 2});
  for (int64_t batch : {1, 3}) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < batch * 2; ++i) ids.push_back(static_cast<int32_t>(i % 5));
    const Tensor idt = Tensor::FromFlat(Shape(DType::Int32, {batch, 2}), ids);
    std::vector<float> px;
    for (int64_t i = 0; i < batch * 9; ++i) px.push_back(static_cast<float>(i % 7) - 3.0f);
    const Tensor images = Tensor::FromFlat(Shape(DType::Float32, {batch, 3, 3, 1}), px);
    std::vector<Tensor> got = dynamic.Call(idt, table, images, kernel);
    std::vector<Tensor> want = fixed.Call(idt, table, images, kernel);
    ExpectNear(got[0], want[0]);
    ExpectNear(got[1], want[1]);
    EXPECT_EQ(got[1].shape(), Shape(DType::Float32, {batch, 2, 2, 1}));
  }
  EXPECT_EQ(dynamic.NumBuilds(), 1);
}

TEST_P(DynamicShapesTest, AttentionOnADynamicBatchAndSequence) {
  // Causal grouped-query attention with RoPE and a key mask, on dynamic batch and sequence axes.
  model::Store store;
  auto fn = [](model::Scope scope, Node x, Node keep) {
    return layers::MultiHeadAttention(scope.In("mha"), x, x, x)
        .NumHeads(4)
        .NumKVHeads(2)
        .Causal()
        .RoPE(10000)
        .KeyMask(keep)
        .Done();
  };
  model::Exec dynamic = model::NewExec(backend_, store, fn);
  dynamic.WithDynamicAxes({{"batch", "seq", ""}, {"batch", "seq"}});
  model::Exec fixed = model::NewExec(backend_, store, fn);
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{2, 5}, {1, 3}, {3, 7}}) {
    SCOPED_TRACE(std::to_string(batch) + "x" + std::to_string(seq));
    std::vector<float> xv;
    for (int64_t i = 0; i < batch * seq * 8; ++i) xv.push_back(std::sin(0.37f * static_cast<float>(i)));
    const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {batch, seq, 8}), xv);
    std::vector<uint8_t> kv;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < seq; ++t) kv.push_back(t == 0 || (t + b) % 3 != 0);  // First key always kept.
    Tensor keep = Tensor::FromShape(Shape(DType::Bool, {batch, seq}));
    keep.MutableFlatData<bool>([&](std::span<bool> f) {
      for (size_t i = 0; i < f.size(); ++i) f[i] = kv[i] != 0;
    });
    Tensor got = dynamic.Call1(x, keep);
    EXPECT_EQ(got.shape(), Shape(DType::Float32, {batch, seq, 8}));
    ExpectNear(got, fixed.Call1(x, keep), 1e-4f);
  }
  EXPECT_EQ(dynamic.NumBuilds(), 1);
}

TEST_P(DynamicShapesTest, WhileAndIfOnDynamicShapes) {
  // Doubles x until its sum passes 100 (a data-dependent loop), then adds 1 or negates by a
  // predicate; the sub-programs have the dynamic axes too.
  auto fn = [](Node x, Node flag) -> std::vector<Node> {
    std::vector<Node> out =
        While([](const std::vector<Node>& s) { return Less(ReduceAllSum(s[0]), ScalarLike(s[0], 100.0f)); },
              [](const std::vector<Node>& s) { return std::vector<Node>{s[0] * 2.0f}; }, {x});
    std::vector<Node> chosen = If(
        flag, [](const std::vector<Node>& v) { return std::vector<Node>{v[0] + 1.0f}; },
        [](const std::vector<Node>& v) { return std::vector<Node>{Neg(v[0])}; }, {out[0]});
    return {
        chosen[0],
        ForLoop(3, [](Node, const std::vector<Node>& s) { return std::vector<Node>{s[0] + s[0]}; }, {x})[0]};
  };
  Exec dynamic = NewExec(backend_, fn);
  dynamic.WithDynamicAxes({{"batch", ""}, {}});
  Exec fixed = NewExec(backend_, fn);
  for (int64_t batch : {1, 3, 2}) {
    SCOPED_TRACE(batch);
    std::vector<float> xv;
    for (int64_t i = 0; i < batch * 2; ++i) xv.push_back(0.5f + static_cast<float>(i));
    const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {batch, 2}), xv);
    for (bool flag : {true, false}) {
      std::vector<Tensor> got = dynamic.Call(x, Tensor::FromScalar(flag));
      std::vector<Tensor> want = fixed.Call(x, Tensor::FromScalar(flag));
      ExpectNear(got[0], want[0]);
      ExpectNear(got[1], want[1]);
    }
  }
  EXPECT_EQ(dynamic.NumBuilds(), 1);
}

TEST_P(DynamicShapesTest, DynamicPadToAStaticOrNamedLength) {
  // Rows of any length padded with -1 to length 6, and to the length of another input's axis.
  Exec exec = NewExec(backend_, [](Node x, Node like) -> std::vector<Node> {
    Node fill = Scalar(x.graph(), DType::Float32, -1);
    return {DynamicPad(x, fill, {DimensionSpecFor(x, 0), StaticDim(6)}),
            DynamicPad(x, fill, {DimensionSpecFor(x, 0), DimensionSpecFor(like, 0)})};
  });
  exec.WithDynamicAxes({{"batch", "seq"}, {"target"}});
  std::vector<Tensor> out = exec.Call(Grid(2, 3), std::vector<float>{0, 0, 0, 0});
  EXPECT_EQ(out[0].shape(), Shape(DType::Float32, {2, 6}));
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{-7, -6, -5, -1, -1, -1, 3, 4, 5, -1, -1, -1}));
  EXPECT_EQ(out[1].ToVector<float>(), (std::vector<float>{-7, -6, -5, -1, 3, 4, 5, -1}));
  out = exec.Call(Grid(1, 5), std::vector<float>{0, 0, 0, 0, 0});
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{-7, -6, -5, -4, -3, -1}));
  EXPECT_EQ(out[1].ToVector<float>(), (std::vector<float>{-7, -6, -5, -4, -3}));
  EXPECT_EQ(exec.NumBuilds(), 1);
  // Longer than the target: an error when it runs, naming the op.
  const std::string e = ErrorOf([&] { exec.Call(Grid(1, 7), std::vector<float>{0}); });
  EXPECT_NE(e.find("DynamicUpdateSlice at run time"), std::string::npos) << e;
  // Static: a Pad, and a target below the size is an error while building.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3}));
  EXPECT_EQ(DynamicPad(x, Scalar(g, DType::Float32, 0), {StaticDim(2), StaticDim(4)}).op(),
            compute::OpType::Pad);
  EXPECT_NE(ErrorOf([&] { DynamicPad(x, Scalar(g, DType::Float32, 0), {StaticDim(1)}); }).find("longer than"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, DynamicShapesTest, ::testing::Values("ref", "cpu"));

TEST(DynamicShapesFallbackTest, StaticOnlyBackendBuildsPerShape) {
  compute::BackendPtr ref = compute::NewWithConfig("ref:dynamic=false");
  EXPECT_EQ(ref->Capabilities().dynamic_shapes, compute::DynamicShapes::None);
  std::vector<std::string> printed;
  Exec exec = NewExec(ref, [&](Node x) {
    printed.push_back(x.shape().ToString());
    return ReduceSum(x, {1});
  });
  exec.WithDynamicAxes({{"batch", "seq"}});
  EXPECT_EQ(exec.Call1(std::vector<std::vector<float>>{{1, 2}}).ToVector<float>(), (std::vector<float>{3}));
  EXPECT_EQ(exec.Call1(std::vector<std::vector<float>>{{1, 2, 3}}).ToVector<float>(),
            (std::vector<float>{6}));
  EXPECT_EQ(exec.Call1(std::vector<std::vector<float>>{{4, 5}}).ToVector<float>(), (std::vector<float>{9}));
  EXPECT_EQ(exec.NumBuilds(), 2);
  EXPECT_EQ(printed, (std::vector<std::string>{"(Float32)[1, 2]", "(Float32)[1, 3]"}));
  // A program with dynamic axes is refused by name.
  Graph g;
  Node x = g.Parameter(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic}, {"n"}));
  const std::string e = ErrorOf([&] { ref->Compile(g.Build({x + 1.0f}, {false})); });
  EXPECT_NE(e.find("dynamic=false"), std::string::npos) << e;
}

TEST(DynamicShapesCacheTest, SpecialisationsAreBoundedAndCounted) {
  compute::BackendPtr cpu = compute::NewWithConfig("cpu:dynamic_cache=4");
  Graph g;
  Node x = g.Parameter(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 8}, {"batch", ""}));
  std::unique_ptr<compute::Executable> exe = cpu->Compile(g.Build({Tanh(x) * 2.0f + 1.0f}, {false}));
  auto* dynamic = dynamic_cast<compute::DynamicExecutable*>(exe.get());
  ASSERT_NE(dynamic, nullptr);
  const int64_t live_before = cpu->MemoryStats().live_buffers;
  int64_t live_at_100 = 0;
  for (int64_t batch = 1; batch <= 1000; ++batch) {
    if (batch == 100) live_at_100 = cpu->MemoryStats().live_bytes;
    const Tensor in = Grid(batch, 8);
    std::vector<Shape> out_shapes;
    std::vector<compute::BufferPtr> out =
        exe->ExecuteWithShapes({in.DeviceBuffer(cpu, 0)}, {in.shape()}, {false}, 0, out_shapes);
    ASSERT_EQ(out_shapes, std::vector<Shape>{Shape(DType::Float32, {batch, 8})});
    const Tensor t = Tensor::FromBuffer(cpu, 0, out_shapes[0], out[0]);
    EXPECT_NEAR(t.ToVector<float>().back(), std::tanh(static_cast<float>((batch - 1) * 10 + 7 - 7)) * 2 + 1,
                1e-5);
  }
  // 1000 sizes: 1000 specialisations, 4 kept; the backend's live memory no larger than after 100
  // (each cached executable's plan is bounded by its size; larger sizes replace smaller ones).
  EXPECT_EQ(dynamic->NumSpecializations(), 1000);
  EXPECT_EQ(dynamic->NumCached(), 4);
  EXPECT_LE(cpu->MemoryStats().live_buffers, live_before + 8);
  EXPECT_LE(cpu->MemoryStats().live_bytes, live_at_100 + 4 * 1000 * 8 * 4 * 2);
  // A recent size is a hit; an evicted one is made again.
  const Tensor in = Grid(1000, 8);
  std::vector<Shape> shapes;
  exe->ExecuteWithShapes({in.DeviceBuffer(cpu, 0)}, {in.shape()}, {false}, 0, shapes);
  EXPECT_EQ(dynamic->NumSpecializations(), 1000);
  const Tensor old = Grid(1, 8);
  exe->ExecuteWithShapes({old.DeviceBuffer(cpu, 0)}, {old.shape()}, {false}, 0, shapes);
  EXPECT_EQ(dynamic->NumSpecializations(), 1001);
  EXPECT_THROW(exe->Execute({old.DeviceBuffer(cpu, 0)}, {false}, 0), kiln::Error);
}

TEST(DynamicShapesDimensionSpecTest, SpecsAndSizes) {
  Graph g;
  Node x = g.Parameter(Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 3}, {"batch", ""}));
  EXPECT_EQ(DimensionSpecFor(x, 0).ToString(), "batch");
  EXPECT_EQ(DimensionSpecFor(x, -1).ToString(), "3");
  EXPECT_EQ(DynamicDim(DimensionSize(x, 0)).ToString(), "batch");
  EXPECT_EQ(DynamicDim(DimensionSize(x, 1)).ToString(), "3");
  EXPECT_NE(ErrorOf([&] {
              DynamicDim(ReduceSum(ConvertDType(x, DType::Int64), {0, 1}));
            }).find("computed from data"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              DynamicReshape(x, {InferredDim(), InferredDim()});
            }).find("both inferred"),
            std::string::npos);
  EXPECT_EQ(DynamicIota(g, DType::Int32, 0, {NamedDynamicDim("batch"), StaticDim(2)}).shape().ToString(),
            "(Int32)[batch, 2]");
  EXPECT_EQ(DynamicBroadcastInDim(Scalar(g, DType::Float32, 1), {}, DimensionSpecsFor(x)).shape().ToString(),
            "(Float32)[batch, 3]");
  EXPECT_EQ(BroadcastLike(Scalar(g, DType::Float32, 1), x).shape().ToString(), "(Float32)[batch, 3]");
  EXPECT_EQ(ReshapeLike(Reshape(x, {-1}), x).shape().ToString(), "(Float32)[batch, 3]");
  EXPECT_EQ(Reshape(x, {-1}).shape().ToString(), "(Float32)[3*batch]");
  EXPECT_EQ(DynamicReshape(x, {NamedInferredDim("rows"), StaticDim(1)}).shape().ToString(),
            "(Float32)[rows, 1]");
}

TEST(DynamicShapesBucketTest, PadToBucketsPadsBatchesAndAddsAMask) {
  // 5 sequences of length 3, batches of 2: batches 2, 2, 1 padded along the batch axis to 2, 2, 1
  // (pow2 buckets), and along the sequence axis (axis 1) to 4.
  std::vector<float> xs;
  for (int i = 0; i < 15; ++i) xs.push_back(static_cast<float>(i + 1));
  const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {5, 3}), xs);
  const Tensor y = Tensor::FromFlat(Shape(DType::Int32, {5}), std::vector<int32_t>{0, 1, 2, 3, 4});
  compute::BackendPtr backend = compute::NewWithConfig("ref:dynamic=false");
  auto inner = data::InMemoryFromData(backend, "seqs", {x}, {y});
  inner->BatchSize(2, false);
  auto by_len = data::PadToBuckets(
      inner, [](int64_t n) { return data::BucketPow2(n); }, 1);
  std::any spec;
  std::vector<Tensor> in, lab;
  ASSERT_TRUE(by_len->Yield(spec, in, lab));
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].ToVector<float>(), (std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0}));
  EXPECT_EQ(in[1].shape(), Shape(DType::Bool, {2, 4}));
  EXPECT_EQ(in[1].ToVector<bool>(), (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_EQ(lab[0].ToVector<int32_t>(), (std::vector<int32_t>{0, 1}));  // Rank 1: not padded on axis 1.
  // Along the batch axis, with linear buckets of 4: the last batch of 1 becomes 4 rows.
  inner->Reset();
  auto by_batch = data::PadToBuckets(
      inner, [](int64_t n) { return data::BucketLinear(n, 4); }, 0);
  std::vector<int64_t> rows;
  std::vector<int> real;
  while (by_batch->Yield(spec, in, lab)) {
    rows.push_back(in[0].shape().Dim(0));
    int r = 0;
    for (bool m : in[1].ToVector<bool>()) r += m;
    real.push_back(r);
    EXPECT_EQ(lab[0].shape().Dim(0), 4);
  }
  EXPECT_EQ(rows, (std::vector<int64_t>{4, 4, 4}));
  EXPECT_EQ(real, (std::vector<int>{2, 2, 1}));
  inner->Reset();
  EXPECT_THROW(data::PadToBuckets(
                   inner, [](int64_t n) { return n - 1; }, 0)
                   ->Yield(spec, in, lab),
               kiln::Error);
}

TEST(DynamicShapesBucketTest, Buckets) {
  EXPECT_EQ(data::BucketPow2(37), 64);
  EXPECT_EQ(data::BucketPow2(64), 64);
  EXPECT_EQ(data::BucketPow2(0), 1);
  EXPECT_EQ(data::BucketLinear(37, 16), 48);
  EXPECT_EQ(data::BucketLinear(48, 16), 48);
  EXPECT_EQ(data::BucketLinear(0, 16), 0);
  EXPECT_EQ(data::BucketExponential(37, 1.5), 39);
  EXPECT_EQ(data::BucketExponential(39, 1.5), 39);
  EXPECT_EQ(data::BucketExponential(40, 2), 64);
  EXPECT_THROW(data::BucketLinear(5, 0), kiln::Error);
  EXPECT_THROW(data::BucketExponential(5, 1.0), kiln::Error);
  EXPECT_THROW(data::BucketPow2(INT64_MAX), kiln::Error);
}

}  // namespace
