// Tests for regularizers: the gradient of a loss with the added terms is the plain gradient plus
// 2·amount·w (L2) or amount·sign(w) (L1); hyperparameters select them; bad input is named.

#include "kiln/ml/regularizers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

const std::vector<double> kW = {0.5, -1.25, 2.0, -0.75, 0.3, -0.1};
const std::vector<double> kX = {1.0, 2.0, -1.0, 0.5, -2.0, 1.5};

struct Result {
  std::vector<double> grad, plain_grad;
  double total, plain;
};

/// Runs loss = Σ sin(w)·x (plus the regularizer's terms) on `backend` and returns the values and
/// gradients with and without the added terms. `apply` regularizes inside the model function.
Result RunLoss(const compute::BackendPtr& backend,
               const std::function<void(model::Scope, model::Variable)>& apply) {
  model::Store store;
  model::Variable w = store.RootScope().In("layer").VariableWithValue(
      "weights", Tensor::FromFlat(Shape(DType::Float64, {2, 3}), kW));
  model::Exec f = model::NewExec(backend, store, [&](model::Scope scope, Node x) -> std::vector<Node> {
    Node wn = w.NodeValue(x.graph());
    Node plain = ReduceAllSum(Sin(wn) * x);
    apply(scope.In("layer"), w);
    Node total = plain;
    for (Node t : train::AddedLosses(x.graph())) total = total + t;
    return {total, plain, Gradient(total, {wn})[0], Gradient(plain, {wn})[0]};
  });
  std::vector<Tensor> r = f.Call(Tensor::FromFlat(Shape(DType::Float64, {2, 3}), kX));
  return {r[2].ToVector<double>(), r[3].ToVector<double>(), r[0].Item<double>(), r[1].Item<double>()};
}

double Sign(double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }

TEST(Regularizers, L2AddsTwiceAmountTimesW) {
  for (const compute::BackendPtr& backend : {compute::New(), compute::NewWithConfig("ref")}) {
    SCOPED_TRACE(backend->Name());
    const double a = 0.03;
    Result r = RunLoss(backend, [a](model::Scope s, model::Variable w) { regularizers::L2(a)(s, {w}); });
    double sq = 0;
    for (double e : kW) sq += e * e;
    EXPECT_NEAR(r.total - r.plain, a * sq, 1e-12);
    for (size_t i = 0; i < kW.size(); ++i) {
      EXPECT_NEAR(r.plain_grad[i], std::cos(kW[i]) * kX[i], 1e-12);
      EXPECT_NEAR(r.grad[i], r.plain_grad[i] + 2 * a * kW[i], 1e-12) << i;
    }
  }
}

TEST(Regularizers, L1AddsAmountTimesSign) {
  for (const compute::BackendPtr& backend : {compute::New(), compute::NewWithConfig("ref")}) {
    SCOPED_TRACE(backend->Name());
    const double a = 0.2;
    Result r = RunLoss(backend, [a](model::Scope s, model::Variable w) { regularizers::L1(a)(s, {w}); });
    double abs = 0;
    for (double e : kW) abs += std::abs(e);
    EXPECT_NEAR(r.total - r.plain, a * abs, 1e-12);
    for (size_t i = 0; i < kW.size(); ++i)
      EXPECT_NEAR(r.grad[i], r.plain_grad[i] + a * Sign(kW[i]), 1e-12) << i;
  }
}

TEST(Regularizers, L1L2AndHyperparameters) {
  const double l1 = 0.1, l2 = 0.05;
  Result both =
      RunLoss(compute::New(), [&](model::Scope s, model::Variable w) { regularizers::L1L2(l1, l2)(s, {w}); });
  // The same amounts from the hyperparameters (set at the root, seen from the layer's scope).
  Result params = RunLoss(compute::New(), [&](model::Scope s, model::Variable) {
    s.store().RootScope().SetParam(regularizers::kParamL1, l1);
    s.store().RootScope().SetParam(regularizers::kParamL2, l2);
    regularizers::RegularizeWeights(s);
  });
  for (size_t i = 0; i < kW.size(); ++i) {
    const double want = both.plain_grad[i] + l1 * Sign(kW[i]) + 2 * l2 * kW[i];
    EXPECT_NEAR(both.grad[i], want, 1e-12) << i;
    EXPECT_NEAR(params.grad[i], want, 1e-12) << i;
  }
  // Nothing set: nothing added.
  Result none =
      RunLoss(compute::New(), [](model::Scope s, model::Variable) { regularizers::RegularizeWeights(s); });
  EXPECT_EQ(none.total, none.plain);
  EXPECT_FALSE(regularizers::FromParams(model::Store().RootScope()));
}

TEST(Regularizers, DenseAppliesTheHyperparameterInTheTrainer) {
  // With zero predictions error, the trainer's loss is only the L2 term of the dense weights,
  // which layers::Dense adds by itself when "l2_regularization" is set.
  model::Store store;
  store.SetParam(regularizers::kParamL2, 0.5);
  train::Trainer trainer(
      compute::New(), store,
      [](model::Scope scope, const std::any&, std::vector<Node> inputs) -> std::vector<Node> {
        model::Scope s = scope.In("dense");
        return {layers::Dense(s, inputs[0], false, 1)};
      },
      losses::MeanSquaredError, optimizers::StochasticGradientDescent().LearningRate(0).Done(), {}, {});
  const Shape shape(DType::Float32, {2, 2});
  std::vector<Tensor> m =
      trainer.EvalStep({}, {Tensor::FromFlat(shape, std::vector<float>(4, 0.f))},
                       {Tensor::FromFlat(Shape(DType::Float32, {2, 1}), std::vector<float>(2, 0.f))});
  std::vector<float> w = store.GetVariable("/dense/weights").Value().ToVector<float>();
  double sq = 0;
  for (float e : w) sq += double(e) * e;
  EXPECT_GT(sq, 0);
  EXPECT_NEAR(m[0].Item<float>(), 0.5 * sq, 1e-6);
}

TEST(Regularizers, BadInputIsNamed) {
  EXPECT_TRUE(Throws([] { regularizers::L2(-1); }, {"regularizers::L2", "-1"}));
  EXPECT_TRUE(Throws([] { regularizers::L1(NAN); }, {"regularizers::L1"}));
  model::Store store;
  model::Variable w = store.RootScope().VariableWithValue("w", std::vector<float>{1, 2});
  EXPECT_TRUE(Throws([&] { regularizers::L2(0.1)(store.RootScope(), {w}); }, {"not bound to a graph"}));
  store.SetParam(regularizers::kParamL2, -0.5);
  EXPECT_TRUE(Throws([&] { regularizers::FromParams(store.RootScope()); }, {"l2_regularization", "-0.5"}));
  model::Variable ints = store.RootScope().VariableWithValue("ints", std::vector<int32_t>{1, 2});
  model::Exec f = model::NewExec(compute::New(), store, [&](model::Scope scope, Node x) {
    regularizers::L1(0.1)(scope, {ints});
    return x;
  });
  EXPECT_TRUE(Throws([&] { f.Call1(std::vector<float>{1}); }, {"regularizers::L1", "/ints", "not float"}));
}

}  // namespace
