// Tests for gradient accumulation: n accumulated steps of batch b update the variables as one
// step on the n*b examples together would (the mean loss of equal batches is the loss of their
// concatenation), for SGD with momentum and for Adam, over two updates; the global step counts
// batches; and the option's errors.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

/// 3 -> 4 (tanh) -> 2: small, but with a non-linearity and two layers of weights and biases.
std::vector<Node> TwoLayers(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node h = Tanh(layers::Dense(scope.In("hidden"), in[0], true, 4));
  return {layers::Dense(scope.In("out"), h, true, 2)};
}

/// Rows [first, first + n) of a fixed pseudo-random table: inputs [n, 3] and targets [n, 2].
std::pair<Tensor, Tensor> Rows(int first, int n) {
  std::vector<float> x, y;
  for (int i = first; i < first + n; ++i) {
    for (int j = 0; j < 3; ++j) x.push_back(static_cast<float>(std::sin(1.7 * i + 0.9 * j)));
    y.push_back(static_cast<float>(std::cos(0.7 * i)));
    y.push_back(static_cast<float>(0.5 * std::sin(2.3 * i + 1)));
  }
  return {Tensor::FromFlat(Shape(DType::Float32, {n, 3}), x),
          Tensor::FromFlat(Shape(DType::Float32, {n, 2}), y)};
}

std::vector<float> Weights(const model::Store& store, const std::string& path) {
  return store.GetVariable(path).Value().ToVector<float>();
}

const std::vector<std::string> kPaths = {"/hidden/weights", "/hidden/biases", "/out/weights", "/out/biases"};

/// Trains two stores from the same seed: `a` with n-step accumulation over batches of b, `big`
/// with plain steps over the same examples in batches of n*b; compares after each update.
void CompareWithBigBatches(const std::function<optimizers::Optimizer()>& make_optimizer) {
  const int n = 3, b = 4, updates = 2;
  compute::BackendPtr backend = compute::New();
  model::Store acc_store, big_store;
  acc_store.SetRNGStateFromSeed(11);
  big_store.SetRNGStateFromSeed(11);
  train::Trainer acc(backend, acc_store, TwoLayers, losses::MeanSquaredError, make_optimizer(), {}, {});
  train::Trainer big(backend, big_store, TwoLayers, losses::MeanSquaredError, make_optimizer(), {}, {});
  acc.AccumulateGradients(n);
  EXPECT_EQ(acc.AccumulatedSteps(), n);
  EXPECT_EQ(big.AccumulatedSteps(), 1);

  // An evaluation creates the variables (from the same seed: the same initial values).
  for (train::Trainer* t : {&acc, &big}) {
    auto [x, y] = Rows(0, b);
    t->EvalStep({}, {x}, {y});
  }
  std::vector<std::vector<float>> initial;
  for (const std::string& p : kPaths) initial.push_back(Weights(acc_store, p));
  for (size_t i = 0; i < kPaths.size(); ++i)
    ASSERT_EQ(initial[i], Weights(big_store, kPaths[i])) << kPaths[i];

  for (int u = 0; u < updates; ++u) {
    std::vector<std::vector<float>> before;
    for (const std::string& p : kPaths) before.push_back(Weights(acc_store, p));
    for (int k = 0; k < n; ++k) {
      auto [x, y] = Rows((u * n + k) * b, b);
      acc.TrainStep({}, {x}, {y});
      if (k + 1 < n) {
        // Between updates the weights stay as they were.
        for (size_t i = 0; i < kPaths.size(); ++i)
          EXPECT_EQ(Weights(acc_store, kPaths[i]), before[i]) << kPaths[i];
      }
    }
    auto [x, y] = Rows(u * n * b, n * b);
    big.TrainStep({}, {x}, {y});
    for (size_t i = 0; i < kPaths.size(); ++i) {
      const std::vector<float> got = Weights(acc_store, kPaths[i]), want = Weights(big_store, kPaths[i]);
      ASSERT_EQ(got.size(), want.size());
      bool moved = false;
      for (size_t j = 0; j < got.size(); ++j) {
        EXPECT_NEAR(got[j], want[j], 1e-6) << kPaths[i] << "[" << j << "] after update " << u + 1;
        moved = moved || got[j] != before[i][j];
      }
      EXPECT_TRUE(moved) << kPaths[i] << " did not change in update " << u + 1;
    }
  }
  // The global step counts batches; the accumulators are variables of the store (checkpointed).
  EXPECT_EQ(acc_store.GlobalStep().Value().Item<int64_t>(), n * updates);
  EXPECT_EQ(big_store.GlobalStep().Value().Item<int64_t>(), updates);
  model::Variable sum = acc_store.FindVariable("/#accumulated_gradients/out/weights/sum");
  ASSERT_TRUE(sum.Ok());
  EXPECT_FALSE(sum.Trainable());
  for (float v : sum.Value().ToVector<float>()) EXPECT_EQ(v, 0.0f);  // Reset after the last update.
}

TEST(AccumulateGradients, SgdWithMomentumMatchesOneBigBatch) {
  CompareWithBigBatches(
      [] { return optimizers::StochasticGradientDescent().LearningRate(0.1).Momentum(0.9).Done(); });
}

TEST(AccumulateGradients, AdamMatchesOneBigBatch) {
  CompareWithBigBatches([] { return optimizers::Adam().LearningRate(0.01).Done(); });
}

TEST(AccumulateGradients, Errors) {
  model::Store store;
  train::Trainer trainer(compute::New(), store, TwoLayers, losses::MeanSquaredError,
                         optimizers::Adam().Done(), {}, {});
  EXPECT_TRUE(Throws([&] { trainer.AccumulateGradients(0); }, {"AccumulateGradients", "n = 0"}));
  trainer.AccumulateGradients(2);
  auto [x, y] = Rows(0, 2);
  trainer.TrainStep({}, {x}, {y});
  EXPECT_TRUE(Throws([&] { trainer.AccumulateGradients(4); }, {"AccumulateGradients(4)", "started"}));
  EXPECT_EQ(trainer.AccumulatedSteps(), 2);
}

}  // namespace
