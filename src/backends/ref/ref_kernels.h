#pragma once
// The reference interpreter's kernels: the compiled form of one instruction, the factories of
// each op family (ref_*.cc), and the scalar rules and index walks the families share.

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "backends/common/scalar_math.h"
#include "kiln/compute/fwd.h"
#include "kiln/compute/program.h"
#include "kiln/core/dtype.h"
#include "kiln/core/half.h"
#include "kiln/core/shape.h"

namespace kiln::compute::ref {

/// The operands' bytes, in operand order.
using Operands = std::span<const uint8_t* const>;

/// One compiled instruction: reads its operands' bytes and writes its result's bytes. Built
/// once at compile time with everything precomputed (dtype dispatch, strides); holds no state
/// that changes between calls, so an executable may run from several threads at once.
/// Elementwise kernels tolerate `result` being one of the operands (in-place execution).
using Kernel = std::function<void(Operands operands, uint8_t* result)>;

/// The kernel of any non-tuple instruction (empty for Parameter and GetTupleElement, which the
/// executable handles), dispatching to the family factories below.
Kernel MakeKernel(const Instruction& inst, const std::vector<Shape>& operands);

// ---- Op families (operand shapes in operand order) ------------------------------------------

/// Unary, UnaryPredicate (ref_unary.cc).
Kernel MakeUnaryKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// Binary, Compare, Select (ref_binary.cc).
Kernel MakeBinaryKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// Reduce, ArgReduce (ref_reduce.cc).
Kernel MakeReduceKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// Movement ops and Bitcast (ref_movement.cc).
Kernel MakeMovementKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// ConvertDType, packed types included, and the leaves Constant and Iota (ref_convert.cc).
Kernel MakeConvertKernel(const Instruction& inst, const std::vector<Shape>& operands);
Kernel MakeLeafKernel(const Instruction& inst);
/// DotGeneral (ref_dot.cc).
Kernel MakeDotKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// ConvGeneral (ref_conv.cc).
Kernel MakeConvKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// ReduceWindow, SelectAndScatter (ref_window.cc).
Kernel MakeWindowKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// Gather, Scatter, DynamicSlice, DynamicUpdateSlice (ref_indexing.cc).
Kernel MakeIndexingKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// ArgSort, CumSum (ref_sort.cc).
Kernel MakeSortScanKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// Complex, Real, Imag, Conj, Fft (ref_complex.cc).
Kernel MakeComplexKernel(const Instruction& inst, const std::vector<Shape>& operands);
/// AllReduce, AllGather, ReduceScatter, CollectiveBroadcast (ref_collective.cc): exchange through
/// the calling thread's ReplicaBinding; a program of one replica runs them as copies without one.
/// The replicas of one process share an AllReduce's work: each reduces a part of the elements
/// and writes it into every one's result. With `divisor` (a Float32 AllReduce of more than one
/// replica, the cpu compiler's mean), the sums are divided by it before they are written, as
/// Div(AllReduce(x), divisor) would divide them.
Kernel MakeCollectiveKernel(const Instruction& inst, const std::vector<Shape>& operands, float divisor = 0);
/// The elementwise Unary, Binary and Compare ops on complex operands (ref_complex.cc).
Kernel MakeComplexElementwiseKernel(const Instruction& inst, const std::vector<Shape>& operands);

class RefBackend;
/// A compiled tuple op (While, If, OptimizationBarrier; ref_control.cc): the operands' buffers in,
/// the results' buffers out, never aliasing an operand. Sub-programs are compiled once, as ref
/// executables of their own, when the kernel is made.
using TupleKernel = std::function<std::vector<BufferPtr>(const std::vector<BufferPtr>& operands, int device)>;
TupleKernel MakeControlKernel(RefBackend* backend, const Instruction& inst);

// ---- Elementwise loops (the unary, binary and complex families) ----------------------------

/// y[i] = f(x[i]) over n elements, T in and R out. `f` is a template parameter, so the loop has
/// no indirect call.
template <typename T, typename R, typename F>
Kernel Map(int64_t n, F f) {
  return [n, f](Operands in, uint8_t* out) {
    const T* x = reinterpret_cast<const T*>(in[0]);
    R* y = reinterpret_cast<R*>(out);
    for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
  };
}

/// y[i] = f(a[i], b[i]) over n elements, T in and R out.
template <typename T, typename R, typename F>
Kernel Zip(int64_t n, F f) {
  return [n, f](Operands in, uint8_t* out) {
    const T* a = reinterpret_cast<const T*>(in[0]);
    const T* b = reinterpret_cast<const T*>(in[1]);
    R* y = reinterpret_cast<R*>(out);
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  };
}

/// Throws kiln::Error: the interpreter has no kernel for `op` on `dtype` (the shape rules
/// should have rejected it).
[[noreturn]] void NoKernel(OpType op, DType dtype);

// ---- Window walks (ref_window.cc), shared by ReduceWindow, SelectAndScatter and ConvGeneral ----

/// One axis of a window walk: the operand axis of size `size` and element stride `in_stride`,
/// scanned by `window` taps (tap stride `tap_stride` in a second tensor, the kernel for
/// ConvGeneral) for `out` positions.
struct WindowAxis {
  int64_t size = 0, in_stride = 0, out = 0, window = 0, tap_stride = 0, stride = 1, pad_low = 0,
          base_dilation = 1, window_dilation = 1;
};

/// The taps of every window, row-major over the windows (output positions): window w's taps are
/// [start[w], start[w + 1]) in `in` (operand offsets) and `tap` (tap offsets). Taps falling in
/// padding or in a base-dilation hole are left out. Shared with ref_conv.cc.
struct WindowTaps {
  std::vector<int64_t> start, in, tap;
};

/// Builds the taps of every window.
WindowTaps MakeWindowTaps(const std::vector<WindowAxis>& axes);

/// The window axes of a ReduceWindow or SelectAndScatter instruction: its operand's dims and
/// row-major strides, the windows' count (the result's dims, or the source's for
/// SelectAndScatter), window, strides, low padding and (ReduceWindow only) dilations.
std::vector<WindowAxis> WindowAxesOf(const Instruction& inst, const std::vector<Shape>& operands);

// ---- Element types -------------------------------------------------------------------------
// Bool elements are bytes (read as != 0, written as 0 or 1): kernels use uint8_t for them, so
// that a stray byte value is never loaded as a C++ bool.

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
/// Float types: float16, bfloat16, float, double.
template <typename T>
inline constexpr bool kIsFloat = kIsHalf<T> || std::is_floating_point_v<T>;

/// Complex types: std::complex<float>, std::complex<double>.
template <typename T>
inline constexpr bool kIsComplex =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

/// A 128-bit element (Complex128) moved as bytes by the kernels that only copy elements.
struct Bits128 {
  uint64_t lo, hi;
};

/// The type an element is computed in: half types compute in float (rounded back after each op).
template <typename T>
using Compute = std::conditional_t<kIsHalf<T>, float, T>;

template <typename T>
Compute<T> Load(T x) {
  if constexpr (kIsHalf<T>) {
    return static_cast<float>(x);
  } else {
    return x;
  }
}

template <typename T>
T Store(Compute<T> x) {
  if constexpr (kIsHalf<T>) {
    return T(x);  // Rounds to nearest even.
  } else {
    return x;
  }
}

/// The unsigned type integer arithmetic on T wraps in: at least `unsigned`, because narrower
/// unsigned types promote to (signed) int, where 65535 * 65535 would overflow.
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

/// The accumulator type of sums (windows, convolutions): double for floats, wrapping unsigned
/// for integers.
template <typename T, bool = kIsFloat<T>>
struct AccOf {
  using type = double;
};
template <typename T>
struct AccOf<T, false> {
  using type = Wide<T>;
};

/// The two's complement bits of `x`, widened.
template <typename T>
Wide<T> ToBits(T x) {
  return static_cast<Wide<T>>(static_cast<std::make_unsigned_t<T>>(x));
}
/// The T whose bits are the low bits of `w` (modular, well defined in C++20).
template <typename T>
T FromBits(Wide<T> w) {
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(w));
}

