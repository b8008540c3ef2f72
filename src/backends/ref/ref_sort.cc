// Sorting and scan kernels: ArgSort (a stable sort of each line along the axis; NaN sorts last
// ascending and first descending; -0 and +0 are equal, so they keep their order) and CumSum
// (inclusive running sums; floats accumulate in double and round each result once, integers
// wrap). The operand is seen as [outer, n, inner] around the axis.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

struct Lines {
  int64_t outer = 1, n = 0, inner = 1;
};

Lines LinesOf(const Shape& x, int64_t axis) {
  const std::vector<int64_t>& dims = x.Dimensions();
  Lines l;
  for (int64_t a = 0; a < axis; ++a) l.outer *= dims[static_cast<size_t>(a)];
  l.n = dims[static_cast<size_t>(axis)];
  for (size_t a = static_cast<size_t>(axis) + 1; a < dims.size(); ++a) l.inner *= dims[a];
  return l;
}

template <typename T>
Kernel ArgSortKernel(Lines l, bool descending) {
  return [l, descending](Operands in, uint8_t* out) {
    const T* x = reinterpret_cast<const T*>(in[0]);
    int32_t* y = reinterpret_cast<int32_t*>(out);
    std::vector<int32_t> order(static_cast<size_t>(l.n));
    std::vector<Compute<T>> line(static_cast<size_t>(l.n));
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t base = o * l.n * l.inner + i;
        for (int64_t k = 0; k < l.n; ++k) line[static_cast<size_t>(k)] = Load(x[base + k * l.inner]);
        std::iota(order.begin(), order.end(), 0);
        // NaN is the largest value: last ascending, first descending.
        auto before = [&](int32_t a, int32_t b) {
          const auto va = line[static_cast<size_t>(a)], vb = line[static_cast<size_t>(b)];
          if constexpr (kIsFloat<T>) {
            const bool na = std::isnan(va), nb = std::isnan(vb);
            if (na || nb) return descending ? (na && !nb) : (!na && nb);
          }
          return descending ? va > vb : va < vb;
        };
        std::stable_sort(order.begin(), order.end(), before);
        for (int64_t k = 0; k < l.n; ++k) y[base + k * l.inner] = order[static_cast<size_t>(k)];
      }
    }
  };
}

template <typename T>
Kernel CumSumKernel(Lines l, bool reverse) {
  return [l, reverse](Operands in, uint8_t* out) {
    const T* x = reinterpret_cast<const T*>(in[0]);
    T* y = reinterpret_cast<T*>(out);
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t base = o * l.n * l.inner + i;
        if constexpr (kIsFloat<T>) {
          double acc = -0.0;  // The sum's identity: -0 + -0 keeps the sign of a leading -0.
          for (int64_t s = 0; s < l.n; ++s) {
            const int64_t at = base + (reverse ? l.n - 1 - s : s) * l.inner;
            acc += static_cast<double>(Load(x[at]));
            y[at] = RoundDouble<T>(acc);
          }
        } else {
          Wide<T> acc = 0;
          for (int64_t s = 0; s < l.n; ++s) {
            const int64_t at = base + (reverse ? l.n - 1 - s : s) * l.inner;
            acc = static_cast<Wide<T>>(acc + ToBits(x[at]));
            y[at] = FromBits<T>(acc);
          }
        }
      }
    }
  };
}

}  // namespace

Kernel MakeSortScanKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpType op = inst.op;
  const Shape& x = operands.at(0);
  const DType dtype = x.dtype();
  const Lines lines = LinesOf(x, inst.attrs.axis);
  const bool reverse = inst.attrs.reverse;
  return DispatchDType(dtype, [&](auto tag) -> Kernel {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      NoKernel(op, dtype);
    } else {
      if (op == OpType::ArgSort) return ArgSortKernel<T>(lines, reverse);
      if (op == OpType::CumSum) return CumSumKernel<T>(lines, reverse);
      NoKernel(op, dtype);
    }
  });
}

}  // namespace kiln::compute::ref
