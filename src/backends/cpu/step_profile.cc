#include "backends/cpu/step_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace kiln::compute::cpu {

StepProfile::StepProfile(std::vector<std::string> step_labels)
    : rows_(std::make_unique<Row[]>(step_labels.size())), num_rows_(step_labels.size()) {
  for (size_t i = 0; i < num_rows_; ++i) rows_[i].label = std::move(step_labels[i]);
}

std::string StepProfile::Report() const {
  const int64_t runs = executions();
  if (runs == 0) return "";
  const double total = static_cast<double>(total_ns_.load(std::memory_order_relaxed));
  std::vector<size_t> order(num_rows_);
  std::iota(order.begin(), order.end(), size_t{0});
  auto ns = [&](size_t i) { return rows_[i].ns.load(std::memory_order_relaxed); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ns(a) > ns(b); });
  std::string s = fmt::format("KILN_CPU_PROFILE: {} executions, {:.4f} ms each, {} steps\n", runs,
                              total / 1e6 / static_cast<double>(runs), num_rows_);
  s += "       ms   share  cumul  step\n";
  double cumulative = 0, in_steps = 0;
  for (size_t i : order) {
    const double t = static_cast<double>(ns(i));
    if (t == 0) continue;
    in_steps += t;
    cumulative += t;
    s += fmt::format("  {:7.4f} {:6.1f}% {:5.1f}%  {}\n", t / 1e6 / static_cast<double>(runs),
                     100 * t / total, 100 * cumulative / total, rows_[i].label);
  }
  s += fmt::format("  {:7.4f} {:6.1f}%         outside the kernels (set-up, aliases, output copies)\n",
                   (total - in_steps) / 1e6 / static_cast<double>(runs), 100 * (total - in_steps) / total);
  return s;
}

}  // namespace kiln::compute::cpu