/// Max and Min propagate NaN; between zeros Max prefers +0 and Min -0 (so both commute).
using common::MaxOf;
using common::MinOf;

// ---- Scalar conversions (ConvertDType's rules; Iota and the accumulators use them too) -------

/// `d` rounded once to the float type T. For half types a plain double -> float -> half would
/// round twice (wrong near ties): rounding to float "to odd" first makes the second rounding exact.
template <typename T>
T RoundDouble(double d) {
  if constexpr (kIsHalf<T>) {
    float f = static_cast<float>(d);
    if (std::isfinite(f) && static_cast<double>(f) != d && (std::bit_cast<uint32_t>(f) & 1u) == 0) {
      f = std::nextafter(f, d > static_cast<double>(f) ? std::numeric_limits<float>::infinity()
                                                       : -std::numeric_limits<float>::infinity());
    }
    return T(f);
  } else {
    return static_cast<T>(d);
  }
}

/// Integer `x` rounded once to the half type H: the magnitude is rounded to H's significand
/// bits in integer arithmetic, which float (and then H) represents exactly (or overflows to inf).
template <typename H, typename I>
H IntToHalf(I x) {
  constexpr int kBits = std::is_same_v<H, float16> ? 11 : 8;
  bool negative = false;
  if constexpr (std::is_signed_v<I>) negative = x < 0;
  const uint64_t u = static_cast<uint64_t>(x);
  const uint64_t m = negative ? uint64_t{0} - u : u;
  float f = 0;
  const int width = std::bit_width(m);
  if (width > kBits) {
    const int shift = width - kBits;
    uint64_t keep = m >> shift;
    const uint64_t rest = m & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (keep & 1))) ++keep;
    f = std::ldexp(static_cast<float>(keep), shift);
  } else {
    f = static_cast<float>(m);
  }
  return H(negative ? -f : f);
}

