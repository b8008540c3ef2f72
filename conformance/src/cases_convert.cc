// Rows for ConvertDType (every pair of dtypes; float to integer saturates and maps NaN to 0;
// integer to integer wraps; rounding to nearest even) and Bitcast (every unpacked source dtype).

#include <cmath>
#include <limits>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

namespace {

graph::GraphFn To(DType to) {
  return P([to](const std::vector<Node>& p) { return ConvertDType(p[0], to); });
}
graph::GraphFn Cast(DType to) {
  return P([to](const std::vector<Node>& p) { return Bitcast(p[0], to); });
}

// The saturating float -> integer rule: truncate toward zero, clamp to the range, NaN -> 0.
int64_t Saturate(double v, DType to) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  if (IsUnsigned(to)) {
    if (t <= 0) return 0;
    if (to == DType::Uint64)
      return t >= 18446744073709551615.0 ? -1 : static_cast<int64_t>(static_cast<uint64_t>(t));
    return t >= static_cast<double>(MaxI(to)) ? MaxI(to) : static_cast<int64_t>(t);
  }
  if (t <= static_cast<double>(MinI(to))) return MinI(to);
  if (t >= static_cast<double>(MaxI(to))) return MaxI(to);
  return static_cast<int64_t>(t);
}

}  // namespace

