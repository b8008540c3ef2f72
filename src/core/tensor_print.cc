// Tensor printing, as GoMLX prints: "float32(5)", "[2][2]float32{{1, 2}, {3, 4}}".

#include <cmath>
#include <cstring>
#include <ostream>
#include <string>

#include "core/check.h"
#include "kiln/core/float8.h"
#include "kiln/core/tensor.h"

namespace kiln {

namespace {

constexpr int64_t kMaxPrintedPerAxis = 8;  // Longer axes show the first and last 4 around "...".

template <typename F>
std::string FormatFloat(F value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);  // Shortest representation that reads back exactly.
}

/// Formats element `i` of raw storage `data` of `dtype`.
std::string FormatElement(DType dtype, const uint8_t* data, int64_t i) {
  if (IsPacked(dtype)) {
    const int bits = DTypeBits(dtype);
    const int per_byte = 8 / bits;
    const int shift = static_cast<int>(i % per_byte) * bits;
    int value = (data[i / per_byte] >> shift) & ((1 << bits) - 1);
    if (!IsUnsigned(dtype) && (value & (1 << (bits - 1)))) value -= 1 << bits;  // Sign-extend.
    return std::to_string(value);
  }
  if (dtype == DType::Float8E4M3FN) return FormatFloat(Float8E4M3FNToDouble(data[i]));
  if (dtype == DType::Float8E5M2) return FormatFloat(Float8E5M2ToDouble(data[i]));
  if (IsComplex(dtype)) {
    // As Go prints complex numbers: "(1+2i)", "(0.5-1i)", "(NaN+Infi)".
    return DispatchComplexDType(dtype, [&](auto zero) -> std::string {
      using T = decltype(zero);
      T value;
      std::memcpy(&value, data + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
      const auto im = value.imag();
      const bool negative = std::signbit(im) && !std::isnan(im);
      return "(" + FormatFloat(value.real()) + (negative ? "-" : "+") +
             FormatFloat(negative ? -im : im).substr(std::isinf(im) ? 1 : 0) + "i)";
    });
  }
  return DispatchDType(dtype, [&](auto zero) -> std::string {
    using T = decltype(zero);
    T value;
    std::memcpy(&value, data + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      return value ? "true" : "false";
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      return FormatFloat(static_cast<float>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      return FormatFloat(value);
    } else {
      return fmt::format("{}", value);
    }
  });
}

void FormatAxis(const Shape& shape, const uint8_t* data, int axis, int64_t offset, bool full,
                std::string& out) {
  const int64_t dim = shape.Dimensions()[axis];
  int64_t stride = 1;
  for (int a = axis + 1; a < shape.Rank(); ++a) stride *= shape.Dimensions()[a];
  out += '{';
  for (int64_t i = 0; i < dim; ++i) {
    if (i > 0) out += ", ";
    if (!full && dim > kMaxPrintedPerAxis && i == kMaxPrintedPerAxis / 2) {
      out += "..., ";
      i = dim - kMaxPrintedPerAxis / 2;
    }
    if (axis + 1 == shape.Rank()) {
      out += FormatElement(shape.dtype(), data, offset + i);
    } else {
      FormatAxis(shape, data, axis + 1, offset + i * stride, full, out);
    }
  }
  out += '}';
}

}  // namespace

std::string Tensor::ToString() const { return ToString(false); }

std::string Tensor::ToString(bool full) const {
  if (!storage_) return "<empty tensor>";
  if (!Ok()) return fmt::format("<finalized tensor {}>", shape_);
  std::string out;
  ConstBytes([&](std::span<const uint8_t> bytes) {
    if (shape_.IsScalar()) {
      out = fmt::format("{}({})", DTypeValueName(shape_.dtype()),
                        FormatElement(shape_.dtype(), bytes.data(), 0));
      return;
    }
    for (int64_t d : shape_.Dimensions()) out += fmt::format("[{}]", d);
    out += DTypeValueName(shape_.dtype());
    FormatAxis(shape_, bytes.data(), 0, 0, full, out);
  });
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) { return os << tensor.ToString(); }

}  // namespace kiln
