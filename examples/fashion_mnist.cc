// The main job: trains a classifier on Fashion-MNIST (Debian's dataset-fashion-mnist) with a
// progress bar, periodic evaluation on the test set, checkpoints (resuming) and an HTML plot,
// then prints the test accuracy and the time taken.
//
//   fashion_mnist [--model=cnn|mlp] [--epochs=5] [--steps=N] [--batch=128] [--lr=0.001]
//                 [--ckpt=DIR] [--backend=cpu] [--set="k=v;k2=v2"] [--data=DIR] [--plot=FILE]
//                 [--seed=42] [--ckpt_every=N] [--accumulate=1] [--eval_every=N] [--quantize=SCHEME]
//                 [--mixed_precision]
//
// --seed seeds both the variables' initialisation (the store's random state) and the order in
// which the training set is shuffled. With --ckpt, a checkpoint is saved every --ckpt_every steps
// (default: half an epoch) and at the end; a run started again with the same folder resumes from
// the newest one and skips the batches already trained on, so it sees the data an uninterrupted
// run would. --accumulate=N applies the optimizer every N batches to their mean gradient. The
// plot gets an evaluation on the test set every --eval_every steps (default: every epoch, or
// halfway through a shorter run; 0: only the final evaluation). --quantize=Int8 (or another
// quant::Scheme name) then quantizes the trained dense layers (quant::QuantizeStore) and
// evaluates the quantized model on the test set too. --mixed_precision trains with bfloat16
// compute and float32 variables (train::Trainer::WithMixedPrecision).
//
// Data-parallel: `mpirun -np 2 fashion_mnist` trains on two processes, each on its shard of the
// data (half of each global batch), and prints from rank 0; a backend of several devices
// (--backend=cpu:devices=2) trains on them the same way (train::Trainer::DataParallel).

#include <kiln/kiln.h>

#include <any>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::graph;

namespace {

/// Where the processes other than rank 0 print: nowhere.
std::ostream& NullStream() {
  static std::ostream none(nullptr);
  return none;
}

struct Flags {
  std::string model = "cnn", ckpt, backend, set, data = data::kFashionMnistDir, plot = "training.html";
  int epochs = 5;
  int64_t steps = 0, batch = 0;
  double lr = 1e-3;
  uint64_t seed = 42;
  int64_t ckpt_every = 0;
  int accumulate = 1;
  int64_t eval_every = -1;
  std::string quantize;
  bool mixed_precision = false;
};

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--model")
      f.model = value;
    else if (key == "--epochs")
      f.epochs = std::stoi(value);
    else if (key == "--steps")
      f.steps = std::stoll(value);
    else if (key == "--batch")
      f.batch = std::stoll(value);
    else if (key == "--lr")
      f.lr = std::stod(value);
    else if (key == "--ckpt")
      f.ckpt = value;
    else if (key == "--backend")
      f.backend = value;
    else if (key == "--set")
      f.set = value;
    else if (key == "--data")
      f.data = value;
    else if (key == "--plot")
      f.plot = value;
    else if (key == "--seed")
      f.seed = std::stoull(value);
    else if (key == "--ckpt_every")
      f.ckpt_every = std::stoll(value);
    else if (key == "--accumulate")
      f.accumulate = std::stoi(value);
    else if (key == "--quantize")
      f.quantize = value;
    else if (key == "--eval_every")
      f.eval_every = std::stoll(value);
    else if (a == "--mixed_precision")
      f.mixed_precision = true;
    else {
      std::cerr
          << "unknown flag " << a
          << " (valid: --model --epochs --steps --batch --lr --ckpt --backend --set --data --plot --seed"
          << " --ckpt_every --accumulate --eval_every --quantize --mixed_precision)\n";
      std::exit(2);
    }
  }
  if (f.model != "cnn" && f.model != "mlp") {
    std::cerr << "--model must be cnn or mlp, got " << f.model << "\n";
    std::exit(2);
  }
  return f;
}

/// 784-512-512-10.
std::vector<Node> Mlp(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node x = Reshape(in[0], {in[0].shape().Dim(0), -1});
  x = activations::Relu(layers::Dense(scope.In("dense1"), x, true, 512));
  x = activations::Relu(layers::Dense(scope.In("dense2"), x, true, 512));
  return {layers::Dense(scope.In("logits"), x, true, 10)};
}

