// Tests for the stateless nn functions: values against PyTorch (fixtures made by
// tests/ml/make_nn_fixtures.py), gradients against central differences in Float64, Softcap and
// Dropout by their formulas, and the errors for bad input.

#include "kiln/ml/nn.h"

#include <gtest/gtest.h>

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
const Tensor& Fix(const std::string& key) { return Fixtures().at(key); }

using kiln::test::ForEachBackend;
/// A Float64 fixture tensor converted to `dtype`.
Tensor As(const Tensor& t, DType dtype) {
  if (dtype == DType::Float64) return t;
  std::vector<double> v = t.ToVector<double>();
  return Tensor::FromFlat(Shape(DType::Float32, t.shape().Dimensions()),
                          std::vector<float>(v.begin(), v.end()));
}

void ExpectNear(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape().Dimensions(), want.shape().Dimensions());
  std::vector<double> w = want.ToVector<double>();
  std::vector<double> g = got.dtype() == DType::Float64 ? got.ToVector<double>() : [&] {
    std::vector<float> f = got.ToVector<float>();
    return std::vector<double>(f.begin(), f.end());
  }();
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

using VecFn = std::function<Node(const std::vector<Node>&)>;

/// Runs `fn` on the fixtures `keys` on every backend, in Float64 and Float32, against `want`.
void ExpectMatchesTorch(const std::vector<std::string>& keys, const std::string& want, const VecFn& fn) {
  ForEachBackend([&](const compute::BackendPtr& backend) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      Exec exec = NewExec(backend, [&](const std::vector<Node>& in) { return fn(in); });
      std::vector<Tensor> inputs;
      for (const std::string& k : keys) inputs.push_back(As(Fix(k), dtype));
      ExpectNear(exec.Call1(inputs), Fix(want), dtype == DType::Float64 ? 1e-10 : 2e-5);
    }
  });
}

/// Compares the gradient of sum(fn(inputs) · r), r fixed pseudo-random weights, with central
/// differences, for every element of every input (Float64, ref and cpu).
void ExpectGradientsMatchDifferences(const std::vector<Tensor>& inputs, const VecFn& fn) {
  auto loss = [&fn](const std::vector<Node>& in) {
    Node y = fn(in);
    Node r = Sin(
        ConvertDType(Iota(y.graph(), Shape(DType::Int32, y.shape().Dimensions()), 0), DType::Float64) * 1.7 +
        ConvertDType(Iota(y.graph(), Shape(DType::Int32, y.shape().Dimensions()), y.rank() - 1),
                     DType::Float64) *
            0.9 +
        0.3);
    return ReduceAllSum(y * r);
  };
  ForEachBackend([&](const compute::BackendPtr& backend) {
    Exec value = NewExec(backend, [&](const std::vector<Node>& in) { return loss(in); });
    Exec grads = NewExec(backend, [&](const std::vector<Node>& in) { return Gradient(loss(in), in); });
    std::vector<Tensor> g = grads.Call(inputs);
    ASSERT_EQ(g.size(), inputs.size());
    const double h = 1e-6;
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::vector<double> base = inputs[k].ToVector<double>(), analytic = g[k].ToVector<double>();
      for (size_t i = 0; i < base.size(); ++i) {
        auto at = [&](double delta) {
          std::vector<double> moved = base;
          moved[i] += delta;
          std::vector<Tensor> in = inputs;
          in[k] = Tensor::FromFlat(inputs[k].shape(), moved);
          return value.Call1(in).Item<double>();
        };
        const double numeric = (at(h) - at(-h)) / (2 * h);
        EXPECT_NEAR(analytic[i], numeric, 1e-6 * (1 + std::abs(numeric)))
            << "input " << k << " element " << i;
      }
    }
  });
}

TEST(Nn, LayerNormMatchesTorch) {
  ExpectMatchesTorch(
      {"layer_norm_x", "layer_norm_gamma", "layer_norm_beta"}, "layer_norm_out",
      [](const std::vector<Node>& in) { return nn::LayerNorm(in[0], {-1}, in[1], in[2], 1e-5); });
  // Two axes, with gamma/beta [3, 4] and, equivalently, of x's rank [1, 3, 4].
  ExpectMatchesTorch({"layer_norm2_x", "layer_norm2_gamma", "layer_norm2_beta"}, "layer_norm2_out",
                     [](const std::vector<Node>& in) {
                       return nn::LayerNorm(in[0], {1, 2}, in[1], in[2]);
                     });
  ExpectMatchesTorch({"layer_norm2_x", "layer_norm2_gamma", "layer_norm2_beta"}, "layer_norm2_out",
                     [](const std::vector<Node>& in) {
                       return nn::LayerNorm(in[0], {-1, -2}, InsertAxes(in[1], {0}), InsertAxes(in[2], {0}));
                     });
}

