// Tests for the normalisation layers: BatchNorm's batch statistics and moving averages while
// training and their use in inference (by the formulas, computed here), and LayerNorm / RMSNorm
// against the PyTorch fixtures with the fixture's parameters stored in their variables.

#include "kiln/ml/normalization.h"

#include <gtest/gtest.h>

#include <any>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

const std::map<std::string, Tensor>& Fixtures() { return kiln::test::Fixtures("tests/ml/fixtures/nn.npz"); }

using kiln::test::ForEachBackend;
void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << i;
}

TEST(Normalization, BatchNormTrainsMovingStatsAndUsesThemInInference) {
  // x [6, 3]: features on the last axis.
  std::vector<double> xv(18);
  for (size_t i = 0; i < xv.size(); ++i)
    xv[i] = std::sin(1.3 * static_cast<double>(i)) * 2 + static_cast<double>(i % 3);
  const Tensor x = Tensor::FromFlat(Shape(DType::Float64, {6, 3}), xv);
  std::vector<double> bmean(3, 0), bvar(3, 0);
  for (int n = 0; n < 6; ++n)
    for (int c = 0; c < 3; ++c) bmean[static_cast<size_t>(c)] += xv[static_cast<size_t>(n * 3 + c)] / 6;
  for (int n = 0; n < 6; ++n) {
    for (int c = 0; c < 3; ++c) {
      const double d = xv[static_cast<size_t>(n * 3 + c)] - bmean[static_cast<size_t>(c)];
      bvar[static_cast<size_t>(c)] += d * d / 6;
    }
  }
  const double eps = 1e-3, momentum = 0.9;
  ForEachBackend([&](const compute::BackendPtr& backend) {
    model::Store store;
    auto fn = [&](model::Scope scope, Node in) {
      return layers::BatchNorm(scope.In("bn"), in).Momentum(momentum).Epsilon(eps).Done();
    };
    model::Exec train = model::NewExec(backend, store, fn);
    train.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
    model::Exec infer = model::NewExec(backend, store, fn);

    // Training: normalised with the batch statistics; the moving ones move toward them.
    std::vector<double> y = train.Call1(x).ToVector<double>(), want(18);
    for (int n = 0; n < 6; ++n) {
      for (int c = 0; c < 3; ++c) {
        const size_t i = static_cast<size_t>(n * 3 + c), ci = static_cast<size_t>(c);
        want[i] = (xv[i] - bmean[ci]) / std::sqrt(bvar[ci] + eps);
      }
    }
    ExpectNear(y, want, 1e-10);
    std::vector<double> mm(3), mv(3);
    for (size_t c = 0; c < 3; ++c) {
      mm[c] = momentum * 0 + (1 - momentum) * bmean[c];
      mv[c] = momentum * 1 + (1 - momentum) * bvar[c];
    }
    ExpectNear(store.GetVariable("/bn/mean").Value().ToVector<double>(), mm, 1e-12);
    ExpectNear(store.GetVariable("/bn/variance").Value().ToVector<double>(), mv, 1e-12);
    EXPECT_FALSE(store.GetVariable("/bn/mean").Trainable());
    EXPECT_FALSE(store.GetVariable("/bn/variance").Trainable());
    EXPECT_TRUE(store.GetVariable("/bn/gain").Trainable());
    EXPECT_TRUE(store.GetVariable("/bn/offset").Trainable());

    // Inference: the moving statistics, the learned gain and offset; nothing is updated.
    const std::vector<double> gain = {2, 0.5, -1}, offset = {0.1, -0.2, 3};
    store.GetVariable("/bn/gain").SetValue(Tensor::FromValue(gain));
    store.GetVariable("/bn/offset").SetValue(Tensor::FromValue(offset));
    y = infer.Call1(x).ToVector<double>();
    for (int n = 0; n < 6; ++n) {
      for (int c = 0; c < 3; ++c) {
        const size_t i = static_cast<size_t>(n * 3 + c), ci = static_cast<size_t>(c);
        want[i] = (xv[i] - mm[ci]) / std::sqrt(mv[ci] + eps) * gain[ci] + offset[ci];
      }
    }
    ExpectNear(y, want, 1e-10);
    ExpectNear(store.GetVariable("/bn/mean").Value().ToVector<double>(), mm, 1e-12);

    // A second training step moves them again.
    train.Call(x);
    for (size_t c = 0; c < 3; ++c) {
      mm[c] = momentum * mm[c] + (1 - momentum) * bmean[c];
      mv[c] = momentum * mv[c] + (1 - momentum) * bvar[c];
    }
    ExpectNear(store.GetVariable("/bn/mean").Value().ToVector<double>(), mm, 1e-12);
    ExpectNear(store.GetVariable("/bn/variance").Value().ToVector<double>(), mv, 1e-12);
  });
}

