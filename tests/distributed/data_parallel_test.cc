// Data-parallel training inside one process (cpu:devices=2, ref:devices=2) and dataset shards. The
// same training under mpirun is tests/distributed/run_mpi_job.sh's.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "distributed/regression_data.h"
#include "kiln/compute/backend.h"
#include "kiln/compute/replicas.h"
#include "kiln/data/dataset.h"
#include "kiln/ml/activations.h"
#include "kiln/ml/layers.h"
#include "kiln/ml/losses.h"
#include "kiln/ml/metrics.h"
#include "kiln/ml/optimizers.h"
#include "kiln/model/exec.h"
#include "kiln/train/loop.h"
#include "kiln/train/trainer.h"
#include "test_util.h"

namespace kiln {
namespace {

using graph::Node;
using test::Throws;

std::vector<Node> Mlp(model::Scope scope, const std::any&, std::vector<Node> inputs) {
  Node h = activations::Relu(layers::Dense(scope.In("hidden"), inputs[0], true, 16));
  return {layers::Dense(scope.In("out"), h, true, 1)};
}

/// The regression of 512 examples.
std::shared_ptr<data::InMemoryDataset> Regression(const compute::BackendPtr& backend) {
  return test::Regression(backend, 512, 99, false);
}

struct Result {
  std::vector<float> weights, losses, metrics;
};

/// 40 Adam steps of batch 64 on `config`, data-parallel when `parallel`.
Result Train(const std::string& config, bool parallel) {
  const compute::BackendPtr backend = compute::NewWithConfig(config);
  auto ds = Regression(backend);
  ds->BatchSize(64, true).Infinite(true);
  model::Store store;
  store.SetRNGStateFromSeed(3);
  train::Trainer trainer(backend, store, Mlp, losses::MeanSquaredError,
                         optimizers::Adam().LearningRate(0.01).Done(),
                         {metrics::NewMeanAbsoluteError("Mean Absolute Error", "mae")}, {});
  if (parallel) trainer.DataParallel();
  Result r;
  std::any spec;
  std::vector<Tensor> in, labels;
  for (int step = 0; step < 40; ++step) {
    ds->Yield(spec, in, labels);
    std::vector<Tensor> m = trainer.TrainStep(spec, in, labels);
    r.losses.push_back(m[0].Item<float>());
    r.metrics.push_back(m[2].Item<float>());
  }
  for (const model::Variable& v : store.Variables())
    if (v.Trainable())
      for (float w : v.Value().ToVector<float>()) r.weights.push_back(w);
  return r;
}

void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], tol * (1 + std::fabs(a[i]))) << what << " " << i;
}

TEST(DataParallel, TwoDevicesTrainAsOneDeviceUpToRounding) {
  for (const std::string two : {"cpu:threads=2,devices=2", "ref:devices=2"}) {
    SCOPED_TRACE(two);
    const std::string one = two.substr(0, 3) == "cpu" ? "cpu:threads=1" : "ref";
    const Result a = Train(one, false), b = Train(two, true);
    EXPECT_LT(b.losses.back(), 0.5 * b.losses.front());  // It learns.
    ExpectClose(a.losses, b.losses, 1e-5, "loss");
    ExpectClose(a.metrics, b.metrics, 1e-5, "mean absolute error");
    ExpectClose(a.weights, b.weights, 1e-5, "weights");
    // Run twice, the replicated training gives the same bits.
    EXPECT_EQ(Train(two, true).weights, b.weights);
  }
}

TEST(DataParallel, BatchesThatDoNotSplitAndLateCallsAreErrors) {
  const compute::BackendPtr backend = compute::NewWithConfig("cpu:threads=2,devices=2");
  model::Store store;
  train::Trainer trainer(backend, store, Mlp, losses::MeanSquaredError,
                         optimizers::StochasticGradientDescent().Done(), {}, {});
  trainer.DataParallel();
  ASSERT_TRUE(trainer.Replicas());
  EXPECT_EQ(trainer.Replicas()->NumReplicas(), 2);
  auto ds = Regression(backend);
  ds->BatchSize(63, true);
  std::any spec;
  std::vector<Tensor> in, labels;
  ds->Yield(spec, in, labels);
  EXPECT_TRUE(Throws([&] { trainer.TrainStep(spec, in, labels); }, {"does not split evenly over 2 devices"}));
  EXPECT_TRUE(Throws([&] { trainer.DataParallel(); }, {"training has started"}));
}

