// Tests for kiln::DType: names, traits, sizes, the C++ type map and dispatch.

#include "kiln/core/dtype.h"
#include "kiln/core/error.h"
#include "kiln/core/shape.h"

#include <gtest/gtest.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/core/half.h"

namespace {

using kiln::DType;

// ---- The C++ type map, at compile time. ----
static_assert(kiln::DTypeOf<bool> == DType::Bool);
static_assert(kiln::DTypeOf<int8_t> == DType::Int8);
static_assert(kiln::DTypeOf<int16_t> == DType::Int16);
static_assert(kiln::DTypeOf<int32_t> == DType::Int32);
static_assert(kiln::DTypeOf<int64_t> == DType::Int64);
static_assert(kiln::DTypeOf<uint8_t> == DType::Uint8);
static_assert(kiln::DTypeOf<uint16_t> == DType::Uint16);
static_assert(kiln::DTypeOf<uint32_t> == DType::Uint32);
static_assert(kiln::DTypeOf<uint64_t> == DType::Uint64);
static_assert(kiln::DTypeOf<long> == DType::Int64);
static_assert(kiln::DTypeOf<long long> == DType::Int64);
static_assert(kiln::DTypeOf<unsigned long> == DType::Uint64);
static_assert(kiln::DTypeOf<unsigned long long> == DType::Uint64);
static_assert(kiln::DTypeOf<float> == DType::Float32);
static_assert(kiln::DTypeOf<double> == DType::Float64);
static_assert(kiln::DTypeOf<kiln::float16> == DType::Float16);
static_assert(kiln::DTypeOf<kiln::bfloat16> == DType::BFloat16);
static_assert(kiln::DTypeOf<const float> == DType::Float32);
static_assert(kiln::DTypeOf<char> == DType::Invalid);
static_assert(kiln::DTypeOf<wchar_t> == DType::Invalid);
static_assert(kiln::DTypeOf<char8_t> == DType::Invalid);
static_assert(kiln::DTypeOf<char16_t> == DType::Invalid);
static_assert(kiln::DTypeOf<char32_t> == DType::Invalid);
static_assert(kiln::DTypeOf<long double> == DType::Invalid);
static_assert(kiln::DTypeOf<std::string> == DType::Invalid);
static_assert(kiln::DTypeOf<float*> == DType::Invalid);
static_assert(kiln::DTypeOf<std::byte> == DType::Invalid);
static_assert(kiln::DTypeOf<DType> == DType::Invalid);

static_assert(kiln::Element<bool>);
static_assert(kiln::Element<float>);
static_assert(kiln::Element<long>);
static_assert(kiln::Element<unsigned long long>);
static_assert(kiln::Element<kiln::float16>);
static_assert(kiln::Element<kiln::bfloat16>);
static_assert(!kiln::Element<char>);
static_assert(!kiln::Element<std::string>);
static_assert(!kiln::Element<void*>);
static_assert(!kiln::Element<long double>);

static_assert(kiln::Element<std::complex<float>>);
static_assert(kiln::DTypeOf<std::complex<float>> == DType::Complex64);
static_assert(kiln::DTypeOf<std::complex<double>> == DType::Complex128);
static_assert(!kiln::Element<std::complex<int>>);

static_assert(std::size(kiln::kAllDTypes) == 21);

// The expected properties of each dtype, written from the specification.
struct Expected {
  DType dtype;
  int bits;
  std::string_view name;
  std::string_view value_name;
  bool is_float, is_half, is_int, is_signed, is_unsigned, is_packed, is_bool;
};

// clang-format off
const Expected kExpected[] = {
    // dtype            bits name        value name  float  half   int    signed unsign packed bool
    {DType::Bool,       8,   "Bool",     "bool",     false, false, false, false, false, false, true},
    {DType::Int8,       8,   "Int8",     "int8",     false, false, true,  true,  false, false, false},
    {DType::Int16,      16,  "Int16",    "int16",    false, false, true,  true,  false, false, false},
    {DType::Int32,      32,  "Int32",    "int32",    false, false, true,  true,  false, false, false},
    {DType::Int64,      64,  "Int64",    "int64",    false, false, true,  true,  false, false, false},
    {DType::Uint8,      8,   "Uint8",    "uint8",    false, false, true,  false, true,  false, false},
    {DType::Uint16,     16,  "Uint16",   "uint16",   false, false, true,  false, true,  false, false},
    {DType::Uint32,     32,  "Uint32",   "uint32",   false, false, true,  false, true,  false, false},
    {DType::Uint64,     64,  "Uint64",   "uint64",   false, false, true,  false, true,  false, false},
    {DType::Float16,    16,  "Float16",  "float16",  true,  true,  false, true,  false, false, false},
    {DType::BFloat16,   16,  "BFloat16", "bfloat16", true,  true,  false, true,  false, false, false},
    {DType::Float32,    32,  "Float32",  "float32",  true,  false, false, true,  false, false, false},
    {DType::Float64,    64,  "Float64",  "float64",  true,  false, false, true,  false, false, false},
    {DType::Int4,       4,   "Int4",     "int4",     false, false, true,  true,  false, true,  false},
    {DType::Uint4,      4,   "Uint4",    "uint4",    false, false, true,  false, true,  true,  false},
    {DType::Int2,       2,   "Int2",     "int2",     false, false, true,  true,  false, true,  false},
    {DType::Uint2,      2,   "Uint2",    "uint2",    false, false, true,  false, true,  true,  false},
    // The 8-bit floats are storage only: not IsFloat (no arithmetic), not packed (a byte each).
    {DType::Float8E4M3FN, 8, "Float8E4M3FN", "float8e4m3fn", false, false, false, false, false, false, false},
    {DType::Float8E5M2,   8, "Float8E5M2",   "float8e5m2",   false, false, false, false, false, false, false},
    // Complex numbers are neither floats nor signed (no order).
    {DType::Complex64,  64,  "Complex64",  "complex64",  false, false, false, false, false, false, false},
    {DType::Complex128, 128, "Complex128", "complex128", false, false, false, false, false, false, false},
};
// clang-format on

TEST(DTypeTest, EnumValuesAreStable) {
  EXPECT_EQ(static_cast<int>(DType::Invalid), 0);
  EXPECT_EQ(static_cast<int>(DType::Bool), 1);
  EXPECT_EQ(static_cast<int>(DType::Float32), 11);
  EXPECT_EQ(static_cast<int>(DType::BFloat16), 13);
  EXPECT_EQ(static_cast<int>(DType::Uint2), 17);
  EXPECT_EQ(static_cast<int>(DType::Float8E4M3FN), 18);
  EXPECT_EQ(static_cast<int>(DType::Float8E5M2), 19);
  EXPECT_EQ(static_cast<int>(DType::Complex64), 20);
  EXPECT_EQ(static_cast<int>(DType::Complex128), 21);
  EXPECT_EQ(kiln::kNumDTypes, 22);
}

TEST(DTypeTest, ComplexDTypesAndTheirParts) {
  EXPECT_TRUE(kiln::IsComplex(DType::Complex64));
  EXPECT_TRUE(kiln::IsComplex(DType::Complex128));
  EXPECT_FALSE(kiln::IsComplex(DType::Float64));
  EXPECT_EQ(kiln::ComplexPartDType(DType::Complex64), DType::Float32);
  EXPECT_EQ(kiln::ComplexPartDType(DType::Complex128), DType::Float64);
  EXPECT_EQ(kiln::ComplexPartDType(DType::Int8), DType::Int8);
  EXPECT_EQ(kiln::ComplexDTypeOf(DType::Float32), DType::Complex64);
  EXPECT_EQ(kiln::ComplexDTypeOf(DType::Float64), DType::Complex128);
  EXPECT_THROW(kiln::ComplexDTypeOf(DType::Float16), kiln::Error);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Complex128, 3), 48);
  // Real-valued dispatch refuses them with a message; the complex dispatch takes them.
  try {
    kiln::DispatchDType(DType::Complex64, [](auto) { return 0; });
    ADD_FAILURE() << "DispatchDType accepted Complex64";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("complex"), std::string::npos) << e.what();
  }
  EXPECT_EQ(kiln::DispatchComplexDType(DType::Complex128, [](auto z) { return sizeof(z); }), 16u);
  EXPECT_THROW(kiln::DispatchComplexDType(DType::Float32, [](auto z) { return sizeof(z); }), kiln::Error);
}

