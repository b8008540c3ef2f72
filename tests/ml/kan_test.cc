// Tests for KAN: B-spline bases (partition of unity, values from the closed-form uniform
// B-splines), the layer's variables and errors, and a fit of sin(3x).

#include "kiln/ml/kan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

std::vector<compute::BackendPtr> Backends() { return {compute::New(), compute::NewWithConfig("ref")}; }

TEST(BSplineBases, PartitionOfUnityInsideTheGrid) {
  std::vector<double> xs;
  for (int i = 0; i <= 40; ++i) xs.push_back(-1.0 + i / 20.0);  // Both ends included.
  const int64_t n = static_cast<int64_t>(xs.size());
  for (const compute::BackendPtr& backend : Backends()) {
    for (int order : {0, 1, 2, 3}) {
      SCOPED_TRACE(backend->Name() + " order " + std::to_string(order));
      Exec bases = NewExec(backend, [order](Node x) { return layers::BSplineBases(x, 5, order); });
      Tensor b = bases.Call1(Tensor::FromFlat(Shape(DType::Float64, {n}), xs));
      const int64_t nb = 5 + order;
      ASSERT_EQ(b.shape(), Shape(DType::Float64, {n, nb}));
      std::vector<double> v = b.ToVector<double>();
      for (int64_t i = 0; i < n; ++i) {
        double sum = 0;
        for (int64_t k = 0; k < nb; ++k) {
          const double e = v[static_cast<size_t>(i * nb + k)];
          EXPECT_GE(e, -1e-15);
          sum += e;
        }
        // Degree 0 uses half-open intervals: x = hi belongs to the interval beyond the grid.
        if (order > 0 || i < n - 1) {
          EXPECT_NEAR(sum, 1.0, 1e-12) << "x = " << xs[static_cast<size_t>(i)];
        }
      }
    }
  }
}

TEST(BSplineBases, MatchClosedFormUniformSplines) {
  // Grid of 4 intervals on [-1, 1] (h = 0.5); x = 0.1 lies in [0, 0.5) with u = 0.2.
  const double u = 0.2;
  // Cubic: knots -2.5, -2, ..., 2.5; the interval [0, 0.5) starts at knot 5, so bases 2..5 are
  // the four pieces of the uniform cubic B-spline.
  const std::vector<double> cubic = {0,
                                     0,
                                     std::pow(1 - u, 3) / 6,
                                     (3 * u * u * u - 6 * u * u + 4) / 6,
                                     (-3 * u * u * u + 3 * u * u + 3 * u + 1) / 6,
                                     u * u * u / 6,
                                     0};
  // Linear: knots -1.5, -1, ..., 1.5; hats 2 and 3 cover [0, 0.5).
  const std::vector<double> linear = {0, 0, 1 - u, u, 0};
  for (const compute::BackendPtr& backend : Backends()) {
    SCOPED_TRACE(backend->Name());
    Exec f = NewExec(backend, [](Node x) -> std::vector<Node> {
      return {layers::BSplineBases(x, 4, 3), layers::BSplineBases(x, 4, 1)};
    });
    std::vector<Tensor> r = f.Call(Tensor::FromFlat(Shape(DType::Float32, {1, 1}), std::vector<float>{0.1f}));
    ASSERT_EQ(r[0].shape(), Shape(DType::Float32, {1, 1, 7}));
    std::vector<float> c = r[0].ToVector<float>(), l = r[1].ToVector<float>();
    for (size_t k = 0; k < cubic.size(); ++k) EXPECT_NEAR(c[k], cubic[k], 1e-6) << "cubic basis " << k;
    for (size_t k = 0; k < linear.size(); ++k) EXPECT_NEAR(l[k], linear[k], 1e-6) << "linear basis " << k;
  }
}

