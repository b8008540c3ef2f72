// Tests for activations and losses against values computed here in double from their formulas,
// with gradients checked numerically through the same graphs.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

const std::vector<double> kX = {-3.0, -1.2, -0.3, 0.0, 0.4, 1.1, 2.5, 7.0};

std::vector<double> Run1(const std::function<Node(Node)>& f, const std::vector<double>& x) {
  Exec e = NewExec(compute::New(), [&](Node n) { return f(n); });
  return e.Call1(x).ToVector<double>();
}

double Sigm(double x) { return 1 / (1 + std::exp(-x)); }

TEST(Activations, MatchTheirFormulas) {
  struct Row {
    const char* name;
    std::function<double(double)> ref;
  };
  const double c = std::sqrt(2 / std::numbers::pi);
  const Row rows[] = {
      {"relu", [](double x) { return std::max(x, 0.0); }},
      {"leaky_relu", [](double x) { return x > 0 ? x : 0.01 * x; }},
      {"relu6", [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {"elu", [](double x) { return x > 0 ? x : std::expm1(x); }},
      {"selu",
       [](double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * std::expm1(x)); }},
      {"gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu_approximate",
       [c](double x) { return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x))); }},
      {"swish", [](double x) { return x * Sigm(x); }},
      {"silu", [](double x) { return x * Sigm(x); }},
      {"sigmoid", Sigm},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"softplus", [](double x) { return std::log1p(std::exp(x)); }},
      {"hard_sigmoid", [](double x) { return std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
      {"hard_swish", [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
      {"linear", [](double x) { return x; }},
  };
  for (const Row& r : rows) {
    std::vector<double> got = Run1(activations::FromName(r.name), kX);
    for (size_t i = 0; i < kX.size(); ++i)
      EXPECT_NEAR(got[i], r.ref(kX[i]), 1e-12) << r.name << " at " << kX[i];
  }
  // Softplus stays finite far out.
  std::vector<double> big = Run1(activations::Softplus, {800.0, -800.0});
  EXPECT_NEAR(big[0], 800.0, 1e-9);
  EXPECT_NEAR(big[1], 0.0, 1e-300);
  // SwiGLU: halves [a, b] -> a * swish(b).
  Exec sw = NewExec(compute::New(), [](Node x) { return activations::SwiGLU(x); });
  std::vector<double> s = sw.Call1(std::vector<std::vector<double>>{{1, 2, 0.5, -1}}).ToVector<double>();
  EXPECT_NEAR(s[0], 1 * 0.5 * Sigm(0.5), 1e-12);
  EXPECT_NEAR(s[1], 2 * -1 * Sigm(-1), 1e-12);
  EXPECT_TRUE(Throws([] { activations::FromName("relux"); }, {"relux", "relu", "gelu"}));
  Graph g;
  EXPECT_TRUE(
      Throws([&] { activations::SwiGLU(g.Parameter(Shape(DType::Float32, {3}))); }, {"SwiGLU", "even"}));
}

TEST(Activations, GradientsMatchDerivatives) {
  // d/dx of the smooth ones at points away from kinks.
  Exec e = NewExec(compute::New(), [](Node x) {
    return std::vector<Node>{Gradient(ReduceAllSum(activations::Gelu(x)), {x})[0],
                             Gradient(ReduceAllSum(activations::Softplus(x)), {x})[0],
                             Gradient(ReduceAllSum(activations::Selu(x)), {x})[0]};
  });
  std::vector<Tensor> r = e.Call(std::vector<double>{-1.5, 0.3, 2.0});
  const std::vector<double> xs = {-1.5, 0.3, 2.0};
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    const double pdf = std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi);
    EXPECT_NEAR(r[0].ToVector<double>()[i], 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * pdf, 1e-12);
    EXPECT_NEAR(r[1].ToVector<double>()[i], Sigm(x), 1e-12);
    EXPECT_NEAR(r[2].ToVector<double>()[i],
                1.0507009873554805 * (x > 0 ? 1 : 1.6732632423543772 * std::exp(x)), 1e-12);
  }
}

double RunLoss(const train::LossFn& loss, const std::vector<Tensor>& labels, const Tensor& pred) {
  Exec e = NewExec(compute::New(), [&](const std::vector<Node>& in) {
    std::vector<Node> l(in.begin(), in.end() - 1);
    return loss(l, {in.back()});
  });
  std::vector<Tensor> args = labels;
  args.push_back(pred);
  return e.Call1(args).Item<double>();
}

