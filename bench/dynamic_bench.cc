// Dynamic shapes against static compilation, side by side in one process: the MLP's and the
// CNN's training step and inference with the batch axis dynamic, interleaved with the static
// build of the same graph (medians of rounds, ratio dynamic/static time); the cost of the first
// call at a new batch size against a steady call; the builds made by 50 distinct batch sizes.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cases.h"
#include "models.h"

namespace kiln::bench {
namespace {

using Clock = std::chrono::steady_clock;

/// Axes for an Exec whose last `tail` inputs have a dynamic axis 0 named "batch".
std::vector<std::vector<std::string>> BatchAxes(const std::vector<Tensor>& inputs, size_t tail) {
  std::vector<std::vector<std::string>> axes(inputs.size());
  for (size_t i = inputs.size() - tail; i < inputs.size(); ++i) {
    axes[i].assign(static_cast<size_t>(inputs[i].rank()), "");
    axes[i][0] = "batch";
  }
  return axes;
}

/// Seconds of `calls` calls of exec on inputs (copies of the handles: nothing donated).
double TimeCalls(graph::Exec& exec, const std::vector<Tensor>& inputs, int calls) {
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) benchmark::DoNotOptimize(exec.Call(inputs));
  return std::chrono::duration<double>(Clock::now() - start).count() / calls;
}

/// The same function built statically and with the batch axis dynamic, timed in alternating
/// rounds; reports each median and dynamic/static (time), the figure the issue bounds (<= 1/0.9).
void SideBySide(benchmark::State& state, graph::GraphFn fn, const std::vector<Tensor>& inputs, size_t tail,
                int calls) {
  graph::Exec fixed(Backend(), fn, -1, "static");
  graph::Exec dynamic(Backend(), fn, -1, "dynamic");
  dynamic.WithDynamicAxes(BatchAxes(inputs, tail));
  for (int i = 0; i < 2; ++i) {
    fixed.Call(inputs);
    dynamic.Call(inputs);
  }
  std::vector<double> s, d;
  for (auto _ : state) {
    s.push_back(TimeCalls(fixed, inputs, calls));
    d.push_back(TimeCalls(dynamic, inputs, calls));
  }
  state.counters["static_ms"] = Median(s) * 1e3;
  state.counters["dynamic_ms"] = Median(d) * 1e3;
  state.counters["dynamic_over_static"] = Median(d) / Median(s);
  state.counters["builds"] = dynamic.NumBuilds();
}

void TrainSideBySide(benchmark::State& state, Model model) {
  std::vector<Tensor> inputs = InitParams(model);
  const size_t n = inputs.size();
  for (int copy = 0; copy < 2; ++copy)
    for (size_t i = 0; i < n; ++i) inputs.push_back(Tensor::FromShape(inputs[i].shape()));
  inputs.push_back(Tensor::FromScalar(0.0F));
  Tensor x, labels;
  TrainData(model, x, labels);
  inputs.push_back(x);
  inputs.push_back(labels);
  SideBySide(state, TrainStepFn(model), inputs, 2, model == Model::kMlp ? 5 : 1);
}

void InferSideBySide(benchmark::State& state, Model model, int64_t batch) {
  std::vector<Tensor> inputs = InitParams(model);
  inputs.push_back(InputBatch(model, batch, 5));
  SideBySide(state, InferenceFn(model), inputs, 1, batch == 1 ? 200 : (model == Model::kMlp ? 20 : 2));
}

/// The first call at a new batch size (specialise and compile for it, then run) against a steady
/// call at that size; the issue bounds it by max(20 steady calls, 5 ms).
void FirstCall(benchmark::State& state, Model model, int64_t base) {
  std::vector<Tensor> inputs = InitParams(model);
  inputs.push_back(InputBatch(model, base, 5));
  graph::Exec dynamic(Backend(), InferenceFn(model), -1, "dynamic");
  dynamic.WithDynamicAxes(BatchAxes(inputs, 1));
  dynamic.Call(inputs);
  std::vector<double> first, steady;
  int64_t batch = base;
  for (auto _ : state) {
    ++batch;  // A size not seen before.
    inputs.back() = InputBatch(model, batch, 5);
    const auto start = Clock::now();
    dynamic.Call(inputs);
    first.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    steady.push_back(TimeCalls(dynamic, inputs, 5));
  }
  state.counters["first_ms"] = Median(first) * 1e3;
  state.counters["steady_ms"] = Median(steady) * 1e3;
  state.counters["first_over_steady"] = Median(first) / Median(steady);
  state.counters["builds"] = dynamic.NumBuilds();
}

/// 50 distinct batch sizes in a row: one build.
void FiftySizes(benchmark::State& state, Model model) {
  for (auto _ : state) {
    std::vector<Tensor> inputs = InitParams(model);
    inputs.push_back(InputBatch(model, 1, 5));
    graph::Exec dynamic(Backend(), InferenceFn(model), -1, "dynamic");
    dynamic.WithDynamicAxes(BatchAxes(inputs, 1));
    for (int64_t batch = 1; batch <= 50; ++batch) {
      inputs.back() = InputBatch(model, batch, 5);
      dynamic.Call(inputs);
    }
    state.counters["builds"] = dynamic.NumBuilds();
  }
}

}  // namespace

void RegisterDynamicCases() {
  for (Model model : {Model::kMlp, Model::kCnn}) {
    const std::string name = model == Model::kMlp ? "mlp" : "cnn";
    benchmark::RegisterBenchmark(("dynamic/train_" + name).c_str(), TrainSideBySide, model)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(9);
    for (int64_t batch : {256, 1}) {
      benchmark::RegisterBenchmark(("dynamic/infer_" + name + "_b" + std::to_string(batch)).c_str(),
                                   InferSideBySide, model, batch)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(9);
    }
    benchmark::RegisterBenchmark(("dynamic/first_call_" + name).c_str(), FirstCall, model, int64_t{32})
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(9);
    benchmark::RegisterBenchmark(("dynamic/fifty_sizes_" + name).c_str(), FiftySizes, model)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
}

}  // namespace kiln::bench