TEST(Nn, RMSNormMatchesFormula) {
  ExpectMatchesTorch({"rms_norm_x", "rms_norm_gamma"}, "rms_norm_out",
                     [](const std::vector<Node>& in) { return nn::RMSNorm(in[0], {-1}, in[1], 1e-6); });
}

TEST(Nn, BatchNormInferenceMatchesTorch) {
  ExpectMatchesTorch(
      {"batch_norm_x", "batch_norm_mean", "batch_norm_var", "batch_norm_gamma", "batch_norm_beta"},
      "batch_norm_out", [](const std::vector<Node>& in) {
        return nn::BatchNormInference(in[0], in[1], in[2], in[3], in[4], 1e-3, 1);
      });
}

TEST(Nn, SoftmaxMatchesTorch) {
  ExpectMatchesTorch({"softmax_x"}, "softmax_out",
                     [](const std::vector<Node>& in) { return nn::Softmax(in[0]); });
  ExpectMatchesTorch({"softmax_x"}, "softmax_out0",
                     [](const std::vector<Node>& in) { return nn::Softmax(in[0], 0); });
  // LogSoftmax is the log of it.
  ForEachBackend([](const compute::BackendPtr& backend) {
    Exec e = NewExec(backend, [](Node x) { return Exp(nn::LogSoftmax(x, -1)); });
    ExpectNear(e.Call1(Fix("softmax_x")), Fix("softmax_out"), 1e-12);
  });
}

TEST(Nn, DenseWithGeluMatchesTorch) {
  ExpectMatchesTorch(
      {"dense_gelu_x", "dense_gelu_w", "dense_gelu_b"}, "dense_gelu_out",
      [](const std::vector<Node>& in) { return nn::Dense(in[0], in[1], in[2], activations::Gelu); });
}

TEST(Nn, DenseWithoutBiasIsTheProduct) {
  ForEachBackend([](const compute::BackendPtr& backend) {
    // [2, 1, 3] · [3, 2, 2] -> [2, 1, 2, 2].
    Exec e = NewExec(backend, [](Node x, Node w) { return nn::Dense(x, w); });
    std::vector<double> xv = {1, 2, 3, -1, 0.5, 2}, wv(12);
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.25 * static_cast<double>(i) - 1;
    Tensor y = e.Call1(Tensor::FromFlat(Shape(DType::Float64, {2, 1, 3}), xv),
                       Tensor::FromFlat(Shape(DType::Float64, {3, 2, 2}), wv));
    ASSERT_EQ(y.shape(), Shape(DType::Float64, {2, 1, 2, 2}));
    std::vector<double> got = y.ToVector<double>();
    for (int n = 0; n < 2; ++n) {
      for (int o = 0; o < 4; ++o) {
        double want = 0;
        for (int i = 0; i < 3; ++i)
          want += xv[static_cast<size_t>(n * 3 + i)] * wv[static_cast<size_t>(i * 4 + o)];
        EXPECT_NEAR(got[static_cast<size_t>(n * 4 + o)], want, 1e-12);
      }
    }
  });
}

TEST(Nn, GradientsMatchCentralDifferences) {
  ExpectGradientsMatchDifferences(
      {Fix("layer_norm_x"), Fix("layer_norm_gamma"), Fix("layer_norm_beta")},
      [](const std::vector<Node>& in) { return nn::LayerNorm(in[0], {-1}, in[1], in[2]); });
  ExpectGradientsMatchDifferences(
      {Fix("rms_norm_x"), Fix("rms_norm_gamma")},
      [](const std::vector<Node>& in) { return nn::RMSNorm(in[0], {-1}, in[1]); });
  ExpectGradientsMatchDifferences({Fix("batch_norm_x"), Fix("batch_norm_mean"), Fix("batch_norm_var"),
                                   Fix("batch_norm_gamma"), Fix("batch_norm_beta")},
                                  [](const std::vector<Node>& in) {
                                    return nn::BatchNormInference(in[0], in[1], in[2], in[3], in[4], 1e-3, 1);
                                  });
  ExpectGradientsMatchDifferences(
      {Fix("dense_gelu_x"), Fix("dense_gelu_w"), Fix("dense_gelu_b")},
      [](const std::vector<Node>& in) { return nn::Dense(in[0], in[1], in[2], activations::Gelu); });
  ExpectGradientsMatchDifferences({Fix("softmax_x")},
                                  [](const std::vector<Node>& in) { return nn::Softcap(in[0], 3.0); });
}

