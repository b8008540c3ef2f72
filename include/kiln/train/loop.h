#pragma once
/// @file
/// train::Loop: runs a Trainer over a dataset for a number of steps, epochs, or up to a global
/// step, calling callbacks (by ascending priority) at the start, after each step and at the end.
///
///   train::Loop loop(trainer);
///   train::EveryNSteps(loop, 1000, "log", 0, [](train::Loop& l, const std::vector<Tensor>& m) { ... });
///   std::vector<Tensor> last = loop.RunSteps(ds, 5000);

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/train/trainer.h"

namespace kiln::train {

class Loop;

/// A step callback: the loop and the step's metrics (TrainStep's results).
using StepFn = std::function<void(Loop& loop, const std::vector<Tensor>& metrics)>;
/// A start or end callback.
using LoopFn = std::function<void(Loop& loop)>;

/// A training loop over one Trainer (GoMLX's train.Loop); callbacks registered on it run in
/// every Run* call.
class Loop {
 public:
  /// A loop driving `trainer`, which must outlive it.
  explicit Loop(Trainer& trainer);

  /// Runs `steps` steps (a finite dataset that runs out is reset); returns the last metrics.
  std::vector<Tensor> RunSteps(const data::DatasetPtr& dataset, int64_t steps);
  /// Runs `epochs` passes over a finite dataset.
  std::vector<Tensor> RunEpochs(const data::DatasetPtr& dataset, int epochs);
  /// Runs until the store's global step reaches `global_step` (resuming where it stands).
  std::vector<Tensor> RunToGlobalStep(const data::DatasetPtr& dataset, int64_t global_step);

  /// The 0-based global step of the step just run (during step callbacks).
  int64_t LoopStep() const { return step_; }
  /// The global step this run started from, and the one it will end at (-1 for epochs).
  int64_t StartStep() const { return start_step_; }
  /// The global step this run ends at (-1 for RunEpochs, whose length the data decides).
  int64_t EndStep() const { return end_step_; }
  /// The trainer the loop drives.
  Trainer& trainer() { return trainer_; }
  /// Examples in the last step's batch (axis 0 of its first input).
  int64_t LastBatchSize() const { return batch_size_; }
  /// The train metrics of the last step (empty before the first).
  const std::vector<Tensor>& LastMetrics() const { return last_; }
  /// Asks the running Run* call to end after the current step's callbacks (the end callbacks
  /// still run); early stopping calls it. Each Run* call starts with the request cleared.
  void Stop() { stop_ = true; }
  /// Whether Stop was called during the current (or last) Run* call.
  bool Stopped() const { return stop_; }

  // Callbacks run by ascending `priority` (equal priorities in the order added); `name`
  // identifies them.

  /// Registers `fn` to run at the start of each Run* call, before the first step.
  void OnStart(const std::string& name, int priority, LoopFn fn);
  /// Registers `fn` to run after every step, with the step's metrics.
  void OnStep(const std::string& name, int priority, StepFn fn);
  /// Registers `fn` to run at the end of each Run* call, after the last step.
  void OnEnd(const std::string& name, int priority, LoopFn fn);

