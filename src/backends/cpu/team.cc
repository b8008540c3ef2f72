#include "backends/cpu/team.h"

#include <omp.h>

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln::compute::cpu {

namespace {

thread_local ProgramTeam* current_team = nullptr;

/// How long a waiting thread spins for the next job before it sleeps. Kernels of a training step
/// follow each other within microseconds; a longer serial stretch (a kernel on the lead alone, a
/// gap between executions) costs the other core at most this much spinning.
constexpr std::chrono::microseconds kSpin{200};

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace

ProgramTeam* ProgramTeam::Current() { return current_team; }

void ProgramTeam::Run(const std::function<void(int, int)>& body) {
  if (size_ <= 1) {
    body(0, 1);
    return;
  }
  job_ = &body;
  pending_.store(size_ - 1, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
  std::exception_ptr lead_error;
  try {
    body(0, size_);
  } catch (...) {
    lead_error = std::current_exception();
  }
  while (pending_.load(std::memory_order_acquire) != 0) CpuRelax();
  job_ = nullptr;
  std::exception_ptr error = lead_error;
  {
    const std::lock_guard<std::mutex> lock(error_mu_);
    if (!error) error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ProgramTeam::Serve(int id) {
  uint32_t seen = 0;  // The epoch starts at 0: a job posted before this thread arrived is not missed.
  for (;;) {
    uint32_t now = epoch_.load(std::memory_order_acquire);
    auto since = std::chrono::steady_clock::now();
    for (int spins = 0; now == seen; now = epoch_.load(std::memory_order_acquire)) {
      CpuRelax();
      if (++spins % 256 != 0) continue;
      if (std::chrono::steady_clock::now() - since < kSpin) continue;
      epoch_.wait(seen, std::memory_order_acquire);
      since = std::chrono::steady_clock::now();
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    try {
      (*job_)(id, size_);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ProgramTeam::Stop() {
  stop_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
}

void RunOnTeam(int threads, const std::function<void()>& lead) {
  if (threads <= 1 || current_team != nullptr) {
    lead();
    return;
  }
  ProgramTeam team;
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    const int id = omp_get_thread_num();
    if (id == 0) {
      // The others read size_ only after the first job's (or Stop's) epoch, released below.
      team.size_ = omp_get_num_threads();
      current_team = &team;
      try {
        lead();
      } catch (...) {
        error = std::current_exception();
      }
      current_team = nullptr;
      team.Stop();
    } else {
      team.Serve(id);
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace kiln::compute::cpu
