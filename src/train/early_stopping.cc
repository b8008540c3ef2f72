// train::EarlyStopping: periodic evaluations, patience, and the best variables kept and restored.

#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/check.h"
#include "kiln/model/checkpoint.h"
#include "kiln/train/loop.h"

namespace kiln::train {

namespace {

struct Options {
  data::DatasetPtr eval;
  int64_t eval_every = 100;
  int metric = 0, patience = 5;
  bool maximize = false, restore_best = true;
  double min_delta = 0;
  std::string best_dir;
};

struct Watcher {
  Options options;
  std::shared_ptr<EarlyStoppingState> state = std::make_shared<EarlyStoppingState>();
  std::map<std::string, Tensor> best_values;  // In memory (best_dir empty): path -> value.
  std::optional<checkpoint::Handler> best_ckpt;
  bool have_best = false;

  void Start() {
    *state = EarlyStoppingState{};
    have_best = false;
    best_values.clear();
  }

  void Keep(const model::Store& store) {
    if (options.best_dir.empty()) {
      best_values.clear();
      for (const model::Variable& v : store.Variables()) {
        if (v.Path() == store.GlobalStep().Path() || !v.Value().Ok()) continue;
        best_values[v.Path()] = v.Value().Clone();
      }
    } else {
      if (!best_ckpt)
        best_ckpt.emplace(checkpoint::Build(store)
                              .Dir(options.best_dir)
                              .Keep(1)
                              .ExcludeVars(store.GlobalStep().Path())
                              .Done());
      best_ckpt->Save();
    }
    have_best = true;
  }

  void Restore(const model::Store& store) {
    if (!have_best || !options.restore_best) return;
    if (options.best_dir.empty()) {
      for (const auto& [path, value] : best_values) store.GetVariable(path).SetValue(value.Clone());
    } else {
      best_ckpt->Load();
    }
  }

  void Step(Loop& loop) {
    if ((loop.LoopStep() + 1) % options.eval_every != 0) return;
    const std::vector<Tensor> r = loop.trainer().Eval(options.eval);
    if (options.metric >= static_cast<int>(r.size())) {
      kiln::detail::Throw("EarlyStopping: metric {} is not one of the {} values Eval returns (0: the loss)",
                          options.metric, r.size());
    }
    const double v = r[static_cast<size_t>(options.metric)].Item<float>();
    EarlyStoppingState& s = *state;
    ++s.evaluations;
    s.values.push_back(v);
    const bool improved =
        std::isfinite(v) && (s.best_step < 0 || (options.maximize ? v > s.best + options.min_delta
                                                                  : v < s.best - options.min_delta));
    if (improved) {
      s.best = v;
      s.best_step = loop.LoopStep() + 1;
      s.since_best = 0;
      Keep(loop.trainer().store());
    } else if (++s.since_best >= options.patience) {
      s.stopped = true;
      loop.Stop();
    }
  }
};

}  // namespace

EarlyStoppingBuilder& EarlyStoppingBuilder::EvalEvery(int64_t steps) {
  every_ = steps;
  return *this;
}
EarlyStoppingBuilder& EarlyStoppingBuilder::Metric(int index) {
  metric_ = index;
  return *this;
}
EarlyStoppingBuilder& EarlyStoppingBuilder::Maximize(bool maximize) {
  maximize_ = maximize;
  return *this;
}
EarlyStoppingBuilder& EarlyStoppingBuilder::Patience(int evaluations) {
  patience_ = evaluations;
  return *this;
}
EarlyStoppingBuilder& EarlyStoppingBuilder::MinDelta(double delta) {
  min_delta_ = delta;
  return *this;
}
EarlyStoppingBuilder& EarlyStoppingBuilder::RestoreBest(bool restore) {
  restore_ = restore;
  return *this;
}
EarlyStoppingBuilder& EarlyStoppingBuilder::BestDir(std::string dir) {
  best_dir_ = std::move(dir);
  return *this;
}
EarlyStoppingBuilder& EarlyStoppingBuilder::Priority(int priority) {
  priority_ = priority;
  return *this;
}

std::shared_ptr<const EarlyStoppingState> EarlyStoppingBuilder::Done() {
  if (!eval_) kiln::detail::Throw("EarlyStopping: no evaluation dataset");
  if (eval_->IsInfinite())
    kiln::detail::Throw("EarlyStopping: evaluation dataset \"{}\" is infinite", eval_->Name());
  if (every_ < 1 || patience_ < 1 || metric_ < 0) {
    kiln::detail::Throw(
        "EarlyStopping: EvalEvery {} and Patience {} must be at least 1, Metric {} at least 0", every_,
        patience_, metric_);
  }
  if (!(min_delta_ >= 0)) kiln::detail::Throw("EarlyStopping: MinDelta {} is negative", min_delta_);
  auto w = std::make_shared<Watcher>();
  w->options = Options{eval_, every_, metric_, patience_, maximize_, restore_, min_delta_, best_dir_};
  loop_.OnStart("early stopping", priority_, [w](Loop&) { w->Start(); });
  loop_.OnStep("early stopping", priority_, [w](Loop& l, const std::vector<Tensor>&) { w->Step(l); });
  loop_.OnEnd("early stopping", priority_, [w](Loop& l) { w->Restore(l.trainer().store()); });
  return w->state;
}

}  // namespace kiln::train
