// The data-parallel benchmark's program (bench/data_parallel.py runs it in several layouts): trains
// the Fashion-MNIST MLP or CNN (the main job's, without dropout) with Adam on synthetic data for a
// number of steps of one global batch, data-parallel over every replica of the job (the backend's
// devices times the mpirun processes), and prints from rank 0 one line of JSON: examples per
// second over the timed steps and the time per step spent in collectives.
//
//   kiln_data_parallel_bench --model=mlp|cnn [--steps=30] [--batch=256] [--start-at=EPOCH_SECONDS]
//   KILN_BACKEND=cpu:threads=2,devices=2 kiln_data_parallel_bench ...
//   KILN_BACKEND=cpu:threads=1 mpirun -np 2 kiln_data_parallel_bench ...

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <kiln/kiln.h>

using namespace kiln;
using graph::Node;

namespace {

std::vector<Node> Mlp(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node x = graph::Reshape(in[0], {in[0].shape().Dim(0), -1});
  x = activations::Relu(layers::Dense(scope.In("dense1"), x, true, 512));
  x = activations::Relu(layers::Dense(scope.In("dense2"), x, true, 512));
  return {layers::Dense(scope.In("logits"), x, true, 10)};
}

std::vector<Node> Cnn(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node x = in[0];
  x = layers::Convolution(scope.In("conv1"), x).Filters(32).KernelSize(5).PadSame().Done();
  x = layers::MaxPool(activations::Relu(x)).Window(2).Done();
  x = layers::Convolution(scope.In("conv2"), x).Filters(64).KernelSize(5).PadSame().Done();
  x = layers::MaxPool(activations::Relu(x)).Window(2).Done();
  x = graph::Reshape(x, {x.shape().Dim(0), -1});
  x = activations::Relu(layers::Dense(scope.In("dense"), x, true, 512));
  return {layers::Dense(scope.In("logits"), x, true, 10)};
}

std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  distributed::Init(argc, argv);
  try {
    const std::string which = Flag(argc, argv, "model", "mlp");
    const bool cnn = which == "cnn";
    const int steps = std::stoi(Flag(argc, argv, "steps", "30"));
    const int64_t batch = std::stoll(Flag(argc, argv, "batch", cnn ? "128" : "256"));
    const int world = distributed::WorldSize(), rank = distributed::Rank();
    compute::BackendPtr backend = compute::New();
    // 8 global batches of synthetic examples, the same in every process.
    const int64_t n = 8 * batch;
    std::vector<int64_t> dims = cnn ? std::vector<int64_t>{n, 28, 28, 1} : std::vector<int64_t>{n, 784};
    std::vector<float> pixels(static_cast<size_t>(n * 784));
    std::vector<int32_t> labels(static_cast<size_t>(n));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0, 1);
    for (float& p : pixels) p = u(rng);
    for (int32_t& l : labels) l = static_cast<int32_t>(rng() % 10);
    auto ds =
        data::InMemoryFromData(backend, "synthetic", {Tensor::FromFlat(Shape(DType::Float32, dims), pixels)},
                               {Tensor::FromFlat(Shape(DType::Int32, {n, 1}), labels)});
    ds->Shard(rank, world).BatchSize(batch / world, true).Infinite(true);
    model::Store store;
    store.SetRNGStateFromSeed(1);
    train::Trainer trainer(backend, store, cnn ? train::ModelFn(Cnn) : train::ModelFn(Mlp),
                           losses::SparseCategoricalCrossEntropyLogits,
                           optimizers::Adam().LearningRate(1e-3).Done(), {}, {});
    const bool parallel = world > 1 || backend->NumDevices() > 1;
    if (parallel) trainer.DataParallel();
    std::any spec;
    std::vector<Tensor> in, lab;
    auto step = [&] {
      ds->Yield(spec, in, lab);
      return trainer.TrainStep(spec, in, lab)[0].Item<float>();
    };
    for (int i = 0; i < 3; ++i) step();  // Compile and warm up.
    if (parallel) trainer.Replicas()->ResetStats();
    distributed::Barrier();
    // --start-at: independent processes begin their timed steps together (after their warm-up),
    // at a time on the system clock; "late_s" says by how much this one missed it.
    const double start_at = std::stod(Flag(argc, argv, "start-at", "0"));
    if (start_at > 0)
      std::this_thread::sleep_until(std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::duration<double>(start_at))));
    // The timed window on the system clock too, so that runs in separate processes can be lined up.
    const auto wall_start = std::chrono::system_clock::now();
    const auto start = std::chrono::steady_clock::now();
    float loss = 0;
    for (int i = 0; i < steps; ++i) loss = step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double wall_start_s = std::chrono::duration<double>(wall_start.time_since_epoch()).count();
    const double late_s = start_at > 0 ? std::max(0.0, wall_start_s - start_at) : 0.0;
    const compute::CollectiveStats stats =
        parallel ? trainer.Replicas()->Stats() : compute::CollectiveStats{};
    if (rank == 0)
      std::printf(
          "{\"model\": \"%s\", \"replicas\": %d, \"processes\": %d, \"examples_per_s\": %.1f, "
          "\"collective_ms_per_step\": %.3f, \"collective_bytes_per_step\": %lld, \"loss\": %.5f, "
          "\"examples\": %lld, \"start_s\": %.6f, \"end_s\": %.6f, \"late_s\": %.6f, \"backend\": \"%s\"}\n",
          which.c_str(), parallel ? trainer.Replicas()->NumReplicas() : 1, world,
          static_cast<double>(batch) * steps / seconds, 1e3 * stats.seconds / steps,
          static_cast<long long>(stats.calls > 0 ? stats.bytes / steps : 0), loss,
          static_cast<long long>(batch) * steps, wall_start_s, wall_start_s + seconds, late_s,
          backend->Description().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", distributed::Rank(), e.what());
    return 1;
  }
  distributed::Finalize();
  return 0;
}
