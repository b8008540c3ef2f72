// The distributed runtime over MPI: joining the job, the exchange between processes that the
// replica groups use, and the host-side sums and barriers. Every call between processes first
// exchanges a fixed-size header (what is being exchanged, by whom), so processes that disagree
// stop with an error naming the rank instead of mismatching buffers; every wait polls with a
// deadline, so a process that died or hangs ends the others' wait with an error. A wait that timed
// out leaves its request in flight, writing into the caller's buffer whenever MPI progresses it, so
// the runtime refuses every later exchange (and MPI_Finalize) after one. A split AllReduce's
// gather sends no header of its own: the scatter just before it checked the call.

#include "kiln/distributed/distributed.h"

// The C API alone (Open MPI would otherwise pull in its deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "core/check.h"
#include "kiln/compute/replicas.h"

namespace kiln::distributed {

namespace {

struct Runtime {
  std::mutex mu;  // MPI calls are serialised (MPI_THREAD_SERIALIZED).
  bool initialized = false, distributed = false, finalized = false;
  std::string broken;  // Why a wait timed out; no exchange may start after one.
  int rank = 0, size = 1, local_size = 1;
};

Runtime& State() {
  static Runtime r;
  return r;
}

/// Whether an MPI launcher started this process (Open MPI, MPICH/Hydra or PMIx variables).
bool LaunchedByMpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

void Check(int code, const char* what) {
  if (code != MPI_SUCCESS) kiln::detail::Throw("distributed: {} failed: {}", what, MpiError(code));
}

/// Waits for `request` until the collective timeout; `what` names the exchange in the error.
void Wait(MPI_Request& request, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + compute::ReplicaGroup::DefaultTimeout();
  int done = 0;
  for (int spins = 0;; ++spins) {
    Check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what.c_str());
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline) {
      State().broken = fmt::format(
          "distributed: rank {} waited more than {} s for the other processes at {} (a process died, hangs "
          "or stopped calling collectives; $KILN_COLLECTIVE_TIMEOUT sets the limit)",
          State().rank, compute::ReplicaGroup::DefaultTimeout().count() / 1000.0, what);
      kiln::detail::Throw("{}", State().broken);
    }
    if (spins > 64) std::this_thread::yield();
  }
}

/// Under the runtime's lock, before an exchange: a kiln::Error once a wait has timed out.
void CheckUsable(const Runtime& rt) {
  if (!rt.broken.empty())
    kiln::detail::Throw("distributed: rank {} cannot exchange with the other processes any more: {}", rt.rank,
                        rt.broken);
}

/// The header every process sends before the data of one exchange.
struct Header {
  int64_t op = 0, dtype = 0, bytes = 0, sequence = 0;
  uint64_t program = 0;
  char what[48] = {};  // For the host-side calls (op < 0): their name.
};

std::string HeaderText(const Header& h) {
  if (h.op < 0)
    return fmt::format("{} of {} values", std::string(h.what, strnlen(h.what, sizeof h.what)), h.bytes);
  return compute::CollectiveCall{static_cast<compute::OpType>(h.op), static_cast<DType>(h.dtype), h.bytes,
                                 h.sequence, h.program}
      .ToString();
}

/// The header of one collective call of `bytes` bytes per process.
Header HeaderOf(const compute::CollectiveCall& call, int64_t bytes) {
  return Header{static_cast<int64_t>(call.op),
                static_cast<int64_t>(call.dtype),
                bytes,
                call.sequence,
                call.program,
                {}};
}

/// Byte counts for MPI (int): a kiln::Error past 2^31-1.
int Count(int64_t bytes, const Header& h) {
  if (bytes > std::numeric_limits<int>::max())
    kiln::detail::Throw("distributed: {} exchanges {} bytes per process; at most 2^31-1 are supported",
                        HeaderText(h), bytes);
  return static_cast<int>(bytes);
}

/// The header check of Exchange: every process sends `mine`; a kiln::Error unless all match.
void CheckHeaders(const Header& mine) {
  Runtime& rt = State();
  std::vector<Header> headers(static_cast<size_t>(rt.size));
  MPI_Request request;
  Check(MPI_Iallgather(&mine, sizeof(Header), MPI_BYTE, headers.data(), sizeof(Header), MPI_BYTE,
                       MPI_COMM_WORLD, &request),
        "MPI_Iallgather");
  Wait(request, HeaderText(mine));
  for (int r = 0; r < rt.size; ++r) {
    const Header& h = headers[static_cast<size_t>(r)];
    if (std::memcmp(&h, &headers[0], sizeof(Header)) != 0)
      kiln::detail::Throw("distributed: processes disagree: rank 0 runs {} but rank {} runs {}",
                          HeaderText(headers[0]), r, HeaderText(h));
  }
}

/// Gathers every process's `bytes` bytes at `local` into `all` (size × bytes), after checking
/// that every process sends the same header.
void Exchange(const Header& mine, const void* local, int64_t bytes, void* all) {
  Runtime& rt = State();
  const int count = Count(bytes, mine);
  std::lock_guard lock(rt.mu);
  CheckUsable(rt);
  CheckHeaders(mine);
  MPI_Request request;
  Check(MPI_Iallgather(local, count, MPI_BYTE, all, count, MPI_BYTE, MPI_COMM_WORLD, &request),
        "MPI_Iallgather");
  Wait(request, HeaderText(mine));
}

