// Model cases: training steps (examples/s), inference at batch 256 and 1, compile time of the
// training-step graphs, peak memory and steady-state mmap counts while training, and the
// float32 FMA peak the training steps are compared with.

#include <chrono>
#include <string>
#include <vector>

#include "bench_limits.h"
#include "bench_util.h"
#include "cases.h"
#include "models.h"

namespace kiln::bench {
namespace {

// The weights, Adam state and a fixed batch of one training run.
struct Trainer {
  Model model;
  graph::Exec exec;
  std::vector<Tensor> state;  // params, m, v, step
  Tensor x, labels;

  explicit Trainer(Model which)
      : model(which),
        exec(Backend(), TrainStepFn(which), -1, which == Model::kMlp ? "mlp_train" : "cnn_train") {
    std::vector<Tensor> params = InitParams(model);
    state = params;
    for (int copy = 0; copy < 2; ++copy)
      for (const Tensor& p : params) state.push_back(Tensor::FromShape(p.shape()));
    state.push_back(Tensor::FromScalar(0.0F));
    TrainData(model, x, labels);
  }

  // One step: weights and Adam state donated, replaced by the outputs; returns the loss.
  Tensor Step() {
    std::vector<Tensor> inputs;
    inputs.reserve(state.size() + 2);
    for (size_t i = 0; i < state.size(); ++i)
      inputs.push_back(i + 1 < state.size() ? graph::Donate(state[i]) : state[i]);
    inputs.push_back(x);
    inputs.push_back(labels);
    std::vector<Tensor> out = exec.Call(inputs);
    Tensor loss = out.back();
    out.pop_back();
    state = std::move(out);
    return loss;
  }

  // The input shapes of the step.
  std::vector<Shape> InputShapes() const {
    std::vector<Shape> shapes;
    for (const Tensor& t : state) shapes.push_back(t.shape());
    shapes.push_back(x.shape());
    shapes.push_back(labels.shape());
    return shapes;
  }
};

// Examples per second of the training step.
void TrainCase(benchmark::State& state, Model model) {
  Trainer trainer(model);
  const float first_loss = trainer.Step().Item<float>();
  trainer.Step();
  for (auto _ : state) trainer.Step();
  state.counters["first_loss"] = first_loss;  // equal to PyTorch's (same network, weights, data)
  SetRate(state, "examples/s", static_cast<double>(TrainBatch(model)));
  SetRate(state, "FLOP/s", static_cast<double>(TrainBatch(model)) * TrainFlops(model));
}

// Examples per second of inference at `batch`.
void InferCase(benchmark::State& state, Model model, int64_t batch) {
  graph::Exec exec(Backend(), InferenceFn(model), -1, "infer");
  std::vector<Tensor> inputs = InitParams(model);
  inputs.push_back(InputBatch(model, batch, 5));
  for (int i = 0; i < 2; ++i) exec.Call(inputs);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call(inputs));
  SetRate(state, "examples/s", static_cast<double>(batch));
}

// Backend::Compile of the training step's Program (built once beforehand); the graph build
// (forward, Gradient, Adam) is reported as a counter.
void CompileCase(benchmark::State& state, Model model) {
  Trainer trainer(model);
  const auto build_start = std::chrono::steady_clock::now();
  std::shared_ptr<const compute::Program> program = trainer.exec.ProgramFor(trainer.InputShapes());
  const double build_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<compute::Executable> executable = Backend()->Compile(program);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    benchmark::DoNotOptimize(executable.get());
  }
  state.counters["graph_build_ms"] = build_s * 1e3;
}

// Peak memory over 10 training steps: growth of the peak RSS from before the weights exist
// (comparable with PyTorch's) and the backend's peak buffer bytes.
void MemoryCase(benchmark::State& state, Model model) {
  const int64_t rss_before = PeakRssBytes();
  Backend()->ResetPeakMemory();
  for (auto _ : state) {
    Trainer trainer(model);
    for (int i = 0; i < 10; ++i) trainer.Step();
  }
  state.counters["peak_rss_MB"] = static_cast<double>(PeakRssBytes() - rss_before) / 1e6;
  state.counters["peak_buffers_MB"] = static_cast<double>(Backend()->MemoryStats().peak_bytes) / 1e6;
}

// 5 warm-up steps and then `steps` more; run.py runs it under strace -c with two step counts
// and reports the difference per step.
void SteadyCase(benchmark::State& state, Model model, int steps) {
  for (auto _ : state) {
    Trainer trainer(model);
    for (int i = 0; i < 5 + steps; ++i) trainer.Step();
  }
}

// 2 threads running independent FMA chains.
void FmaPeakCase(benchmark::State& state) {
  constexpr int64_t kIters = 20'000'000;
  double flops = 0;
  for (auto _ : state) flops = FmaPeakLoop(kIters, BenchThreads());
  SetRate(state, "FLOP/s", flops);
}

}  // namespace

// Registers the model cases (all in real time: several threads work).
void RegisterModelCases() {
  for (Model model : {Model::kMlp, Model::kCnn}) {
    const std::string name = model == Model::kMlp ? "mlp" : "cnn";
    benchmark::RegisterBenchmark(("train/" + name).c_str(), TrainCase, model)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (int64_t batch : {256, 1}) {
      benchmark::RegisterBenchmark(("infer/" + name + "_b" + std::to_string(batch)).c_str(), InferCase, model,
                                   batch)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    // Small batches, one thread against two: where kSmallProgramWork (cpu/kernels.h) switches.
    for (int64_t batch : {2, 4, 8, 16}) {
      benchmark::RegisterBenchmark(("infer_sweep/" + name + "_b" + std::to_string(batch)).c_str(), InferCase,
                                   model, batch)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(("compile/" + name + "_train").c_str(), CompileCase, model)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("memory/" + name + "_train").c_str(), MemoryCase, model)
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (int steps : {10, 60}) {
    benchmark::RegisterBenchmark(("steady/mlp_train_" + std::to_string(steps)).c_str(), SteadyCase,
                                 Model::kMlp, steps)
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("limit/fma_peak", FmaPeakCase)->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace kiln::bench
