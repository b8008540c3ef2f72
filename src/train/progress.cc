// The training progress bar: in place on a terminal, throttled plain lines elsewhere.

#include "kiln/train/progress.h"

#include "kiln/distributed/distributed.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "core/check.h"

namespace kiln::commandline {

namespace {

using Clock = std::chrono::steady_clock;

std::string Duration(double s) {
  if (s < 60) return fmt::format("{:.1f}s", s);
  const int64_t t = static_cast<int64_t>(s);
  if (t < 3600) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
}

struct Bar {
  std::ostream* out;
  bool terminal;
  Clock::time_point start, last_print;
  int64_t examples = 0, last_pct_mark = -1;
  bool drawn = false;

  std::string Line(train::Loop& loop, const std::vector<Tensor>& metrics) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const int64_t done = loop.LoopStep() - loop.StartStep() + 1;
    const int64_t total = loop.EndStep() >= 0 ? loop.EndStep() - loop.StartStep() : -1;
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    std::string s = total > 0 ? fmt::format("step {}/{} ({:.0f}%)", loop.LoopStep() + 1, loop.EndStep(),
                                            100.0 * static_cast<double>(done) / static_cast<double>(total))
                              : fmt::format("step {}", loop.LoopStep() + 1);
    s += fmt::format(" | {:.1f} steps/s | {:.0f} ex/s | elapsed {}", rate,
                     elapsed > 0 ? static_cast<double>(examples) / elapsed : 0.0, Duration(elapsed));
    if (total > 0 && rate > 0) s += " | ETA " + Duration(static_cast<double>(total - done) / rate);
    std::vector<std::string> names = loop.trainer().TrainMetricShortNames();
    for (size_t i = 0; i < metrics.size() && i < names.size(); ++i)
      s += fmt::format(" | {}={:.4g}", names[i], metrics[i].Item<float>());
    return s;
  }
};

}  // namespace

void AttachProgressBar(train::Loop& loop, std::ostream& out, bool terminal) {
  if (distributed::Rank() != 0) return;  // A distributed job prints once, from rank 0.
  auto bar = std::make_shared<Bar>();
  bar->out = &out;
  bar->terminal = terminal;
  loop.OnStart("progress bar", 1000, [bar](train::Loop&) {
    bar->start = bar->last_print = Clock::now();
    bar->examples = 0;
    bar->last_pct_mark = -1;
    bar->drawn = false;
  });
  loop.OnStep("progress bar", 1000, [bar](train::Loop& l, const std::vector<Tensor>& m) {
    // A data-parallel job's global batch: every process's batch (the processes' are equal).
    bar->examples += l.LastBatchSize() * (l.trainer().Replicas() ? distributed::WorldSize() : 1);
    const auto now = Clock::now();
    const int64_t done = l.LoopStep() - l.StartStep() + 1;
    const int64_t total = l.EndStep() >= 0 ? l.EndStep() - l.StartStep() : -1;
    if (bar->terminal) {
      if (now - bar->last_print < std::chrono::milliseconds(100) && done != total) return;
      *bar->out << "\r\033[K" << bar->Line(l, m) << std::flush;
      bar->drawn = true;
    } else {
      const int64_t mark = total > 0 ? done * 20 / total : -1;  // every 5%
      const bool due =
          now - bar->last_print >= std::chrono::seconds(10) || (total > 0 && mark > bar->last_pct_mark);
      if (!due) return;
      bar->last_pct_mark = mark;
      *bar->out << bar->Line(l, m) << "\n" << std::flush;
    }
    bar->last_print = now;
  });
  loop.OnEnd("progress bar", 1000, [bar](train::Loop& l) {
    if (bar->terminal && bar->drawn) *bar->out << "\n" << std::flush;
    if (!bar->terminal && !l.LastMetrics().empty() && bar->last_pct_mark != 20)
      *bar->out << bar->Line(l, l.LastMetrics()) << "\n" << std::flush;
  });
}

void AttachProgressBar(train::Loop& loop) { AttachProgressBar(loop, std::cout, isatty(STDOUT_FILENO) == 1); }

}  // namespace kiln::commandline