TEST(DTypeTest, AllDTypesListsTheValidOnes) {
  std::set<int> values;
  std::set<std::string_view> names, value_names;
  for (const DType d : kiln::kAllDTypes) {
    EXPECT_TRUE(kiln::IsValid(d)) << static_cast<int>(d);
    values.insert(static_cast<int>(d));
    names.insert(kiln::DTypeName(d));
    value_names.insert(kiln::DTypeValueName(d));
  }
  EXPECT_EQ(values.size(), 21u);
  EXPECT_EQ(names.size(), 21u) << "names must be distinct";
  EXPECT_EQ(value_names.size(), 21u) << "value names must be distinct";
  EXPECT_EQ(values.count(0), 0u) << "Invalid must not be listed";
  EXPECT_EQ(*values.begin(), 1);
  EXPECT_EQ(*values.rbegin(), 21);
  // In enum order.
  for (std::size_t i = 1; i < std::size(kiln::kAllDTypes); ++i) {
    EXPECT_LT(static_cast<int>(kiln::kAllDTypes[i - 1]), static_cast<int>(kiln::kAllDTypes[i]));
  }
  // The table above covers exactly these.
  std::set<int> expected_values;
  for (const Expected& e : kExpected) expected_values.insert(static_cast<int>(e.dtype));
  EXPECT_EQ(values, expected_values);
}