/// ProcessParts::scatter over MPI: one all-to-all of every process's parts.
void ScatterParts(const compute::CollectiveCall& call, const void* local, const std::vector<int64_t>& offsets,
                  void* mine) {
  Runtime& rt = State();
  const Header h = HeaderOf(call, offsets.back());
  Count(offsets.back(), h);
  std::lock_guard lock(rt.mu);
  CheckUsable(rt);
  CheckHeaders(h);
  const auto me = static_cast<size_t>(rt.rank);
  const int length = static_cast<int>(offsets[me + 1] - offsets[me]);
  std::vector<int> send(static_cast<size_t>(rt.size)), sdispl(send.size()), recv(send.size()),
      rdispl(send.size());
  for (size_t p = 0; p < send.size(); ++p) {
    // Nothing to itself: the group reads this process's own part where it is.
    send[p] = p == me ? 0 : static_cast<int>(offsets[p + 1] - offsets[p]);
    sdispl[p] = static_cast<int>(offsets[p]);
    recv[p] = p == me ? 0 : length;
    rdispl[p] = static_cast<int>(p) * length;
  }
  MPI_Request request;
  Check(MPI_Ialltoallv(local, send.data(), sdispl.data(), MPI_BYTE, mine, recv.data(), rdispl.data(),
                       MPI_BYTE, MPI_COMM_WORLD, &request),
        "MPI_Ialltoallv");
  Wait(request, HeaderText(h));
}

/// ProcessParts::gather over MPI: every process's part of `result`, in place.
void GatherParts(const compute::CollectiveCall& call, void* result, const std::vector<int64_t>& offsets) {
  Runtime& rt = State();
  const Header h = HeaderOf(call, offsets.back());
  std::lock_guard lock(rt.mu);
  CheckUsable(rt);
  std::vector<int> counts(static_cast<size_t>(rt.size)), displs(counts.size());
  for (size_t p = 0; p < counts.size(); ++p) {
    counts[p] = static_cast<int>(offsets[p + 1] - offsets[p]);
    displs[p] = static_cast<int>(offsets[p]);
  }
  MPI_Request request;
  Check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, result, counts.data(), displs.data(), MPI_BYTE,
                        MPI_COMM_WORLD, &request),
        "MPI_Iallgatherv");
  Wait(request, HeaderText(h));
}

}  // namespace

void Init(int& argc, char**& argv) {
  Runtime& rt = State();
  std::lock_guard lock(rt.mu);
  if (rt.initialized) return;
  rt.initialized = true;
  if (!LaunchedByMpi()) return;
  int provided = 0;
  Check(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED)
    kiln::detail::Throw(
        "distributed: the MPI library provides thread level {}; kiln needs MPI_THREAD_SERIALIZED", provided);
  // Errors come back as codes (turned into kiln::Error) instead of aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  rt.distributed = true;
  Check(MPI_Comm_rank(MPI_COMM_WORLD, &rt.rank), "MPI_Comm_rank");
  Check(MPI_Comm_size(MPI_COMM_WORLD, &rt.size), "MPI_Comm_size");
  MPI_Comm node;
  Check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rt.rank, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  Check(MPI_Comm_size(node, &rt.local_size), "MPI_Comm_size");
  MPI_Comm_free(&node);
}

void Finalize() {
  Runtime& rt = State();
  if (!rt.distributed || rt.finalized) return;
  {
    // After a timed-out exchange, MPI_Finalize could wait for the request still in flight.
    std::lock_guard lock(rt.mu);
    if (!rt.broken.empty()) {
      rt.finalized = true;
      return;
    }
  }
  Barrier();
  std::lock_guard lock(rt.mu);
  rt.finalized = true;
  MPI_Finalize();
}

bool IsDistributed() { return State().distributed; }
int Rank() { return State().rank; }
int WorldSize() { return State().size; }
int LocalSize() { return State().local_size; }

void AllReduceSum(std::span<double> values, const std::string& what) {
  Runtime& rt = State();
  if (rt.size == 1 || rt.finalized) return;
  Header h{-1, 0, static_cast<int64_t>(values.size()), 0, 0, {}};
  std::strncpy(h.what, what.c_str(), sizeof h.what - 1);
  std::vector<double> all(values.size() * static_cast<size_t>(rt.size));
  Exchange(h, values.data(), static_cast<int64_t>(values.size_bytes()), all.data());
  for (size_t i = 0; i < values.size(); ++i) {
    double sum = 0;
    for (int r = 0; r < rt.size; ++r) sum += all[static_cast<size_t>(r) * values.size() + i];
    values[i] = sum;
  }
}

void Barrier() {
  Runtime& rt = State();
  if (rt.size == 1 || rt.finalized) return;
  double none = 0;
  AllReduceSum(std::span<double>(&none, 1), "distributed::Barrier");
}

std::shared_ptr<compute::ReplicaGroup> NewReplicaGroup(int devices) {
  Runtime& rt = State();
  if (devices < 1) kiln::detail::Throw("distributed::NewReplicaGroup: {} devices; at least 1", devices);
  compute::ProcessExchange exchange;
  if (rt.size > 1) {
    // Every process must bring the same number of devices.
    std::vector<double> counts(static_cast<size_t>(rt.size), 0.0);
    counts[static_cast<size_t>(rt.rank)] = devices;
    AllReduceSum(counts, "NewReplicaGroup");
    for (int r = 0; r < rt.size; ++r) {
      if (counts[static_cast<size_t>(r)] != devices)
        kiln::detail::Throw("distributed::NewReplicaGroup: rank {} has {} devices but rank {} has {}",
                            rt.rank, devices, r, counts[static_cast<size_t>(r)]);
    }
    exchange = [](const compute::CollectiveCall& call, const void* local, int64_t bytes, void* all) {
      Exchange(HeaderOf(call, bytes), local, bytes, all);
    };
  }
  auto group = std::make_shared<compute::ReplicaGroup>(devices, rt.size, rt.rank, std::move(exchange));
  if (rt.size > 1) group->SetProcessParts({ScatterParts, GatherParts});
  return group;
}

}  // namespace kiln::distributed
