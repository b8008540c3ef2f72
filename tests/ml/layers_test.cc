// Tests for layers: Dense and Convolution against the same computation written with graph ops
// on the stored weights, pooling sizes, global pooling, and Dropout and DropPath in training and
// inference, DropBlock's blocks.

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

// DropBlock on ones [batch, H, W, C]: which positions of example n, channel 0, are zero.
std::vector<std::vector<bool>> Dropped(const std::vector<float>& v, int n, int h, int w, int c) {
  std::vector<std::vector<bool>> z(static_cast<size_t>(h), std::vector<bool>(static_cast<size_t>(w)));
  for (int i = 0; i < h; ++i)
    for (int j = 0; j < w; ++j) z[i][j] = v[static_cast<size_t>(((n * h + i) * w + j) * c)] == 0;
  return z;
}

TEST(Layers, DropBlockDropsWholeBlocksAcrossChannelsWhileTraining) {
  model::Store store;
  constexpr int kN = 4, kH = 48, kW = 48, kC = 3;
  const Tensor ones = Tensor::FromScalarAndDimensions<float>(1.0f, {kN, kH, kW, kC});
  auto fn = [](model::Scope scope, Node x) {
    return layers::DropBlock(scope.In("db"), x).Probability(0.2).BlockSize(3).Done();
  };
  model::Exec infer = model::NewExec(compute::New(), store, fn);
  EXPECT_TRUE(infer.Call1(ones).Equal(ones));
  model::Exec train = model::NewExec(compute::New(), store, fn);
  train.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  const std::vector<float> a = train.Call1(ones).ToVector<float>();
  int64_t dropped = 0, interior = 0;
  for (int n = 0; n < kN; ++n) {
    const auto z = Dropped(a, n, kH, kW, kC);
    for (int i = 0; i < kH; ++i) {
      for (int j = 0; j < kW; ++j) {
        for (int c = 0; c < kC; ++c) {  // The channels share the mask; kept values are not rescaled.
          const float v = a[static_cast<size_t>(((n * kH + i) * kW + j) * kC + c)];
          ASSERT_TRUE(v == 0 || v == 1) << v;
          ASSERT_EQ(v == 0, z[i][j]);
        }
        if (i > 0 && j > 0 && i < kH - 1 && j < kW - 1) {
          ++interior;
          dropped += z[i][j];
        }
        if (!z[i][j]) continue;
        // A dropped position lies in a 3x3 block (clipped at the border) that is dropped whole.
        bool in_block = false;
        for (int ci = i - 1; ci <= i + 1 && !in_block; ++ci) {
          for (int cj = j - 1; cj <= j + 1 && !in_block; ++cj) {
            if (ci < 0 || cj < 0 || ci >= kH || cj >= kW) continue;
            bool whole = true;
            for (int di = -1; di <= 1; ++di)
              for (int dj = -1; dj <= 1; ++dj) {
                const int y = ci + di, x = cj + dj;
                if (y >= 0 && x >= 0 && y < kH && x < kW && !z[y][x]) whole = false;
              }
            in_block = whole;
          }
        }
        ASSERT_TRUE(in_block) << "example " << n << " position " << i << "," << j;
      }
    }
  }
  // Seeds with probability 0.2 / 9, each dropping its 3x3 neighbourhood: 1 - (1 - 0.2/9)^9.
  const double expected = 1 - std::pow(1 - 0.2 / 9, 9);
  EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(interior), expected, 0.025);
  EXPECT_NE(a, train.Call1(ones).ToVector<float>());  // The random state advances.

  // Hyperparameters, channels first, every axis spatial, Bool, and the errors.
  store.RootScope().SetParam("dropblock_prob", 0.5);
  store.RootScope().SetParam("dropblock_size", int64_t{1});
  model::Exec chw = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::DropBlock(scope.In("db"), x).ChannelsFirst().Done();
  });
  chw.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  const std::vector<float> b =
      chw.Call1(Tensor::FromScalarAndDimensions<float>(1.0f, {2, 4, 30, 30})).ToVector<float>();
  int64_t zeros = 0;
  for (size_t k = 0; k < 2 * 30 * 30; ++k) {
    const size_t n = k / 900, p = k % 900;
    for (size_t c = 1; c < 4; ++c) ASSERT_EQ(b[n * 3600 + c * 900 + p], b[n * 3600 + p]);
    zeros += b[n * 3600 + p] == 0;
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 1800.0, 0.5, 0.05);
  model::Exec full = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::DropBlock(scope.In("db"), x).Probability(0.3).BlockSizes({2, 2}).FullShape().Done();
  });
  full.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  const std::vector<bool> kept =
      full.Call1(Tensor::FromValue(std::vector<std::vector<bool>>(20, std::vector<bool>(20, true))))
          .ToVector<bool>();
  int64_t kept_count = 0;
  for (bool k : kept) kept_count += k;
  EXPECT_GT(kept_count, 0);
  EXPECT_LT(kept_count, 400);
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 5, 5, 3}));
  EXPECT_TRUE(Throws([&] { layers::DropBlock(store.RootScope(), x).Probability(1).Done(); },
                     {"DropBlock", "probability 1"}));
  EXPECT_TRUE(Throws([&] { layers::DropBlock(store.RootScope(), x).BlockSizes({3}).Done(); },
                     {"1 block sizes", "2 spatial"}));
  EXPECT_TRUE(Throws([&] { layers::DropBlock(store.RootScope(), x).BlockSize(0).Done(); }, {"block size 0"}));
  EXPECT_TRUE(Throws(
      [&] {
        layers::DropBlock(store.RootScope(), g.Parameter(Shape(DType::Float32, {2, 3}))).Done();
      },
      {"no spatial axis"}));
}

}  // namespace
