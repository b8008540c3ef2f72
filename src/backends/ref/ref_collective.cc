// Collective kernels (AllReduce, AllGather, ReduceScatter, CollectiveBroadcast, ReplicaId). The
// calling thread's ReplicaBinding says which replica runs; its group shows it every replica's
// operand in replica order (in place for the devices of this process), and each replica reduces
// them itself in one fixed tree over replica ids (pairs (0,1), (2,3)... then pairs of those), so
// all replicas hold bit-identical results. The cpu backend runs these kernels too.

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/ref/ref_kernels.h"
#include "core/check.h"
#include "kiln/compute/replicas.h"

namespace kiln::compute::ref {

namespace {

/// The largest power of two below n (n >= 2): where the fixed tree splits n replicas.
int64_t Split(int64_t n) {
  int64_t m = 1;
  while (m * 2 < n) m *= 2;
  return m;
}

/// out[i] = the fold of all[lo..hi)[first + i] for i < n, up the fixed tree: the first Split(n)
/// replicas, then the rest, combined (pairs (0,1), (2,3)... first, as a level-by-level fold).
/// `scratch` holds n elements per tree level below.
template <typename T, typename Combine>
void TreeFold(const std::vector<const uint8_t*>& all, int64_t lo, int64_t hi, int64_t first, int64_t n,
              T* out, T* scratch, Combine combine) {
  if (hi - lo == 1) {
    std::memcpy(out, reinterpret_cast<const T*>(all[static_cast<size_t>(lo)]) + first,
                static_cast<size_t>(n) * sizeof(T));
    return;
  }
  if (hi - lo == 2) {
    const T* a = reinterpret_cast<const T*>(all[static_cast<size_t>(lo)]) + first;
    const T* b = reinterpret_cast<const T*>(all[static_cast<size_t>(lo + 1)]) + first;
    for (int64_t i = 0; i < n; ++i) out[i] = combine(a[i], b[i]);
    return;
  }
  const int64_t mid = lo + Split(hi - lo);
  TreeFold(all, lo, mid, first, n, out, scratch + n, combine);
  TreeFold(all, mid, hi, first, n, scratch, scratch + n, combine);
  for (int64_t i = 0; i < n; ++i) out[i] = combine(out[i], scratch[i]);
}

/// Elements [first, first + n) of the reduction of every replica's array into `out`, a chunk at
/// a time (the tree's scratch stays in cache).
template <typename T, typename Combine>
void FoldAll(const std::vector<const uint8_t*>& all, int64_t first, int64_t n, T* out, Combine combine) {
  constexpr int64_t kChunk = 2048;
  const auto replicas = static_cast<int64_t>(all.size());
  int64_t depth = 0;
  for (int64_t r = replicas; r > 2; r = Split(r)) ++depth;
  std::vector<T> scratch(static_cast<size_t>(kChunk * (depth + 1)));
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t len = std::min(kChunk, n - at);
    TreeFold(all, 0, replicas, first + at, len, out + at, scratch.data(), combine);
  }
}

template <typename T>
void Reduce(ReduceKind kind, const std::vector<const uint8_t*>& all, int64_t first, int64_t n, T* out) {
  if (kind == ReduceKind::Max)
    return FoldAll(all, first, n, out, [](T a, T b) { return Store<T>(MaxOf(Load(a), Load(b))); });
  if (kind == ReduceKind::Min)
    return FoldAll(all, first, n, out, [](T a, T b) { return Store<T>(MinOf(Load(a), Load(b))); });
  if constexpr (std::is_floating_point_v<T>) {
    FoldAll(all, first, n, out, [](T a, T b) { return a + b; });  // One rounding per addition.
  } else if constexpr (kIsFloat<T>) {
    // Half types: exact in double, rounded once to T.
    FoldAll(all, first, n, out, [](T a, T b) {
      return RoundDouble<T>(static_cast<double>(Load(a)) + static_cast<double>(Load(b)));
    });
  } else {
    FoldAll(all, first, n, out,
            [](T a, T b) { return FromBits<T>(static_cast<Wide<T>>(ToBits(a) + ToBits(b))); });
  }
}

/// Elements [first, first + n) of the reduction of the replicas' arrays, into `out`.
void ReduceGathered(OpType op, DType dtype, ReduceKind kind, const std::vector<const uint8_t*>& all,
                    int64_t first, int64_t n, uint8_t* out) {
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T> || (std::is_integral_v<T> && !std::is_same_v<T, bool>)) {
      Reduce<T>(kind, all, first, n, reinterpret_cast<T*>(out));
    } else {
      NoKernel(op, dtype);
    }
  });
}