TEST(Normalization, BatchNormTrainingGradientMatchesCentralDifferences) {
  // While training the output depends on x through the batch statistics too: the gradient of
  // sum(r * BatchNorm(x)) with respect to x, against central differences in Float64.
  const Shape shape(DType::Float64, {5, 3});
  std::vector<double> xv(15), rv(15);
  for (size_t i = 0; i < xv.size(); ++i) {
    xv[i] = std::cos(0.7 * static_cast<double>(i)) * 1.5 + 0.1 * static_cast<double>(i % 4);
    rv[i] = std::sin(1.9 * static_cast<double>(i) + 0.3);
  }
  ForEachBackend([&](const compute::BackendPtr& backend) {
    model::Store store;
    model::Exec f = model::NewExec(backend, store, [&](model::Scope scope, Node x) -> std::vector<Node> {
      Node y = layers::BatchNorm(scope.In("bn"), x).Epsilon(1e-3).Done();
      Node loss = ReduceAllSum(y * Const(x.graph(), Tensor::FromFlat(shape, rv)));
      return {loss, Gradient(loss, {x})[0]};
    });
    f.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
    std::vector<Tensor> out = f.Call(Tensor::FromFlat(shape, xv));
    const std::vector<double> grad = out[1].ToVector<double>();
    const double h = 1e-5;
    for (size_t i = 0; i < xv.size(); ++i) {
      std::vector<double> plus = xv, minus = xv;
      plus[i] += h;
      minus[i] -= h;
      const double lp = f.Call(Tensor::FromFlat(shape, plus))[0].Item<double>();
      const double lm = f.Call(Tensor::FromFlat(shape, minus))[0].Item<double>();
      EXPECT_NEAR(grad[i], (lp - lm) / (2 * h), 1e-6) << backend->Name() << " element " << i;
    }
  });
}

TEST(Normalization, BatchNormChannelsFirstReducesTheOtherAxes) {
  // x [2, 3, 2] with features on axis 1: the batch mean of feature c is over axes 0 and 2.
  std::vector<float> xv(12);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i * i % 7);
  model::Store store;
  model::Exec train = model::NewExec(compute::New(), store, [](model::Scope scope, Node in) {
    return layers::BatchNorm(scope.In("bn"), in).Axis(1).Momentum(0.5).Center(false).Scale(false).Done();
  });
  train.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  train.Call(Tensor::FromFlat(Shape(DType::Float32, {2, 3, 2}), xv));
  std::vector<float> mean = store.GetVariable("/bn/mean").Value().ToVector<float>();
  ASSERT_EQ(mean.size(), 3u);
  for (int c = 0; c < 3; ++c) {
    double m = 0;
    for (int n = 0; n < 2; ++n)
      for (int s = 0; s < 2; ++s) m += xv[static_cast<size_t>(n * 6 + c * 2 + s)] / 4.0;
    EXPECT_NEAR(mean[static_cast<size_t>(c)], 0.5 * m, 1e-5);
  }
  EXPECT_FALSE(store.FindVariable("/bn/gain").Ok());
  EXPECT_FALSE(store.FindVariable("/bn/offset").Ok());
}

