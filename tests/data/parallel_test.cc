// Tests for data::Parallel, data::Map and data::GraphMap: order kept with several workers whose
// maps finish out of order, errors reaching the consumer at their position, Reset mid-stream,
// early destruction, prefetching ahead of the consumer, graph maps on both backends.

#include "kiln/data/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "kiln/data/map.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::Throws;

// Yields batches {i} (Int64 scalar input, label i * 100) for i in 0..n-1, or forever when n < 0;
// throws at batch `fail_at`. Counts calls (read by the test thread while workers run).
class Counting : public data::Dataset {
 public:
  explicit Counting(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  std::string Name() const override { return "counting"; }
  bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) override {
    yields++;
    if (n_ >= 0 && next_ >= n_) return false;
    if (next_ == fail_at_) throw Error("source broke at batch " + std::to_string(next_));
    spec = std::string("counting");
    inputs = {Tensor::FromValue(std::vector<int64_t>{next_})};
    labels = {Tensor::FromValue(std::vector<int64_t>{next_ * 100})};
    ++next_;
    return true;
  }
  void Reset() override {
    next_ = 0;
    resets++;
  }
  bool IsInfinite() const override { return n_ < 0; }
  std::atomic<int> yields{0}, resets{0};

 private:
  int64_t n_, fail_at_, next_ = 0;
};

int64_t Input(const std::vector<Tensor>& inputs) { return inputs.at(0).ToVector<int64_t>().at(0); }

// Reads every batch's first input until the end.
std::vector<int64_t> Drain(data::Dataset& ds) {
  std::any spec;
  std::vector<Tensor> x, y;
  std::vector<int64_t> out;
  while (ds.Yield(spec, x, y)) out.push_back(Input(x));
  return out;
}

std::vector<int64_t> Range(int64_t n, int64_t scale = 1) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i * scale);
  return v;
}

// A host map multiplying inputs by 10 after sleeping longer for even batches, so that with
// several workers later batches are finished first.
data::MapFn SlowTimesTen() {
  return [](std::any&, std::vector<Tensor>& x, std::vector<Tensor>&) {
    const int64_t v = Input(x);
    std::this_thread::sleep_for(std::chrono::milliseconds(v % 2 == 0 ? 6 : 0));
    x = {Tensor::FromValue(std::vector<int64_t>{v * 10})};
  };
}

TEST(Parallel, KeepsOrderWithWorkersFinishingOutOfOrder) {
  auto source = std::make_shared<Counting>(20);
  auto ds = data::Parallel(data::Map(source, SlowTimesTen())).Buffer(4).NumWorkers(3).Done();
  EXPECT_EQ(ds->Name(), "counting");
  EXPECT_FALSE(ds->IsInfinite());
  EXPECT_EQ(Drain(*ds), Range(20, 10));
  std::any spec;
  std::vector<Tensor> x, y;
  EXPECT_FALSE(ds->Yield(spec, x, y));  // Stays at the end until Reset.
  ds->Reset();
  EXPECT_EQ(Drain(*ds), Range(20, 10));
  EXPECT_EQ(source->resets.load(), 1);
}

TEST(Parallel, LabelsAndSpecPassThrough) {
  auto ds = data::Parallel(std::make_shared<Counting>(3)).Done();
  std::any spec;
  std::vector<Tensor> x, y;
  for (int64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(ds->Yield(spec, x, y));
    EXPECT_EQ(std::any_cast<std::string>(spec), "counting");
    EXPECT_EQ(y.at(0).ToVector<int64_t>(), std::vector<int64_t>{i * 100});
  }
  EXPECT_FALSE(ds->Yield(spec, x, y));
}

TEST(Parallel, SourceErrorReachesTheConsumerAtItsPosition) {
  auto source = std::make_shared<Counting>(10, 3);
  auto ds = data::Parallel(source).Buffer(3).NumWorkers(2).Done();
  std::any spec;
  std::vector<Tensor> x, y;
  for (int64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(ds->Yield(spec, x, y));
    EXPECT_EQ(Input(x), i);
  }
  EXPECT_TRUE(Throws([&] { ds->Yield(spec, x, y); }, {"source broke at batch 3"}));
  EXPECT_FALSE(ds->Yield(spec, x, y));
}

TEST(Parallel, MapErrorIsTheSameObjectAndLaterBatchesAreDropped) {
  auto source = std::make_shared<Counting>(-1);
  const Error thrown("map refused batch 5");
  auto map = data::Map(source, [&](std::any&, std::vector<Tensor>& x, std::vector<Tensor>&) {
    if (Input(x) == 5) throw thrown;
  });
  auto ds = data::Parallel(map).Buffer(4).NumWorkers(3).Done();
  EXPECT_TRUE(ds->IsInfinite());
  std::any spec;
  std::vector<Tensor> x, y;
  for (int64_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(ds->Yield(spec, x, y));
    EXPECT_EQ(Input(x), i);
  }
  try {
    ds->Yield(spec, x, y);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "map refused batch 5");
    EXPECT_EQ(e.Frames(), thrown.Frames());  // The copy thrown, frames and all.
  }
  EXPECT_FALSE(ds->Yield(spec, x, y));
  ds->Reset();  // Starts over cleanly after an error.
  ASSERT_TRUE(ds->Yield(spec, x, y));
  EXPECT_EQ(Input(x), 0);
}

