// ReplicaGroup: the rendezvous where the replicas of one process meet at each collective call,
// the process exchange that joins the other processes' replicas, and the worker threads that run
// devices 1..D-1 of a replicated execution (device 0 runs on the caller's thread).

#include "kiln/compute/replicas.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "core/check.h"

namespace kiln::compute {

std::string CollectiveCall::ToString() const {
  return fmt::format("{} #{} of {} bytes of {}{}", OpName(op), sequence, bytes, dtype,
                     program != 0 ? fmt::format(" in program {:016x}", program) : std::string());
}

uint64_t ProgramFingerprint(const Program& program) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a.
  for (const char c : program.ToString()) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
  return h == 0 ? 1 : h;
}

/// One collective at a time: the replicas of this process arrive, the last one joins the other
/// processes (ProcessExchange), all read every replica's bytes (`views`), and none leaves before
/// all have read. A worker thread per device above 0 waits here for replicated runs too.
struct ReplicaGroup::Rendezvous {
  std::mutex mu;
  std::condition_variable cv;
  // The current collective.
  int arrived = 0, departed = 0;
  bool ready = false;  // `views` point at every replica's bytes.
  int64_t round = 0;   // Collectives completed (threads wait for the round they joined to finish).
  std::vector<CollectiveCall> calls;
  std::vector<const void*> data;
  std::vector<uint8_t*> results;      // Each device's result buffer (shared exchanges), else null.
  std::vector<uint8_t> local, all;    // Between processes: this process's bytes, the job's.
  std::vector<const uint8_t*> views;  // Every replica's operand, in replica order.
  std::vector<int64_t> offsets;       // Split between processes (ProcessParts): their parts.
  bool split = false;                 // The current collective's work is split between processes.
  // Replicas reading the views (and writing into every device's result) with the lock released:
  // one that fails or times out leaves only when none is, since they may touch its buffers.
  int reading = 0;
  // A failure: every waiting and later call throws it.
  bool failed = false;
  std::string error;
  int first_failed = -1;  // The device whose replica failed first (Abort), -1 if none did.
  // Worker threads for devices 1..D-1: a generation counter per run.
  std::vector<std::thread> workers;
  const std::function<void(int)>* task = nullptr;
  uint64_t task_program = 0;  // The program the task runs (each run's, not the first's).
  int64_t task_generation = 0;
  int pending = 0;
  std::vector<std::exception_ptr> errors;
  bool stopping = false;
  CollectiveStats stats;  // Device 0's calls.
  // Bumped with every notification: a waiting thread spins on it briefly before sleeping.
  std::atomic<uint64_t> changes{0};

  /// Wakes every waiting thread (the state they wait on changed under `mu`).
  void Notify() {
    changes.fetch_add(1, std::memory_order_release);
    cv.notify_all();
  }

  /// Before sleeping on the condition: releases `lock` and spins for up to about 100 us while
  /// nothing is notified, then takes it again. The other replica usually arrives within that
  /// time, and waking a sleeping thread costs tens of microseconds on a busy machine.
  void Spin(std::unique_lock<std::mutex>& lock) {
    const uint64_t seen = changes.load(std::memory_order_acquire);
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    for (int i = 1; changes.load(std::memory_order_acquire) == seen; ++i) {
      if (i % 64 == 0) {
        if (std::chrono::steady_clock::now() > until) break;
        std::this_thread::yield();
      }
    }
    lock.lock();
  }
};

std::chrono::milliseconds ReplicaGroup::DefaultTimeout() {
  if (const char* v = std::getenv("KILN_COLLECTIVE_TIMEOUT"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(s > 0) || s > 1e6)
      kiln::detail::Throw("KILN_COLLECTIVE_TIMEOUT=\"{}\" is not a number of seconds between 0 and 1e6", v);
    return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
  }
  return std::chrono::seconds(120);
}

ReplicaGroup::ReplicaGroup(int devices, int processes, int rank, ProcessExchange exchange,
                           std::chrono::milliseconds timeout)
    : devices_(devices),
      processes_(processes),
      rank_(rank),
      exchange_(std::move(exchange)),
      timeout_(timeout),
      state_(std::make_unique<Rendezvous>()) {
  if (devices < 1) kiln::detail::Throw("ReplicaGroup: {} devices per process; at least 1 is needed", devices);
  if (processes < 1 || rank < 0 || rank >= processes)
    kiln::detail::Throw("ReplicaGroup: rank {} of {} processes is not a valid rank", rank, processes);
  if (processes > 1 && !exchange_)
    kiln::detail::Throw("ReplicaGroup: {} processes but no exchange between them", processes);
  state_->calls.resize(static_cast<size_t>(devices));
  state_->data.resize(static_cast<size_t>(devices));
  state_->results.resize(static_cast<size_t>(devices));
}