TEST(Nn, SoftcapIsCapTimesTanh) {
  ForEachBackend([](const compute::BackendPtr& backend) {
    Exec e = NewExec(backend, [](Node x) { return nn::Softcap(x, 5.0); });
    std::vector<float> xv = {-100, -5, -1, 0, 0.5, 3, 50};
    std::vector<float> y = e.Call1(xv).ToVector<float>();
    for (size_t i = 0; i < xv.size(); ++i) {
      EXPECT_NEAR(y[i], 5 * std::tanh(xv[i] / 5.0), 1e-5) << xv[i];
      EXPECT_LE(std::abs(y[i]), 5.0f);
    }
  });
  Graph g;
  EXPECT_TRUE(Throws([&] { nn::Softcap(g.Parameter(Shape(DType::Float32, {2})), 0); }, {"Softcap", "cap 0"}));
}

TEST(Nn, DropoutZeroesAndScalesWhileTraining) {
  ForEachBackend([](const compute::BackendPtr& backend) {
    Exec e = NewExec(backend, [](Node x) -> std::vector<Node> {
      Node state = RNGStateFromSeed(x.graph(), 7);
      Node before = state;
      Node y = nn::Dropout(x, state, 0.25, true);
      Node untouched = state;
      Node same = nn::Dropout(x, untouched, 0.25, false);
      // The state advanced in training; inference returned x and left the state alone.
      Node advanced = ReduceLogicalOr(NotEqual(state, before));
      Node kept = ReduceLogicalAnd(Equal(untouched, state));
      return {y, same, advanced, kept};
    });
    const Tensor ones = Tensor::FromScalarAndDimensions<float>(1.0f, {200, 100});
    std::vector<Tensor> r = e.Call(ones);
    int zeros = 0;
    for (float v : r[0].ToVector<float>()) {
      if (v == 0) {
        ++zeros;
      } else {
        EXPECT_NEAR(v, 1 / 0.75f, 1e-6);
      }
    }
    EXPECT_NEAR(zeros / 20000.0, 0.25, 0.02);
    EXPECT_TRUE(r[1].Equal(ones));
    EXPECT_TRUE(r[2].Item<bool>());
    EXPECT_TRUE(r[3].Item<bool>());
  });
}

TEST(Nn, BadInputIsAnError) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3}));
  Node gamma4 = g.Parameter(Shape(DType::Float32, {4}));
  EXPECT_TRUE(Throws([&] { nn::LayerNorm(x, {2}); }, {"nn::LayerNorm", "axis 2", "out of range"}));
  EXPECT_TRUE(Throws([&] { nn::LayerNorm(x, {-1}, gamma4); }, {"nn::LayerNorm", "gamma (Float32)[4]"}));
  EXPECT_TRUE(Throws([&] { nn::LayerNorm(x, {1, -1}); }, {"nn::LayerNorm", "repeat"}));
  EXPECT_TRUE(Throws([&] { nn::Dense(x, gamma4); }, {"nn::Dense", "weights (Float32)[4]"}));
  Node w = g.Parameter(Shape(DType::Float32, {3, 2}));
  EXPECT_TRUE(Throws([&] { nn::Dense(x, w, gamma4); }, {"nn::Dense", "bias"}));
  Node ints = g.Parameter(Shape(DType::Int32, {2}));
  EXPECT_TRUE(Throws([&] { nn::RMSNorm(ints); }, {"nn::RMSNorm", "must be float"}));
  Node state = RNGStateFromSeed(g, 1);
  EXPECT_TRUE(Throws([&] { nn::Dropout(x, state, 1.0, true); }, {"nn::Dropout", "rate 1"}));
  EXPECT_TRUE(Throws([&] { nn::BatchNormInference(x, Node(), Node()); }, {"BatchNormInference", "required"}));
}

}  // namespace