void AddConvertCases(CaseList& L) {
  // ---- Every unpacked pair, on values every dtype holds -------------------------------------------
  for (DType from : kUnpacked) {
    const std::vector<double> in =
        from == DType::Bool ? std::vector<double>{0, 1, 1, 0} : std::vector<double>{0, 1, 2, 100};
    for (DType to : kUnpacked) {
      if (to == from) continue;
      std::vector<double> out = in;
      if (to == DType::Bool) {
        for (double& x : out) x = x != 0 ? 1 : 0;
      }
      L.Add("ConvertDType", std::string("to_") + std::string(DTypeName(to)), from, To(to), {V(from, {4}, in)},
            {V(to, {4}, out)});
    }
    L.Add("ConvertDType", "same_dtype", from, To(from), {V(from, {4}, in)}, {V(from, {4}, in)});
  }

  // ---- Float to integer: saturating, NaN -> 0 -----------------------------------------------------
  for (DType from : kFloats) {
    // Exact in every float dtype (bfloat16: 8 significant bits).
    std::vector<double> in = {2.75, -2.75, 0.5,   -0.5, 49152, -49152, kNaN,
                              kInf, -kInf, 127.5, -129, 254,   256};
    if (from != DType::Float16) {
      for (int e : {31, 32, 63, 64, 100}) {
        in.push_back(std::ldexp(1.0, e));
        in.push_back(-std::ldexp(1.0, e));
      }
    }
    const auto n = static_cast<int64_t>(in.size());
    for (DType to : kInts) {
      std::vector<int64_t> out;
      for (double x : in) out.push_back(Saturate(x, to));
      L.Add("ConvertDType", std::string("saturates_to_") + std::string(DTypeName(to)), from, To(to),
            {V(from, {n}, in)}, {W(to, {n}, out)});
    }
    L.Add("ConvertDType", "to_Bool_nan_and_zero", from, To(DType::Bool),
          {V(from, {5}, {0, -0.0, 0.5, kNaN, -kInf})}, {V(DType::Bool, {5}, {0, 0, 1, 1, 1})});
  }

  // ---- Integer to integer wraps (two's complement) ------------------------------------------------
  for (DType from : {DType::Int32, DType::Int64}) {
    for (DType to : kInts) {
      if (to == from) continue;
      L.Add("ConvertDType", std::string("wraps_to_") + std::string(DTypeName(to)), from, To(to),
            {W(from, {4}, {300, -1, 65537, -129})}, {W(to, {4}, {300, -1, 65537, -129})});
    }
  }
  L.Add("ConvertDType", "wraps_max_to_signed", DType::Uint64, To(DType::Int64),
        {W(DType::Uint64, {2}, {-1, MinI(DType::Int64)})}, {W(DType::Int64, {2}, {-1, MinI(DType::Int64)})});
  L.Add("ConvertDType", "wraps_min_to_unsigned", DType::Int8, To(DType::Uint32),
        {W(DType::Int8, {2}, {-128, -1})}, {W(DType::Uint32, {2}, {-128, -1})});
  L.Add("ConvertDType", "zero_extends", DType::Uint8, To(DType::Int16), {W(DType::Uint8, {2}, {255, 128})},
        {W(DType::Int16, {2}, {255, 128})});
  L.Add("ConvertDType", "zero_extends", DType::Uint32, To(DType::Int64), {W(DType::Uint32, {1}, {-1})},
        {W(DType::Int64, {1}, {4294967295})});

  // ---- Rounding to nearest even; overflow to infinity ------------------------------------------------
  L.Add("ConvertDType", "int_to_float32_rounds", DType::Int32, To(DType::Float32),
        {V(DType::Int32, {3}, {16777217, 16777219, -16777217})},
        {V(DType::Float32, {3}, {16777216, 16777220, -16777216})});
  L.Add("ConvertDType", "int_to_float64_rounds", DType::Int64, To(DType::Float64),
        {W(DType::Int64, {2}, {(int64_t{1} << 53) + 1, (int64_t{1} << 53) + 3})},
        {V(DType::Float64, {2}, {9007199254740992.0, 9007199254740996.0})});
  L.Add("ConvertDType", "uint64_max_to_float32", DType::Uint64, To(DType::Float32),
        {W(DType::Uint64, {1}, {-1})}, {V(DType::Float32, {1}, {18446744073709551616.0})});
  L.Add("ConvertDType", "int_to_float16_rounds", DType::Int32, To(DType::Float16),
        {V(DType::Int32, {4}, {2049, 2051, 65519, 70000})},
        {V(DType::Float16, {4}, {2048, 2052, 65504, kInf})});
  L.Add("ConvertDType", "int_to_bfloat16_rounds", DType::Int32, To(DType::BFloat16),
        {V(DType::Int32, {3}, {257, 259, -1000})}, {V(DType::BFloat16, {3}, {256, 260, -1000})});
  const double e24 = std::ldexp(1.0, -24), e11 = std::ldexp(1.0, -11), e8 = std::ldexp(1.0, -8);
  L.Add("ConvertDType", "to_float32_rounds", DType::Float64, To(DType::Float32),
        {V(DType::Float64, {6}, {1 + e24, 1 + 3 * e24, 1e300, 1e-50, kNaN, -0.0})},
        {V(DType::Float32, {6}, {1, 1 + 4 * e24, kInf, 0, kNaN, -0.0})});
  L.Add("ConvertDType", "to_float16_rounds", DType::Float32, To(DType::Float16),
        {V(DType::Float32, {7},
           {1 + e11, 1 + 3 * e11, 65520, 65519, std::ldexp(1.0, -25), 3 * std::ldexp(1.0, -26), kNaN})},
        {V(DType::Float16, {7}, {1, 1 + 4 * e11, kInf, 65504, 0, std::ldexp(1.0, -24), kNaN})});
  L.Add("ConvertDType", "to_bfloat16_rounds", DType::Float32, To(DType::BFloat16),
        {V(DType::Float32, {4}, {1 + e8, 1 + 3 * e8, -kInf, kNaN})},
        {V(DType::BFloat16, {4}, {1, 1 + 4 * e8, -kInf, kNaN})});
  L.Add("ConvertDType", "half_to_bfloat16_rounds", DType::Float16, To(DType::BFloat16),
        {V(DType::Float16, {3}, {1 + std::ldexp(1.0, -10), 65504, -std::ldexp(1.0, -24)})},
        {V(DType::BFloat16, {3}, {1, 65536, -std::ldexp(1.0, -24)})});
  L.Add("ConvertDType", "bfloat16_to_half_overflows", DType::BFloat16, To(DType::Float16),
        {V(DType::BFloat16, {3}, {std::ldexp(1.0, 20), -std::ldexp(1.0, 20), 0.5})},
        {V(DType::Float16, {3}, {kInf, -kInf, 0.5})});
  L.Add("ConvertDType", "half_to_float32_exact", DType::Float16, To(DType::Float32),
        {V(DType::Float16, {3}, {65504, std::ldexp(1.0, -24), -kInf})},
        {V(DType::Float32, {3}, {65504, std::ldexp(1.0, -24), -kInf})});
  L.Add("ConvertDType", "int_to_bool", DType::Int32, To(DType::Bool), {V(DType::Int32, {3}, {0, 5, -1})},
        {V(DType::Bool, {3}, {0, 1, 1})});

  // ---- Packed dtypes (storage only: conversions in and out) ----------------------------------------
  for (DType p : kPacked) {
    const DType wide = IsUnsigned(p) ? DType::Uint8 : DType::Int8;
    const std::vector<double> v = IsUnsigned(p) ? (DTypeBits(p) == 4 ? std::vector<double>{0, 1, 9, 15, 3}
                                                                     : std::vector<double>{0, 1, 2, 3, 3})
                                                : (DTypeBits(p) == 4 ? std::vector<double>{-8, -1, 0, 7, 3}
                                                                     : std::vector<double>{-2, -1, 0, 1, 1});
    L.Add("ConvertDType", "unpack", p, To(wide), {V(p, {5}, v)}, {V(wide, {5}, v)});
    L.Add("ConvertDType", "pack_to_" + std::string(DTypeName(p)), wide, To(p), {V(wide, {5}, v)},
          {V(p, {5}, v)});
    L.Add("ConvertDType", "unpack_to_float32", p, To(DType::Float32), {V(p, {5}, v)},
          {V(DType::Float32, {5}, v)});
    L.Add("ConvertDType", "pack_from_int32_to_" + std::string(DTypeName(p)), DType::Int32, To(p),
          {V(DType::Int32, {5}, v)}, {V(p, {5}, v)});
  }

  // ---- 8-bit floats (storage only: conversions in and out, round to nearest even) -----------------
  {
    const DType e4 = DType::Float8E4M3FN, e5 = DType::Float8E5M2;
    // Exact values: normals, the smallest subnormals (2^-9 and 2^-16), the largest finite values.
    L.Add("ConvertDType", "e4m3_to_float32_exact", e4, To(DType::Float32),
          {V(e4, {6}, {1.5, -0.3125, std::ldexp(1.0, -9), 448, -448, kNaN})},
          {V(DType::Float32, {6}, {1.5, -0.3125, std::ldexp(1.0, -9), 448, -448, kNaN})});
    L.Add("ConvertDType", "e5m2_to_float16_exact", e5, To(DType::Float16),
          {V(e5, {6}, {1.5, -0.375, std::ldexp(1.0, -16), 57344, -kInf, kNaN})},
          {V(DType::Float16, {6}, {1.5, -0.375, std::ldexp(1.0, -16), 57344, -kInf, kNaN})});
    // Rounding: 0.3 -> 0.3125 (E4M3FN) and 0.3125 (E5M2); ties to even (17 -> 16, 464 -> 448);
    // beyond the largest: NaN in E4M3FN (no infinity), infinity in E5M2.
    L.Add("ConvertDType", "float32_to_e4m3_rounds", DType::Float32, To(e4),
          {Rounded(DType::Float32, {6}, {0.3, 17, 464, 465, -1e6, kInf})},
          {V(e4, {6}, {0.3125, 16, 448, kNaN, kNaN, kNaN})});
    L.Add("ConvertDType", "float64_to_e5m2_rounds", DType::Float64, To(e5),
          {V(DType::Float64, {6}, {0.3, 17, 61439, 61440, -1e6, std::ldexp(1.0, -18)})},
          {V(e5, {6}, {0.3125, 16, 57344, kInf, -kInf, 0})});
    L.Add("ConvertDType", "e4m3_to_int32_saturates", e4, To(DType::Int32),
          {V(e4, {4}, {-2.5, 448, kNaN, 0.75})}, {V(DType::Int32, {4}, {-2, 448, 0, 0})});
    L.Add("ConvertDType", "uint8_to_e5m2", DType::Uint8, To(e5), {V(DType::Uint8, {4}, {0, 7, 9, 255})},
          {V(e5, {4}, {0, 7, 8, 256})});
    L.Add("ConvertDType", "e4m3_to_e5m2", e4, To(e5), {V(e4, {3}, {0.875, 3.5, -448})},
          {V(e5, {3}, {0.875, 3.5, -448})});
    L.Add("ConvertDType", "e5m2_to_e4m3", e5, To(e4), {V(e5, {4}, {0.875, 2.5, 57344, std::ldexp(1.0, -16)})},
          {V(e4, {4}, {0.875, 2.5, kNaN, 0})});
    L.Add("ConvertDType", "e4m3_to_bool", e4, To(DType::Bool), {V(e4, {3}, {0, -0.5, kNaN})},
          {V(DType::Bool, {3}, {0, 1, 1})});
    L.Add("ConvertDType", "e5m2_to_int4", e5, To(DType::Int4), {V(e5, {3}, {-12, 3.5, 6})},
          {V(DType::Int4, {3}, {-8, 3, 6})});
  }

  // ---- Bitcast (little-endian byte order within wider elements; Bool is n/a: arbitrary bits are
  // not valid bools) --------------------------------------
  using D = DType;
  L.Add("Bitcast", "to_uint32", D::Float32, Cast(D::Uint32), {V(D::Float32, {2}, {1, -2})},
        {Raw(D::Uint32, {2}, {0x3F800000u, 0xC0000000u})});
  L.Add("Bitcast", "to_uint16_pairs", D::Float32, Cast(D::Uint16), {V(D::Float32, {1}, {1})},
        {Raw(D::Uint16, {1, 2}, {0x0000, 0x3F80})});
  L.Add("Bitcast", "to_bytes", D::Float32, Cast(D::Uint8), {V(D::Float32, {2}, {1, -2})},
        {Raw(D::Uint8, {2, 4}, {0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0})});
  L.Add("Bitcast", "bytes_to_float32", D::Uint8, Cast(D::Float32),
        {Raw(D::Uint8, {1, 4}, {0, 0, 0x80, 0x3F})}, {V(D::Float32, {1}, {1})});
  L.Add("Bitcast", "to_int8", D::Uint8, Cast(D::Int8), {Raw(D::Uint8, {3}, {255, 128, 7})},
        {W(D::Int8, {3}, {-1, -128, 7})});
  L.Add("Bitcast", "to_uint8", D::Int8, Cast(D::Uint8), {W(D::Int8, {2}, {-1, 5})},
        {W(D::Uint8, {2}, {255, 5})});
  L.Add("Bitcast", "to_uint32", D::Int32, Cast(D::Uint32), {W(D::Int32, {2}, {-1, 5})},
        {W(D::Uint32, {2}, {-1, 5})});
  L.Add("Bitcast", "to_float32", D::Uint32, Cast(D::Float32),
        {Raw(D::Uint32, {2}, {0x40490FDBu, 0x7F800000u})}, {V(D::Float32, {2}, {3.1415927410125732, kInf})});
  L.Add("Bitcast", "to_uint16", D::Float16, Cast(D::Uint16), {V(D::Float16, {2}, {1, -2})},
        {Raw(D::Uint16, {2}, {0x3C00, 0xC000})});
  L.Add("Bitcast", "to_float16", D::Int16, Cast(D::Float16), {Raw(D::Int16, {2}, {0x3C00, 0x7C00})},
        {V(D::Float16, {2}, {1, kInf})});
  L.Add("Bitcast", "to_bytes", D::Int16, Cast(D::Uint8), {W(D::Int16, {1}, {0x0102})},
        {Raw(D::Uint8, {1, 2}, {0x02, 0x01})});
  L.Add("Bitcast", "to_int16", D::BFloat16, Cast(D::Int16), {V(D::BFloat16, {2}, {1, -2})},
        {Raw(D::Int16, {2}, {0x3F80, 0xC000})});
  L.Add("Bitcast", "to_bfloat16", D::Uint16, Cast(D::BFloat16), {Raw(D::Uint16, {2}, {0x3F80, 0x4049})},
        {V(D::BFloat16, {2}, {1, 3.140625})});
  L.Add("Bitcast", "to_uint64", D::Float64, Cast(D::Uint64), {V(D::Float64, {1}, {1})},
        {Raw(D::Uint64, {1}, {0x3FF0000000000000u})});
  L.Add("Bitcast", "to_uint32_pairs", D::Float64, Cast(D::Uint32), {V(D::Float64, {1}, {-2})},
        {Raw(D::Uint32, {1, 2}, {0, 0xC0000000u})});
  L.Add("Bitcast", "to_float64", D::Uint64, Cast(D::Float64), {Raw(D::Uint64, {1}, {0x4000000000000000u})},
        {V(D::Float64, {1}, {2})});
  L.Add("Bitcast", "to_int32_pairs", D::Int64, Cast(D::Int32), {W(D::Int64, {1}, {0x0000000100000002})},
        {W(D::Int32, {1, 2}, {2, 1})});
  L.Add("Bitcast", "from_int32_pairs", D::Int32, Cast(D::Int64), {W(D::Int32, {2, 2}, {-1, -1, 5, 0})},
        {W(D::Int64, {2}, {-1, 5})});
  L.Add("Bitcast", "to_int64", D::Uint64, Cast(D::Int64), {W(D::Uint64, {1}, {-1})},
        {W(D::Int64, {1}, {-1})});
}

}  // namespace kiln::conformance::internal