 private:
  std::vector<Tensor> Run(const data::DatasetPtr& dataset, int64_t steps, int epochs);
  template <typename F>
  struct Callback {
    std::string name;
    int priority;
    F fn;
  };
  Trainer& trainer_;
  std::vector<Callback<LoopFn>> on_start_, on_end_;
  std::vector<Callback<StepFn>> on_step_;
  int64_t step_ = -1, start_step_ = 0, end_step_ = -1, batch_size_ = 0;
  bool stop_ = false;
  std::vector<Tensor> last_;
};

/// Calls fn after each step whose (global step + 1) is a multiple of n.
void EveryNSteps(Loop& loop, int64_t n, const std::string& name, int priority, StepFn fn);
/// Calls fn `times` times spread evenly over the loop's steps (the last at its last step).
void NTimesDuringLoop(Loop& loop, int times, const std::string& name, int priority, StepFn fn);
/// Calls fn after a step once `period` of wall-clock time has passed since the last call (GoMLX's
/// PeriodicCallback): the clock starts at the first step and restarts after each call, so fn's
/// own time does not count. With `call_on_end`, fn also runs at the end of each run, with the
/// last step's metrics.
void PeriodicCallback(Loop& loop, std::chrono::nanoseconds period, bool call_on_end, const std::string& name,
                      int priority, StepFn fn);
/// Calls fn at global steps spaced by a growing gap (GoMLX's ExponentialCallback): at
/// `start_step`, then after gaps of start_step·factor, start_step·factor², ... (each rounded), so
/// start 100 and factor 1.2 call at steps 100, 220, 364, ...; a run resuming mid-way picks up the
/// schedule where its start step falls. start_step >= 1 and factor > 1. With `call_on_end`, fn
/// also runs at the end of each run.
void ExponentialCallback(Loop& loop, int64_t start_step, double factor, bool call_on_end,
                         const std::string& name, int priority, StepFn fn);

/// What EarlyStopping has seen (updated as the loop runs).
struct EarlyStoppingState {
  double best = 0;             ///< The best value of the watched metric so far.
  int64_t best_step = -1;      ///< The global step it was measured at (-1: no evaluation yet).
  int evaluations = 0;         ///< Evaluations run.
  int since_best = 0;          ///< Evaluations since the best one.
  bool stopped = false;        ///< Whether it stopped the loop.
  std::vector<double> values;  ///< Every evaluation's value, in order.
};

/// Early stopping (GoMLX has none; Keras's EarlyStopping with restore_best_weights is the model):
/// evaluates a finite dataset after every EvalEvery steps and stops the loop (Loop::Stop) once
/// Patience evaluations in a row have not improved on the best; the variables of the best
/// evaluation (weights, optimizer state; not the global step, which keeps counting the steps
/// run) are kept and, with RestoreBest, put back when a run ends, stopped or not. The state
/// restarts with each Run* call.
///
///   auto early = train::EarlyStopping(loop, validation).EvalEvery(200).Patience(3).Done();
class EarlyStoppingBuilder {
 public:
  /// Early stopping of `loop` watching evaluations on `eval`; train::EarlyStopping makes one.
  EarlyStoppingBuilder(Loop& loop, data::DatasetPtr eval) : loop_(loop), eval_(std::move(eval)) {}
  /// Evaluate after every `steps` steps (100 by default).
  EarlyStoppingBuilder& EvalEvery(int64_t steps);
  /// Which of Trainer::Eval's values decides: 0 the loss (the default), i the (i-1)-th eval metric.
  EarlyStoppingBuilder& Metric(int index);
  /// Higher is better (an accuracy) instead of lower (a loss).
  EarlyStoppingBuilder& Maximize(bool maximize = true);
  /// Evaluations without improvement before the loop stops (5 by default).
  EarlyStoppingBuilder& Patience(int evaluations);
  /// An improvement must beat the best by more than `delta` (0 by default).
  EarlyStoppingBuilder& MinDelta(double delta);
  /// Whether a run's end puts the best evaluation's variables back (true by default).
  EarlyStoppingBuilder& RestoreBest(bool restore);
  /// Keeps the best variables as a checkpoint in folder `dir` (crash safe, the newest only)
  /// instead of a copy in memory.
  EarlyStoppingBuilder& BestDir(std::string dir);
  /// The priority of its callbacks (100 by default: after most others).
  EarlyStoppingBuilder& Priority(int priority);
  /// Registers the callbacks and returns the state, to read during or after a run. kiln::Error
  /// when `eval` is null or infinite, a count is below 1 or MinDelta is negative; a Metric that
  /// is not one of Eval's values is one at the first evaluation.
  std::shared_ptr<const EarlyStoppingState> Done();

 private:
  Loop& loop_;
  data::DatasetPtr eval_;
  int64_t every_ = 100;
  int metric_ = 0, patience_ = 5, priority_ = 100;
  bool maximize_ = false, restore_ = true;
  double min_delta_ = 0;
  std::string best_dir_;
};

/// Starts early stopping of `loop` on the evaluations of `eval`; finish with .Done().
inline EarlyStoppingBuilder EarlyStopping(Loop& loop, data::DatasetPtr eval) {
  return EarlyStoppingBuilder(loop, std::move(eval));
}

}  // namespace kiln::train
