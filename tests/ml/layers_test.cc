// Tests for layers: Dense and Convolution against the same computation written with graph ops
// on the stored weights, pooling sizes, global pooling, and Dropout and DropPath in training and
// inference.

#include "kiln/ml/layers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

Tensor Ramp(std::vector<int64_t> dims, float scale = 0.1f) {
  Shape s(DType::Float32, dims);
  std::vector<float> v(static_cast<size_t>(s.Size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>((i * 7) % 11) - 0.4f;
  return Tensor::FromFlat(s, v);
}

TEST(Layers, DenseMatchesItsFormula) {
  model::Store store;
  model::Exec f = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::Dense(scope.In("d"), x, true, 3, 2);  // [batch, 4] -> [batch, 3, 2]
  });
  const Tensor input = Ramp({5, 4});
  Tensor y = f.Call1(input);
  ASSERT_EQ(y.shape(), Shape(DType::Float32, {5, 3, 2}));
  std::vector<float> w = store.GetVariable("/d/weights").Value().ToVector<float>();  // [4, 3, 2]
  // [3, 2]: rank 2, so He-uniform like any rank >= 2 variable (GoMLX's default).
  std::vector<float> b = store.GetVariable("/d/biases").Value().ToVector<float>();
  EXPECT_EQ(store.GetVariable("/d/weights").shape(), Shape(DType::Float32, {4, 3, 2}));
  std::vector<float> xv = input.ToVector<float>(), yv = y.ToVector<float>();
  for (int n = 0; n < 5; ++n) {
    for (int o = 0; o < 6; ++o) {
      double acc = b[static_cast<size_t>(o)];
      for (int i = 0; i < 4; ++i)
        acc += double(xv[static_cast<size_t>(n * 4 + i)]) * w[static_cast<size_t>(i * 6 + o)];
      EXPECT_NEAR(yv[static_cast<size_t>(n * 6 + o)], acc, 1e-5);
    }
  }
  // Without bias, no "biases" variable.
  model::Exec nb = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::Dense(scope.In("nobias"), x, false, 2);
  });
  nb.Call1(input);
  EXPECT_FALSE(store.FindVariable("/nobias/biases").Ok());
  EXPECT_TRUE(store.FindVariable("/nobias/weights").Ok());
}

TEST(Layers, ConvolutionMatchesConvolveOnItsWeights) {
  for (bool channels_first : {false, true}) {
    model::Store store;
    model::Exec f = model::NewExec(compute::New(), store, [channels_first](model::Scope scope, Node x) {
      layers::ConvolutionBuilder b =
          layers::Convolution(scope.In("conv"), x).Filters(4).KernelSize(3).PadSame();
      if (channels_first) b.ChannelsFirst();
      return b.Done();
    });
    const Tensor input = channels_first ? Ramp({2, 2, 6, 6}) : Ramp({2, 6, 6, 2});
    Tensor y = f.Call1(input);
    EXPECT_EQ(y.shape(),
              channels_first ? Shape(DType::Float32, {2, 4, 6, 6}) : Shape(DType::Float32, {2, 6, 6, 4}));
    EXPECT_EQ(store.GetVariable("/conv/weights").shape(), Shape(DType::Float32, {3, 3, 2, 4}));
    // The same with graph ops on the stored kernel and a chosen bias.
    store.GetVariable("/conv/biases").SetValue(Tensor::FromValue(std::vector<float>{1, 2, 3, 4}));
    y = f.Call1(input);
    Tensor kernel = store.GetVariable("/conv/weights").Value();
    Exec ref = NewExec(compute::NewWithConfig("ref"), [channels_first](Node in, Node k) {
      Node xin = channels_first ? TransposeAllAxes(in, {0, 2, 3, 1}) : in;
      Node out = Convolve(xin, k).PadSame().Done() +
                 Reshape(Const(in.graph(), std::vector<float>{1, 2, 3, 4}), {1, 1, 1, 4});
      return channels_first ? TransposeAllAxes(out, {0, 3, 1, 2}) : out;
    });
    std::vector<float> want = ref.Call1(input, kernel).ToVector<float>(), got = y.ToVector<float>();
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  }
  model::Store s;
  model::Exec bad = model::NewExec(compute::New(), s, [](model::Scope scope, Node x) {
    return layers::Convolution(scope.In("c"), x).KernelSize(3).Done();
  });
  EXPECT_TRUE(Throws([&] { bad.Call(Ramp({1, 4, 4, 1})); }, {"layers::Convolution(/c)", "Filters"}));
}

