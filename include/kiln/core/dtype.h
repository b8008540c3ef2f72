#pragma once
/// @file
/// DType: the element types of tensors, their traits, and the map from C++ types.

#include <complex>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <type_traits>

#include "kiln/core/half.h"

namespace kiln {

/// Element type of a tensor. The numeric values are stable: they are written in serialized
/// tensors and checkpoints.
enum class DType : uint8_t {
  Invalid = 0,
  Bool = 1,
  Int8 = 2,
  Int16 = 3,
  Int32 = 4,
  Int64 = 5,
  Uint8 = 6,
  Uint16 = 7,
  Uint32 = 8,
  Uint64 = 9,
  Float16 = 10,
  Float32 = 11,
  Float64 = 12,
  BFloat16 = 13,
  // Packed sub-byte integers: storage only (creation, bytes, conversion, reshape, I/O).
  // Values are packed little-end first: element i sits at bits [(i % k) * bits, ...) of byte i / k.
  Int4 = 14,
  Uint4 = 15,
  Int2 = 16,
  Uint2 = 17,
  // 8-bit floats (OCP FP8), storage only as the packed integers are (see kiln/core/float8.h).
  Float8E4M3FN = 18,
  Float8E5M2 = 19,
  // Complex numbers: a float32 (float64) real part followed by the imaginary part, as
  // std::complex<float> (std::complex<double>) lays them out.
  Complex64 = 20,
  Complex128 = 21,
};

/// Number of DType values, Invalid included.
inline constexpr int kNumDTypes = 22;

/// All valid dtypes, in enum order.
inline constexpr DType kAllDTypes[] = {
    DType::Bool,      DType::Int8,    DType::Int16,        DType::Int32,      DType::Int64,
    DType::Uint8,     DType::Uint16,  DType::Uint32,       DType::Uint64,     DType::Float16,
    DType::Float32,   DType::Float64, DType::BFloat16,     DType::Int4,       DType::Uint4,
    DType::Int2,      DType::Uint2,   DType::Float8E4M3FN, DType::Float8E5M2, DType::Complex64,
    DType::Complex128};

/// Size of one element in bits (1-byte Bool is 8).
int DTypeBits(DType dtype);
/// Name as GoMLX prints it in shapes: "Float32", "Int64", "Bool", "BFloat16", "Int4"...
std::string_view DTypeName(DType dtype);
/// Lower-case name as GoMLX prints it in values: "float32", "int64", "bool", "bfloat16"...
std::string_view DTypeValueName(DType dtype);
/// Parses a name as DTypeName or DTypeValueName prints it (case-insensitive); throws kiln::Error.
DType DTypeFromName(std::string_view name);
/// True for the valid enum values (not Invalid, nor out of range).
bool IsValid(DType dtype);

bool IsFloat(DType dtype);     ///< Float16, BFloat16, Float32, Float64.
bool IsHalf(DType dtype);      ///< Float16, BFloat16.
bool IsInt(DType dtype);       ///< Signed or unsigned integers, packed ones included (not Bool).
bool IsSigned(DType dtype);    ///< Signed integers and floats.
bool IsUnsigned(DType dtype);  ///< Unsigned integers, packed ones included.
bool IsPacked(DType dtype);    ///< Sub-byte Int4, Uint4, Int2, Uint2.
bool IsFloat8(DType dtype);    ///< Float8E4M3FN, Float8E5M2 (not IsFloat: storage only).
/// The storage-only dtypes (packed integers and 8-bit floats): tensors hold them, ConvertDType,
/// Reshape take them (and pass through control flow as composite operands); other ops need a
/// conversion first.
bool IsStorageOnly(DType dtype);
bool IsBool(DType dtype);     ///< Bool alone.
bool IsComplex(DType dtype);  ///< Complex64, Complex128 (not IsFloat).
/// The dtype of a complex dtype's parts (Float32 for Complex64, Float64 for Complex128); other
/// dtypes are returned unchanged.
DType ComplexPartDType(DType dtype);
/// The complex dtype whose parts are `dtype` (Complex64 for Float32, Complex128 for Float64);
/// throws kiln::Error for any other dtype.
DType ComplexDTypeOf(DType dtype);

/// Bytes needed to store `count` elements (packed types round up to whole bytes).
int64_t DTypeByteSize(DType dtype, int64_t count);

/// Writes DTypeName(dtype) ("Float32", "Int64"...).
std::ostream& operator<<(std::ostream& os, DType dtype);

namespace detail {
template <typename T>
struct DTypeOfImpl {
  static constexpr DType value = DType::Invalid;
};
template <typename T>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
         !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> &&
         !std::is_same_v<T, char32_t>) struct DTypeOfImpl<T> {
  static constexpr DType value = std::is_signed_v<T> ? (sizeof(T) == 1   ? DType::Int8
                                                        : sizeof(T) == 2 ? DType::Int16
                                                        : sizeof(T) == 4 ? DType::Int32
                                                                         : DType::Int64)
                                                     : (sizeof(T) == 1   ? DType::Uint8
                                                        : sizeof(T) == 2 ? DType::Uint16
                                                        : sizeof(T) == 4 ? DType::Uint32
                                                                         : DType::Uint64);
};
template <>
struct DTypeOfImpl<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct DTypeOfImpl<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct DTypeOfImpl<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct DTypeOfImpl<std::complex<float>> {
  static constexpr DType value = DType::Complex64;
};
template <>
struct DTypeOfImpl<std::complex<double>> {
  static constexpr DType value = DType::Complex128;
};
template <>
struct DTypeOfImpl<float16> {
  static constexpr DType value = DType::Float16;
};
template <>
struct DTypeOfImpl<bfloat16> {
  static constexpr DType value = DType::BFloat16;
};
}  // namespace detail