TEST(Parallel, ResetMidStreamStartsOver) {
  auto source = std::make_shared<Counting>(12);
  auto ds = data::Parallel(data::Map(source, SlowTimesTen())).Buffer(3).NumWorkers(2).Done();
  std::any spec;
  std::vector<Tensor> x, y;
  for (int64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ds->Yield(spec, x, y));
    EXPECT_EQ(Input(x), i * 10);
  }
  ds->Reset();
  EXPECT_EQ(Drain(*ds), Range(12, 10));
  ds->Reset();
  ds->Reset();  // Reset without a Yield in between.
  EXPECT_EQ(Drain(*ds), Range(12, 10));
  EXPECT_EQ(source->resets.load(), 3);
}

TEST(Parallel, PrefetchesAheadOfTheConsumerWithinTheBuffer) {
  auto source = std::make_shared<Counting>(-1);
  auto ds = data::Parallel(source).Buffer(3).NumWorkers(1).Done();
  EXPECT_EQ(source->yields.load(), 0);  // Workers start on the first Yield.
  std::any spec;
  std::vector<Tensor> x, y;
  ASSERT_TRUE(ds->Yield(spec, x, y));
  // The worker fills the buffer (batches 1..3) without the consumer, then waits.
  for (int i = 0; i < 500 && source->yields.load() < 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(source->yields.load(), 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(source->yields.load(), 4);  // And no further.
}

TEST(Parallel, EarlyDestructionJoinsBlockedAndBusyWorkers) {
  for (int workers : {1, 4}) {
    auto source = std::make_shared<Counting>(-1);
    {
      auto ds = data::Parallel(data::Map(source, SlowTimesTen())).Buffer(2).NumWorkers(workers).Done();
      std::any spec;
      std::vector<Tensor> x, y;
      ASSERT_TRUE(ds->Yield(spec, x, y));
    }  // Workers are blocked on a full buffer or inside the map: both must end.
    EXPECT_LE(source->yields.load(), 1 + std::max(2, workers));
    { auto never_used = data::Parallel(source).Done(); }
  }
}

TEST(Parallel, BadOptions) {
  auto source = std::make_shared<Counting>(1);
  EXPECT_TRUE(Throws([&] { data::Parallel(source).Buffer(0).Done(); }, {"counting", "buffer 0"}));
  EXPECT_TRUE(Throws([&] { data::Parallel(source).NumWorkers(0).Done(); }, {"counting", "0 workers"}));
  EXPECT_TRUE(Throws([&] { data::Parallel(nullptr).Done(); }, {"null"}));
}

TEST(Map, HostFunctionChangesInputsLabelsAndSpec) {
  auto ds = data::Map(std::make_shared<Counting>(2),
                      [](std::any& spec, std::vector<Tensor>& x, std::vector<Tensor>& y) {
                        spec = std::string("mapped");
                        y.push_back(x[0]);
                      });
  std::any spec;
  std::vector<Tensor> x, y;
  ASSERT_TRUE(ds->Yield(spec, x, y));
  ASSERT_TRUE(ds->Yield(spec, x, y));
  EXPECT_EQ(std::any_cast<std::string>(spec), "mapped");
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0].ToVector<int64_t>(), std::vector<int64_t>{100});
  EXPECT_EQ(y[1].ToVector<int64_t>(), std::vector<int64_t>{1});
  EXPECT_FALSE(ds->Yield(spec, x, y));
}

TEST(Map, GraphFunctionOnEachBackend) {
  for (const char* config : {"cpu", "ref"}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    // Pixels 0..5 in batches of 2 rows of 3: inputs scaled to [0, 1] and a second input of the
    // row sums; labels one-hot encoded from their Int32 class.
    std::vector<float> pixels = {0, 51, 102, 153, 204, 255};
    auto base =
        data::InMemoryFromData(backend, "px", {Tensor::FromFlat(Shape(DType::Float32, {2, 3}), pixels)},
                               {Tensor::FromValue(std::vector<int32_t>{2, 0})});
    base->BatchSize(2, false);
    auto mapped = data::GraphMap(backend, base, [](std::vector<graph::Node>& x, std::vector<graph::Node>& y) {
      graph::Node scaled = x[0] / 255.0;
      x = {scaled, graph::ReduceSum(scaled, {1})};
      y = {graph::OneHot(y[0], 3, DType::Float32)};
    });
    auto ds = data::Parallel(mapped).NumWorkers(2).Done();
    std::any spec;
    std::vector<Tensor> x, y;
    ASSERT_TRUE(ds->Yield(spec, x, y));
    ASSERT_EQ(x.size(), 2u);
    ASSERT_EQ(y.size(), 1u);
    std::vector<float> want = {0, 0.2f, 0.4f, 0.6f, 0.8f, 1};
    std::vector<float> got = x[0].ToVector<float>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
    std::vector<float> sums = x[1].ToVector<float>();
    EXPECT_NEAR(sums[0], 0.6f, 1e-6);
    EXPECT_NEAR(sums[1], 2.4f, 1e-6);
    EXPECT_EQ(y[0].shape(), Shape(DType::Float32, {2, 3}));
    EXPECT_EQ(y[0].ToVector<float>(), (std::vector<float>{0, 0, 1, 1, 0, 0}));
    EXPECT_FALSE(ds->Yield(spec, x, y));
  }
}

}  // namespace
