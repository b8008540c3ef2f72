#pragma once
// A program team: the threads that run one execution of a cpu program together. The executable
// holds one OpenMP parallel region for the whole execution; the calling thread runs the steps
// and the others wait between kernels, spinning for a while before they sleep, so a kernel that
// splits its work across the team (SplitAcrossTeam, a matmul's row blocks) starts at once instead
// of waking a sleeping OpenMP team (45-65 us under OMP_WAIT_POLICY=PASSIVE on a 2-core VM).
// bench/team_bench.cc measures the gain; docs/performance.md has the figures.

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>

namespace kiln::compute::cpu {

class ProgramTeam {
 public:
  /// Runs body(id, size()) for every id of the team, id 0 on the calling thread (which must be
  /// the team's lead) and the others on the waiting threads; returns when all have returned. The
  /// first exception any part threw is rethrown here.
  void Run(const std::function<void(int, int)>& body);

  /// Threads in the team, the lead included.
  int size() const { return size_; }

  /// The team the calling thread leads (inside RunOnTeam), else null: kernels run on other
  /// threads, or outside a team, split their work as they did before.
  static ProgramTeam* Current();

 private:
  friend void RunOnTeam(int threads, const std::function<void()>& lead);
  /// A waiting thread's loop: runs each job posted by Run until Stop.
  void Serve(int id);
  /// Releases the waiting threads (the region then ends).
  void Stop();

  int size_ = 1;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint32_t> epoch_{0};  ///< Bumped for every job and for Stop.
  std::atomic<bool> stop_{false};
  std::atomic<int> pending_{0};  ///< Waiting threads still running the current job.
  std::mutex error_mu_;
  std::exception_ptr error_;
};

/// Runs lead() on the calling thread as the lead of a team of up to `threads` threads, held for
/// the whole call. With one thread, or when the calling thread already leads a team (a nested
/// program), lead() runs directly.
void RunOnTeam(int threads, const std::function<void()>& lead);

}  // namespace kiln::compute::cpu