ReplicaGroup::~ReplicaGroup() {
  Rendezvous& s = *state_;
  {
    std::lock_guard lock(s.mu);
    s.stopping = true;
  }
  s.Notify();
  for (std::thread& t : s.workers) t.join();
}

void ReplicaGroup::Abort(int device, const std::string& why) {
  Rendezvous& s = *state_;
  {
    std::lock_guard lock(s.mu);
    if (s.first_failed < 0) s.first_failed = device;
    if (!s.failed) {
      s.failed = true;
      s.error =
          fmt::format("replica {} (rank {}, device {}) failed: {}", ReplicaOf(device), rank_, device, why);
    }
  }
  s.Notify();
}

void ReplicaGroup::Reset() {
  Rendezvous& s = *state_;
  std::lock_guard lock(s.mu);
  s.failed = false;
  s.error.clear();
  s.first_failed = -1;
  s.arrived = s.departed = 0;
  s.ready = false;
}

CollectiveStats ReplicaGroup::Stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

void ReplicaGroup::ResetStats() {
  std::lock_guard lock(state_->mu);
  state_->stats = {};
}

void ReplicaGroup::Exchange(int device, const CollectiveCall& call, const void* data, void* out) {
  Exchange(device, call, data, [&](const std::vector<const uint8_t*>& all) {
    for (size_t r = 0; r < all.size() && call.bytes > 0; ++r)
      std::memcpy(static_cast<uint8_t*>(out) + r * static_cast<size_t>(call.bytes), all[r],
                  static_cast<size_t>(call.bytes));
  });
}

void ReplicaGroup::SetProcessParts(ProcessParts parts) { parts_ = std::move(parts); }

namespace {

/// Part k of `parts` of `bytes` bytes: [begin, end), begins at multiples of 64 bytes.
std::pair<int64_t, int64_t> PartOf(int64_t bytes, int parts, int k) {
  const int64_t per = ((bytes + parts - 1) / parts + 63) / 64 * 64;
  const int64_t begin = std::min(bytes, per * k);
  return {begin, std::min(bytes, begin + per)};
}

}  // namespace

void ReplicaGroup::Exchange(int device, const CollectiveCall& call, const void* data, const Reader& read) {
  Exchange(device, call, data, nullptr,
           [&](const std::vector<const uint8_t*>& all, const std::vector<uint8_t*>&, int64_t, int64_t) {
             read(all);
           });
}

