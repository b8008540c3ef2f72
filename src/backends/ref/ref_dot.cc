// DotGeneral: for each (batch, lhs free, rhs free) index, the sum over the contracting axes.
// Floats (half types too) accumulate in double and round once, complex numbers in
// complex<double>; integers wrap.

#include <algorithm>
#include <complex>
#include <memory>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

/// Element offsets into each operand of every index of the batch, free and contracting axis
/// groups, so that lhs[b, i, k] = lhs[lhs_batch[b] + lhs_free[i] + lhs_contracting[k]].
struct DotPlan {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_free, rhs_free, lhs_contracting, rhs_contracting;
};

/// Dimensions and strides of `axes` of `shape`.
void Group(const Shape& shape, const std::vector<int64_t>& axes, std::vector<int64_t>& dims,
           std::vector<int64_t>& strides) {
  const std::vector<int64_t> all = RowMajorStrides(shape.Dimensions());
  for (int64_t a : axes) {
    dims.push_back(shape.Dimensions()[static_cast<size_t>(a)]);
    strides.push_back(all[static_cast<size_t>(a)]);
  }
}

/// Offsets of the index box of `axes` of `shape`, in the order the axes are listed.
std::vector<int64_t> Offsets(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<int64_t> dims, strides;
  Group(shape, axes, dims, strides);
  return BoxOffsets(dims, strides);
}

/// The axes of `shape` neither batch nor contracting, ascending: the order the result lists them in.
std::vector<int64_t> FreeAxes(const Shape& shape, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t a = 0; a < shape.Rank(); ++a) {
    if (std::find(batch.begin(), batch.end(), a) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), a) == contracting.end()) {
      free.push_back(a);
    }
  }
  return free;
}

template <typename T>
Kernel Dot(std::shared_ptr<const DotPlan> plan) {
  return [plan](Operands in, uint8_t* out) {
    const T* lhs = reinterpret_cast<const T*>(in[0]);
    const T* rhs = reinterpret_cast<const T*>(in[1]);
    T* y = reinterpret_cast<T*>(out);
    const DotPlan& p = *plan;
    const size_t num_k = p.lhs_contracting.size();
    int64_t o = 0;
    for (size_t b = 0; b < p.lhs_batch.size(); ++b) {
      for (int64_t lhs_free : p.lhs_free) {
        for (int64_t rhs_free : p.rhs_free) {
          const T* l = lhs + p.lhs_batch[b] + lhs_free;
          const T* r = rhs + p.rhs_batch[b] + rhs_free;
          if constexpr (kIsComplex<T>) {
            std::complex<double> acc = 0;
            for (size_t k = 0; k < num_k; ++k)
              acc += std::complex<double>(l[p.lhs_contracting[k]]) *
                     std::complex<double>(r[p.rhs_contracting[k]]);
            y[o++] = T(acc);
          } else if constexpr (kIsFloat<T>) {
            double acc = 0;
            for (size_t k = 0; k < num_k; ++k) {
              acc += static_cast<double>(Load(l[p.lhs_contracting[k]])) *
                     static_cast<double>(Load(r[p.rhs_contracting[k]]));
            }
            y[o++] = RoundDouble<T>(acc);
          } else {
            Wide<T> acc = 0;
            for (size_t k = 0; k < num_k; ++k)
              acc += ToBits(l[p.lhs_contracting[k]]) * ToBits(r[p.rhs_contracting[k]]);
            y[o++] = FromBits<T>(acc);
          }
        }
      }
    }
  };
}

}  // namespace

Kernel MakeDotKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpAttributes& at = inst.attrs;
  const Shape &lhs = operands[0], &rhs = operands[1];
  auto plan = std::make_shared<DotPlan>();
  plan->lhs_batch = Offsets(lhs, at.lhs_batch);
  plan->rhs_batch = Offsets(rhs, at.rhs_batch);
  plan->lhs_free = Offsets(lhs, FreeAxes(lhs, at.lhs_batch, at.lhs_contracting));
  plan->rhs_free = Offsets(rhs, FreeAxes(rhs, at.rhs_batch, at.rhs_contracting));
  plan->lhs_contracting = Offsets(lhs, at.lhs_contracting);
  plan->rhs_contracting = Offsets(rhs, at.rhs_contracting);
  const DType dtype = lhs.dtype();
  if (IsComplex(dtype))
    return DispatchComplexDType(dtype, [&](auto tag) { return Dot<decltype(tag)>(plan); });
  return DispatchDType(dtype, [&](auto tag) -> Kernel {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      NoKernel(inst.op, dtype);
    } else {
      return Dot<T>(plan);
    }
  });
}

}  // namespace kiln::compute::ref
