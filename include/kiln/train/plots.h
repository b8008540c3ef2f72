#pragma once
/// @file
/// Training curves as one self-contained HTML page (Chart.js compiled into kiln and inlined into
/// the page, so it needs no network access): one chart per metric (loss, accuracy, ...) against
/// the global step, with the train metrics recorded every few steps (the raw value and its moving
/// average told apart) and a point for every evaluation (each Trainer::Eval while attached, and
/// the periodic ones asked for here). Hovering shows the step and the values; the value axes can
/// be switched to a log scale. The file is rewritten atomically while training runs (every few
/// seconds, after each evaluation and at the end of each run); while a run is going the page
/// reloads itself every `refresh_seconds`, and the page written at the end does not.

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/train/loop.h"

namespace kiln::plots {

/// What the plots record and how the page looks.
struct Options {
  /// Evaluate these datasets every `eval_every` steps (0: only when Trainer::Eval is called).
  std::vector<data::DatasetPtr> eval_datasets;
  /// The period of those evaluations, in steps.
  int64_t eval_every = 0;
  /// Record the train metrics every this many steps (0: about 200 points per run).
  int64_t record_every = 0;
  /// The page's heading and window title, e.g. the model or run name (empty: "Training").
  std::string title;
  /// While a run is going, the page reloads itself every this many seconds (0: never).
  int refresh_seconds = 10;
};

/// Attaches the plots to `loop`, writing `path` (".html").
void AttachToLoop(train::Loop& loop, const std::string& path, Options options = {});

}  // namespace kiln::plots
