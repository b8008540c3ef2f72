// Tests for train::Loop: step counting and callbacks (order, EveryNSteps, NTimesDuringLoop),
// epochs, resuming to a global step, a callback's exception and a NaN loss stopping the loop.

#include "kiln/train/loop.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <thread>
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

TEST(Loop, ExponentialCallbackFollowsGoMLXsSchedule) {
  Fixture f;
  train::Loop loop(f.trainer);
  std::vector<int64_t> steps;
  int ends = 0;
  // Start 10, factor 1.5: gaps 10, 15, 23 (22.5 rounded), 35 -> steps 10, 25, 48, 83.
  train::ExponentialCallback(loop, 10, 1.5, true, "exp", 0,
                             [&](train::Loop& l, const std::vector<Tensor>& m) {
                               if (l.LoopStep() == 59 && ends == 0) {
                                 ++ends;  // The end-of-run call (the last step, 59, is not on the schedule).
                                 EXPECT_EQ(m.size(), 2u);
                                 return;
                               }
                               steps.push_back(l.LoopStep());
                             });
  loop.RunSteps(f.Data(8, 4), 60);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 25, 48}));
  EXPECT_EQ(ends, 1);
  // A later run goes on with the same schedule.
  steps.clear();
  loop.RunSteps(f.Data(8, 4), 30);
  EXPECT_EQ(steps, (std::vector<int64_t>{83, 89}));  // 83, then the end of this run (step 89).
  EXPECT_TRUE(Throws([&] { train::ExponentialCallback(loop, 0, 2, false, "bad", 0, {}); },
                     {"\"bad\"", "start_step 0"}));
  EXPECT_TRUE(Throws([&] { train::ExponentialCallback(loop, 5, 1, false, "bad", 0, {}); }, {"factor 1"}));
}

TEST(Loop, PeriodicCallbackWaitsForItsPeriod) {
  Fixture f;
  train::Loop loop(f.trainer);
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> calls;
  std::vector<Clock::time_point> step_times;
  loop.OnStep("slow", 0, [&](train::Loop&, const std::vector<Tensor>&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    step_times.push_back(Clock::now());
  });
  int at_end = 0;
  train::PeriodicCallback(loop, std::chrono::milliseconds(70), true, "periodic", 1,
                          [&](train::Loop&, const std::vector<Tensor>&) { calls.push_back(Clock::now()); });
  loop.OnEnd("count", 2, [&](train::Loop&) { at_end = 1; });
  loop.RunSteps(f.Data(8, 4), 20);  // At least 400 ms of steps.
  ASSERT_GE(calls.size(), 2u);      // At least one period call, and the one at the end.
  EXPECT_LT(calls.size(), 20u);
  // Between two period calls (the end call aside) at least the period passed.
  for (size_t i = 1; i + 1 < calls.size(); ++i)
    EXPECT_GE(calls[i] - calls[i - 1], std::chrono::milliseconds(70)) << i;
  // The first call is at least a period after the first step.
  EXPECT_GE(calls[0] - step_times[0], std::chrono::milliseconds(70));
  EXPECT_EQ(at_end, 1);
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

TEST(Loop, EarlyStoppingStopsAfterPatienceAndRestoresTheBest) {
  // w starts at 0.5 and SGD pulls it towards 1: w_k = 1 - 0.5 * 0.98^k after k steps. The eval
  // set wants 0.7, so its loss (w - 0.7)^2 falls until step ~25, then rises.
  auto w_after = [](int k) { return 1 - 0.5 * std::pow(0.98, k); };
  for (const bool on_disk : {false, true}) {
    Fixture f;
    kiln::test::TempDir dir;
    train::Loop loop(f.trainer);
    auto eval = data::InMemoryFromData(f.backend, "eval", {Column({1})}, {Column({0.7f})});
    train::EarlyStoppingBuilder early = train::EarlyStopping(loop, eval).EvalEvery(5).Patience(3);
    if (on_disk) early.BestDir(dir / "best");
    std::shared_ptr<const train::EarlyStoppingState> state = early.Done();
    loop.RunSteps(f.Data(4, 4), 1000);
    // Evaluations at 5, 10, ..., 40: the best at 25, then 30, 35 and 40 do not improve.
    EXPECT_TRUE(state->stopped);
    EXPECT_TRUE(loop.Stopped());
    EXPECT_EQ(state->best_step, 25);
    EXPECT_EQ(state->evaluations, 8);
    ASSERT_EQ(state->values.size(), 8u);
    EXPECT_NEAR(state->values[4], std::pow(w_after(25) - 0.7, 2), 1e-6);
    EXPECT_NEAR(state->best, state->values[4], 1e-12);
    EXPECT_EQ(f.store.GlobalStep().Value().Item<int64_t>(), 40);  // Keeps counting the steps run.
    EXPECT_NEAR(f.store.GetVariable("/w").Value().ToVector<float>()[0], w_after(25), 1e-5);
  }
  // Without restoring, the last weights stay; maximising a loss stops after the first patience.
  Fixture f;
  train::Loop loop(f.trainer);
  auto eval = data::InMemoryFromData(f.backend, "eval", {Column({1})}, {Column({0.7f})});
  train::EarlyStopping(loop, eval).EvalEvery(5).Patience(3).RestoreBest(false).Done();
  loop.RunSteps(f.Data(4, 4), 1000);
  EXPECT_NEAR(f.store.GetVariable("/w").Value().ToVector<float>()[0], w_after(40), 1e-5);
  Fixture g;
  train::Loop up(g.trainer);
  auto up_state = train::EarlyStopping(up, eval).EvalEvery(5).Maximize().Patience(2).Done();
  up.RunSteps(g.Data(4, 4), 1000);
  EXPECT_EQ(up_state->best_step, 5);  // The loss only falls at first: its maximum is the first evaluation.
  EXPECT_EQ(g.store.GlobalStep().Value().Item<int64_t>(), 15);
  // A loop that is not stopped runs its steps; the next run starts afresh.
  up.RunSteps(g.Data(4, 4), 3);
  EXPECT_FALSE(up.Stopped());
  EXPECT_EQ(up_state->evaluations, 0);  // Global steps 15..17: none is a multiple of 5 after a step.
  EXPECT_TRUE(Throws([&] { train::EarlyStopping(loop, nullptr).Done(); }, {"no evaluation dataset"}));
  EXPECT_TRUE(Throws([&] { train::EarlyStopping(loop, eval).Patience(0).Done(); }, {"Patience 0"}));
  Fixture h;
  train::Loop bad(h.trainer);
  train::EarlyStopping(bad, eval).EvalEvery(1).Metric(3).Done();
  EXPECT_TRUE(Throws([&] { bad.RunSteps(h.Data(4, 4), 2); }, {"metric 3", "1 values"}));
}

}  // namespace
