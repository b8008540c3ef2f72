// Tensor helpers for the case tables: exact construction from doubles, integer limits, element
// printing, tolerances.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "internal.h"
#include "kiln/core/float8.h"

namespace kiln::conformance::internal {

const std::vector<DType> kSignedInts = {DType::Int8, DType::Int16, DType::Int32, DType::Int64};
const std::vector<DType> kUnsignedInts = {DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64};
const std::vector<DType> kInts = {DType::Int8,  DType::Int16,  DType::Int32,  DType::Int64,
                                  DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64};
const std::vector<DType> kFloats = {DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};
const std::vector<DType> kNumeric = {DType::Int8,    DType::Int16,   DType::Int32,   DType::Int64,
                                     DType::Uint8,   DType::Uint16,  DType::Uint32,  DType::Uint64,
                                     DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};
const std::vector<DType> kSignedNumeric = {DType::Int8,    DType::Int16,   DType::Int32,   DType::Int64,
                                           DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};
const std::vector<DType> kUnpacked = {DType::Bool,     DType::Int8,      DType::Int16,     DType::Int32,
                                      DType::Int64,    DType::Uint8,     DType::Uint16,    DType::Uint32,
                                      DType::Uint64,   DType::Float16,   DType::Float32,   DType::Float64,
                                      DType::BFloat16, DType::Complex64, DType::Complex128};
const std::vector<DType> kComplex = {DType::Complex64, DType::Complex128};
const std::vector<DType> kPacked = {DType::Int4, DType::Uint4, DType::Int2, DType::Uint2};
const std::vector<DType> kFloat8 = {DType::Float8E4M3FN, DType::Float8E5M2};
const std::vector<DType> kAll(std::begin(kAllDTypes), std::end(kAllDTypes));

namespace {

[[noreturn]] void Bad(const std::string& what) { throw std::logic_error("conformance table: " + what); }

bool SameDouble(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Range of a packed dtype.
void PackedRange(DType d, int64_t& lo, int64_t& hi) {
  const int bits = DTypeBits(d);
  if (IsSigned(d)) {
    lo = -(int64_t{1} << (bits - 1));
    hi = (int64_t{1} << (bits - 1)) - 1;
  } else {
    lo = 0;
    hi = (int64_t{1} << bits) - 1;
  }
}

Tensor PackedTensor(DType d, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  Shape shape(d, std::move(dims));
  const int bits = DTypeBits(d);
  const int per_byte = 8 / bits;
  std::vector<uint8_t> bytes(static_cast<size_t>(shape.ByteSize()), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    const auto u = static_cast<uint8_t>(static_cast<uint64_t>(values[i]) & ((1u << bits) - 1u));
    bytes[i / static_cast<size_t>(per_byte)] |=
        static_cast<uint8_t>(u << ((i % static_cast<size_t>(per_byte)) * static_cast<size_t>(bits)));
  }
  return Tensor::FromBytes(shape, bytes);
}

template <typename T>
T FromDouble(double v, bool exact) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v != 0 && v != 1) Bad(fmt::format("{} is not a Bool value", v));
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (!(v == std::floor(v)) || v < static_cast<double>(std::numeric_limits<T>::lowest()) ||
        v >= std::ldexp(1.0, std::numeric_limits<T>::digits)) {
      Bad(fmt::format("{} is not exact in the integer dtype {}", v, DTypeName(DTypeOf<T>)));
    }
    return static_cast<T>(v);
  } else {
    // float16, bfloat16 (float and double are specialised below): through float.
    const T t(static_cast<float>(v));
    if (exact && !SameDouble(static_cast<double>(static_cast<float>(t)), v)) {
      Bad(fmt::format("{} is not exact in {}", v, DTypeName(DTypeOf<T>)));
    }
    return t;
  }
}

template <>
float FromDouble<float>(double v, bool exact) {
  const auto t = static_cast<float>(v);
  if (exact && !SameDouble(static_cast<double>(t), v)) Bad(fmt::format("{} is not exact in Float32", v));
  return t;
}

template <>
double FromDouble<double>(double v, bool) {
  return v;
}

