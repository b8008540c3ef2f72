// Trainer rows: the MLP and CNN training steps of model_bench.cc written with the training
// library (layers::Dense, layers::Convolution, activations::Relu, layers::MaxPool, the sparse
// softmax cross-entropy loss, optimizers::Adam, train::Trainer), on the same initial weights and
// the same batch. What the library adds over the graph-only step (the moving-average loss, the
// global step, variables read from the store) must cost under 5%: run.py compares the two rows.

#include <any>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "cases.h"
#include "models.h"

namespace kiln::bench {
namespace {

using graph::Node;

// 784-512-512-10 (the input is already flat).
std::vector<Node> MlpModel(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node x = activations::Relu(layers::Dense(scope.In("dense1"), in[0], true, 512));
  x = activations::Relu(layers::Dense(scope.In("dense2"), x, true, 512));
  return {layers::Dense(scope.In("logits"), x, true, 10)};
}

// conv5x5x32-relu-maxpool2, conv5x5x64-relu-maxpool2, dense512-relu, dense10 (channels last).
std::vector<Node> CnnModel(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node x = layers::Convolution(scope.In("conv1"), in[0]).Filters(32).KernelSize(5).PadSame().Done();
  x = layers::MaxPool(activations::Relu(x)).Window(2).Done();
  x = layers::Convolution(scope.In("conv2"), x).Filters(64).KernelSize(5).PadSame().Done();
  x = layers::MaxPool(activations::Relu(x)).Window(2).Done();
  x = graph::Reshape(x, {x.shape().Dim(0), -1});
  x = activations::Relu(layers::Dense(scope.In("dense"), x, true, 512));
  return {layers::Dense(scope.In("logits"), x, true, 10)};
}

// The store's scope and variable name of each of ModelParams(model), in order.
std::vector<std::pair<std::string, std::string>> VariablePaths(Model model) {
  const std::vector<std::string> layers = model == Model::kMlp
                                              ? std::vector<std::string>{"dense1", "dense2", "logits"}
                                              : std::vector<std::string>{"conv1", "conv2", "dense", "logits"};
  std::vector<std::pair<std::string, std::string>> paths;
  for (const std::string& layer : layers) {
    paths.emplace_back(layer, "weights");
    paths.emplace_back(layer, "biases");
  }
  return paths;
}

// Examples per second of Trainer::TrainStep. The trainer donates its batch, so each step gets a
// copy of the fixed batch, made outside the timed region (a data pipeline hands over fresh
// tensors; that copy is the pipeline's cost, not the trainer's).
// With `nan_check`, the same step with the NaN check on (Trainer::SetNanCheck): what debugging
// with KILN_NAN_CHECK=1 costs. With `mixed`, mixed-precision training in BFloat16
// (Trainer::WithMixedPrecision): Float32 master weights, BFloat16 compute.
void TrainerCase(benchmark::State& state, Model model, bool nan_check, bool mixed) {
  model::Store store;
  const std::vector<Tensor> params = InitParams(model);
  const auto paths = VariablePaths(model);
  for (size_t i = 0; i < params.size(); ++i)
    store.RootScope().At(paths[i].first).VariableWithValue(paths[i].second, params[i]);
  train::Trainer trainer(
      Backend(), store, model == Model::kMlp ? train::ModelFn(MlpModel) : train::ModelFn(CnnModel),
      losses::SparseCategoricalCrossEntropyLogits, optimizers::Adam().LearningRate(1e-3).Done(), {}, {});
  trainer.SetNanCheck(nan_check);
  if (mixed) trainer.WithMixedPrecision(DType::BFloat16);
  Tensor x, labels;
  TrainData(model, x, labels);
  auto step = [&] { return trainer.TrainStep(std::any(), {x.Clone()}, {labels.Clone()}); };
  const float first_loss = step()[0].Item<float>();
  step();
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Tensor> inputs{x.Clone()}, targets{labels.Clone()};
    state.ResumeTiming();
    trainer.TrainStep(std::any(), inputs, targets);
  }
  state.counters["first_loss"] = first_loss;  // equal to the graph-only row's
  SetRate(state, "examples/s", static_cast<double>(TrainBatch(model)));
  SetRate(state, "FLOP/s", static_cast<double>(TrainBatch(model)) * TrainFlops(model));
}

}  // namespace

// Registers train_trainer/mlp and train_trainer/cnn (real time: several threads work),
// train_trainer/mlp_bf16 and train_trainer/cnn_bf16 (mixed precision), and debug/nan_check/mlp
// and debug/nan_check/cnn: the same steps with the NaN check on.
void RegisterTrainerCases() {
  for (Model model : {Model::kMlp, Model::kCnn}) {
    const std::string name = model == Model::kMlp ? "mlp" : "cnn";
    benchmark::RegisterBenchmark(("train_trainer/" + name).c_str(), TrainerCase, model, false, false)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("train_trainer/" + name + "_bf16").c_str(), TrainerCase, model, false, true)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("debug/nan_check/" + name).c_str(), TrainerCase, model, true, false)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace kiln::bench
