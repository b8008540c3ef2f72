#pragma once
/// Training curves as one self-contained HTML file (inline SVG, no network access): the train
/// metrics recorded every few steps, and a point for every evaluation (each Trainer::Eval while
/// attached, and the periodic ones asked for here). The file is rewritten atomically during
/// training, after each evaluation and at the end of each run.

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/train/loop.h"

namespace kiln::plots {

struct Options {
  /// Evaluate these datasets every `eval_every` steps (0: only when Trainer::Eval is called).
  std::vector<data::DatasetPtr> eval_datasets;
  int64_t eval_every = 0;
  /// Record the train metrics every this many steps (0: about 200 points per run).
  int64_t record_every = 0;
};

/// Attaches the plots to `loop`, writing `path` (".html").
void AttachToLoop(train::Loop& loop, const std::string& path, Options options = {});

}  // namespace kiln::plots