/// conv5x5x32-relu-maxpool2, conv5x5x64-relu-maxpool2, dense512-relu, dropout, dense10.
std::vector<Node> Cnn(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node x = in[0];
  x = layers::Convolution(scope.In("conv1"), x).Filters(32).KernelSize(5).PadSame().Done();
  x = layers::MaxPool(activations::Relu(x)).Window(2).Done();
  x = layers::Convolution(scope.In("conv2"), x).Filters(64).KernelSize(5).PadSame().Done();
  x = layers::MaxPool(activations::Relu(x)).Window(2).Done();
  x = Reshape(x, {x.shape().Dim(0), -1});
  x = activations::Relu(layers::Dense(scope.In("dense"), x, true, 512));
  x = layers::Dropout(scope.In("dropout"), x, model::GetParamOr(scope, "dropout", 0.3));
  return {layers::Dense(scope.In("logits"), x, true, 10)};
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun the processes train data-parallel, each on its share of the data.
  distributed::Init(argc, argv);
  const Flags flags = Parse(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  const int rank = distributed::Rank(), world = distributed::WorldSize();
  std::ostream& out = rank == 0 ? std::cout : NullStream();
  try {
    compute::BackendPtr backend =
        flags.backend.empty() ? compute::New() : compute::NewWithConfig(flags.backend);
    model::Store store;
    store.SetRNGStateFromSeed(flags.seed);
    store.SetParam("optimizer", "adam");
    store.SetParam("learning_rate", flags.lr);
    if (!flags.set.empty()) model::ParseSettings(store, flags.set);
    const int64_t batch = flags.batch > 0 ? flags.batch : (flags.model == "cnn" ? 128 : 256);

    if (batch % world != 0)
      throw Error("--batch=" + std::to_string(batch) + " does not split over " + std::to_string(world) +
                  " processes");
    auto train_ds = data::FashionMnist(backend, flags.data, data::Split::Train);
    train_ds->Shuffle(flags.seed).Shard(rank, world).BatchSize(batch / world, true).Infinite(true);
    auto test_ds = data::FashionMnist(backend, flags.data, data::Split::Test);
    test_ds->Shard(rank, world).BatchSize(1000, false);
    const bool parallel = world > 1 || backend->NumDevices() > 1;

    train::Trainer trainer(
        backend, store, flags.model == "cnn" ? train::ModelFn(Cnn) : train::ModelFn(Mlp),
        losses::SparseCategoricalCrossEntropyLogits, optimizers::FromStore(store),
        {metrics::NewMovingAverageSparseCategoricalAccuracy("Moving Average Accuracy", "~acc", 0.01)},
        {metrics::NewSparseCategoricalAccuracy("Mean Accuracy", "#acc")});
    trainer.AccumulateGradients(flags.accumulate);
    if (flags.mixed_precision) trainer.WithMixedPrecision(DType::BFloat16);
    if (parallel) trainer.DataParallel();
    train::Loop loop(trainer);
    commandline::AttachProgressBar(loop);
    const int64_t steps_per_epoch = train_ds->NumExamples() / batch;
    const int64_t total = flags.steps > 0 ? flags.steps : steps_per_epoch * flags.epochs;
    plots::Options plot;
    if (flags.eval_every != 0) {
      plot.eval_datasets = {test_ds};
      plot.eval_every = flags.eval_every > 0 ? flags.eval_every
                                             : std::max<int64_t>(1, std::min(steps_per_epoch, total / 2));
    }
    plot.title = "Fashion-MNIST " + flags.model + ", batch " + std::to_string(batch);
    plots::AttachToLoop(loop, flags.plot, plot);

    std::unique_ptr<checkpoint::Handler> ckpt;
    if (!flags.ckpt.empty()) {
      ckpt = std::make_unique<checkpoint::Handler>(checkpoint::Build(store).Dir(flags.ckpt).Keep(3).Done());
      const int64_t every =
          flags.ckpt_every > 0 ? flags.ckpt_every : std::max<int64_t>(1, steps_per_epoch / 2);
      train::EveryNSteps(loop, every, "checkpoint", 100,
                         [&](train::Loop&, const std::vector<Tensor>&) { ckpt->Save(); });
    }
    out << "training the " << flags.model << " for " << total << " steps of " << batch << " on "
        << backend->Description() << (world > 1 ? ", " + std::to_string(world) + " processes" : std::string())
        << ", seed " << flags.seed << "\n";
    const int64_t resumed = store.GlobalStep().Value().Item<int64_t>();
    if (ckpt && resumed > 0) {
      // The batches before the checkpoint's step were trained on: skip them, so the run goes on
      // with the data an uninterrupted run would see next.
      out << "resuming from " << ckpt->ListCheckpoints().back() << " at global step " << resumed << "\n";
      std::any spec;
      std::vector<Tensor> inputs, labels;
      for (int64_t i = 0; i < resumed; ++i) train_ds->Yield(spec, inputs, labels);
    }
    loop.RunToGlobalStep(train_ds, total);
    if (ckpt) ckpt->Save();
    std::vector<Tensor> results = trainer.Eval(test_ds);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out << "model: " << model::Summary(store) << "\n";
    out << "test loss: " << results[0].Item<float>() << ", test accuracy: " << results[1].Item<float>()
        << "\n";
    out << "time: " << seconds << " s\n";
    if (!flags.quantize.empty()) {
      // Post-training quantization of the dense layers, evaluated by a new trainer (the store's
      // variables changed).
      const quant::StoreQuantization q = quant::QuantizeStore(store, quant::SchemeFromName(flags.quantize));
      train::Trainer quantized(backend, store,
                               flags.model == "cnn" ? train::ModelFn(Cnn) : train::ModelFn(Mlp),
                               losses::SparseCategoricalCrossEntropyLogits, optimizers::FromStore(store), {},
                               {metrics::NewSparseCategoricalAccuracy("Mean Accuracy", "#acc")});
      if (parallel) quantized.DataParallel();  // Its evaluation then sums over the processes.
      std::vector<Tensor> r = quantized.Eval(test_ds);
      out << "quantized " << flags.quantize << " (" << q.paths.size() << " weight matrices, "
          << q.bytes_before << " -> " << q.bytes_after << " bytes): test loss: " << r[0].Item<float>()
          << ", test accuracy: " << r[1].Item<float>() << "\n";
    }
  } catch (const Error& e) {
    std::cerr << "fashion_mnist" << (world > 1 ? " (rank " + std::to_string(rank) + ")" : std::string())
              << ": " << e.what() << "\n";
    return 1;
  }
  distributed::Finalize();
  return 0;
}
