#pragma once
// A program team: the threads that run one execution of a cpu program together. The thread that
// executes the program leads; kiln's own helper threads, started the first time that thread leads
// a team and kept until it exits, wait for its jobs, spinning for a while after each before they
// sleep. A kernel that splits its work across the team (SplitAcrossTeam, a matmul's row or
// contraction blocks) posts its parts; the lead and the helpers claim them one at a time, each
// its own part first (the rows it had in the kernel before are in its core's cache), so a
// part starts at once on a spinning helper instead of waking a sleeping OpenMP team (45-65 us
// under OMP_WAIT_POLICY=PASSIVE on a 2-core VM), and the lead never waits for a helper that is
// asleep: it runs the unclaimed parts itself. Helpers spin between executions too, so programs
// called back to back (inference at batch 1) find them awake. bench/team_bench.cc measures the
// gain; docs/performance.md has the figures.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::compute::cpu {

/// How long a helper spins for the next job before it sleeps, unless the backend's `team_spin`
/// option says otherwise. Kernels of a training step follow each other within microseconds, and
/// so do executions called back to back; a longer gap costs the helper's core at most this much
/// spinning.
inline constexpr int kDefaultTeamSpinMicros = 200;
/// The longest `team_spin` the backend accepts (one second).
inline constexpr int kMaxTeamSpinMicros = 1000000;

class ProgramTeam {
 public:
  /// Runs body(part, size()) once for every part in [0, size()), each on whichever thread of the
  /// team claims it first (the lead included; a part's result must not depend on its thread), and
  /// returns when all have returned. The first exception a part threw is rethrown here.
  void Run(const std::function<void(int, int)>& body);

  /// Parts of a job: the threads in the team, the lead included.
  int size() const { return size_; }
  /// How long the helpers spin after a job before they sleep.
  std::chrono::microseconds spin() const { return spin_; }

  /// The team the calling thread leads (inside RunOnTeam, outside a part), else null: kernels
  /// run elsewhere split their work as they would without a team.
  static ProgramTeam* Current();

  /// Whether the calling thread is running a part of a team's job (on the lead or a helper):
  /// work split there runs in place.
  static bool InPart();

  /// `size` threads (size - 1 helpers), whose helpers spin for `spin` after each job.
  explicit ProgramTeam(int size,
                       std::chrono::microseconds spin = std::chrono::microseconds(kDefaultTeamSpinMicros));
  ~ProgramTeam();
  ProgramTeam(const ProgramTeam&) = delete;
  ProgramTeam& operator=(const ProgramTeam&) = delete;

 private:
  /// Helper `id`'s loop: claims parts of each job until the team stops.
  void Serve(int id);
  /// Claims a part of job `epoch` for thread `id`: its own part (id) if still free, else the
  /// next free one after it, so a thread keeps the same rows from kernel to kernel where it can
  /// (they are in its core's cache); false when none is left.
  bool Claim(uint32_t epoch, int id, int& part);
  /// Runs one claimed part, keeping the first exception.
  void RunPart(const std::function<void(int, int)>& body, int part);

  int size_ = 1;
  std::chrono::microseconds spin_;
  std::vector<std::thread> helpers_;
  std::atomic<uint32_t> epoch_{0};  ///< The current job's number (the first is 1).
  /// Per part, the job that claimed it last: a part of job E is free while it holds E - 1.
  std::unique_ptr<std::atomic<uint32_t>[]> claimed_;
  std::atomic<const std::function<void(int, int)>*> job_{nullptr};
  std::atomic<int> done_{0};       ///< Parts of the current job the helpers finished.
  std::atomic<uint32_t> wake_{0};  ///< Bumped to wake sleeping helpers (a new job, or Stop).
  std::atomic<int> sleepers_{0};   ///< Helpers asleep or about to be.
  std::atomic<bool> stop_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;
};

/// Runs lead() on the calling thread as the lead of its team of `threads` threads whose helpers
/// spin for `spin_micros` after each job (started the first time the thread leads a team of that
/// size and spin). With one thread, or when the calling thread already leads a team or runs a
/// part (a nested program), lead() runs directly.
void RunOnTeam(int threads, const std::function<void()>& lead, int spin_micros = kDefaultTeamSpinMicros);

}  // namespace kiln::compute::cpu