TEST(Normalization, LayerNormAndRMSNormMatchTheFixtures) {
  const auto& f = Fixtures();
  ForEachBackend([&](const compute::BackendPtr& backend) {
    model::Store store;
    model::Exec ln = model::NewExec(backend, store, [](model::Scope scope, Node x) {
      return layers::LayerNorm(scope.In("ln"), x).Done();
    });
    model::Exec ln2 = model::NewExec(backend, store, [](model::Scope scope, Node x) {
      return layers::LayerNorm(scope.In("ln2"), x).Axes({-2, -1}).Done();
    });
    model::Exec rms = model::NewExec(backend, store, [](model::Scope scope, Node x) {
      return layers::RMSNorm(scope.In("rms"), x).Done();
    });
    // Created with gain ones and offset zeros: first the plain normalisation...
    std::vector<double> plain = ln.Call1(f.at("layer_norm_x")).ToVector<double>();
    EXPECT_EQ(store.GetVariable("/ln/gain").Value().ToVector<double>(), std::vector<double>(6, 1.0));
    EXPECT_EQ(store.GetVariable("/ln/offset").Value().ToVector<double>(), std::vector<double>(6, 0.0));
    std::vector<double> xv = f.at("layer_norm_x").ToVector<double>();
    for (int r = 0; r < 4; ++r) {
      double m = 0, v = 0;
      for (int c = 0; c < 6; ++c) m += xv[static_cast<size_t>(r * 6 + c)] / 6;
      for (int c = 0; c < 6; ++c) v += std::pow(xv[static_cast<size_t>(r * 6 + c)] - m, 2) / 6;
      for (int c = 0; c < 6; ++c) {
        const size_t i = static_cast<size_t>(r * 6 + c);
        EXPECT_NEAR(plain[i], (xv[i] - m) / std::sqrt(v + 1e-5), 1e-10);
      }
    }
    // ...then with the fixture's parameters stored.
    store.GetVariable("/ln/gain").SetValue(f.at("layer_norm_gamma"));
    store.GetVariable("/ln/offset").SetValue(f.at("layer_norm_beta"));
    ExpectNear(ln.Call1(f.at("layer_norm_x")).ToVector<double>(), f.at("layer_norm_out").ToVector<double>(),
               1e-10);

    ln2.Call(f.at("layer_norm2_x"));
    EXPECT_EQ(store.GetVariable("/ln2/gain").shape(), Shape(DType::Float64, {3, 4}));
    store.GetVariable("/ln2/gain").SetValue(f.at("layer_norm2_gamma"));
    store.GetVariable("/ln2/offset").SetValue(f.at("layer_norm2_beta"));
    ExpectNear(ln2.Call1(f.at("layer_norm2_x")).ToVector<double>(),
               f.at("layer_norm2_out").ToVector<double>(), 1e-10);

    rms.Call(f.at("rms_norm_x"));
    EXPECT_FALSE(store.FindVariable("/rms/offset").Ok());
    store.GetVariable("/rms/gain").SetValue(f.at("rms_norm_gamma"));
    ExpectNear(rms.Call1(f.at("rms_norm_x")).ToVector<double>(), f.at("rms_norm_out").ToVector<double>(),
               1e-10);
  });
}

// DynamicTanh: tanh(alpha·x)·gamma + beta, by the formula computed here; its variables, the
// hyperparameter and WithAlpha; the gradient against central differences.
TEST(Normalization, DynamicTanhByTheFormula) {
  ForEachBackend([&](const compute::BackendPtr& backend) {
    model::Store store;
    store.RootScope().In("b").SetParam("dynamic_tanh_alpha", 0.25);
    model::Exec dyt = model::NewExec(backend, store, [](model::Scope scope, Node x) {
      return std::vector<Node>{layers::DynamicTanh(scope.In("a"), x).Done(),
                               layers::DynamicTanh(scope.In("b"), x).Done(),
                               layers::DynamicTanh(scope.In("c"), x).WithAlpha(2).Done()};
    });
    const std::vector<double> xv = {-3, -1, 0, 0.5, 2, 4};  // [2, 1, 3]
    const Tensor x = Tensor::FromFlat(Shape(DType::Float64, {2, 1, 3}), xv);
    std::vector<Tensor> r = dyt.Call(x);
    EXPECT_EQ(store.GetVariable("/a/dynamic_tanh/alpha").Value().Item<double>(), 0.5);
    EXPECT_EQ(store.GetVariable("/b/dynamic_tanh/alpha").Value().Item<double>(), 0.25);
    EXPECT_EQ(store.GetVariable("/c/dynamic_tanh/alpha").Value().Item<double>(), 2.0);
    EXPECT_EQ(store.GetVariable("/a/dynamic_tanh/gamma").shape(), Shape(DType::Float64, {3}));
    for (size_t i = 0; i < xv.size(); ++i) {
      EXPECT_NEAR(r[0].ToVector<double>()[i], std::tanh(0.5 * xv[i]), 1e-15);
      EXPECT_NEAR(r[1].ToVector<double>()[i], std::tanh(0.25 * xv[i]), 1e-15);
      EXPECT_NEAR(r[2].ToVector<double>()[i], std::tanh(2 * xv[i]), 1e-15);
    }
    // Learned per-feature gamma and beta broadcast over the leading axes.
    store.GetVariable("/a/dynamic_tanh/gamma").SetValue(Tensor::FromValue(std::vector<double>{1, 2, 3}));
    store.GetVariable("/a/dynamic_tanh/beta").SetValue(Tensor::FromValue(std::vector<double>{0, -1, 1}));
    std::vector<double> got = dyt.Call(x)[0].ToVector<double>();
    const double gamma[] = {1, 2, 3}, beta[] = {0, -1, 1};
    for (size_t i = 0; i < xv.size(); ++i)
      EXPECT_NEAR(got[i], std::tanh(0.5 * xv[i]) * gamma[i % 3] + beta[i % 3], 1e-15) << i;

    // d/dx of sum(DyT(x)·w) against central differences, and d/dalpha = sum(x·(1 - tanh²)·gamma·w).
    model::Exec grad = model::NewExec(backend, store, [](model::Scope scope, Node in) {
      Node w = Iota(in.graph(), in.shape(), 2) + 1.0;
      Node loss = ReduceAllSum(layers::DynamicTanh(scope.In("a"), in).Done() * w);
      return std::vector<Node>{loss, Gradient(loss, {in})[0]};
    });
    std::vector<double> analytic = grad.Call(x)[1].ToVector<double>();
    for (size_t i = 0; i < xv.size(); ++i) {
      std::vector<double> plus = xv, minus = xv;
      plus[i] += 1e-6;
      minus[i] -= 1e-6;
      const double numeric = (grad.Call(Tensor::FromFlat(x.shape(), plus))[0].Item<double>() -
                              grad.Call(Tensor::FromFlat(x.shape(), minus))[0].Item<double>()) /
                             2e-6;
      EXPECT_NEAR(analytic[i], numeric, 1e-7) << i;
    }
  });
  Graph g;
  EXPECT_TRUE(Throws(
      [&] {
        model::Store s;
        layers::DynamicTanh(s.RootScope(), Zeros(g, Shape(DType::Float32, {2}))).Done();
      },
      {"layers::DynamicTanh", "not bound"}));
}

