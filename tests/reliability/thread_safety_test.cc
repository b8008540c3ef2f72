// Thread safety, with every result checked: one Exec called from 8 threads at once with
// different input shapes, several Execs sharing a backend, a Trainer fed by a dataset that
// prefetches on other threads, checkpoint saves while another thread reads the store, and a
// tensor donated on one thread while another finalizes it (one wins cleanly, the other gets a
// kiln::Error). The suite runs these everywhere; the `tsan` preset runs them under
// ThreadSanitizer.

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/model/checkpoint.h"
#include "kiln/train/trainer.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::TempDir;

/// Runs fn(t) on `threads` threads at once (released together) and joins them.
void OnThreads(int threads, const std::function<void(int)>& fn) {
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ++ready;
      while (ready.load() < threads) std::this_thread::yield();
      fn(t);
    });
  }
  for (std::thread& th : pool) th.join();
}

Tensor Ramp(int64_t rows, int64_t cols, float scale) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(i % 17) - 3;
  return Tensor::FromFlat(Shape(DType::Float32, {rows, cols}), v);
}

/// sum over columns of x² + 1, per row, on the host.
std::vector<float> Expected(const Tensor& x) {
  const std::vector<float> v = x.ToVector<float>();
  const int64_t rows = x.shape().Dim(0), cols = x.shape().Dim(1);
  std::vector<float> out(static_cast<size_t>(rows), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r)] +=
          v[static_cast<size_t>(r * cols + c)] * v[static_cast<size_t>(r * cols + c)] + 1;
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-3f * (1 + std::abs(want[i]))) << what << " [" << i << "]";
}

class ThreadSafety : public ::testing::TestWithParam<std::string> {};

TEST_P(ThreadSafety, OneExecFromEightThreadsWithDifferentShapes) {
  const compute::BackendPtr backend = test::Backend(GetParam());
  graph::Exec exec = graph::NewExec(backend, [](graph::Node x) {
    return graph::ReduceSum(graph::Add(graph::Mul(x, x), graph::ScalarLike(x, 1.0f)), {1});
  });
  OnThreads(8, [&](int t) {
    for (int i = 0; i < 25; ++i) {
      const Tensor x = Ramp(1 + (t + i) % 5, 3 + t % 3, 0.1f * static_cast<float>(t + 1));
      ExpectNear(exec.Call(x)[0].ToVector<float>(), Expected(x), "thread " + std::to_string(t));
    }
  });
  EXPECT_LE(exec.NumBuilds(), 15);  // At most one build per distinct shape (5 × 3).
}

TEST_P(ThreadSafety, SeveralExecsShareABackend) {
  const compute::BackendPtr backend = test::Backend(GetParam());
  OnThreads(6, [&](int t) {
    const float k = static_cast<float>(t + 2);
    graph::Exec exec = graph::NewExec(backend, [k](graph::Node x) {
      return graph::ReduceSum(graph::Add(graph::Mul(x, x), graph::ScalarLike(x, 1.0f)), {1}) * k;
    });
    for (int i = 0; i < 20; ++i) {
      const Tensor x = Ramp(4, 8 + i % 3, 0.05f * static_cast<float>(i + 1));
      std::vector<float> want = Expected(x);
      for (float& w : want) w *= k;
      ExpectNear(exec.Call(x)[0].ToVector<float>(), want, "exec " + std::to_string(t));
    }
  });
}

TEST_P(ThreadSafety, DonationRacingFinalizeAllHasOneCleanWinner) {
  const compute::BackendPtr backend = test::Backend(GetParam());
  graph::Exec exec =
      graph::NewExec(backend, [](graph::Node x) { return graph::Mul(x, graph::ScalarLike(x, 2.0f)); });
  int calls_won = 0, finalize_won = 0;
  for (int round = 0; round < 50; ++round) {
    Tensor t = Ramp(64, 64, 0.5f);
    const std::vector<float> before = t.ToVector<float>();
    t = Tensor::FromShapeForBackend(backend, 0, t.shape());
    t.MutableBytes([&](std::span<uint8_t> b) { std::memcpy(b.data(), before.data(), b.size()); });
    std::atomic<int> errors{0};
    bool called = false;
    OnThreads(2, [&](int id) {
      try {
        if (id == 0) {
          const std::vector<float> out = exec.Call(graph::Donate(t))[0].ToVector<float>();
          for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 2 * before[i]);
          called = true;
        } else {
          Tensor copy = t;
          copy.FinalizeAll();
        }
      } catch (const kiln::Error&) {
        ++errors;
      }
    });
    // Either the call ran on the whole value, or it was refused with a kiln::Error.
    EXPECT_LE(errors.load(), 1) << "round " << round;
    if (called) {
      ++calls_won;
    } else {
      ++finalize_won;
      EXPECT_EQ(errors.load(), 1) << "round " << round;
    }
    EXPECT_FALSE(t.Ok());
  }
  EXPECT_EQ(calls_won + finalize_won, 50);
}