void ReplicaGroup::Exchange(int device, const CollectiveCall& call, const void* data, void* result,
                            const SharedReader& read) {
  if (device < 0 || device >= devices_)
    kiln::detail::Throw("ReplicaGroup::Exchange: device {} of {} devices", device, devices_);
  Rendezvous& s = *state_;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout_;
  const int replica = ReplicaOf(device);
  // Marks the group failed (this replica first, unless another already failed it).
  auto fail = [&](std::string error) {
    if (s.first_failed < 0) s.first_failed = device;
    if (!s.failed) {
      s.failed = true;
      s.error = std::move(error);
    }
    s.Notify();
  };
  // Before this replica leaves with an error: the others that read the views have finished, since
  // they read its operand and write into its result.
  auto drain = [&](std::unique_lock<std::mutex>& lock) { s.cv.wait(lock, [&] { return s.reading == 0; }); };
  // Leaves with the group's error, once the others' reads are done.
  auto leave_failed = [&](std::unique_lock<std::mutex>& lock) {
    drain(lock);
    kiln::detail::Throw("{} (seen by replica {} at {})", s.error, replica, call.ToString());
  };
  auto wait = [&](std::unique_lock<std::mutex>& lock, auto done, const char* what) {
    if (!s.failed && !done()) s.Spin(lock);
    while (!s.failed && !done()) {
      if (s.cv.wait_until(lock, deadline) == std::cv_status::timeout && !s.failed && !done()) {
        std::vector<int> missing;
        for (int d = 0; d < devices_; ++d)
          if (s.data[static_cast<size_t>(d)] == nullptr) missing.push_back(ReplicaOf(d));
        const std::string error = fmt::format(
            "replica {} waited {} s {} at {}{}", replica, timeout_.count() / 1000.0, what, call.ToString(),
            missing.empty() ? std::string()
                            : fmt::format(" (replicas {} did not arrive)", fmt::join(missing, ", ")));
        fail(error);
        drain(lock);
        kiln::detail::Throw("{}", error);
      }
    }
    if (s.failed) leave_failed(lock);
  };
  // Runs `exchange` (a call between processes) with the lock released; the others wait on the
  // condition. Its failure fails the group.
  auto unlocked = [&](std::unique_lock<std::mutex>& lock, const auto& exchange) {
    lock.unlock();
    try {
      exchange();
    } catch (const std::exception& e) {
      lock.lock();
      fail(e.what());
      throw;
    }
    lock.lock();
    // A replica of this process that timed out meanwhile has left: its operand is gone.
    if (s.failed) leave_failed(lock);
  };
  std::unique_lock lock(s.mu);
  // A replica fast enough to reach its next collective waits until every replica left the last.
  wait(
      lock, [&] { return !s.ready; }, "for the previous collective to finish");
  const int64_t round = s.round;
  s.calls[static_cast<size_t>(device)] = call;
  s.data[static_cast<size_t>(device)] = data;
  s.results[static_cast<size_t>(device)] = static_cast<uint8_t*>(result);
  if (++s.arrived == devices_) {
    for (int d = 0; d < devices_; ++d) {
      if (!(s.calls[static_cast<size_t>(d)] == s.calls[0])) {
        fail(fmt::format("replicas disagree: replica {} runs {} but replica {} runs {}", ReplicaOf(0),
                         s.calls[0].ToString(), ReplicaOf(d), s.calls[static_cast<size_t>(d)].ToString()));
        kiln::detail::Throw("{}", s.error);
      }
    }
    const auto bytes = static_cast<size_t>(call.bytes);
    s.views.assign(static_cast<size_t>(NumReplicas()), nullptr);
    s.split = processes_ > 1 && devices_ == 1 && result != nullptr && parts_.scatter && parts_.gather;
    if (s.split) {
      // Each process reduces its part: it receives the others' bytes of that part alone.
      s.offsets.resize(static_cast<size_t>(processes_) + 1);
      for (int p = 0; p < processes_; ++p)
        s.offsets[static_cast<size_t>(p)] = PartOf(call.bytes, processes_, p).first;
      s.offsets.back() = call.bytes;
      const int64_t begin = s.offsets[static_cast<size_t>(rank_)];
      const auto mine = static_cast<size_t>(s.offsets[static_cast<size_t>(rank_) + 1] - begin);
      s.all.resize(mine * static_cast<size_t>(processes_));
      unlocked(lock, [&] { parts_.scatter(call, data, s.offsets, s.all.data()); });
      for (int p = 0; p < processes_; ++p)
        s.views[static_cast<size_t>(p)] = p == rank_ ? static_cast<const uint8_t*>(data) + begin
                                                     : s.all.data() + static_cast<size_t>(p) * mine;
    } else if (processes_ == 1) {
      // One process: every replica reads the others' operands where they are.
      for (int d = 0; d < devices_; ++d)
        s.views[static_cast<size_t>(d)] = static_cast<const uint8_t*>(s.data[static_cast<size_t>(d)]);
    } else {
      // One device sends its operand where it is; several are gathered into one block first.
      const void* local = s.data[0];
      if (devices_ > 1) {
        s.local.resize(bytes * static_cast<size_t>(devices_));
        for (int d = 0; d < devices_; ++d)
          if (bytes > 0)
            std::memcpy(s.local.data() + bytes * static_cast<size_t>(d), s.data[static_cast<size_t>(d)],
                        bytes);
        local = s.local.data();
      }
      s.all.resize(bytes * static_cast<size_t>(NumReplicas()));
      unlocked(lock, [&] { exchange_(call, local, static_cast<int64_t>(bytes) * devices_, s.all.data()); });
      // `all` holds rank 0's devices, then rank 1's...; replica d × processes + rank is device d
      // of that rank.
      for (int p = 0; p < processes_; ++p)
        for (int d = 0; d < devices_; ++d)
          s.views[static_cast<size_t>(d * processes_ + p)] =
              s.all.data() +
              (static_cast<size_t>(p) * static_cast<size_t>(devices_) + static_cast<size_t>(d)) * bytes;
    }
    s.ready = true;
    s.Notify();
  } else {
    wait(
        lock, [&] { return s.ready && s.round == round; }, "for the other replicas");
  }
  // Every replica reads at once; none leaves (and frees or overwrites its operand) before all read.
  std::vector<const uint8_t*> views = s.views;
  const std::vector<uint8_t*> results = s.results;
  const bool split = s.split;
  const std::vector<int64_t> offsets = split ? s.offsets : std::vector<int64_t>{};
  int64_t begin = 0, end = call.bytes;
  if (split) {
    begin = offsets[static_cast<size_t>(rank_)];
    end = offsets[static_cast<size_t>(rank_) + 1];
  } else if (result != nullptr) {
    // The devices of this process split the work; every replica's bytes are here.
    std::tie(begin, end) = PartOf(call.bytes, devices_, device);
    for (const uint8_t*& v : views) v += begin;
  }
  ++s.reading;
  lock.unlock();
  try {
    read(views, results, begin, end);
    if (split) parts_.gather(call, result, offsets);
  } catch (const std::exception& e) {
    lock.lock();
    --s.reading;  // fail() wakes any replica draining.
    fail(fmt::format("replica {} failed reading {}: {}", replica, call.ToString(), e.what()));
    drain(lock);
    throw;
  }
  lock.lock();
  if (--s.reading == 0 && s.failed) s.Notify();  // A failed replica may be draining.
  if (++s.departed == devices_) {
    s.arrived = s.departed = 0;
    s.ready = false;
    for (const void*& d : s.data) d = nullptr;
    for (uint8_t*& r : s.results) r = nullptr;
    ++s.round;
    s.Notify();
  } else {
    wait(
        lock, [&] { return s.round != round; }, "for the other replicas to read");
  }
  if (device == 0) {
    ++s.stats.calls;
    s.stats.bytes += call.bytes;
    s.stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

// ---- Bindings ------------------------------------------------------------------------------------

namespace {
thread_local ReplicaBinding* current_binding = nullptr;
}

ReplicaBinding::ReplicaBinding(ReplicaGroup& group, int device, uint64_t program)
    : group_(group), device_(device), program_(program) {
  if (current_binding != nullptr)
    kiln::detail::Throw("ReplicaBinding: this thread already runs replica {}", current_binding->replica());
  if (device < 0 || device >= group.Devices())
    kiln::detail::Throw("ReplicaBinding: device {} of a group of {} devices", device, group.Devices());
  current_binding = this;
}

ReplicaBinding::~ReplicaBinding() { current_binding = nullptr; }

ReplicaBinding* ReplicaBinding::Current() { return current_binding; }

// ---- Replicated runs -----------------------------------------------------------------------------

void RunReplicas(ReplicaGroup& group, const std::function<void(int device)>& run, uint64_t program) {
  ReplicaGroup::Rendezvous& s = *group.state_;
  const int devices = group.Devices();
  auto run_one = [&group](const std::function<void(int)>& fn, int device,
                          uint64_t fingerprint) -> std::exception_ptr {
    try {
      ReplicaBinding bind(group, device, fingerprint);
      fn(device);
      return nullptr;
    } catch (const std::exception& e) {
      group.Abort(device, e.what());
      return std::current_exception();
    }
  };
  {
    std::lock_guard lock(s.mu);
    while (static_cast<int>(s.workers.size()) < devices - 1) {
      const int device = static_cast<int>(s.workers.size()) + 1;
      s.workers.emplace_back([&s, device, run_one] {
        int64_t seen = 0;
        std::unique_lock lk(s.mu);
        while (true) {
          if (!s.stopping && s.task_generation == seen) s.Spin(lk);
          s.cv.wait(lk, [&] { return s.stopping || s.task_generation != seen; });
          if (s.stopping) return;
          seen = s.task_generation;
          const std::function<void(int)>* task = s.task;
          const uint64_t fingerprint = s.task_program;
          lk.unlock();
          std::exception_ptr err = run_one(*task, device, fingerprint);
          lk.lock();
          s.errors[static_cast<size_t>(device)] = err;
          if (--s.pending == 0) s.Notify();
        }
      });
    }
    s.task = &run;
    s.task_program = program;
    s.errors.assign(static_cast<size_t>(devices), nullptr);
    s.pending = devices - 1;
    ++s.task_generation;
  }
  s.Notify();
  std::exception_ptr first = run_one(run, 0, program);
  {
    std::unique_lock lock(s.mu);
    if (s.pending != 0) s.Spin(lock);
    s.cv.wait(lock, [&] { return s.pending == 0; });
    s.errors[0] = first;
    // The error of the replica that failed first, not the others' "replica r failed" echoes.
    if (s.first_failed >= 0) first = s.errors[static_cast<size_t>(s.first_failed)];
  }
  if (first) {
    group.Reset();
    std::rethrow_exception(first);
  }
}

}  // namespace kiln::compute
