#pragma once
/// @file
/// Replicas: one program run once on each of several devices (of one process or of several
/// processes joined by MPI), whose collective ops (AllReduce, AllGather, ReduceScatter,
/// CollectiveBroadcast) exchange values between the runs. Replica r of a job of W processes with D
/// devices each is device r / W of process r mod W (device-major, ReplicaGroup::ReplicaOf). A
/// ReplicaGroup moves the bytes; the collective kernels reduce them, always in one fixed tree over
/// replica ids, so every replica computes bit-identical results whatever the timing or the layout
/// of devices and processes.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/compute/program.h"
#include "kiln/core/dtype.h"

namespace kiln::compute {

/// What one collective call exchanges; every replica must make the same calls in the same order.
struct CollectiveCall {
  OpType op = OpType::AllReduce;  ///< The collective.
  DType dtype = DType::Invalid;   ///< The element dtype.
  int64_t bytes = 0;              ///< Bytes each replica contributes.
  int64_t sequence = 0;           ///< Collectives this replica ran before this one in the run.
  uint64_t program = 0;           ///< The running program's ProgramFingerprint (0: not given).
  /// Same op, dtype, size and position.
  friend bool operator==(const CollectiveCall&, const CollectiveCall&) = default;
  /// "AllReduce #3 of 40 bytes of Float32 in program 0123456789abcdef".
  std::string ToString() const;
};

/// Moves every process's contribution to every process: given this process's `local` bytes (its
/// replicas' contributions, in device order), writes all processes' into `all` in rank order
/// (the group puts them in replica order).
/// Called by one thread of each process per collective; throws kiln::Error when the processes
/// disagree on `call`, when one of them fails, or on a timeout. (The distributed runtime's MPI
/// exchange; absent for a job of one process.)
using ProcessExchange =
    std::function<void(const CollectiveCall& call, const void* local, int64_t local_bytes, void* all)>;

/// The exchange between processes for a collective whose work the processes split (an AllReduce
/// in a job of one device per process, so each process reduces only its part of the elements and
/// no process receives every other's whole operand). Byte offsets split the operand: process q's
/// part is [offsets[q], offsets[q + 1]). Both are called by the one replica of each process, and
/// throw kiln::Error as ProcessExchange does.
struct ProcessParts {
  /// Sends part q of `local` to each other process q, and receives every other process's bytes
  /// of this process's part into `mine`: block p (in rank order, each as long as this process's
  /// part) from process p; this process's own block is left alone.
  std::function<void(const CollectiveCall& call, const void* local, const std::vector<int64_t>& offsets,
                     void* mine)>
      scatter;
  /// Sends this process's part of `result` (written) to every other process and receives
  /// theirs into their parts of `result`.
  std::function<void(const CollectiveCall& call, void* result, const std::vector<int64_t>& offsets)> gather;
};

/// A hash of `program`'s listing: replicas running different programs (other shapes, other
/// variables) see different fingerprints in their collective calls.
uint64_t ProgramFingerprint(const Program& program);

class ReplicaGroup;
/// Runs `run(device)` for every device 0..group.Devices()-1 at once, each on its own thread (device
/// 0 on the caller's) bound to its replica and to `program` (a ProgramFingerprint, which the
/// collectives compare between replicas); returns when all have finished. When one throws, the
/// group is aborted (so the others stop waiting for it) and the first error is rethrown.
void RunReplicas(ReplicaGroup& group, const std::function<void(int device)>& run, uint64_t program = 0);

/// What the collectives of a group cost, as seen by its device 0.
struct CollectiveStats {
  int64_t calls = 0;   ///< Collective calls.
  int64_t bytes = 0;   ///< Bytes device 0 contributed to them.
  double seconds = 0;  ///< Time spent in them, waiting for the other replicas included.
};

/// The replicas of one job as seen from one process: its devices, and how values reach the other
/// processes' replicas.
class ReplicaGroup {
 public:
  /// A group of `devices` replicas per process in a job of `processes` processes, this one being
  /// `rank`; `exchange` reaches the other processes (null when `processes` is 1). Threads waiting
  /// for the others give up with a kiln::Error after `timeout`.
  ReplicaGroup(int devices, int processes, int rank, ProcessExchange exchange,
               std::chrono::milliseconds timeout = DefaultTimeout());
  ~ReplicaGroup();
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  /// Every replica of the job: devices × processes.
  int NumReplicas() const { return devices_ * processes_; }
  /// Replicas in this process.
  int Devices() const { return devices_; }
  /// The id of this process's replica on `device`: device × processes + rank. Device-major, so
  /// that example i of a global batch lands on replica i mod NumReplicas() in every layout when
  /// each process takes every processes-th example (Dataset::Shard) and splits its batch over its
  /// devices (example j to device j mod devices): a job of W processes of D devices then computes
  /// what one process of W × D devices computes, bit for bit.
  int ReplicaOf(int device) const { return device * processes_ + rank_; }