TEST(DTypeTest, BitsOfEachDType) {
  for (const Expected& e : kExpected) {
    EXPECT_EQ(kiln::DTypeBits(e.dtype), e.bits) << e.name;
  }
}

TEST(DTypeTest, NamesOfEachDType) {
  for (const Expected& e : kExpected) {
    EXPECT_EQ(kiln::DTypeName(e.dtype), e.name);
    EXPECT_EQ(kiln::DTypeValueName(e.dtype), e.value_name);
  }
}

TEST(DTypeTest, TraitsOfEachDType) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(std::string(e.name));
    EXPECT_TRUE(kiln::IsValid(e.dtype));
    EXPECT_EQ(kiln::IsFloat(e.dtype), e.is_float);
    EXPECT_EQ(kiln::IsHalf(e.dtype), e.is_half);
    EXPECT_EQ(kiln::IsInt(e.dtype), e.is_int);
    EXPECT_EQ(kiln::IsSigned(e.dtype), e.is_signed);
    EXPECT_EQ(kiln::IsUnsigned(e.dtype), e.is_unsigned);
    EXPECT_EQ(kiln::IsPacked(e.dtype), e.is_packed);
    EXPECT_EQ(kiln::IsBool(e.dtype), e.is_bool);
  }
}

TEST(DTypeTest, InvalidHasNoTraits) {
  EXPECT_FALSE(kiln::IsValid(DType::Invalid));
  EXPECT_FALSE(kiln::IsValid(static_cast<DType>(22)));
  EXPECT_FALSE(kiln::IsValid(static_cast<DType>(200)));
  EXPECT_FALSE(kiln::IsFloat(DType::Invalid));
  EXPECT_FALSE(kiln::IsHalf(DType::Invalid));
  EXPECT_FALSE(kiln::IsInt(DType::Invalid));
  EXPECT_FALSE(kiln::IsSigned(DType::Invalid));
  EXPECT_FALSE(kiln::IsUnsigned(DType::Invalid));
  EXPECT_FALSE(kiln::IsPacked(DType::Invalid));
  EXPECT_FALSE(kiln::IsBool(DType::Invalid));
}

TEST(DTypeTest, FromNameParsesBothSpellings) {
  for (const Expected& e : kExpected) {
    EXPECT_EQ(kiln::DTypeFromName(e.name), e.dtype) << e.name;
    EXPECT_EQ(kiln::DTypeFromName(e.value_name), e.dtype) << e.value_name;
  }
  for (const DType d : kiln::kAllDTypes) {
    EXPECT_EQ(kiln::DTypeFromName(kiln::DTypeName(d)), d);
    EXPECT_EQ(kiln::DTypeFromName(kiln::DTypeValueName(d)), d);
  }
}

TEST(DTypeTest, FromNameIsCaseInsensitive) {
  EXPECT_EQ(kiln::DTypeFromName("FLOAT32"), DType::Float32);
  EXPECT_EQ(kiln::DTypeFromName("fLoAt64"), DType::Float64);
  EXPECT_EQ(kiln::DTypeFromName("Bfloat16"), DType::BFloat16);
  EXPECT_EQ(kiln::DTypeFromName("BFLOAT16"), DType::BFloat16);
  EXPECT_EQ(kiln::DTypeFromName("UINT8"), DType::Uint8);
  EXPECT_EQ(kiln::DTypeFromName("UInt64"), DType::Uint64);
  EXPECT_EQ(kiln::DTypeFromName("BOOL"), DType::Bool);
  EXPECT_EQ(kiln::DTypeFromName("INT4"), DType::Int4);
  EXPECT_EQ(kiln::DTypeFromName("uInt2"), DType::Uint2);
}

TEST(DTypeTest, FromNameRejectsUnknownNames) {
  for (const std::string_view bad :
       {"Float128", "float", "int", "", "float 32", "Float32x", "xint8", "int3"}) {
    SCOPED_TRACE(std::string("name: '") + std::string(bad) + "'");
    EXPECT_THROW(kiln::DTypeFromName(bad), kiln::Error);
  }
  try {
    kiln::DTypeFromName("Float128");
    FAIL() << "DTypeFromName(\"Float128\") did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(e.message().find("Float128"), std::string::npos) << e.message();
  }
  try {
    kiln::DTypeFromName("quux_type");
    FAIL() << "DTypeFromName(\"quux_type\") did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(e.message().find("quux_type"), std::string::npos) << e.message();
    EXPECT_NE(std::string(e.what()).find("quux_type"), std::string::npos);
  }
}