Tensor Make(DType d, std::vector<int64_t> dims, const std::vector<double>& values, bool exact) {
  Shape shape(d, dims);
  if (shape.Size() != static_cast<int64_t>(values.size())) {
    Bad(fmt::format("{} values for shape {}", values.size(), shape.ToString()));
  }
  if (IsPacked(d)) {
    int64_t lo = 0, hi = 0;
    PackedRange(d, lo, hi);
    std::vector<int64_t> ints;
    for (double v : values) {
      if (v != std::floor(v) || v < static_cast<double>(lo) || v > static_cast<double>(hi))
        Bad(fmt::format("{} is not exact in {}", v, DTypeName(d)));
      ints.push_back(static_cast<int64_t>(v));
    }
    return PackedTensor(d, std::move(dims), ints);
  }
  if (IsFloat8(d)) {
    uint8_t (*encode)(double) = d == DType::Float8E4M3FN ? Float8E4M3FNFromDouble : Float8E5M2FromDouble;
    double (*decode)(uint8_t) = d == DType::Float8E4M3FN ? Float8E4M3FNToDouble : Float8E5M2ToDouble;
    std::vector<uint8_t> bytes;
    for (double v : values) {
      const uint8_t b = encode(v);
      if (exact && !SameDouble(decode(b), v)) Bad(fmt::format("{} is not exact in {}", v, DTypeName(d)));
      bytes.push_back(b);
    }
    return Tensor::FromBytes(shape, bytes);
  }
  if (IsComplex(d)) {
    // Real values: the real parts, exact in the part dtype; the imaginary parts are 0.
    const Tensor parts = Make(ComplexPartDType(d), shape.Dimensions(), values, exact);
    const std::vector<double> re = parts.ToDoubles();
    std::vector<std::complex<double>> z(re.begin(), re.end());
    return C(d, shape.Dimensions(), z);
  }
  return DispatchDType(d, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> flat;
    flat.reserve(values.size());
    for (double v : values) flat.push_back(FromDouble<T>(v, exact));
    return Tensor::FromFlat<T>(shape, flat);
  });
}

}  // namespace

Tensor V(DType dtype, std::vector<int64_t> dims, const std::vector<double>& values) {
  return Make(dtype, std::move(dims), values, true);
}

Tensor S(DType dtype, double value) { return Make(dtype, {}, {value}, true); }

Tensor C(DType dtype, std::vector<int64_t> dims, const std::vector<std::complex<double>>& values) {
  const Shape shape(dtype, dims);
  if (shape.Size() != static_cast<int64_t>(values.size()))
    Bad(fmt::format("{} values for shape {}", values.size(), shape.ToString()));
  if (dtype == DType::Complex128) return Tensor::FromFlat<std::complex<double>>(shape, values);
  if (dtype != DType::Complex64) Bad(fmt::format("C: {} is not a complex dtype", DTypeName(dtype)));
  std::vector<std::complex<float>> flat;
  for (const auto& z : values) flat.emplace_back(static_cast<float>(z.real()), static_cast<float>(z.imag()));
  return Tensor::FromFlat<std::complex<float>>(shape, flat);
}

Tensor Rounded(DType dtype, std::vector<int64_t> dims, const std::vector<double>& values) {
  return Make(dtype, std::move(dims), values, false);
}

Tensor W(DType dtype, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  if (IsPacked(dtype)) return PackedTensor(dtype, std::move(dims), values);
  if (!IsInt(dtype)) Bad("W() takes an integer dtype");
  std::vector<uint64_t> bits(values.begin(), values.end());
  return Raw(dtype, std::move(dims), bits);
}

Tensor Raw(DType dtype, std::vector<int64_t> dims, const std::vector<uint64_t>& bits) {
  Shape shape(dtype, std::move(dims));
  if (shape.Size() != static_cast<int64_t>(bits.size()))
    Bad(fmt::format("{} values for shape {}", bits.size(), shape.ToString()));
  if (IsPacked(dtype)) {
    std::vector<int64_t> v(bits.begin(), bits.end());
    return PackedTensor(dtype, shape.Dimensions(), v);
  }
  const int width = DTypeBits(dtype) / 8;
  std::vector<uint8_t> bytes;
  for (uint64_t b : bits) {
    for (int k = 0; k < width; ++k) bytes.push_back(static_cast<uint8_t>(b >> (8 * k)));  // Little-endian.
  }
  if (dtype == DType::Bool) {
    for (uint8_t b : bytes)
      if (b > 1) Bad("Bool bits must be 0 or 1");
  }
  return Tensor::FromBytes(shape, bytes);
}

int64_t MinI(DType d) {
  if (!IsInt(d)) Bad("MinI: not an integer dtype");
  if (IsUnsigned(d)) return 0;
  if (DTypeBits(d) == 64) return std::numeric_limits<int64_t>::min();
  return -(int64_t{1} << (DTypeBits(d) - 1));
}

int64_t MaxI(DType d) {
  if (!IsInt(d)) Bad("MaxI: not an integer dtype");
  const int bits = DTypeBits(d) - (IsSigned(d) ? 1 : 0);
  if (bits >= 64) Bad("MaxI: Uint64's maximum does not fit int64 (use MaxU)");
  if (bits == 63) return std::numeric_limits<int64_t>::max();
  return (int64_t{1} << bits) - 1;
}

uint64_t MaxU(DType d) {
  if (!IsInt(d)) Bad("MaxU: not an integer dtype");
  const int bits = DTypeBits(d) - (IsSigned(d) ? 1 : 0);
  if (bits == 64) return std::numeric_limits<uint64_t>::max();
  return (uint64_t{1} << bits) - 1;
}

