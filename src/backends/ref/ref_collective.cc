// Collective kernels (AllReduce, AllGather, ReduceScatter, CollectiveBroadcast). The calling
// thread's ReplicaBinding says which replica runs; its group gathers every replica's operand in
// replica order, and each replica reduces them itself in one fixed tree over replica ids (pairs
// (0,1), (2,3)... then (0,2)...), so all replicas hold bit-identical results. The cpu backend
// runs these kernels too.

#include <cstring>

#include "backends/ref/ref_kernels.h"
#include "core/check.h"
#include "kiln/compute/replicas.h"

namespace kiln::compute::ref {

namespace {

/// Folds the `replicas` arrays of `n` elements at `values` into the first, pairwise up a fixed
/// tree over replica ids.
template <typename T, typename Combine>
void TreeReduce(T* values, int64_t n, int64_t replicas, Combine combine) {
  for (int64_t step = 1; step < replicas; step *= 2) {
    for (int64_t r = 0; r + step < replicas; r += 2 * step) {
      T* a = values + r * n;
      const T* b = values + (r + step) * n;
      for (int64_t i = 0; i < n; ++i) a[i] = combine(a[i], b[i]);
    }
  }
}

template <typename T>
void Reduce(ReduceKind kind, uint8_t* bytes, int64_t n, int64_t replicas) {
  T* v = reinterpret_cast<T*>(bytes);
  if (kind == ReduceKind::Max)
    return TreeReduce(v, n, replicas, [](T a, T b) { return Store<T>(MaxOf(Load(a), Load(b))); });
  if (kind == ReduceKind::Min)
    return TreeReduce(v, n, replicas, [](T a, T b) { return Store<T>(MinOf(Load(a), Load(b))); });
  if constexpr (kIsFloat<T>) {
    // Each addition rounds once to T (exact in double for two values of T).
    TreeReduce(v, n, replicas, [](T a, T b) {
      return RoundDouble<T>(static_cast<double>(Load(a)) + static_cast<double>(Load(b)));
    });
  } else {
    TreeReduce(v, n, replicas,
               [](T a, T b) { return FromBits<T>(static_cast<Wide<T>>(ToBits(a) + ToBits(b))); });
  }
}

/// Reduces the gathered arrays in place (the result in the first).
void ReduceGathered(OpType op, DType dtype, ReduceKind kind, uint8_t* all, int64_t n, int64_t replicas) {
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T> || (std::is_integral_v<T> && !std::is_same_v<T, bool>)) {
      Reduce<T>(kind, all, n, replicas);
    } else {
      NoKernel(op, dtype);
    }
  });
}

}  // namespace

Kernel MakeCollectiveKernel(const Instruction& inst, const std::vector<Shape>& operands) {
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
  const int64_t element = n > 0 ? bytes / n : 0;
  // AllGather and ReduceScatter move blocks of `axis`: `outer` blocks of `inner` bytes per replica.
  int64_t outer = 1, inner = element;
  if (op == OpType::AllGather || op == OpType::ReduceScatter) {
    const auto& dims = x.Dimensions();
    for (int64_t a = 0; a < inst.attrs.axis; ++a) outer *= dims[static_cast<size_t>(a)];
    for (size_t a = static_cast<size_t>(inst.attrs.axis); a < dims.size(); ++a) inner *= dims[a];
  }
  const ReduceKind kind = inst.attrs.reduce_kind;
  const int64_t root = inst.attrs.index;
  return [=](Operands in, uint8_t* out) {
    ReplicaBinding* binding = ReplicaBinding::Current();
    if (binding == nullptr) {
      if (replicas != 1)
        kiln::detail::Throw(
            "{}: the program was built for {} replicas but runs outside a replicated execution (run it on "
            "every replica, as Exec::CallReplicas and Trainer::DataParallel do)",
            OpName(op), replicas);
      if (bytes > 0) std::memcpy(out, in[0], static_cast<size_t>(bytes));
      return;
    }
    ReplicaGroup& group = binding->group();
    if (group.NumReplicas() != replicas)
      kiln::detail::Throw("{}: the program was built for {} replicas but runs on a group of {}", OpName(op),
                          replicas, group.NumReplicas());
    const CollectiveCall call{op, x.dtype(), bytes, binding->NextSequence()};
    std::vector<uint8_t> all(static_cast<size_t>(bytes * replicas));
    group.Exchange(binding->device(), call, in[0], all.data());
    const int me = binding->replica();
    switch (op) {
      case OpType::AllReduce:
        ReduceGathered(op, x.dtype(), kind, all.data(), n, replicas);
        if (bytes > 0) std::memcpy(out, all.data(), static_cast<size_t>(bytes));
        return;
      case OpType::ReduceScatter: {
        ReduceGathered(op, x.dtype(), kind, all.data(), n, replicas);
        const int64_t block = inner / replicas;  // Bytes of this replica's share of each outer block.
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(out + o * block, all.data() + o * inner + me * block, static_cast<size_t>(block));
        return;
      }
      case OpType::AllGather:
        for (int64_t r = 0; r < replicas; ++r)
          for (int64_t o = 0; o < outer; ++o)
            std::memcpy(out + (o * replicas + r) * inner, all.data() + r * bytes + o * inner,
                        static_cast<size_t>(inner));
        return;
      case OpType::CollectiveBroadcast:
        if (bytes > 0) std::memcpy(out, all.data() + root * bytes, static_cast<size_t>(bytes));
        return;
      case OpType::ReplicaId:
        break;
#define KILN_LISTED_Collective
#include "kiln/compute/op_cases.inc"
        break;
    }
    NoKernel(op, x.dtype());
  };
}

}  // namespace kiln::compute::ref
