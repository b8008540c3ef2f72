#pragma once
// Per-step timing of a cpu executable ($KILN_CPU_PROFILE=1): each kernel step's wall time is
// summed over the executions, and the executable prints the table when it is destroyed.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::compute::cpu {

class StepProfile {
 public:
  /// One row per step: what the table calls it ("%12 dnnl.matmul[...] (Float32)[32, 40]").
  explicit StepProfile(std::vector<std::string> step_labels);
  void AddStep(size_t step, int64_t ns) { rows_[step].ns.fetch_add(ns, std::memory_order_relaxed); }
  void AddExecution(int64_t ns) {
    executions_.fetch_add(1, std::memory_order_relaxed);
    total_ns_.fetch_add(ns, std::memory_order_relaxed);
  }
  int64_t executions() const { return executions_.load(std::memory_order_relaxed); }
  /// The steps by time, slowest first: milliseconds per execution, share of the execution time,
  /// cumulative share; then the time outside the kernels. Empty before the first execution.
  std::string Report() const;

 private:
  struct Row {
    std::string label;
    std::atomic<int64_t> ns{0};
  };
  std::unique_ptr<Row[]> rows_;
  size_t num_rows_;
  std::atomic<int64_t> executions_{0}, total_ns_{0};
};

}  // namespace kiln::compute::cpu