TEST(DatasetShard, ShardsAreDisjointAndMakeTheEpoch) {
  const compute::BackendPtr backend = compute::NewWithConfig("ref");
  std::vector<float> v(10);
  for (int i = 0; i < 10; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  auto make = [&] {
    return data::InMemoryFromData(backend, "ten", {Tensor::FromFlat(Shape(DType::Float32, {10, 1}), v)}, {});
  };
  std::any spec;
  std::vector<Tensor> in, labels;
  auto shard = make();
  shard->Shard(1, 3).BatchSize(10, false);
  ASSERT_TRUE(shard->Yield(spec, in, labels));
  EXPECT_EQ(in[0].ToVector<float>(), (std::vector<float>{1, 4, 7}));
  EXPECT_EQ(shard->ShardExamples(), 3);
  // Shuffled: the shards of one seed split the same permutation.
  auto whole = make();
  whole->Shuffle(5).BatchSize(10, false);
  whole->Yield(spec, in, labels);
  const std::vector<float> order = in[0].ToVector<float>();
  std::multiset<float> seen;
  for (int k = 0; k < 2; ++k) {
    auto part = make();
    part->Shuffle(5).Shard(k, 2).BatchSize(10, false);
    ASSERT_TRUE(part->Yield(spec, in, labels));
    const std::vector<float> got = in[0].ToVector<float>();
    for (size_t j = 0; j < got.size(); ++j) EXPECT_EQ(got[j], order[j * 2 + static_cast<size_t>(k)]);
    seen.insert(got.begin(), got.end());
  }
  EXPECT_EQ(seen, std::multiset<float>(order.begin(), order.end()));
  EXPECT_TRUE(Throws([&] { make()->Shard(2, 2); }, {"Shard(2, 2)"}));
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Dropout in a replicated step: each replica draws its own mask from the one stored random state,
// and every replica stores the same next state.
TEST(DataParallel, ReplicasDrawTheirOwnRandomNumbersFromOneState) {
  const compute::BackendPtr backend = compute::NewWithConfig("ref:devices=2");
  compute::ReplicaGroup group(2, 1, 0, nullptr, std::chrono::seconds(30));
  model::Store store;
  store.SetRNGStateFromSeed(5);
  model::Exec drop = model::NewExec(backend, store, [](model::Scope scope, Node x) {
    return std::vector<Node>{layers::Dropout(scope, x, 0.5), scope.store().RNGState().NodeValue(x.graph())};
  });
  drop.OnNewGraph([](graph::Graph& g) { model::SetTraining(g, true); });
  const Tensor ones = Tensor::FromFlat(Shape(DType::Float32, {64}), std::vector<float>(64, 1.0f));
  std::vector<std::vector<Tensor>> out = drop.CallReplicas(group, {{ones}, {ones}});
  EXPECT_NE(out[0][0].ToVector<float>(), out[1][0].ToVector<float>());
  // The state each replica sets after drawing (read after Dropout) is the same on both.
  EXPECT_EQ(out[0][1].ToVector<uint64_t>(), out[1][1].ToVector<uint64_t>());
  const std::vector<uint64_t> before = out[0][1].ToVector<uint64_t>();
  out = drop.CallReplicas(group, {{ones}, {ones}});
  EXPECT_EQ(out[0][1].ToVector<uint64_t>(), out[1][1].ToVector<uint64_t>());
  EXPECT_NE(out[0][1].ToVector<uint64_t>(), before);
  EXPECT_EQ(out[0][1].ToVector<uint64_t>()[0], before[0]);  // The key stays; the counter moves.
  EXPECT_EQ(store.RNGState().Value().ToVector<uint64_t>(), out[0][1].ToVector<uint64_t>());
}

}  // namespace
}  // namespace kiln
