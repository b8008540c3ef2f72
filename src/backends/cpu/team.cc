#include "backends/cpu/team.h"

#include <omp.h>

#include <chrono>
#include <memory>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln::compute::cpu {

namespace {

thread_local ProgramTeam* current_team = nullptr;
thread_local bool in_part = false;
/// The calling thread's teams, one per size and spin it led, kept (with their helpers) until it
/// exits.
thread_local std::vector<std::unique_ptr<ProgramTeam>> led_teams;

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

/// Marks the calling thread as running a part for the scope's length: work split inside runs in
/// place, it leads no team, and oneDNN runs on it alone.
class PartScope {
 public:
  PartScope() : team_(current_team), was_(in_part), omp_threads_(omp_get_max_threads()) {
    current_team = nullptr;
    in_part = true;
    if (omp_threads_ != 1) omp_set_num_threads(1);
  }
  ~PartScope() {
    current_team = team_;
    in_part = was_;
    if (omp_threads_ != 1) omp_set_num_threads(omp_threads_);
  }
  PartScope(const PartScope&) = delete;
  PartScope& operator=(const PartScope&) = delete;

 private:
  ProgramTeam* team_;
  bool was_;
  int omp_threads_;
};

}  // namespace

ProgramTeam* ProgramTeam::Current() { return current_team; }

bool ProgramTeam::InPart() { return in_part; }

ProgramTeam::ProgramTeam(int size, std::chrono::microseconds spin)
    : size_(size), spin_(spin), claimed_(new std::atomic<uint32_t>[static_cast<size_t>(size)]) {
  for (int part = 0; part < size_; ++part) claimed_[static_cast<size_t>(part)].store(0);
  for (int i = 1; i < size_; ++i) {
    try {
      helpers_.emplace_back([this, i] {
        // oneDNN (OpenMP runtime) would otherwise open a parallel region of its own from here.
        omp_set_num_threads(1);
        Serve(i);
      });
    } catch (const std::system_error&) {
      break;  // No more threads to be had: the lead runs the parts no helper claims.
    }
  }
}

ProgramTeam::~ProgramTeam() {
  stop_.store(true);
  wake_.fetch_add(1);
  wake_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

bool ProgramTeam::Claim(uint32_t epoch, int id, int& part) {
  for (int k = 0; k < size_; ++k) {
    const int p = (id + k) % size_;
    uint32_t free = epoch - 1;
    if (claimed_[static_cast<size_t>(p)].load(std::memory_order_relaxed) == free &&
        claimed_[static_cast<size_t>(p)].compare_exchange_strong(free, epoch, std::memory_order_acq_rel)) {
      part = p;
      return true;
    }
  }
  return false;
}

void ProgramTeam::RunPart(const std::function<void(int, int)>& body, int part) {
  const PartScope scope;
  try {
    body(part, size_);
  } catch (...) {
    const std::lock_guard<std::mutex> lock(error_mu_);
    if (!error_) error_ = std::current_exception();
  }
}

void ProgramTeam::Run(const std::function<void(int, int)>& body) {
  if (size_ <= 1 || in_part) {
    for (int part = 0; part < size_; ++part) body(part, size_);
    return;
  }
  // The helpers finished the previous job's parts before it returned: no one reads these now.
  done_.store(0, std::memory_order_relaxed);
  job_.store(&body, std::memory_order_relaxed);
  const uint32_t epoch = epoch_.load(std::memory_order_relaxed) + 1;
  epoch_.store(epoch);
  if (sleepers_.load() > 0) {
    wake_.fetch_add(1);
    wake_.notify_all();
  }
  int mine = 0;
  for (int part = 0; Claim(epoch, 0, part); ++mine) RunPart(body, part);
  // The helpers' parts are running: wait, yielding the core now and then in case a helper is
  // waiting for it (more threads than cores).
  for (int spins = 1; done_.load(std::memory_order_acquire) != size_ - mine; ++spins) {
    CpuRelax();
    if (spins % 1024 == 0) std::this_thread::yield();
  }
  std::exception_ptr error;
  {
    const std::lock_guard<std::mutex> lock(error_mu_);
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

void ProgramTeam::Serve(int id) {
  uint32_t seen = 0;  // The first job's epoch is 1.
  for (;;) {
    auto since = std::chrono::steady_clock::now();
    for (int spins = 0;;) {
      if (stop_.load(std::memory_order_relaxed)) return;
      if (epoch_.load(std::memory_order_acquire) != seen) break;
      CpuRelax();
      if (++spins % 256 != 0 || std::chrono::steady_clock::now() - since < spin_) continue;
      // Asleep until the lead posts a job (it wakes sleepers after publishing the job: either it
      // sees this thread counted here, or this thread sees its job below).
      const uint32_t wake = wake_.load();
      sleepers_.fetch_add(1);
      if (epoch_.load() == seen && !stop_.load()) wake_.wait(wake);
      sleepers_.fetch_sub(1);
      since = std::chrono::steady_clock::now();
    }
    seen = epoch_.load(std::memory_order_acquire);
    // A claimed part keeps its job from finishing, so the job read after the claim is its own.
    for (int part = 0; Claim(seen, id, part);) {
      RunPart(*job_.load(std::memory_order_acquire), part);
      done_.fetch_add(1, std::memory_order_release);
    }
  }
}

void RunOnTeam(int threads, const std::function<void()>& lead, int spin_micros) {
  if (threads <= 1 || current_team != nullptr || in_part) {
    lead();
    return;
  }
  const std::chrono::microseconds spin(spin_micros);
  ProgramTeam* team = nullptr;
  for (const auto& t : led_teams) {
    if (t->size() == threads && t->spin() == spin) team = t.get();
  }
  if (team == nullptr) {
    led_teams.push_back(std::make_unique<ProgramTeam>(threads, spin));
    team = led_teams.back().get();
  }
  struct Leading {
    explicit Leading(ProgramTeam* t) { current_team = t; }
    ~Leading() { current_team = nullptr; }
  } const leading(team);
  lead();
}

}  // namespace kiln::compute::cpu
