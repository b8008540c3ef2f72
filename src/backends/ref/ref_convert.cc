// ConvertDType between every pair of dtypes, packed sub-byte ones included, and the leaves that
// produce values from attributes (Constant, Iota).

#include <algorithm>
#include <complex>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "backends/ref/ref_kernels.h"
#include "kiln/core/float8.h"

namespace kiln::compute::ref {

namespace {

/// How element type T is stored: Bool as a byte.
template <typename T>
using Storage = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

/// One element of ConvertDType between unpacked types: Bool reads as 0/1 and is written as
/// x != 0 (NaN is true); the numeric rules are ConvertValue's.
template <typename To, typename From>
Storage<To> ConvertOne(Storage<From> x) {
  if constexpr (std::is_same_v<From, bool>) {
    const auto v = static_cast<uint8_t>(x != 0);
    if constexpr (std::is_same_v<To, bool>) {
      return v;
    } else {
      return ConvertValue<To>(v);
    }
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<uint8_t>(Load(x) != 0);
  } else {
    return ConvertValue<To>(x);
  }
}

template <typename From, typename To>
Kernel Convert(int64_t n) {
  return [n](Operands in, uint8_t* out) {
    const auto* x = reinterpret_cast<const Storage<From>*>(in[0]);
    auto* y = reinterpret_cast<Storage<To>*>(out);
    for (int64_t i = 0; i < n; ++i) y[i] = ConvertOne<To, From>(x[i]);
  };
}

/// Layout of a packed dtype: element i sits at bits (i % per_byte) * bits of byte i / per_byte.
struct Packing {
  int bits = 0, per_byte = 0;
  bool is_signed = false;
  int64_t lowest = 0, highest = 0;

  explicit Packing(DType dtype)
      : bits(DTypeBits(dtype)),
        per_byte(8 / bits),
        is_signed(IsSigned(dtype)),
        lowest(is_signed ? -(int64_t{1} << (bits - 1)) : 0),
        highest(is_signed ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1) {}

  int Shift(int64_t i) const { return static_cast<int>(i % per_byte) * bits; }
  /// Element i, sign-extended for signed types.
  int64_t Get(const uint8_t* data, int64_t i) const {
    int64_t v = (data[i / per_byte] >> Shift(i)) & ((1 << bits) - 1);
    if (is_signed && v > highest) v -= int64_t{1} << bits;
    return v;
  }
  /// Sets element i to the low `bits` bits of v (the byte must start zeroed).
  void Put(uint8_t* data, int64_t i, int64_t v) const {
    data[i / per_byte] = static_cast<uint8_t>(data[i / per_byte] | ((v & ((1 << bits) - 1)) << Shift(i)));
  }
};

/// From a packed dtype: each element is an integer, converted as an Int64 would be (the value
/// fits, so integer targets wrap and float targets round exactly as for the packed type).
template <typename To>
Kernel FromPacked(Packing packing, int64_t n) {
  return [packing, n](Operands in, uint8_t* out) {
    auto* y = reinterpret_cast<Storage<To>*>(out);
    for (int64_t i = 0; i < n; ++i) y[i] = ConvertOne<To, int64_t>(packing.Get(in[0], i));
  };
}

/// To a packed dtype: floats saturate to its range (NaN -> 0), integers wrap to its low bits,
/// Bool gives 0/1.
template <typename From>
Kernel ToPacked(Packing packing, int64_t n, int64_t bytes) {
  return [packing, n, bytes](Operands in, uint8_t* out) {
    const auto* x = reinterpret_cast<const Storage<From>*>(in[0]);
    std::memset(out, 0, static_cast<size_t>(bytes));
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = 0;
      if constexpr (std::is_same_v<From, bool>) {
        v = x[i] != 0;
      } else if constexpr (kIsFloat<From>) {
        v = std::clamp(SaturateToInt<int64_t>(static_cast<double>(Load(x[i]))), packing.lowest,
                       packing.highest);
      } else {
        v = static_cast<int64_t>(ToBits(x[i]));  // Only the low bits are kept.
      }
      packing.Put(out, i, v);
    }
  };
}

/// Packed to packed: through the integer value, wrapping.
Kernel PackedToPacked(Packing from, Packing to, int64_t n, int64_t bytes) {
  return [from, to, n, bytes](Operands in, uint8_t* out) {
    std::memset(out, 0, static_cast<size_t>(bytes));
    for (int64_t i = 0; i < n; ++i) to.Put(out, i, from.Get(in[0], i));
  };
}

/// An 8-bit float's codec.
struct Float8Codec {
  double (*decode)(uint8_t);
  uint8_t (*encode)(double);
  explicit Float8Codec(DType dtype)
      : decode(dtype == DType::Float8E4M3FN ? Float8E4M3FNToDouble : Float8E5M2ToDouble),
        encode(dtype == DType::Float8E4M3FN ? Float8E4M3FNFromDouble : Float8E5M2FromDouble) {}
};

/// The n elements of an operand of `dtype` as doubles (Bool 0/1, packed integers by value).
std::vector<double> AsDoubles(DType dtype, const uint8_t* data, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  if (IsFloat8(dtype)) {
    const Float8Codec codec(dtype);
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = codec.decode(data[i]);
  } else if (IsPacked(dtype)) {
    const Packing packing(dtype);
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(packing.Get(data, i));
  } else if (IsComplex(dtype)) {
    DispatchComplexDType(dtype, [&](auto tag) {
      const auto* x = reinterpret_cast<const decltype(tag)*>(data);
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(x[i].real());
    });
  } else {
    DispatchDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      const auto* x = reinterpret_cast<const Storage<T>*>(data);
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, bool>) {
          v[static_cast<size_t>(i)] = x[i] != 0 ? 1.0 : 0.0;
        } else {
          v[static_cast<size_t>(i)] = static_cast<double>(Load(x[i]));
        }
      }
    });
  }
  return v;
}