/// Elements [first, first + n) of an AllReduce whose work the replicas split (ReplicaGroup's
/// SharedReader): `all[r]` points at replica r's element `first`. Reduces a chunk at a time into
/// the first result, divides the chunk by `divisor` when that is set (Float32), and copies it into
/// the other results of this process while it is in cache.
void ReducePart(DType dtype, ReduceKind kind, const std::vector<const uint8_t*>& all,
                const std::vector<uint8_t*>& results, int64_t first, int64_t n, int64_t element,
                float divisor) {
  constexpr int64_t kChunk = 16384;  // Elements: the chunk stays in cache until it is copied.
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t len = std::min(kChunk, n - at);
    uint8_t* dst = results[0] + (first + at) * element;
    ReduceGathered(OpType::AllReduce, dtype, kind, all, at, len, dst);
    if (divisor != 0) {
      auto* f = reinterpret_cast<float*>(dst);
      for (int64_t i = 0; i < len; ++i) f[i] = f[i] / divisor;
    }
    for (size_t r = 1; r < results.size(); ++r)
      std::memcpy(results[r] + (first + at) * element, dst, static_cast<size_t>(len * element));
  }
}

}  // namespace

Kernel MakeCollectiveKernel(const Instruction& inst, const std::vector<Shape>& operands, float divisor) {
  const OpType op = inst.op;
  if (op == OpType::ReplicaId) {
    return [](Operands, uint8_t* out) {
      const ReplicaBinding* binding = ReplicaBinding::Current();
      const int32_t id = binding != nullptr ? binding->replica() : 0;
      std::memcpy(out, &id, sizeof id);
    };
  }
  const Shape x = operands.at(0);
  const int64_t replicas = inst.attrs.replicas;
  const int64_t bytes = x.ByteSize(), n = x.Size();
  const int64_t element = DTypeBits(x.dtype()) / 8;  // Collectives take no packed dtypes.
  // AllGather and ReduceScatter move blocks of `axis`: `outer` blocks of `inner` bytes per replica.
  int64_t outer = 1, inner = element;
  if (op == OpType::AllGather || op == OpType::ReduceScatter) {
    const auto& dims = x.Dimensions();
    for (int64_t a = 0; a < inst.attrs.axis; ++a) outer *= dims[static_cast<size_t>(a)];
    for (size_t a = static_cast<size_t>(inst.attrs.axis); a < dims.size(); ++a) inner *= dims[a];
  }
  const ReduceKind kind = inst.attrs.reduce_kind;
  const int64_t root = inst.attrs.index;
  if (divisor != 0 && (op != OpType::AllReduce || x.dtype() != DType::Float32 || kind != ReduceKind::Sum))
    kiln::detail::Throw("{} of {}: only a Float32 AllReduce of sums divides its result", OpName(op),
                        x.dtype());
  return [=](Operands in, uint8_t* out) {
    ReplicaBinding* binding = ReplicaBinding::Current();
    if (binding == nullptr) {
      if (replicas != 1)
        kiln::detail::Throw(
            "{}: the program was built for {} replicas but runs outside a replicated execution (run it on "
            "every replica, as Exec::CallReplicas and Trainer::DataParallel do)",
            OpName(op), replicas);
      if (bytes > 0) std::memcpy(out, in[0], static_cast<size_t>(bytes));
      if (divisor != 0)
        for (int64_t i = 0; i < n; ++i) reinterpret_cast<float*>(out)[i] /= divisor;
      return;
    }
    ReplicaGroup& group = binding->group();
    if (group.NumReplicas() != replicas)
      kiln::detail::Throw("{}: the program was built for {} replicas but runs on a group of {}", OpName(op),
                          replicas, group.NumReplicas());
    const CollectiveCall call{op, x.dtype(), bytes, binding->NextSequence(), binding->program()};
    const int me = binding->replica();
    const DType dtype = x.dtype();
    if (op == OpType::AllReduce) {
      group.Exchange(binding->device(), call, in[0], out,
                     [&](const std::vector<const uint8_t*>& all, const std::vector<uint8_t*>& results,
                         int64_t begin, int64_t end) {
                       ReducePart(dtype, kind, all, results, begin / element, (end - begin) / element,
                                  element, divisor);
                     });
      return;
    }
    group.Exchange(binding->device(), call, in[0], [&](const std::vector<const uint8_t*>& all) {
      switch (op) {
        case OpType::AllReduce:  // Shared exchange, above.
          break;
        case OpType::ReduceScatter: {
          // This replica's block of each outer slice.
          const int64_t block = inner / replicas, per = block / element;
          for (int64_t o = 0; o < outer; ++o)
            ReduceGathered(op, dtype, kind, all, (o * inner + me * block) / element, per, out + o * block);
          return;
        }
        case OpType::AllGather:
          for (int64_t r = 0; r < replicas; ++r)
            for (int64_t o = 0; o < outer; ++o)
              std::memcpy(out + (o * replicas + r) * inner, all[static_cast<size_t>(r)] + o * inner,
                          static_cast<size_t>(inner));
          return;
        case OpType::CollectiveBroadcast:
          if (bytes > 0) std::memcpy(out, all[static_cast<size_t>(root)], static_cast<size_t>(bytes));
          return;
        case OpType::ReplicaId:
          break;
#define KILN_LISTED_Collective
#include "kiln/compute/op_cases.inc"
          break;
      }
      NoKernel(op, dtype);
    });
  };
}

}  // namespace kiln::compute::ref