TEST(Losses, MatchHandComputedValues) {
  const Tensor y = Tensor::FromValue(std::vector<std::vector<double>>{{1, 0}, {0.5, 2}});
  const Tensor p = Tensor::FromValue(std::vector<std::vector<double>>{{0.5, 0.5}, {1.5, -1}});
  // Per example: mean of squared errors {0.25, 0.25} -> 0.25 and {1, 9} -> 5; mean 2.625.
  EXPECT_NEAR(RunLoss(losses::MeanSquaredError, {y}, p), 2.625, 1e-12);
  EXPECT_NEAR(RunLoss(losses::MeanAbsoluteError, {y}, p), (0.5 + (1 + 3) / 2.0) / 2, 1e-12);
  // Huber: |d| = {0.5, 0.5} -> 0.125 each; {1, 3} -> 0.5 and 2.5.
  EXPECT_NEAR(RunLoss(losses::Huber, {y}, p), ((0.125 + 0.125) / 2 + (0.5 + 2.5) / 2) / 2, 1e-12);
  // Weights and a mask: example 0 weight 3, example 1 weight 1 but masked out.
  const Tensor w = Tensor::FromValue(std::vector<double>{3, 1});
  const Tensor m = Tensor::FromValue(std::vector<bool>{true, false});
  EXPECT_NEAR(RunLoss(losses::MeanSquaredError, {y, w}, p), (3 * 0.25 + 1 * 5) / 4, 1e-12);
  EXPECT_NEAR(RunLoss(losses::MeanSquaredError, {y, w, m}, p), 0.25, 1e-12);

  // Binary cross-entropy with logits z and labels t.
  const std::vector<double> z = {-2, 0.5, 3}, t = {0, 1, 1};
  double bce = 0, bcep = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    const double s = Sigm(z[i]);
    bce += -(t[i] * std::log(s) + (1 - t[i]) * std::log(1 - s));
  }
  bce /= 3;
  EXPECT_NEAR(RunLoss(losses::BinaryCrossentropyLogits, {Tensor::FromValue(t)}, Tensor::FromValue(z)), bce,
              1e-12);
  std::vector<double> probs;
  for (double v : z) probs.push_back(Sigm(v));
  bcep = RunLoss(losses::BinaryCrossentropy, {Tensor::FromValue(t)}, Tensor::FromValue(probs));
  EXPECT_NEAR(bcep, bce, 1e-9);
  // Large logits stay finite.
  EXPECT_NEAR(RunLoss(losses::BinaryCrossentropyLogits, {Tensor::FromValue(std::vector<double>{0})},
                      Tensor::FromValue(std::vector<double>{1000})),
              1000, 1e-9);

  // Softmax cross-entropy: logits [2, 3], classes {2, 0}.
  const std::vector<std::vector<double>> logits = {{1, 2, 3}, {0.5, -1, 4}};
  double sce = 0;
  const int cls[2] = {2, 0};
  for (int i = 0; i < 2; ++i) {
    double lse = 0;
    for (double v : logits[static_cast<size_t>(i)]) lse += std::exp(v);
    sce += std::log(lse) - logits[static_cast<size_t>(i)][static_cast<size_t>(cls[i])];
  }
  sce /= 2;
  const Tensor ids = Tensor::FromValue(std::vector<std::vector<int32_t>>{{2}, {0}});
  EXPECT_NEAR(RunLoss(losses::SparseCategoricalCrossEntropyLogits, {ids}, Tensor::FromValue(logits)), sce,
              1e-12);
  const Tensor onehot = Tensor::FromValue(std::vector<std::vector<double>>{{0, 0, 1}, {1, 0, 0}});
  EXPECT_NEAR(RunLoss(losses::CategoricalCrossEntropyLogits, {onehot}, Tensor::FromValue(logits)), sce,
              1e-12);
  std::vector<std::vector<double>> sm = logits;
  for (auto& row : sm) {
    double s = 0;
    for (double v : row) s += std::exp(v);
    for (double& v : row) v = std::exp(v) / s;
  }
  EXPECT_NEAR(RunLoss(losses::CategoricalCrossEntropy, {onehot}, Tensor::FromValue(sm)), sce, 1e-9);
}

TEST(Losses, GradientOfSoftmaxCrossEntropyIsSoftmaxMinusOneHot) {
  Exec e = NewExec(compute::New(), [](Node ids, Node z) {
    return Gradient(losses::SparseCategoricalCrossEntropyLogits({ids}, {z}), {z})[0];
  });
  std::vector<double> g =
      e.Call1(std::vector<std::vector<int32_t>>{{1}}, std::vector<std::vector<double>>{{0.2, -0.4, 1.0}})
          .ToVector<double>();
  const double s = std::exp(0.2) + std::exp(-0.4) + std::exp(1.0);
  EXPECT_NEAR(g[0], std::exp(0.2) / s, 1e-12);
  EXPECT_NEAR(g[1], std::exp(-0.4) / s - 1, 1e-12);
  EXPECT_NEAR(g[2], std::exp(1.0) / s, 1e-12);
}

TEST(Losses, BadInputsAreErrors) {
  Graph g;
  Node p = g.Parameter(Shape(DType::Float32, {4, 3}));
  Node y = g.Parameter(Shape(DType::Float32, {4, 2}));
  EXPECT_TRUE(Throws([&] { losses::MeanSquaredError({y}, {p}); }, {"MeanSquaredError", "differ in shape"}));
  Node ids = g.Parameter(Shape(DType::Float32, {4, 1}));
  EXPECT_TRUE(Throws([&] { losses::SparseCategoricalCrossEntropyLogits({ids}, {p}); },
                     {"SparseCategoricalCrossEntropyLogits", "integer class ids"}));
  Node bad_w = g.Parameter(Shape(DType::Float32, {5}));
  EXPECT_TRUE(Throws([&] { losses::MeanSquaredError({p, bad_w}, {p}); }, {"weights", "batch 4"}));
  EXPECT_TRUE(Throws([&] { losses::MeanSquaredError({}, {p}); }, {"no labels"}));
}

}  // namespace