/// `d` truncated toward zero and saturated to the integer type I; NaN gives 0.
template <typename I>
I SaturateToInt(double d) {
  if (std::isnan(d)) return 0;
  const double limit = std::ldexp(1.0, std::numeric_limits<I>::digits);  // 2^31 for int32, 2^32 uint32.
  if (d >= limit) return std::numeric_limits<I>::max();
  if constexpr (std::is_signed_v<I>) {
    if (d <= -limit) return std::numeric_limits<I>::lowest();
  } else {
    if (d <= 0) return 0;
  }
  return static_cast<I>(d);
}

/// ConvertDType of one value between numeric (non-Bool, non-packed) element types: float to
/// integer saturates (NaN -> 0), integer to float and float to narrower float round to nearest
/// even, integer to integer wraps.
template <typename To, typename From>
To ConvertValue(From x) {
  if constexpr (kIsFloat<From>) {
    const auto v = Load(x);
    if constexpr (std::is_integral_v<To>) {
      return SaturateToInt<To>(static_cast<double>(v));
    } else if constexpr (kIsHalf<To>) {
      return RoundDouble<To>(static_cast<double>(v));
    } else {
      return static_cast<To>(v);
    }
  } else if constexpr (std::is_integral_v<To>) {
    return static_cast<To>(x);
  } else if constexpr (kIsHalf<To>) {
    return IntToHalf<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

// ---- Index walks ---------------------------------------------------------------------------

/// Row-major strides (in elements) of `dims`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);
/// Product of `dims` (1 for none).
int64_t NumElements(const std::vector<int64_t>& dims);

/// Walks the indices of the box `dims` in row-major order, keeping two offsets:
/// a = a_base + sum(index[k] * a_strides[k]) and likewise b. Next() is amortised O(1).
class IndexWalk {
 public:
  IndexWalk(std::vector<int64_t> dims, std::vector<int64_t> a_strides, std::vector<int64_t> b_strides = {});
  /// Back to index 0 with the given base offsets.
  void Reset(int64_t a_base = 0, int64_t b_base = 0);
  int64_t a() const { return a_; }
  int64_t b() const { return b_; }
  void Next() {
    for (size_t k = dims_.size(); k-- > 0;) {
      a_ += a_strides_[k];
      b_ += b_strides_[k];
      if (++index_[k] < dims_[k]) return;
      a_ -= a_strides_[k] * dims_[k];
      b_ -= b_strides_[k] * dims_[k];
      index_[k] = 0;
    }
  }

 private:
  std::vector<int64_t> dims_, a_strides_, b_strides_, index_;
  int64_t a_ = 0, b_ = 0;
};

/// The offsets sum(index[k] * strides[k]) of every index of the box `dims`, in row-major order.
std::vector<int64_t> BoxOffsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides);

}  // namespace kiln::compute::ref
