// The data-parallel job the mpirun test runs in three layouts (run_mpi_job.sh): one process with
// one device, one process with two devices (KILN_BACKEND=cpu:devices=2) and two processes under
// mpirun. It trains a small MLP with Adam on a fixed regression, each process on its shard, and
// prints the last loss and metric, the median absolute error on an evaluation set (each process
// evaluates its shard) and a checksum of the weights with every digit: the two two-replica layouts
// must print the same line, the one-replica layout one within 1e-5.
//
// KILN_TEST_FAULT makes rank 1 misbehave, for run_mpi_faults.sh: "shapes" (a wider hidden layer,
// so other variables), "steps" (one step fewer), "die" (exits at once, without a word), "hang"
// (sleeps through three collective timeouts, then exits): rank 0 then times out, finds every later
// exchange refused, and leaves without hanging in Finalize.
//
// KILN_TEST_CKPT=DIR checkpoints into DIR (rank 0 writes, every 10 steps and at the end) and
// resumes from its last checkpoint, skipping the batches trained on before it; KILN_TEST_STEPS
// (60 by default) is the global step to train to. A run to 30 then one to 60 must print what one
// run to 60 prints.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/regression_data.h"
#include "kiln/kiln.h"

using namespace kiln;
using graph::Node;

namespace {

std::string Fault() {
  const char* f = std::getenv("KILN_TEST_FAULT");
  return f != nullptr && distributed::Rank() == 1 ? f : "";
}

std::vector<Node> Mlp(model::Scope scope, const std::any&, std::vector<Node> inputs) {
  Node h =
      activations::Relu(layers::Dense(scope.In("hidden"), inputs[0], true, Fault() == "shapes" ? 33 : 32));
  return {layers::Dense(scope.In("out"), h, true, 1)};
}

}  // namespace

int main(int argc, char** argv) {
  distributed::Init(argc, argv);
  try {
    compute::BackendPtr backend = compute::New();
    const int64_t global_batch = 128;
    auto ds = test::Regression(backend, 2048, 12345, true);
    ds->Shuffle(7).Shard(distributed::Rank(), distributed::WorldSize());
    ds->BatchSize(global_batch / distributed::WorldSize(), true).Infinite(true);
    model::Store store;
    store.SetRNGStateFromSeed(11);
    train::Trainer trainer(backend, store, Mlp, losses::MeanSquaredError,
                           optimizers::Adam().LearningRate(0.003).Done(),
                           {metrics::NewMeanAbsoluteError("Mean Absolute Error", "mae")},
                           {metrics::NewMedian("Median Absolute Error", "med", metrics::AbsoluteErrors)});
    trainer.DataParallel();
    train::Loop loop(trainer);
    const char* ckpt_dir = std::getenv("KILN_TEST_CKPT");
    const char* steps_env = std::getenv("KILN_TEST_STEPS");
    const int64_t steps = (steps_env != nullptr ? std::stoll(steps_env) : 60) - (Fault() == "steps" ? 1 : 0);
    std::unique_ptr<checkpoint::Handler> ckpt;
    if (ckpt_dir != nullptr) {
      ckpt = std::make_unique<checkpoint::Handler>(checkpoint::Build(store).Dir(ckpt_dir).Keep(2).Done());
      train::EveryNSteps(loop, 10, "checkpoint", 100,
                         [&](train::Loop&, const std::vector<Tensor>&) { ckpt->Save(); });
      std::any spec;
      std::vector<Tensor> inputs, labels;
      for (int64_t i = 0; i < store.GlobalStep().Value().Item<int64_t>(); ++i)
        ds->Yield(spec, inputs, labels);
    }
    if (Fault() == "die") std::_Exit(3);
    if (Fault() == "hang") {
      std::this_thread::sleep_for(3 * compute::ReplicaGroup::DefaultTimeout());
      std::_Exit(4);
    }
    const std::vector<Tensor> m = loop.RunToGlobalStep(ds, steps);
    if (m.empty()) throw Error("the checkpoint is already at step " + std::to_string(steps));
    if (ckpt) ckpt->Save();
    // Each process evaluates its share; the median combines every process's samples.
    auto eval_ds = test::Regression(backend, 512, 999, true);
    eval_ds->Shard(distributed::Rank(), distributed::WorldSize()).BatchSize(64, false);
    const std::vector<Tensor> eval = trainer.Eval(eval_ds);
    double checksum = 0;
    for (const model::Variable& v : store.Variables())
      if (v.Trainable())
        for (float w : v.Value().ToVector<float>())
          checksum += static_cast<double>(w) * (1 + checksum * 1e-3);
    if (distributed::Rank() == 0)
      std::printf("replicas %d loss %.9g mae %.9g median %.9g checksum %.12g\n",
                  trainer.Replicas()->NumReplicas(), m[0].Item<float>(), m[2].Item<float>(),
                  eval[1].Item<float>(), checksum);
    distributed::Finalize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", distributed::Rank(), e.what());
    const char* fault = std::getenv("KILN_TEST_FAULT");
    if (fault != nullptr && std::string(fault) == "hang") {  // On rank 0, which timed out.
      try {
        distributed::Barrier();
        std::fprintf(stderr, "rank %d: a barrier after the timeout went through\n", distributed::Rank());
      } catch (const std::exception& again) {
        std::fprintf(stderr, "rank %d: then: %s\n", distributed::Rank(), again.what());
      }
      distributed::Finalize();
      std::fprintf(stderr, "rank %d: finalized\n", distributed::Rank());
    }
    return 1;
  }
  return 0;
}
