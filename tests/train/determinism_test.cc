// Determinism: two training runs with the same seed, backend and thread count (shuffled data,
// dropout, Adam) give bit-identical losses and variables; another seed gives other ones.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

std::vector<Node> WithDropout(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node h = activations::Relu(layers::Dense(scope.In("hidden"), in[0], true, 32));
  h = layers::Dropout(scope.In("dropout"), h, 0.5);
  return {layers::Dense(scope.In("logits"), h, true, 3)};
}

struct Run {
  std::vector<uint32_t> losses;                           // Bit patterns of each step's loss.
  std::map<std::string, std::vector<uint8_t>> variables;  // Every variable's bytes, by path.
};

/// 30 steps of batch 16 over 96 shuffled examples of a 3-class problem.
Run Train(const std::string& backend_config, uint64_t seed) {
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int i = 0; i < 96; ++i) {
    const float a = static_cast<float>(std::sin(0.37 * i)), b = static_cast<float>(std::cos(1.3 * i));
    x.insert(x.end(), {a, b, a * b, a - b});
    y.push_back(a + b > 0.5f ? 2 : (a > b ? 1 : 0));
  }
  compute::BackendPtr backend = compute::NewWithConfig(backend_config);
  model::Store store;
  store.SetRNGStateFromSeed(seed);
  auto ds = data::InMemoryFromData(backend, "points", {Tensor::FromFlat(Shape(DType::Float32, {96, 4}), x)},
                                   {Tensor::FromFlat(Shape(DType::Int32, {96, 1}), y)});
  ds->BatchSize(16, true).Shuffle(seed).Infinite(true);
  train::Trainer trainer(backend, store, WithDropout, losses::SparseCategoricalCrossEntropyLogits,
                         optimizers::Adam().LearningRate(0.01).Done(), {}, {});
  train::Loop loop(trainer);
  Run run;
  loop.OnStep("record", 0, [&run](train::Loop&, const std::vector<Tensor>& m) {
    const float loss = m[0].Item<float>();
    uint32_t bits = 0;
    std::memcpy(&bits, &loss, sizeof bits);
    run.losses.push_back(bits);
  });
  loop.RunSteps(ds, 30);
  for (const model::Variable& v : store.Variables()) {
    v.Value().ConstBytes(
        [&](std::span<const uint8_t> b) { run.variables[v.Path()].assign(b.begin(), b.end()); });
  }
  return run;
}

void ExpectDeterministic(const std::string& config) {
  const Run a = Train(config, 5), b = Train(config, 5), other = Train(config, 6);
  ASSERT_EQ(a.losses.size(), 30u);
  EXPECT_EQ(a.losses, b.losses) << config;
  ASSERT_EQ(a.variables.size(), b.variables.size());
  // The weights, Adam's state, the random-number state and the global step, byte for byte.
  EXPECT_TRUE(a.variables.count("/#rngState"));
  EXPECT_TRUE(a.variables.count("/global_step"));
  for (const auto& [path, bytes] : a.variables) {
    ASSERT_TRUE(b.variables.count(path)) << path;
    EXPECT_TRUE(bytes == b.variables.at(path)) << config << ": " << path << " differs between two runs";
  }
  // The seed matters: the initial weights, the order of the data and the dropout masks change.
  EXPECT_NE(a.losses, other.losses);
  EXPECT_FALSE(a.variables.at("/hidden/weights") == other.variables.at("/hidden/weights"));
}

TEST(Determinism, CpuBackendTwoThreads) { ExpectDeterministic("cpu:threads=2,serial_work=0"); }

TEST(Determinism, RefBackend) { ExpectDeterministic("ref"); }

}  // namespace