TEST(Normalization, BatchNormTrainsInsideTheTrainer) {
  // A Dense + BatchNorm model trained by the Trainer: the gain learns (it gets gradients) and the
  // moving mean follows the batch mean of the dense layer's output.
  model::Store store;
  train::ModelFn fn = [](model::Scope scope, const std::any&, std::vector<Node> in) {
    Node h = layers::Dense(scope.In("dense"), in[0], true, 4);
    h = layers::BatchNorm(scope.In("bn"), h).Momentum(0.5).Done();
    return std::vector<Node>{layers::Dense(scope.In("out"), h, true, 1)};
  };
  train::Trainer trainer(compute::New(), store, fn, losses::MeanSquaredError,
                         optimizers::StochasticGradientDescent().LearningRate(0.05).Done(), {}, {});
  std::vector<float> xs(64), ys(32);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = static_cast<float>(std::cos(0.9 * static_cast<double>(i))) + 2;
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = xs[2 * i] - xs[2 * i + 1];
  for (int step = 0; step < 20; ++step) {
    std::vector<Tensor> r = trainer.TrainStep({}, {Tensor::FromFlat(Shape(DType::Float32, {32, 2}), xs)},
                                              {Tensor::FromFlat(Shape(DType::Float32, {32, 1}), ys)});
    ASSERT_TRUE(std::isfinite(r[0].Item<float>()));
  }
  EXPECT_NE(store.GetVariable("/bn/gain").Value().ToVector<float>(), std::vector<float>(4, 1.0f));
  // After 20 steps with momentum 0.5 the moving mean is the recent batch means: compare it with
  // the dense output's mean under the final weights (within the drift of the last steps).
  std::vector<float> w = store.GetVariable("/dense/weights").Value().ToVector<float>();
  std::vector<float> b = store.GetVariable("/dense/biases").Value().ToVector<float>();
  std::vector<float> mean = store.GetVariable("/bn/mean").Value().ToVector<float>();
  for (size_t c = 0; c < 4; ++c) {
    double m = 0;
    for (size_t n = 0; n < 32; ++n) m += (xs[2 * n] * w[c] + xs[2 * n + 1] * w[4 + c] + b[c]) / 32;
    EXPECT_NEAR(mean[c], m, 0.05 * (1 + std::abs(m))) << "feature " << c;
  }
}

TEST(Normalization, BadSettingsAreErrors) {
  model::Store store;
  model::Exec bad_axis = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::LayerNorm(scope.In("ln"), x).Axes({3}).Done();
  });
  EXPECT_TRUE(Throws([&] { bad_axis.Call(std::vector<float>{1, 2}); }, {"layers::LayerNorm(/ln)", "axis 3"}));
  model::Exec bad_momentum = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::BatchNorm(scope.In("bn"), x).Momentum(1.5).Done();
  });
  EXPECT_TRUE(Throws(
      [&] {
        bad_momentum.Call(std::vector<float>{1, 2});
      },
      {"layers::BatchNorm(/bn)", "momentum 1.5"}));
  model::Exec ints = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::RMSNorm(scope.In("rms"), x).Done();
  });
  EXPECT_TRUE(Throws(
      [&] {
        ints.Call(std::vector<int32_t>{1, 2});
      },
      {"layers::RMSNorm(/rms)", "must be float"}));
}

}  // namespace