std::vector<double> Seq(DType d, int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) {
    if (d == DType::Bool) {
      v.push_back(((i * 5 + 2) % 7) < 3 ? 1 : 0);
    } else if (IsPacked(d)) {
      int64_t lo = 0, hi = 0;
      PackedRange(d, lo, hi);
      v.push_back(static_cast<double>(lo + (i + 1) % (hi - lo + 1)));
    } else if (IsFloat8(d)) {
      // Distinct values exact in both 8-bit formats (cycled past 24).
      static constexpr double kExact[] = {1,  2,  3,  4,  5,    6,    7,  8,  0.5, 1.5,   2.5,   3.5,
                                          10, 12, 14, 16, 0.25, 0.75, 20, 24, 28,  0.125, 0.375, 32};
      v.push_back(kExact[i % 24]);
    } else {
      v.push_back(static_cast<double>(i + 1));
    }
  }
  return v;
}

std::vector<double> Pick(const std::vector<double>& values, const std::vector<int>& indices, double fill) {
  std::vector<double> out;
  for (int i : indices) out.push_back(i < 0 ? fill : values.at(static_cast<size_t>(i)));
  return out;
}

std::vector<double> ToDoubles(const Tensor& t) {
  if (!IsComplex(t.dtype())) return t.ToDoubles();
  // The real parts (rows built with V hold real values).
  std::vector<double> re;
  DispatchComplexDType(t.dtype(), [&](auto zero) {
    for (const auto& z : t.ToVector<decltype(zero)>()) re.push_back(static_cast<double>(z.real()));
  });
  return re;
}

std::string ElementText(const Tensor& t, int64_t i) {
  if (IsFloat8(t.dtype())) {
    uint8_t b = 0;
    t.ConstBytes([&](std::span<const uint8_t> bytes) { b = bytes[static_cast<size_t>(i)]; });
    return fmt::format("{} (bits 0x{:02x})", ToDoubles(t)[static_cast<size_t>(i)], b);
  }
  if (IsPacked(t.dtype()) || t.dtype() == DType::Bool) {
    const double v = ToDoubles(t)[static_cast<size_t>(i)];
    if (t.dtype() == DType::Bool) return v != 0 ? "true" : "false";
    return fmt::format("{}", static_cast<int64_t>(v));
  }
  if (IsComplex(t.dtype())) {
    return DispatchComplexDType(t.dtype(), [&](auto zero) {
      using T = decltype(zero);
      std::string s;
      t.ConstFlatData<T>([&](std::span<const T> flat) {
        const T& z = flat[static_cast<size_t>(i)];
        s = fmt::format("({}{:+}i)", z.real(), z.imag());
      });
      return s;
    });
  }
  std::string s;
  DispatchDType(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    t.ConstFlatData<T>([&](std::span<const T> flat) {
      const T& x = flat[static_cast<size_t>(i)];
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        s = fmt::format("{} (bits 0x{:04x})", static_cast<float>(x), x.bits);
      } else if constexpr (std::is_same_v<T, bool>) {
        s = x ? "true" : "false";
      } else if constexpr (std::is_floating_point_v<T>) {
        s = fmt::format("{}", x);
      } else {
        s = fmt::format("{}", x);
      }
    });
  });
  return s;
}

Tolerance OneOp(DType d) {
  switch (d) {
    case DType::Float16:
    case DType::BFloat16:
      return {0, 0, 1};
    case DType::Float32:
      return {0, 0, 4};
    case DType::Float64:
      return {0, 0, 4};
    default:
      return {};
  }
}

Tolerance Composite(DType d) {
  switch (d) {
    case DType::Float16:
      return {0, 4.0 / 1024, 2};
    case DType::BFloat16:
      return {0, 4.0 / 128, 2};
    case DType::Float32:
      return {0, 1e-5, 8};
    case DType::Float64:
      return {0, 1e-12, 8};
    default:
      return {};
  }
}

Case& Smooth(Case& c) {
  c.grad_epsilon = c.dtype == DType::Float64 ? 1e-6 : c.dtype == DType::Float32 ? 1e-3 : 0;
  return c;
}

Case& CaseList::Add(const std::string& op, const std::string& what, DType dtype, graph::GraphFn build,
                    std::vector<Tensor> inputs, std::vector<Tensor> expected, Tolerance tolerance) {
  Case c;
  c.op = op;
  c.name = fmt::format("{}/{}/{}", op, DTypeName(dtype), what);
  c.primitives = RuleOf(op);
  c.dtype = dtype;
  c.build = std::move(build);
  c.inputs = std::move(inputs);
  c.expected = std::move(expected);
  auto inexact = [](DType d) { return IsFloat(d) || IsComplex(d); };
  c.tolerance = inexact(dtype) || std::any_of(c.expected.begin(), c.expected.end(),
                                              [&](const Tensor& t) { return inexact(t.dtype()); })
                    ? tolerance
                    : Tolerance{};
  cases_.push_back(std::move(c));
  return cases_.back();
}

}  // namespace kiln::conformance::internal
