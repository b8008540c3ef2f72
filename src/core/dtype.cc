#include "kiln/core/dtype.h"

#include <algorithm>
#include <cctype>
#include <ostream>
#include <string>

#include "core/check.h"

namespace kiln {

namespace {

struct DTypeInfo {
  std::string_view name;        // As GoMLX prints in shapes.
  std::string_view value_name;  // As GoMLX prints in values.
  int bits;
};

constexpr DTypeInfo kInfo[kNumDTypes] = {
    {"InvalidDType", "invalid", 0},  // Invalid
    {"Bool", "bool", 8},
    {"Int8", "int8", 8},
    {"Int16", "int16", 16},
    {"Int32", "int32", 32},
    {"Int64", "int64", 64},
    {"Uint8", "uint8", 8},
    {"Uint16", "uint16", 16},
    {"Uint32", "uint32", 32},
    {"Uint64", "uint64", 64},
    {"Float16", "float16", 16},
    {"Float32", "float32", 32},
    {"Float64", "float64", 64},
    {"BFloat16", "bfloat16", 16},
    {"Int4", "int4", 4},
    {"Uint4", "uint4", 4},
    {"Int2", "int2", 2},
    {"Uint2", "uint2", 2},
    {"Float8E4M3FN", "float8e4m3fn", 8},
    {"Float8E5M2", "float8e5m2", 8},
    {"Complex64", "complex64", 64},
    {"Complex128", "complex128", 128},
};

const DTypeInfo& Info(DType dtype) {
  const int i = static_cast<int>(dtype);
  return (i >= 0 && i < kNumDTypes) ? kInfo[i] : kInfo[0];
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

bool IsValid(DType dtype) {
  const int i = static_cast<int>(dtype);
  return i > 0 && i < kNumDTypes;
}

int DTypeBits(DType dtype) { return Info(dtype).bits; }
std::string_view DTypeName(DType dtype) { return Info(dtype).name; }
std::string_view DTypeValueName(DType dtype) { return Info(dtype).value_name; }

DType DTypeFromName(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (EqualsIgnoreCase(name, DTypeName(d)) || EqualsIgnoreCase(name, DTypeValueName(d))) return d;
  }
  std::string valid;
  for (DType d : kAllDTypes) valid += (valid.empty() ? "" : ", ") + std::string(DTypeName(d));
  detail::Throw("unknown dtype name \"{}\"; valid names: {}", name, valid);
}

bool IsFloat(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}
bool IsHalf(DType d) { return d == DType::Float16 || d == DType::BFloat16; }
bool IsPacked(DType d) {
  return d == DType::Int4 || d == DType::Uint4 || d == DType::Int2 || d == DType::Uint2;
}
bool IsFloat8(DType d) { return d == DType::Float8E4M3FN || d == DType::Float8E5M2; }
bool IsStorageOnly(DType d) { return IsPacked(d) || IsFloat8(d); }
bool IsUnsigned(DType d) {
  return d == DType::Uint8 || d == DType::Uint16 || d == DType::Uint32 || d == DType::Uint64 ||
         d == DType::Uint4 || d == DType::Uint2;
}
bool IsInt(DType d) {
  return IsUnsigned(d) || d == DType::Int8 || d == DType::Int16 || d == DType::Int32 || d == DType::Int64 ||
         d == DType::Int4 || d == DType::Int2;
}
bool IsSigned(DType d) { return IsFloat(d) || (IsInt(d) && !IsUnsigned(d)); }
bool IsBool(DType d) { return d == DType::Bool; }
bool IsComplex(DType d) { return d == DType::Complex64 || d == DType::Complex128; }
DType ComplexPartDType(DType d) {
  if (d == DType::Complex64) return DType::Float32;
  if (d == DType::Complex128) return DType::Float64;
  return d;
}
DType ComplexDTypeOf(DType d) {
  if (d == DType::Float32) return DType::Complex64;
  if (d == DType::Float64) return DType::Complex128;
  detail::Throw("complex numbers have Float32 or Float64 parts, not {}", d);
}

int64_t DTypeByteSize(DType dtype, int64_t count) {
  if (!IsValid(dtype)) detail::Throw("DTypeByteSize: invalid dtype (code {})", static_cast<int>(dtype));
  if (count < 0) detail::Throw("DTypeByteSize: negative count {} of {}", count, dtype);
  const int bits = DTypeBits(dtype);
  if (bits >= 8) {
    int64_t bytes = 0;
    if (__builtin_mul_overflow(count, int64_t{bits / 8}, &bytes))
      detail::Throw("DTypeByteSize: {} elements of {} have more bytes than int64 holds", count, dtype);
    return bytes;
  }
  const int64_t per_byte = 8 / bits;
  return count / per_byte + (count % per_byte != 0 ? 1 : 0);
}

std::ostream& operator<<(std::ostream& os, DType dtype) { return os << DTypeName(dtype); }

}  // namespace kiln
