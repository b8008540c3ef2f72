// Tests for metrics: batch values by hand, and moving averages updated in the store.

#include "kiln/ml/metrics.h"

#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

TEST(Metrics, BatchValues) {
  Exec e = NewExec(compute::New(), [](Node ids, Node logits, Node y, Node z) {
    return std::vector<Node>{
        metrics::SparseCategoricalAccuracy({ids}, {logits}), metrics::BinaryLogitsAccuracy({y}, {z}),
        metrics::BinaryAccuracy({y}, {Sigmoid(z)}), metrics::MeanAbsoluteErrorValue({y}, {z})};
  });
  std::vector<Tensor> r = e.Call(std::vector<std::vector<int32_t>>{{2}, {0}, {1}, {1}},
                                 std::vector<std::vector<float>>{{0, 1, 5}, {3, 1, 2}, {9, 1, 0}, {0, 2, 1}},
                                 std::vector<float>{1, 0, 1, 0}, std::vector<float>{2, -1, -0.5f, 0.5f});
  EXPECT_FLOAT_EQ(r[0].Item<float>(), 0.75f);  // examples 0, 1, 3 right
  EXPECT_FLOAT_EQ(r[1].Item<float>(), 0.5f);   // examples 0 and 1 right
  EXPECT_FLOAT_EQ(r[2].Item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(r[3].Item<float>(), (1 + 1 + 1.5f + 0.5f) / 4);
}

TEST(Metrics, MovingAverageKeepsItsStateInTheStore) {
  model::Store store;
  metrics::Metric m = metrics::NewMovingAverageBinaryAccuracy("Moving Accuracy", "~acc", 0.5);
  EXPECT_EQ(m->Name(), "Moving Accuracy");
  EXPECT_EQ(m->ShortName(), "~acc");
  EXPECT_TRUE(m->IsMovingAverage());
  model::Exec step = model::NewExec(compute::New(), store, [&](model::Scope scope, Node y, Node p) {
    return m->UpdateGraph(scope, {y}, {p});
  });
  const Tensor y = Tensor::FromValue(std::vector<float>{1, 1, 1, 1});
  // Batch accuracies 1, 0, 0.5: running values 1 (first), then mean 0.5 (f = max(0.5, 1/2)),
  // then 0.5 + 0.5 * (0.5 - 0.5) = 0.5; then a batch of 1: 0.75.
  EXPECT_FLOAT_EQ(step.Call1(y, std::vector<float>{1, 1, 1, 1}).Item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(step.Call1(y, std::vector<float>{0, 0, 0, 0}).Item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(step.Call1(y, std::vector<float>{1, 1, 0, 0}).Item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(step.Call1(y, std::vector<float>{1, 1, 1, 1}).Item<float>(), 0.75f);
  EXPECT_FLOAT_EQ(store.GetVariable("/#metrics/_acc/average").Value().Item<float>(), 0.75f);
  EXPECT_FALSE(store.GetVariable("/#metrics/_acc/average").Trainable());
  metrics::Metric mean = metrics::NewSparseCategoricalAccuracy("Mean Accuracy", "#acc");
  EXPECT_FALSE(mean->IsMovingAverage());
  EXPECT_TRUE(Throws([] { metrics::NewMovingAverageBinaryAccuracy("x", "x", 0); }, {"factor 0"}));
}

}  // namespace