INSTANTIATE_TEST_SUITE_P(Backends, ThreadSafety, ::testing::Values("ref", "cpu"));

TEST(ThreadSafetyStore, CheckpointSavesWhileAnotherThreadReads) {
  TempDir dir;
  model::Store store;
  model::Variable w = store.RootScope().VariableWithValue("w", Ramp(256, 256, 1.0f));
  store.SetParam("steps", 7);
  checkpoint::Handler h = checkpoint::Build(store).Dir(dir.str()).Keep(3).Done();
  const std::vector<float> want = w.Value().ToVector<float>();
  std::atomic<bool> saving{true};
  OnThreads(2, [&](int id) {
    if (id == 0) {
      for (int i = 0; i < 10; ++i) h.Save();
      saving = false;
    } else {
      int reads = 0;
      while (saving.load() || reads < 10) {
        ASSERT_EQ(store.GetVariable("/w").Value().ToVector<float>(), want);
        ASSERT_EQ(model::GetRootParamOr(store, "steps", 0), 7);
        ASSERT_EQ(store.Variables().size(), 1u);
        ++reads;
      }
    }
  });
  EXPECT_EQ(h.ListCheckpoints().size(), 3u);
  model::Store fresh;
  checkpoint::Build(fresh).Dir(dir.str()).Done();
  EXPECT_EQ(fresh.GetVariable("/w").Value().ToVector<float>(), want);
}

TEST(ThreadSafetyTrainer, TrainsFromADatasetPrefetchingOnOtherThreads) {
  std::vector<float> xs, ys;
  for (int i = 0; i < 64; ++i) {
    xs.push_back(static_cast<float>(i) / 32 - 1);
    ys.push_back(2 * xs.back() + 0.5f);
  }
  const compute::BackendPtr backend = test::Backend("cpu");
  model::Store store;
  train::Trainer trainer(backend, store,
                         [](model::Scope scope, const std::any&, std::vector<graph::Node> in) {
                           return std::vector<graph::Node>{layers::Dense(scope.In("dense"), in[0], true, 1)};
                         },
                         losses::MeanSquaredError,
                         optimizers::StochasticGradientDescent().LearningRate(0.3).Done(), {}, {});
  auto column = [](const std::vector<float>& v) {
    return Tensor::FromFlat(Shape(DType::Float32, {static_cast<int64_t>(v.size()), 1}), v);
  };
  auto source = data::InMemoryFromData(backend, "line", {column(xs)}, {column(ys)});
  source->BatchSize(16, true).Shuffle().Infinite(true);
  // Two workers map each batch on their own threads (x unchanged, after a copy) while the
  // trainer steps on this one.
  auto ds = data::Parallel(data::Map(source, [](std::any&, std::vector<Tensor>& x,
                                                std::vector<Tensor>&) { x = {x[0].Clone()}; }))
                .Buffer(4)
                .NumWorkers(2)
                .Done();
  std::any spec;
  std::vector<Tensor> in, lab;
  float loss = 0;
  for (int step = 0; step < 200; ++step) {
    ASSERT_TRUE(ds->Yield(spec, in, lab));
    loss = trainer.TrainStep(spec, in, lab)[0].Item<float>();
  }
  EXPECT_LT(loss, 1e-3f);
  EXPECT_NEAR(store.GetVariable("/dense/weights").Value().ToVector<float>()[0], 2.0f, 2e-2);
}

}  // namespace