TEST(Layers, PoolingHalvesAndGlobalPoolingReduces) {
  Exec f = NewExec(compute::New(), [](Node x) {
    return std::vector<Node>{layers::MaxPool(x).Window(2).Done(), layers::AvgPool(x).Window(2).Done(),
                             layers::GlobalAvgPool(x), layers::GlobalMaxPool(x)};
  });
  const Tensor input = Ramp({2, 28, 28, 3});
  std::vector<Tensor> r = f.Call(input);
  EXPECT_EQ(r[0].shape(), Shape(DType::Float32, {2, 14, 14, 3}));
  EXPECT_EQ(r[1].shape(), Shape(DType::Float32, {2, 14, 14, 3}));
  EXPECT_EQ(r[2].shape(), Shape(DType::Float32, {2, 3}));
  std::vector<float> xv = input.ToVector<float>();
  // Window (0,0) of channel 0: elements (0,0), (0,1), (1,0), (1,1).
  const float a = xv[0], b = xv[3], c = xv[28 * 3], d = xv[28 * 3 + 3];
  EXPECT_EQ(r[0].ToVector<float>()[0], std::max({a, b, c, d}));
  EXPECT_NEAR(r[1].ToVector<float>()[0], (a + b + c + d) / 4, 1e-6);
  double mean = 0;
  float mx = -1e9f;
  for (int i = 0; i < 28 * 28; ++i) {
    mean += xv[static_cast<size_t>(i * 3)];
    mx = std::max(mx, xv[static_cast<size_t>(i * 3)]);
  }
  EXPECT_NEAR(r[2].ToVector<float>()[0], mean / (28 * 28), 1e-5);
  EXPECT_EQ(r[3].ToVector<float>()[0], mx);
}

TEST(Layers, DropoutOnlyWhileTraining) {
  model::Store store;
  const Tensor ones = Tensor::FromScalarAndDimensions<float>(1.0f, {100, 100});
  model::Exec infer = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::Dropout(scope.In("drop"), x, 0.3);
  });
  EXPECT_TRUE(infer.Call1(ones).Equal(ones));
  model::Exec train = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::Dropout(scope.In("drop"), x, 0.3);
  });
  train.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  std::vector<float> a = train.Call1(ones).ToVector<float>();
  int zeros = 0;
  double sum = 0;
  for (float v : a) {
    if (v == 0) {
      ++zeros;
    } else {
      EXPECT_NEAR(v, 1 / 0.7f, 1e-6);
    }
    sum += v;
  }
  EXPECT_NEAR(zeros / 10000.0, 0.3, 0.03);
  EXPECT_NEAR(sum / 10000.0, 1.0, 0.05);
  // The random state advances: the next call drops other elements.
  std::vector<float> b = train.Call1(ones).ToVector<float>();
  EXPECT_NE(a, b);
  Graph g;
  EXPECT_TRUE(
      Throws([&] { layers::Dropout(store.RootScope(), g.Parameter(Shape(DType::Float32, {2})), 1.0); },
             {"Dropout", "rate 1"}));
}

TEST(Layers, DropPathDropsWholeExamplesWhileTraining) {
  model::Store store;
  const Tensor ones = Tensor::FromScalarAndDimensions<float>(1.0f, {2000, 3, 4});
  auto fn = [](model::Scope scope, Node x) { return layers::DropPath(scope.In("dp"), x, 0.2); };
  model::Exec infer = model::NewExec(compute::New(), store, fn);
  EXPECT_TRUE(infer.Call1(ones).Equal(ones));
  model::Exec train = model::NewExec(compute::New(), store, fn);
  train.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  std::vector<float> a = train.Call1(ones).ToVector<float>();
  int dropped = 0;
  for (size_t n = 0; n < 2000; ++n) {
    // Every element of an example shares its fate.
    const float first = a[n * 12];
    for (size_t k = 1; k < 12; ++k) ASSERT_EQ(a[n * 12 + k], first) << "example " << n;
    if (first == 0) {
      ++dropped;
    } else {
      EXPECT_NEAR(first, 1 / 0.8f, 1e-6);
    }
  }
  EXPECT_NEAR(dropped / 2000.0, 0.2, 0.03);
  EXPECT_NE(a, train.Call1(ones).ToVector<float>());
  Graph g;
  EXPECT_TRUE(
      Throws([&] { layers::DropPath(store.RootScope(), g.Parameter(Shape(DType::Float32, {2})), -0.1); },
             {"DropPath", "rate -0.1"}));
}

}  // namespace