TEST(KAN, VariablesAndErrors) {
  model::Store store;
  model::Exec f = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::KAN(scope.In("kan"), x)
        .NumHiddenLayers(2)
        .HiddenDims(4)
        .OutputDims(3)
        .GridSize(6)
        .SplineOrder(2)
        .Done();
  });
  Tensor y = f.Call1(Tensor::FromFlat(Shape(DType::Float32, {5, 2}), std::vector<float>(10, 0.25f)));
  EXPECT_EQ(y.shape(), Shape(DType::Float32, {5, 3}));
  EXPECT_EQ(store.GetVariable("/kan/kan_hidden_0/coefficients").shape(), Shape(DType::Float32, {2, 4, 8}));
  EXPECT_EQ(store.GetVariable("/kan/kan_hidden_1/w_base").shape(), Shape(DType::Float32, {4, 4}));
  EXPECT_EQ(store.GetVariable("/kan/kan_output/w_spline").shape(), Shape(DType::Float32, {4, 3}));
  int kan_variables = 0;
  for (const model::Variable& v : store.Variables()) kan_variables += v.Path().starts_with("/kan/");
  EXPECT_EQ(kan_variables, 9);
  auto build = [&](const std::function<Node(model::Scope, Node)>& fn) {
    model::Exec e = model::NewExec(compute::New(), store, [fn](model::Scope s, Node x) { return fn(s, x); });
    e.Call1(Tensor::FromFlat(Shape(DType::Float32, {2, 2}), std::vector<float>(4, 0.f)));
  };
  EXPECT_TRUE(Throws([&] { build([](model::Scope s, Node x) { return layers::KAN(s.In("a"), x).Done(); }); },
                     {"layers::KAN(/a)", "OutputDims"}));
  EXPECT_TRUE(Throws(
      [&] {
        build([](model::Scope s, Node x) {
          return layers::KAN(s.In("b"), x).OutputDims(1).GridSize(0).Done();
        });
      },
      {"/b", "GridSize(0)"}));
  EXPECT_TRUE(Throws(
      [&] {
        build([](model::Scope s, Node x) {
          return layers::KAN(s.In("c"), Reshape(x, {4})).OutputDims(1).Done();
        });
      },
      {"/c", "[batch, features]"}));
}