  /// Called by the replica on `device` of this process with its `call.bytes` bytes at `data`:
  /// returns once every replica of the job made the same call, with every replica's bytes in
  /// `out` (NumReplicas() × call.bytes), in replica order. A kiln::Error when the replicas
  /// disagree on the call (naming the replica and both calls), when another replica failed
  /// (Abort), or when the others do not arrive within the timeout.
  void Exchange(int device, const CollectiveCall& call, const void* data, void* out);
  /// What a replica does with every replica's operand (pointers in replica order).
  using Reader = std::function<void(const std::vector<const uint8_t*>& all)>;
  /// Exchange without copies: once every replica of the job made the same call, runs
  /// `read(all)` with each replica's `call.bytes` bytes (the operands themselves for the devices
  /// of this process, received copies for other processes'), and returns once every replica of
  /// this process has finished reading, so no operand changes while another replica reads it.
  /// The same errors as Exchange.
  void Exchange(int device, const CollectiveCall& call, const void* data, const Reader& read);
  /// What a replica does when the replicas share the work of a collective: it computes bytes
  /// [begin, end) of the result from every replica's bytes [begin, end) (`all[r]` points at
  /// replica r's byte `begin`, in replica order) and writes them into the result of every device
  /// of this process (`results`, in device order, each pointing at its byte 0).
  using SharedReader = std::function<void(const std::vector<const uint8_t*>& all,
                                          const std::vector<uint8_t*>& results, int64_t begin, int64_t end)>;
  /// Exchange for a collective whose result is the same on every replica and whose bytes each
  /// depend on the same bytes of the operands (an elementwise AllReduce): its work is split, so
  /// each part of the result is computed once. The replicas of one process take a part each
  /// (cut at 64-byte boundaries) and write it into all their results; in a job of one device per
  /// process with SetProcessParts, each process takes a part, receiving only the others' bytes of
  /// it, and the parts are then sent to every process. Returns once `result` (this replica's
  /// result, call.bytes long) is whole. The same errors as Exchange.
  void Exchange(int device, const CollectiveCall& call, const void* data, void* result,
                const SharedReader& read);
  /// Lets the processes split the work of shared exchanges (set once, before the first
  /// collective; the distributed runtime sets MPI's).
  void SetProcessParts(ProcessParts parts);
  /// Marks the group failed: every replica waiting in Exchange, and every later call, throws a
  /// kiln::Error naming `device`'s replica and `why`. Reset() makes the group usable again.
  void Abort(int device, const std::string& why);
  /// Clears a failure, for the next replicated run (all replicas of this process have returned).
  void Reset();

  /// The collectives device 0 ran through the group since it was made or ResetStats().
  CollectiveStats Stats() const;
  /// Starts counting again.
  void ResetStats();

  /// $KILN_COLLECTIVE_TIMEOUT seconds if set, else 120 s.
  static std::chrono::milliseconds DefaultTimeout();

 private:
  friend void RunReplicas(ReplicaGroup& group, const std::function<void(int device)>& run, uint64_t program);
  struct Rendezvous;
  int devices_, processes_, rank_;
  ProcessExchange exchange_;
  ProcessParts parts_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Rendezvous> state_;
};

/// Binds the calling thread to the replica on `device` of `group` while it lives: the collective
/// ops run on this thread exchange their values through the group. Bindings do not nest.
class ReplicaBinding {
 public:
  /// Binds the calling thread to run `program` (its ProgramFingerprint, 0 if not given); a
  /// kiln::Error if it is bound already or `device` is not the group's.
  ReplicaBinding(ReplicaGroup& group, int device, uint64_t program = 0);
  /// Unbinds the thread.
  ~ReplicaBinding();
  ReplicaBinding(const ReplicaBinding&) = delete;
  ReplicaBinding& operator=(const ReplicaBinding&) = delete;

  /// The group the thread's replica belongs to.
  ReplicaGroup& group() const { return group_; }
  /// The device of this process the thread runs.
  int device() const { return device_; }
  /// The fingerprint of the program the thread runs.
  uint64_t program() const { return program_; }
  /// This replica's id in the job.
  int replica() const { return group_.ReplicaOf(device_); }
  /// The position of the next collective call in this run (counts calls).
  int64_t NextSequence() { return sequence_++; }

  /// The binding of the calling thread, or nullptr.
  static ReplicaBinding* Current();

 private:
  ReplicaGroup& group_;
  int device_;
  uint64_t program_;
  int64_t sequence_ = 0;
};

}  // namespace kiln::compute