/// The DType of a C++ element type: bool, the fixed-width integers (and `long`/`long long` in
/// either signedness), float, double, kiln::float16, kiln::bfloat16, std::complex<float> and
/// std::complex<double>. Invalid for anything else.
template <typename T>
inline constexpr DType DTypeOf = detail::DTypeOfImpl<std::remove_cv_t<T>>::value;

/// True when T is a C++ element type kiln stores (see DTypeOf).
template <typename T>
concept Element = DTypeOf<T>
!= DType::Invalid;

/// Calls `fn(T{})` with T the C++ element type of `dtype`, a real one (complex, packed types,
/// 8-bit floats and Invalid throw: see DispatchComplexDType).
template <typename Fn>
decltype(auto) DispatchDType(DType dtype, Fn&& fn);
/// Calls `fn(T{})` with T std::complex<float> or std::complex<double> for Complex64 and
/// Complex128 (other dtypes throw).
template <typename Fn>
decltype(auto) DispatchComplexDType(DType dtype, Fn&& fn);

namespace detail {
[[noreturn]] void ThrowUnsupportedDispatch(DType dtype);
}

template <typename Fn>
decltype(auto) DispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Bool:
      return fn(bool{});
    case DType::Int8:
      return fn(int8_t{});
    case DType::Int16:
      return fn(int16_t{});
    case DType::Int32:
      return fn(int32_t{});
    case DType::Int64:
      return fn(int64_t{});
    case DType::Uint8:
      return fn(uint8_t{});
    case DType::Uint16:
      return fn(uint16_t{});
    case DType::Uint32:
      return fn(uint32_t{});
    case DType::Uint64:
      return fn(uint64_t{});
    case DType::Float16:
      return fn(float16{});
    case DType::BFloat16:
      return fn(bfloat16{});
    case DType::Float32:
      return fn(float{});
    case DType::Float64:
      return fn(double{});
    default:
      detail::ThrowUnsupportedDispatch(dtype);
  }
}

template <typename Fn>
decltype(auto) DispatchComplexDType(DType dtype, Fn&& fn) {
  if (dtype == DType::Complex64) return fn(std::complex<float>{});
  if (dtype != DType::Complex128) detail::ThrowUnsupportedDispatch(dtype);
  return fn(std::complex<double>{});
}

}  // namespace kiln
