// Tests for train::Loop: step counting and callbacks (order, EveryNSteps, NTimesDuringLoop),
// epochs, resuming to a global step, a callback's exception and a NaN loss stopping the loop.

#include "kiln/train/loop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"
#include "train/train_test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

using kiln::test::Column;

/// The one-weight model with no metrics.
struct Fixture : kiln::test::ScaleFixture {};

TEST(Loop, StepsCallbacksAndOrder) {
  Fixture f;
  train::Loop loop(f.trainer);
  std::vector<std::string> log;
  loop.OnStart("start", 0, [&](train::Loop&) { log.push_back("start"); });
  train::EveryNSteps(loop, 3, "every3", 5, [&](train::Loop& l, const std::vector<Tensor>& m) {
    log.push_back("b" + std::to_string(l.LoopStep()));
    EXPECT_EQ(m.size(), 2u);
  });
  train::EveryNSteps(loop, 3, "first", 1, [&](train::Loop& l, const std::vector<Tensor>&) {
    log.push_back("a" + std::to_string(l.LoopStep()));
  });
  loop.OnEnd("end", 0, [&](train::Loop&) { log.push_back("end"); });
  // A finite dataset of 2 batches runs out inside the 7 steps and is reset.
  std::vector<Tensor> last = loop.RunSteps(f.Data(8, 4), 7);
  EXPECT_EQ(log, (std::vector<std::string>{"start", "a2", "b2", "a5", "b5", "end"}));
  EXPECT_EQ(f.store.GlobalStep().Value().Item<int64_t>(), 7);
  EXPECT_EQ(loop.LoopStep(), 6);
  ASSERT_EQ(last.size(), 2u);
}

TEST(Loop, EpochsResumeAndNTimes) {
  Fixture f;
  train::Loop loop(f.trainer);
  int calls = 0;
  train::NTimesDuringLoop(loop, 4, "n", 0, [&](train::Loop&, const std::vector<Tensor>&) { ++calls; });
  loop.RunEpochs(f.Data(10, 4), 2);  // 3 batches per epoch
  EXPECT_EQ(f.store.GlobalStep().Value().Item<int64_t>(), 6);
  EXPECT_EQ(calls, 0);                      // Epoch runs have no known end step.
  loop.RunToGlobalStep(f.Data(10, 4), 26);  // 20 more steps
  EXPECT_EQ(f.store.GlobalStep().Value().Item<int64_t>(), 26);
  EXPECT_EQ(calls, 4);
  loop.RunToGlobalStep(f.Data(10, 4), 10);  // Already past: nothing to do.
  EXPECT_EQ(f.store.GlobalStep().Value().Item<int64_t>(), 26);
}

TEST(Loop, ErrorsStopTheLoop) {
  Fixture f;
  train::Loop loop(f.trainer);
  train::EveryNSteps(loop, 2, "boom", 0, [](train::Loop&, const std::vector<Tensor>&) {
    throw std::runtime_error("callback failed");
  });
  EXPECT_THROW(loop.RunSteps(f.Data(4, 2), 10), std::runtime_error);
  EXPECT_EQ(f.store.GlobalStep().Value().Item<int64_t>(), 2);
  // A NaN loss: inputs of NaN.
  Fixture g;
  train::Loop nan_loop(g.trainer);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto ds = data::InMemoryFromData(g.backend, "nan", {Column({nan, nan})}, {Column({1, 1})});
  ds->BatchSize(2, false);
  EXPECT_TRUE(Throws([&] { nan_loop.RunSteps(ds, 3); }, {"loss is nan", "step 0"}));
}

}  // namespace
