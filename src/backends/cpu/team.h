#pragma once
// A program team: the threads that run one execution of a cpu program together. The thread that
// executes the program leads; kiln's own helper threads, started the first time that thread leads
// a team and kept until it exits, wait for its jobs, spinning for a while after each before they
// sleep. A kernel that splits its work across the team (SplitAcrossTeam, a matmul's row or
// contraction blocks) posts its parts; the lead and the helpers claim them one at a time, so a
// part starts at once on a spinning helper instead of waking a sleeping OpenMP team (45-65 us
// under OMP_WAIT_POLICY=PASSIVE on a 2-core VM), and the lead never waits for a helper that is
// asleep: it runs the unclaimed parts itself. Helpers spin between executions too, so programs
// called back to back (inference at batch 1) find them awake. bench/team_bench.cc measures the
// gain; docs/performance.md has the figures.

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::compute::cpu {

class ProgramTeam {
 public:
  /// Runs body(part, size()) once for every part in [0, size()), each on whichever thread of the
  /// team claims it first (the lead included; a part's result must not depend on its thread), and
  /// returns when all have returned. The first exception a part threw is rethrown here.
  void Run(const std::function<void(int, int)>& body);

  /// Parts of a job: the threads in the team, the lead included.
  int size() const { return size_; }

  /// The team the calling thread leads (inside RunOnTeam, outside a part), else null: kernels
  /// run elsewhere split their work as they would without a team.
  static ProgramTeam* Current();

  /// Whether the calling thread is running a part of a team's job (on the lead or a helper):
  /// work split there runs in place.
  static bool InPart();

  explicit ProgramTeam(int size);
  ~ProgramTeam();
  ProgramTeam(const ProgramTeam&) = delete;
  ProgramTeam& operator=(const ProgramTeam&) = delete;

 private:
  /// A helper's loop: claims parts of each job until the team stops.
  void Serve();
  /// Claims the next part of job `epoch` into `part`; false when none is left (or a later job
  /// was posted).
  bool Claim(uint32_t epoch, int& part);
  /// Runs one claimed part, keeping the first exception.
  void RunPart(const std::function<void(int, int)>& body, int part);

  int size_ = 1;
  std::vector<std::thread> helpers_;
  /// The current job: its epoch (high 32 bits), parts (next 16) and next unclaimed part (low 16).
  std::atomic<uint64_t> state_{0};
  std::atomic<const std::function<void(int, int)>*> job_{nullptr};
  std::atomic<int> done_{0};       ///< Parts of the current job the helpers finished.
  std::atomic<uint32_t> wake_{0};  ///< Bumped to wake sleeping helpers (a new job, or Stop).
  std::atomic<int> sleepers_{0};   ///< Helpers asleep or about to be.
  std::atomic<bool> stop_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;
};

/// Runs lead() on the calling thread as the lead of its team of `threads` threads (its helpers
/// are started the first time). With one thread, or when the calling thread already leads a team
/// or runs a part (a nested program), lead() runs directly.
void RunOnTeam(int threads, const std::function<void()>& lead);

}  // namespace kiln::compute::cpu
