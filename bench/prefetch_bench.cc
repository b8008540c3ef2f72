// Prefetching (data::Parallel): a training-step-like matmul fed by a dataset whose host Map
// sleeps 5 ms per batch (standing in for decoding or augmentation), run serially and through
// Parallel with a buffer of 2. With prefetching the sleep hides behind the step, so the step
// time should match the no-sleep case. Cases (milliseconds per step):
//   prefetch/step_only        the step on one fixed batch (no dataset)
//   prefetch/no_sleep         dataset + step, no Map
//   prefetch/no_sleep_parallel  the same behind data::Parallel(...).Buffer(2): its own cost
//   prefetch/sleep_serial     dataset + 5 ms Map + step, all on the caller's thread
//   prefetch/sleep_parallel   the same behind data::Parallel(...).Buffer(2)
// Registered by static initialisation (this file is compiled into the kiln_bench executable).

#include <chrono>
#include <thread>

#include <kiln/data/map.h>
#include <kiln/data/parallel.h>

#include "bench_util.h"

namespace kiln::bench {
namespace {

constexpr int64_t kExamples = 2048, kBatch = 256, kFeatures = 1024;

// y = tanh(x @ w) reduced to a scalar: ~0.5 GFLOP per batch of 256 x 1024.
graph::Node Step(graph::Node x, graph::Node w) { return graph::ReduceSum(graph::Tanh(graph::MatMul(x, w))); }

data::DatasetPtr Source() {
  auto ds =
      data::InMemoryFromData(Backend(), "features", {UniformTensor(61, {kExamples, kFeatures}, -1, 1)}, {});
  ds->BatchSize(kBatch, true).Infinite(true);
  return ds;
}

data::DatasetPtr Sleepy(data::DatasetPtr ds) {
  return data::Map(std::move(ds), [](std::any&, std::vector<Tensor>&, std::vector<Tensor>&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
}

// Times one step per iteration, each on the dataset's next batch (or, without a dataset, on one
// fixed batch).
void Run(benchmark::State& state, const data::DatasetPtr& ds) {
  Tensor w = UniformTensor(62, {kFeatures, kFeatures}, -0.05F, 0.05F);
  auto exec = graph::NewExec(Backend(), Step);
  std::any spec;
  std::vector<Tensor> x = {UniformTensor(63, {kBatch, kFeatures}, -1, 1)}, y;
  for (int i = 0; i < 3; ++i) {  // Compile and warm up.
    if (ds) ds->Yield(spec, x, y);
    exec.Call1(x[0], w);
  }
  for (auto _ : state) {
    if (ds) ds->Yield(spec, x, y);
    benchmark::DoNotOptimize(exec.Call1(x[0], w).Item<float>());
  }
  SetRate(state, "steps/s", 1.0);
}

const bool kRegistered = [] {
  auto add = [](const char* name, data::DatasetPtr (*make)()) {
    benchmark::RegisterBenchmark(name, [make](benchmark::State& state) { Run(state, make()); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0);
  };
  add("prefetch/step_only", [] { return data::DatasetPtr(); });
  add("prefetch/no_sleep", [] { return Source(); });
  add("prefetch/no_sleep_parallel",
      [] { return data::DatasetPtr(data::Parallel(Source()).Buffer(2).Done()); });
  add("prefetch/sleep_serial", [] { return Sleepy(Source()); });
  add("prefetch/sleep_parallel",
      [] { return data::DatasetPtr(data::Parallel(Sleepy(Source())).Buffer(2).Done()); });
  return true;
}();

}  // namespace
}  // namespace kiln::bench