TEST(KAN, FitsSinOnTheGrid) {
  // y = sin(3x) on 256 points of [-1, 1], full batch, at most 2000 Adam steps: one KAN layer
  // (a spline per edge), and a [1, 4, 1] network.
  const int64_t n = 256;
  std::vector<float> xs(n), ys(n);
  for (int64_t i = 0; i < n; ++i) {
    xs[static_cast<size_t>(i)] = -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(n - 1);
    ys[static_cast<size_t>(i)] = std::sin(3.0f * xs[static_cast<size_t>(i)]);
  }
  const Shape shape(DType::Float32, {n, 1});
  for (int hidden : {0, 1}) {
    SCOPED_TRACE(std::to_string(hidden) + " hidden layers");
    model::Store store;
    train::Trainer trainer(
        compute::New(), store,
        [hidden](model::Scope scope, const std::any&, std::vector<Node> inputs) -> std::vector<Node> {
          return {layers::KAN(scope.In("kan"), inputs[0])
                      .NumHiddenLayers(hidden)
                      .HiddenDims(4)
                      .OutputDims(1)
                      .GridSize(8)
                      .SplineOrder(3)
                      .Done()};
        },
        losses::MeanSquaredError, optimizers::Adam().LearningRate(0.02).Done(), {}, {});
    const auto start = std::chrono::steady_clock::now();
    // Stops early once the training loss is well below the bound.
    int steps = 0;
    for (; steps < 2000; ++steps) {
      std::vector<Tensor> m =
          trainer.TrainStep({}, {Tensor::FromFlat(shape, xs)}, {Tensor::FromFlat(shape, ys)});
      if (steps % 50 == 49 && m[0].Item<float>() < 1e-4) break;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<Tensor> eval =
        trainer.EvalStep({}, {Tensor::FromFlat(shape, xs)}, {Tensor::FromFlat(shape, ys)});
    const double mse = eval[0].Item<float>();
    EXPECT_LT(mse, 1e-3) << "after " << steps << " steps";
    std::cout << "KAN sin(3x), " << hidden << " hidden layers: MSE " << mse << " after " << steps
              << " steps in " << seconds << " s\n";
  }
}

/// sin(3x) at 128 evenly spaced points of [-1, 1], as [128, 1] tensors.
struct Sin3x {
  Sin3x() {
    for (int i = 0; i < 128; ++i) {
      xs.push_back(-1 + 2 * static_cast<float>(i) / 127);
      ys.push_back(std::sin(3 * xs.back()));
    }
  }
  Tensor X() const { return Tensor::FromFlat(Shape(DType::Float32, {128, 1}), xs); }
  Tensor Y() const { return Tensor::FromFlat(Shape(DType::Float32, {128, 1}), ys); }
  std::vector<float> xs, ys;
};

/// A KAN of one output layer, "kan", configured by `variant` (PiecewiseLinear()...).
using Variant = std::function<void(layers::KANBuilder&)>;
Node OneLayerKan(model::Scope scope, Node x, const Variant& variant) {
  layers::KANBuilder b = layers::KAN(scope.In("kan"), x);
  b.OutputDims(1);
  variant(b);
  return b.Done();
}

/// Trains OneLayerKan(variant) on sin(3x) with Adam (full batch, `steps` steps, seeded) and
/// returns its predictions afterwards (training flag off) and the last training loss.
std::vector<float> FitSin3x(const Variant& variant, double learning_rate, int steps, uint64_t seed,
                            float& loss) {
  const Sin3x data;
  model::Store store;
  store.SetRNGStateFromSeed(seed);
  auto model = [variant](model::Scope scope, const std::any&, std::vector<Node> in) {
    return std::vector<Node>{OneLayerKan(scope, in[0], variant)};
  };
  train::Trainer trainer(compute::New(), store, model, losses::MeanSquaredError,
                         optimizers::Adam().LearningRate(learning_rate).Done(), {}, {});
  for (int step = 0; step < steps; ++step)
    loss = trainer.TrainStep(std::any(), {data.X()}, {data.Y()})[0].Item<float>();
  model::Exec predict = model::NewExec(compute::New(), store, [variant](model::Scope scope, Node x) {
    return OneLayerKan(scope, x, variant);
  });
  return predict.Call1(data.X()).ToVector<float>();
}

TEST(KAN, PiecewiseLinearMatchesItsFormula) {
  // One edge, split points -1, 0, 1, control points 1, 2, -1 and bias 0.5:
  // φ(x) = 0.5 + r_0 + 2 r_1 - r_2.
  for (const bool linear : {false, true}) {
    SCOPED_TRACE(linear ? "linear extrapolation" : "constant extrapolation");
    model::Store store;
    model::Scope at = store.RootScope().In("kan").In("kan_output");
    at.VariableWithValue("kan_pwl_control_points",
                         std::vector<std::vector<std::vector<float>>>{{{1, 2, -1}}});
    at.VariableWithValue("kan_pwl_bias", std::vector<std::vector<float>>{{0.5f}});
    model::Exec f = model::NewExec(compute::New(), store, [linear](model::Scope scope, Node x) {
      return layers::KAN(scope.In("kan"), x).OutputDims(1).PiecewiseLinear(linear).NumControlPoints(3).Done();
    });
    const std::vector<float> y =
        f.Call1(Tensor::FromFlat(Shape(DType::Float32, {4, 1}), std::vector<float>{0.5f, 2, -3, -0.5f}))
            .ToVector<float>();
    // x = 0.5: ramps 1.5, 0.5, 0. x = -0.5: 0.5, 0, 0 (unclipped r_0 is 0.5 too).
    EXPECT_FLOAT_EQ(y[0], 3.0f);
    EXPECT_FLOAT_EQ(y[3], 1.0f);
    if (linear) {
      EXPECT_FLOAT_EQ(y[1], 6.5f);   // ramps 3, 2, 1
      EXPECT_FLOAT_EQ(y[2], -1.5f);  // ramps -2, 0, 0
    } else {
      EXPECT_FLOAT_EQ(y[1], 4.5f);  // ramps clamped at 2, 1, 0
      EXPECT_FLOAT_EQ(y[2], 0.5f);  // all 0
    }
  }
  model::Store store;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3}));
  EXPECT_TRUE(Throws(
      [&] { layers::KAN(store.RootScope(), x).OutputDims(1).PiecewiseLinear().NumControlPoints(1).Done(); },
      {"NumControlPoints(1)"}));
}

TEST(KAN, PiecewiseLinearFitsSin) {
  // One PWL layer of 20 points: Adam brings the MSE under 1e-3 and every point within 0.1 in 6000
  // full-batch steps (the ramps are a cumulative basis, slower to train than B-splines).
  float loss = 0;
  const std::vector<float> p =
      FitSin3x([](layers::KANBuilder& b) { b.PiecewiseLinear(); }, 0.01, 6000, 3, loss);
  EXPECT_LT(loss, 1e-3f);
  const Sin3x data;
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], data.ys[i], 0.1) << "x = " << data.xs[i];
}

