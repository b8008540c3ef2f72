// Reduction kernels (Reduce* over axes, ArgMax/ArgMin along an axis). Floats accumulate in
// double and round once to the dtype; integers accumulate in wrapping unsigned arithmetic.

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

/// The operand's axes split into kept ones (the result's, in order) and reduced ones.
struct ReducePlan {
  std::vector<int64_t> kept_dims, kept_strides, reduced_dims, reduced_strides;
  int64_t out_size = 0, reduced_size = 0;
};

ReducePlan MakePlan(const Shape& operand, const std::vector<int64_t>& axes) {
  ReducePlan plan;
  const std::vector<int64_t>& dims = operand.Dimensions();
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  for (size_t a = 0; a < dims.size(); ++a) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(a)) != axes.end();
    (reduced ? plan.reduced_dims : plan.kept_dims).push_back(dims[a]);
    (reduced ? plan.reduced_strides : plan.kept_strides).push_back(strides[a]);
  }
  plan.out_size = NumElements(plan.kept_dims);
  plan.reduced_size = NumElements(plan.reduced_dims);
  return plan;
}

/// For each result element (row-major): acc = init, acc = combine(acc, x) over the reduced
/// elements in row-major order, result = finish(acc). An empty reduction gives finish(init).
template <typename T, typename R, typename Acc, typename Combine, typename Finish>
Kernel ReduceWith(std::shared_ptr<const ReducePlan> plan, Acc init, Combine combine, Finish finish) {
  return [plan, init, combine, finish](Operands in, uint8_t* out) {
    const T* x = reinterpret_cast<const T*>(in[0]);
    R* y = reinterpret_cast<R*>(out);
    IndexWalk outer(plan->kept_dims, plan->kept_strides);
    IndexWalk inner(plan->reduced_dims, plan->reduced_strides);
    for (int64_t o = 0; o < plan->out_size; ++o, outer.Next()) {
      Acc acc = init;
      inner.Reset(outer.a());
      for (int64_t r = 0; r < plan->reduced_size; ++r, inner.Next()) acc = combine(acc, x[inner.a()]);
      y[o] = finish(acc);
    }
  };
}

template <typename T>
Kernel FloatReduce(OpType op, DType dtype, std::shared_ptr<const ReducePlan> plan) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto load = [](T x) { return static_cast<double>(Load(x)); };
  auto finish = [](double acc) { return RoundDouble<T>(acc); };
  switch (op) {
    case OpType::ReduceSum:
      return ReduceWith<T, T>(
          plan, 0.0, [load](double acc, T x) { return acc + load(x); }, finish);
    case OpType::ReduceProduct:
      return ReduceWith<T, T>(
          plan, 1.0, [load](double acc, T x) { return acc * load(x); }, finish);
    case OpType::ReduceMax:
      // NaN propagates (MaxOf keeps a NaN accumulator).
      return ReduceWith<T, T>(
          plan, -kInf,
          [load](double acc, T x) {
            const double v = load(x);
            return MaxOf(acc, v);
          },
          finish);
    case OpType::ReduceMin:
      return ReduceWith<T, T>(
          plan, kInf,
          [load](double acc, T x) {
            const double v = load(x);
            return MinOf(acc, v);
          },
          finish);
    case OpType::ReduceLogicalAnd:
    case OpType::ReduceLogicalOr:
    case OpType::ReduceLogicalXor:
    case OpType::ReduceBitwiseAnd:
    case OpType::ReduceBitwiseOr:
    case OpType::ReduceBitwiseXor:
#define KILN_LISTED_Reduce
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, dtype);
}

template <typename T>
Kernel IntReduce(OpType op, DType dtype, std::shared_ptr<const ReducePlan> plan) {
  using W = Wide<T>;
  auto to_t = [](W acc) { return FromBits<T>(acc); };
  auto same = [](T acc) { return acc; };
  switch (op) {
    case OpType::ReduceSum:
      return ReduceWith<T, T>(
          plan, W(0), [](W acc, T x) { return W(acc + ToBits(x)); }, to_t);
    case OpType::ReduceProduct:
      return ReduceWith<T, T>(
          plan, W(1), [](W acc, T x) { return W(acc * ToBits(x)); }, to_t);
    case OpType::ReduceMax:
      return ReduceWith<T, T>(
          plan, std::numeric_limits<T>::lowest(), [](T acc, T x) { return MaxOf(acc, x); }, same);
    case OpType::ReduceMin:
      return ReduceWith<T, T>(
          plan, std::numeric_limits<T>::max(), [](T acc, T x) { return MinOf(acc, x); }, same);
    case OpType::ReduceBitwiseAnd:
      return ReduceWith<T, T>(
          plan, W(~W(0)), [](W acc, T x) { return W(acc & ToBits(x)); }, to_t);
    case OpType::ReduceBitwiseOr:
      return ReduceWith<T, T>(
          plan, W(0), [](W acc, T x) { return W(acc | ToBits(x)); }, to_t);
    case OpType::ReduceBitwiseXor:
      return ReduceWith<T, T>(
          plan, W(0), [](W acc, T x) { return W(acc ^ ToBits(x)); }, to_t);
    case OpType::ReduceLogicalAnd:
    case OpType::ReduceLogicalOr:
    case OpType::ReduceLogicalXor:
#define KILN_LISTED_Reduce
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, dtype);
}

