// train::Loop: steps over a dataset with ordered callbacks; a non-finite loss stops it.

#include "kiln/train/loop.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/check.h"

namespace kiln::train {

Loop::Loop(Trainer& trainer) : trainer_(trainer) {}

namespace {

template <typename C>
void Insert(std::vector<C>& list, C c) {
  auto it = std::upper_bound(list.begin(), list.end(), c.priority,
                             [](int p, const C& other) { return p < other.priority; });
  list.insert(it, std::move(c));
}

int64_t GlobalStep(Trainer& t) { return t.store().GlobalStep().Value().Item<int64_t>(); }

}  // namespace

void Loop::OnStart(const std::string& name, int priority, LoopFn fn) {
  Insert(on_start_, {name, priority, std::move(fn)});
}
void Loop::OnStep(const std::string& name, int priority, StepFn fn) {
  Insert(on_step_, {name, priority, std::move(fn)});
}
void Loop::OnEnd(const std::string& name, int priority, LoopFn fn) {
  Insert(on_end_, {name, priority, std::move(fn)});
}

std::vector<Tensor> Loop::Run(const data::DatasetPtr& dataset, int64_t steps, int epochs) {
  if (!dataset) kiln::detail::Throw("Loop: null dataset");
  start_step_ = GlobalStep(trainer_);
  stop_ = false;
  end_step_ = steps >= 0 ? start_step_ + steps : -1;
  if (epochs > 0 && dataset->IsInfinite())
    kiln::detail::Throw("Loop::RunEpochs: dataset \"{}\" is infinite", dataset->Name());
  for (auto& c : on_start_) c.fn(*this);
  std::any spec;
  std::vector<Tensor> inputs, labels;
  int epoch = 0;
  if (epochs > 0) dataset->Reset();
  for (int64_t done = 0; steps < 0 || done < steps; ++done) {
    if (!dataset->Yield(spec, inputs, labels)) {
      dataset->Reset();
      if (epochs > 0 && ++epoch >= epochs) break;
      if (!dataset->Yield(spec, inputs, labels))
        kiln::detail::Throw("Loop: dataset \"{}\" yields no batch after a reset", dataset->Name());
    }
    step_ = start_step_ + done;
    batch_size_ = !inputs.empty() && inputs[0].rank() > 0 ? inputs[0].shape().Dim(0) : 1;
    last_ = trainer_.TrainStep(spec, inputs, labels);
    const float loss = last_.at(0).Item<float>();
    if (!std::isfinite(loss)) {
      kiln::detail::Throw("Loop: the loss is {} at step {}: training stopped", loss, step_);
    }
    for (auto& c : on_step_) c.fn(*this, last_);
    if (stop_) break;
  }
  for (auto& c : on_end_) c.fn(*this);
  return last_;
}

std::vector<Tensor> Loop::RunSteps(const data::DatasetPtr& dataset, int64_t steps) {
  if (steps < 0) kiln::detail::Throw("Loop::RunSteps: {} steps", steps);
  return Run(dataset, steps, 0);
}

std::vector<Tensor> Loop::RunEpochs(const data::DatasetPtr& dataset, int epochs) {
  if (epochs < 1) kiln::detail::Throw("Loop::RunEpochs: {} epochs", epochs);
  return Run(dataset, -1, epochs);
}

std::vector<Tensor> Loop::RunToGlobalStep(const data::DatasetPtr& dataset, int64_t global_step) {
  const int64_t now = GlobalStep(trainer_);
  return Run(dataset, std::max<int64_t>(0, global_step - now), 0);
}

void EveryNSteps(Loop& loop, int64_t n, const std::string& name, int priority, StepFn fn) {
  if (n < 1) kiln::detail::Throw("EveryNSteps(\"{}\"): n = {} must be at least 1", name, n);
  loop.OnStep(name, priority, [n, fn = std::move(fn)](Loop& l, const std::vector<Tensor>& m) {
    if ((l.LoopStep() + 1) % n == 0) fn(l, m);
  });
}

void NTimesDuringLoop(Loop& loop, int times, const std::string& name, int priority, StepFn fn) {
  if (times < 1) kiln::detail::Throw("NTimesDuringLoop(\"{}\"): times = {} must be at least 1", name, times);
  loop.OnStep(name, priority, [times, fn = std::move(fn)](Loop& l, const std::vector<Tensor>& m) {
    if (l.EndStep() < 0) return;
    const int64_t total = l.EndStep() - l.StartStep();
    const int64_t i = l.LoopStep() - l.StartStep() + 1;  // 1-based within the run
    // Fires when the run crosses each of the `times` evenly spaced marks.
    const int64_t before = (i - 1) * times / std::max<int64_t>(total, 1);
    const int64_t after = i * times / std::max<int64_t>(total, 1);
    if (after > before) fn(l, m);
  });
}

void PeriodicCallback(Loop& loop, std::chrono::nanoseconds period, bool call_on_end, const std::string& name,
                      int priority, StepFn fn) {
  if (period.count() < 0) kiln::detail::Throw("PeriodicCallback(\"{}\"): the period is negative", name);
  struct State {
    bool started = false;
    std::chrono::steady_clock::time_point last;
  };
  auto state = std::make_shared<State>();
  auto shared_fn = std::make_shared<StepFn>(std::move(fn));
  loop.OnStep(name, priority, [state, period, shared_fn](Loop& l, const std::vector<Tensor>& m) {
    const auto now = std::chrono::steady_clock::now();
    if (!state->started) {
      state->started = true;
      state->last = now;
      return;
    }
    if (now - state->last < period) return;
    (*shared_fn)(l, m);
    state->last = std::chrono::steady_clock::now();
  });
  if (call_on_end) loop.OnEnd(name, priority, [shared_fn](Loop& l) { (*shared_fn)(l, l.LastMetrics()); });
}

void ExponentialCallback(Loop& loop, int64_t start_step, double factor, bool call_on_end,
                         const std::string& name, int priority, StepFn fn) {
  if (start_step < 1 || !(factor > 1)) {
    kiln::detail::Throw("ExponentialCallback(\"{}\"): start_step {} must be >= 1 and factor {} > 1", name,
                        start_step, factor);
  }
  struct State {
    int64_t next = 0, gap = 0;
    void Bump(double factor) {
      // Saturating: past 2^62 steps the schedule simply never calls again.
      constexpr int64_t kFar = int64_t{1} << 62;
      next = std::min(next + gap, kFar);
      const double grown = static_cast<double>(gap) * factor;
      gap = grown >= static_cast<double>(kFar) ? kFar : static_cast<int64_t>(std::llround(grown));
    }
  };
  auto state = std::make_shared<State>();
  auto shared_fn = std::make_shared<StepFn>(std::move(fn));
  loop.OnStep(name, priority, [state, start_step, factor, shared_fn](Loop& l, const std::vector<Tensor>& m) {
    if (state->next == 0) {
      // The first call of the schedule past the run's start step.
      state->gap = start_step;
      while (l.StartStep() >= state->next) state->Bump(factor);
    }
    if (l.LoopStep() < state->next) return;
    state->Bump(factor);
    (*shared_fn)(l, m);
  });
  if (call_on_end) loop.OnEnd(name, priority, [shared_fn](Loop& l) { (*shared_fn)(l, l.LastMetrics()); });
}

}  // namespace kiln::train