TEST(DTypeTest, ByteSizeRoundsPackedTypesUp) {
  EXPECT_EQ(kiln::DTypeByteSize(DType::Float32, 3), 12);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Float64, 0), 0);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Float64, 5), 40);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Bool, 3), 3);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int8, 7), 7);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Uint16, 7), 14);
  EXPECT_EQ(kiln::DTypeByteSize(DType::BFloat16, 5), 10);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Float16, 1), 2);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int64, int64_t{1} << 40), int64_t{8} << 40);
  // Packed: 2 Int4/Uint4 or 4 Int2/Uint2 per byte, rounded up.
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int4, 0), 0);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int4, 1), 1);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int4, 2), 1);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int4, 3), 2);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int4, 8), 4);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Uint4, 9), 5);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int2, 0), 0);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int2, 1), 1);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int2, 4), 1);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Int2, 5), 2);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Uint2, 8), 2);
  EXPECT_EQ(kiln::DTypeByteSize(DType::Uint2, 9), 3);
  for (const Expected& e : kExpected) {
    const int64_t count = 1000;
    EXPECT_EQ(kiln::DTypeByteSize(e.dtype, count), (count * e.bits + 7) / 8) << e.name;
  }
}

TEST(DTypeTest, StreamPrintsName) {
  for (const Expected& e : kExpected) {
    std::ostringstream os;
    os << e.dtype;
    EXPECT_EQ(os.str(), e.name);
  }
  std::ostringstream os;
  os << DType::Float32 << "/" << DType::BFloat16 << "/" << DType::Int4;
  EXPECT_EQ(os.str(), "Float32/BFloat16/Int4");
}

TEST(DTypeTest, DispatchCallsWithTheCxxType) {
  int dispatched = 0;
  for (const DType d : kiln::kAllDTypes) {
    if (kiln::IsStorageOnly(d) || kiln::IsComplex(d)) continue;  // Complex: DispatchComplexDType.
    SCOPED_TRACE(std::string(kiln::DTypeName(d)));
    const auto [type_dtype, size] = kiln::DispatchDType(d, [](auto value) {
      using T = decltype(value);
      return std::pair<DType, std::size_t>(kiln::DTypeOf<T>, sizeof(T));
    });
    EXPECT_EQ(type_dtype, d);
    EXPECT_EQ(static_cast<int>(size * 8), kiln::DTypeBits(d));
    ++dispatched;
  }
  EXPECT_EQ(dispatched, 13);
  // The value passed is value-initialised (zero).
  EXPECT_EQ(
      kiln::DispatchDType(DType::Float64, [](auto v) { return static_cast<double>(static_cast<float>(v)); }),
      0.0);
  EXPECT_EQ(kiln::DispatchDType(DType::Int32,
                                [](auto v) { return static_cast<double>(static_cast<float>(v)) + 2; }),
            2.0);
  // Specific types, not just matching DTypeOf.
  EXPECT_TRUE(
      kiln::DispatchDType(DType::Float16, [](auto v) { return std::is_same_v<decltype(v), kiln::float16>; }));
  EXPECT_TRUE(kiln::DispatchDType(DType::BFloat16,
                                  [](auto v) { return std::is_same_v<decltype(v), kiln::bfloat16>; }));
  EXPECT_TRUE(kiln::DispatchDType(DType::Bool, [](auto v) { return std::is_same_v<decltype(v), bool>; }));
  EXPECT_TRUE(
      kiln::DispatchDType(DType::Uint64, [](auto v) { return std::is_same_v<decltype(v), uint64_t>; }));
}

TEST(DTypeTest, DispatchThrowsForPackedAndInvalid) {
  int calls = 0;
  const auto fn = [&calls](auto) { ++calls; };
  for (const DType d : {DType::Int4, DType::Uint4, DType::Int2, DType::Uint2, DType::Invalid}) {
    SCOPED_TRACE(static_cast<int>(d));
    EXPECT_THROW(kiln::DispatchDType(d, fn), kiln::Error);
  }
  EXPECT_THROW(kiln::DispatchDType(static_cast<DType>(200), fn), kiln::Error);
  EXPECT_EQ(calls, 0);
  kiln::DispatchDType(DType::Int8, fn);
  EXPECT_EQ(calls, 1);
}

}  // namespace

TEST(DTypeTest, ByteSizeOfInvalidDTypeIsAnError) {
  EXPECT_THROW(kiln::DTypeByteSize(kiln::DType::Invalid, 1), kiln::Error);
  EXPECT_THROW(kiln::Shape().ByteSize(), kiln::Error);
}