Kernel BoolReduce(OpType op, std::shared_ptr<const ReducePlan> plan) {
  auto finish = [](bool acc) { return static_cast<uint8_t>(acc); };
  switch (op) {
    case OpType::ReduceLogicalAnd:
      return ReduceWith<uint8_t, uint8_t>(
          plan, true, [](bool acc, uint8_t x) { return acc && x != 0; }, finish);
    case OpType::ReduceLogicalOr:
      return ReduceWith<uint8_t, uint8_t>(
          plan, false, [](bool acc, uint8_t x) { return acc || x != 0; }, finish);
    case OpType::ReduceLogicalXor:
      return ReduceWith<uint8_t, uint8_t>(
          plan, false, [](bool acc, uint8_t x) { return acc != (x != 0); }, finish);
    case OpType::ReduceSum:
    case OpType::ReduceProduct:
    case OpType::ReduceMax:
    case OpType::ReduceMin:
    case OpType::ReduceBitwiseAnd:
    case OpType::ReduceBitwiseOr:
    case OpType::ReduceBitwiseXor:
#define KILN_LISTED_Reduce
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, DType::Bool);
}

/// ArgMax/ArgMin along one axis: the operand is [outer, dim, inner], the result [outer, inner].
/// The first index wins ties; the first NaN wins outright (NaN is both the max and the min).
template <typename T, typename I>
Kernel ArgReduce(bool is_max, int64_t outer, int64_t dim, int64_t inner) {
  return [is_max, outer, dim, inner](Operands in, uint8_t* out) {
    const T* x = reinterpret_cast<const T*>(in[0]);
    I* y = reinterpret_cast<I*>(out);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best_index = 0;  // An empty axis gives index 0 (and its operand may have no buffer).
        if (dim > 0) {
          const T* line = x + o * dim * inner + i;
          auto best = Load(line[0]);
          for (int64_t k = 1; k < dim; ++k) {
            if constexpr (kIsFloat<T>) {
              if (std::isnan(best)) break;
            }
            const auto v = Load(line[k * inner]);
            bool better = is_max ? v > best : v < best;
            if constexpr (kIsFloat<T>) better = better || std::isnan(v);
            if (better) {
              best = v;
              best_index = k;
            }
          }
        }
        y[o * inner + i] = static_cast<I>(best_index);  // Wraps if the index dtype is too narrow.
      }
    }
  };
}

}  // namespace

Kernel MakeReduceKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpType op = inst.op;
  const Shape& x = operands[0];
  const DType dtype = x.dtype();
  if (op == OpType::ArgMax || op == OpType::ArgMin) {
    const auto& dims = x.Dimensions();
    const auto axis = static_cast<size_t>(inst.attrs.axis);
    const int64_t outer = NumElements(std::vector<int64_t>(dims.begin(), dims.begin() + inst.attrs.axis));
    const int64_t inner = NumElements(std::vector<int64_t>(dims.begin() + inst.attrs.axis + 1, dims.end()));
    const bool is_max = op == OpType::ArgMax;
    return DispatchDType(dtype, [&](auto tag) -> Kernel {
      using T = decltype(tag);
      return DispatchDType(inst.attrs.dtype, [&](auto index_tag) -> Kernel {
        using I = decltype(index_tag);
        if constexpr (std::is_same_v<T, bool> || !std::is_integral_v<I> || std::is_same_v<I, bool>) {
          NoKernel(op, dtype);
        } else {
          return ArgReduce<T, I>(is_max, outer, dims[axis], inner);
        }
      });
    });
  }
  auto plan = std::make_shared<const ReducePlan>(MakePlan(x, inst.attrs.axes));
  if (dtype == DType::Bool) return BoolReduce(op, plan);
  if (IsComplex(dtype)) {
    // Sums and products accumulate in complex<double> and round once.
    return DispatchComplexDType(dtype, [&](auto tag) -> Kernel {
      using T = decltype(tag);
      using A = std::complex<double>;
      auto finish = [](A acc) { return T(acc); };
      if (op == OpType::ReduceSum)
        return ReduceWith<T, T>(
            plan, A(0.0), [](A acc, T v) { return acc + A(v); }, finish);
      if (op == OpType::ReduceProduct)
        return ReduceWith<T, T>(
            plan, A(1.0), [](A acc, T v) { return acc * A(v); }, finish);
      NoKernel(op, dtype);
    });
  }
  return DispatchDType(dtype, [&](auto tag) -> Kernel {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      return FloatReduce<T>(op, dtype, plan);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return IntReduce<T>(op, dtype, plan);
    } else {
      NoKernel(op, dtype);
    }
  });
}

}  // namespace kiln::compute::ref