/// Between complex dtypes, part by part; from a complex dtype to Bool, "not zero" (either part),
/// as NumPy's astype.
Kernel ComplexConvert(DType from, DType to, int64_t n) {
  return DispatchComplexDType(from, [&](auto from_tag) -> Kernel {
    using From = decltype(from_tag);
    if (to == DType::Bool) {
      return [n](Operands in, uint8_t* out) {
        const auto* x = reinterpret_cast<const From*>(in[0]);
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(x[i] != From());
      };
    }
    return DispatchComplexDType(to, [&](auto to_tag) -> Kernel {
      using To = decltype(to_tag);
      return [n](Operands in, uint8_t* out) {
        const auto* x = reinterpret_cast<const From*>(in[0]);
        auto* y = reinterpret_cast<To*>(out);
        for (int64_t i = 0; i < n; ++i) y[i] = To(x[i]);
      };
    });
  });
}

/// Conversions from or to an 8-bit float, and between complex and real dtypes, through double
/// (exact for every float8 value; a value converted to float8 is rounded once, to nearest even).
/// The targets' rules are those of converting a double: integers saturate (NaN -> 0), Bool is
/// x != 0. A complex number gives its real part (NumPy's astype); a real number becomes a
/// complex one with imaginary part 0.
Kernel ConvertThroughDouble(DType from, DType to, int64_t n, int64_t bytes) {
  return [from, to, n, bytes](Operands in, uint8_t* out) {
    const std::vector<double> x = AsDoubles(from, in[0], n);
    if (IsComplex(to)) {
      DispatchComplexDType(to, [&](auto tag) {
        using To = decltype(tag);
        auto* y = reinterpret_cast<To*>(out);
        for (int64_t i = 0; i < n; ++i)
          y[i] = To(static_cast<typename To::value_type>(x[static_cast<size_t>(i)]));
      });
      return;
    }
    if (IsFloat8(to)) {
      const Float8Codec codec(to);
      for (int64_t i = 0; i < n; ++i) out[i] = codec.encode(x[static_cast<size_t>(i)]);
      return;
    }
    if (IsPacked(to)) {
      const Packing packing(to);
      std::memset(out, 0, static_cast<size_t>(bytes));
      for (int64_t i = 0; i < n; ++i)
        packing.Put(
            out, i,
            std::clamp(SaturateToInt<int64_t>(x[static_cast<size_t>(i)]), packing.lowest, packing.highest));
      return;
    }
    DispatchDType(to, [&](auto tag) {
      using To = decltype(tag);
      auto* y = reinterpret_cast<Storage<To>*>(out);
      for (int64_t i = 0; i < n; ++i) y[i] = ConvertOne<To, double>(x[static_cast<size_t>(i)]);
    });
  };
}

}  // namespace

Kernel MakeConvertKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const DType from = operands[0].dtype(), to = inst.shape.dtype();
  const int64_t n = inst.shape.Size(), bytes = inst.shape.ByteSize();
  if (from == to) {
    return [bytes](Operands in, uint8_t* out) {
      if (out != in[0] && bytes > 0) std::memcpy(out, in[0], static_cast<size_t>(bytes));
    };
  }
  if (IsComplex(from) && (IsComplex(to) || to == DType::Bool)) return ComplexConvert(from, to, n);
  if (IsFloat8(from) || IsFloat8(to) || IsComplex(from) || IsComplex(to))
    return ConvertThroughDouble(from, to, n, bytes);
  if (IsPacked(from) && IsPacked(to)) return PackedToPacked(Packing(from), Packing(to), n, bytes);
  if (IsPacked(from)) {
    return DispatchDType(to, [&](auto tag) -> Kernel { return FromPacked<decltype(tag)>(Packing(from), n); });
  }
  if (IsPacked(to)) {
    return DispatchDType(from,
                         [&](auto tag) -> Kernel { return ToPacked<decltype(tag)>(Packing(to), n, bytes); });
  }
  return DispatchDType(from, [&](auto from_tag) -> Kernel {
    return DispatchDType(
        to, [&](auto to_tag) -> Kernel { return Convert<decltype(from_tag), decltype(to_tag)>(n); });
  });
}

Kernel MakeLeafKernel(const Instruction& inst) {
  if (inst.op == OpType::Constant) {
    // The literal's bytes are copied once, here: executions then never touch the host tensor.
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    inst.attrs.literal.ConstBytes([&](std::span<const uint8_t> b) { bytes->assign(b.begin(), b.end()); });
    return [bytes](Operands, uint8_t* out) {
      if (!bytes->empty()) std::memcpy(out, bytes->data(), bytes->size());
    };
  }
  if (inst.op != OpType::Iota) NoKernel(inst.op, inst.shape.dtype());
  // Element i's index along `axis` is (i / inner) % dim, inner being the size of the later axes.
  const std::vector<int64_t>& dims = inst.shape.Dimensions();
  const auto axis = static_cast<size_t>(inst.attrs.axis);
  const int64_t dim = dims[axis];
  const int64_t inner = NumElements(std::vector<int64_t>(dims.begin() + inst.attrs.axis + 1, dims.end()));
  const int64_t n = inst.shape.Size();
  return DispatchDType(inst.shape.dtype(), [&](auto tag) -> Kernel {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      NoKernel(inst.op, DType::Bool);
    } else {
      return [n, dim, inner](Operands, uint8_t* out) {
        T* y = reinterpret_cast<T*>(out);
        for (int64_t i = 0; i < n; ++i) y[i] = ConvertValue<T>((i / inner) % dim);
      };
    }
  });
}

}  // namespace kiln::compute::ref