TEST(KAN, RationalMatchesItsFormulaAndFitsSin) {
  // One edge: P(x) = 1 + 2x - x^2, Q(x) = 0.5x + x^2, w = 3: φ(x) = 3 P(x) / (1 + |Q(x)|).
  model::Store store;
  model::Scope at = store.RootScope().In("kan").In("kan_output");
  at.VariableWithValue("numerator_coeffs", std::vector<std::vector<std::vector<float>>>{{{1, 2, -1}}});
  at.VariableWithValue("denominator_coeffs", std::vector<std::vector<std::vector<float>>>{{{0.5f, 1}}});
  at.VariableWithValue("w", std::vector<std::vector<float>>{{3}});
  model::Exec f = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::KAN(scope.In("kan"), x).OutputDims(1).Rational(2, 2).Done();
  });
  const std::vector<float> xs{0.5f, -2, 0};
  const std::vector<float> y = f.Call1(Tensor::FromFlat(Shape(DType::Float32, {3, 1}), xs)).ToVector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    EXPECT_NEAR(y[i], 3 * (1 + 2 * x - x * x) / (1 + std::abs(0.5 * x + x * x)), 1e-5) << "x = " << x;
  }
  // Trained, one rational layer fits sin(3x).
  float loss = 0;
  FitSin3x([](layers::KANBuilder& b) { b.Rational(); }, 0.01, 3000, 5, loss);
  EXPECT_LT(loss, 1e-3f);
  Graph g;
  Node in = g.Parameter(Shape(DType::Float32, {2, 3}));
  EXPECT_TRUE(Throws([&] { layers::KAN(store.RootScope(), in).OutputDims(1).Rational(0, 2).Done(); },
                     {"Rational(0, 2)"}));
}

TEST(KAN, DiscreteMatchesItsFormulaAndFitsSin) {
  // One edge, 3 control points 10, 20, 30 and split points -1, 1.
  auto build = [](bool training, double softness, bool normal) {
    auto store = std::make_shared<model::Store>();
    store->RootScope()
        .In("kan")
        .In("kan_output")
        .VariableWithValue("kan_discrete_control_points",
                           std::vector<std::vector<std::vector<float>>>{{{10, 20, 30}}});
    model::Exec f = model::NewExec(compute::New(), *store, [softness, normal](model::Scope scope, Node x) {
      return layers::KAN(scope.In("kan"), x)
          .OutputDims(1)
          .Discrete(softness, normal)
          .NumControlPoints(3)
          .Done();
    });
    f.OnNewGraph([training](Graph& g) { model::SetTraining(g, training); });
    return std::make_pair(store, f);
  };
  // Not training: the step function.
  auto [s1, hard] = build(false, 0.25, false);
  EXPECT_EQ(hard.Call1(Tensor::FromFlat(Shape(DType::Float32, {4, 1}), std::vector<float>{-2, -1, 0, 1}))
                .ToVector<float>(),
            (std::vector<float>{10, 20, 20, 30}));
  // Training, triangular noise of half-base 0.25 * 2 = 0.5 around x = 0.9: P(below 1) = 1 - 0.5 (1 - 0.2)^2.
  auto [s2, tri] = build(true, 0.25, false);
  EXPECT_NEAR(tri.Call1(Tensor::FromFlat(Shape(DType::Float32, {1, 1}), std::vector<float>{0.9f}))
                  .ToVector<float>()[0],
              0.68 * 20 + 0.32 * 30, 1e-4);
  // Normal noise of stddev 0.5.
  auto [s3, nor] = build(true, 0.25, true);
  auto cdf = [](double t) { return 0.5 * (1 + std::erf(t / (0.5 * std::sqrt(2.0)))); };
  const double b0 = cdf(-1 - 0.9), b1 = cdf(1 - 0.9);
  EXPECT_NEAR(nor.Call1(Tensor::FromFlat(Shape(DType::Float32, {1, 1}), std::vector<float>{0.9f}))
                  .ToVector<float>()[0],
              10 * b0 + 20 * (b1 - b0) + 30 * (1 - b1), 1e-4);

  // Trained with the soft version, the hard step function fits sin(3x) to the steps' resolution.
  float loss = 0;
  const std::vector<float> p = FitSin3x([](layers::KANBuilder& b) { b.Discrete(); }, 0.05, 1500, 9, loss);
  const Sin3x data;
  double mse = 0;
  for (size_t i = 0; i < p.size(); ++i) mse += (p[i] - data.ys[i]) * (p[i] - data.ys[i]) / 128.0;
  EXPECT_LT(mse, 0.02);
  std::cout << "Discrete-KAN sin(3x): hard MSE " << mse << "\n";
  Graph g;
  Node in = g.Parameter(Shape(DType::Float32, {2, 3}));
  model::Store store;
  EXPECT_TRUE(
      Throws([&] { layers::KAN(store.RootScope(), in).OutputDims(1).Discrete(-1).Done(); }, {"softness -1"}));
}

}  // namespace
