// Rows for the elementwise unary functions with exact results: Neg, Abs, Sign, Square,
// Reciprocal, Floor, Ceil, Round, IsFinite, IsNaN, LogicalNot, BitwiseNot, BitCount, Clz,
// Identity, StopGradient. (The transcendental ones are in cases_unary_float.cc.)

#include <limits>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

void AddUnaryCases(CaseList& L) {
  // ---- Neg, Abs, Sign, Square, Reciprocal ------------------------------------------------------
  for (DType d : kSignedNumeric) {
    L.Add("Neg", "signed", d, Fn1(Neg), {V(d, {4}, {1, -2, 3, 0})}, {V(d, {4}, {-1, 2, -3, 0})});
    L.Add("Abs", "signed", d, Fn1(Abs), {V(d, {4}, {-3, 2, 0, -1})}, {V(d, {4}, {3, 2, 0, 1})});
    L.Add("Sign", "signed", d, Fn1(Sign), {V(d, {4}, {-3, 0, 5, -1})}, {V(d, {4}, {-1, 0, 1, -1})});
    L.Add("Square", "signed", d, Fn1(Square), {V(d, {4}, {-3, 2, 0, -1})}, {V(d, {4}, {9, 4, 0, 1})});
  }
  for (DType d : kUnsignedInts) {
    L.Add("Neg", "unsigned_wraps", d, Fn1(Neg), {W(d, {3}, {0, 1, 2})}, {W(d, {3}, {0, -1, -2})});
    L.Add("Abs", "unsigned", d, Fn1(Abs), {W(d, {3}, {3, 0, -1})}, {W(d, {3}, {3, 0, -1})});
    L.Add("Sign", "unsigned", d, Fn1(Sign), {W(d, {3}, {0, 7, -1})}, {W(d, {3}, {0, 1, 1})});
    L.Add("Square", "unsigned", d, Fn1(Square), {V(d, {3}, {3, 2, 0})}, {V(d, {3}, {9, 4, 0})});
  }
  for (DType d : kFloats) {
    L.Add("Neg", "special", d, Fn1(Neg), {V(d, {4}, {kInf, -kInf, kNaN, 0.5})},
          {V(d, {4}, {-kInf, kInf, kNaN, -0.5})});
    L.Add("Abs", "special", d, Fn1(Abs), {V(d, {4}, {-kInf, kNaN, -0.5, -0.0})},
          {V(d, {4}, {kInf, kNaN, 0.5, 0})});
    L.Add("Sign", "special", d, Fn1(Sign), {V(d, {4}, {-kInf, kInf, kNaN, -0.25})},
          {V(d, {4}, {-1, 1, kNaN, -1})});
    L.Add("Square", "fraction", d, Fn1(Square), {V(d, {3}, {0.5, -1.5, kInf})},
          {V(d, {3}, {0.25, 2.25, kInf})});
    L.Add("Reciprocal", "float", d, Fn1(Reciprocal), {V(d, {5}, {2, 4, -0.5, 0, kInf})},
          {V(d, {5}, {0.5, 0.25, -2, kInf, 0})});
    L.Add("Reciprocal", "rounded", d, Fn1(Reciprocal), {V(d, {2}, {3, -10})},
          {Rounded(d, {2}, {1.0 / 3.0, -0.1})}, OneOp(d));
  }
  for (DType d : kSignedInts) {
    L.Add("Reciprocal", "int_truncates", d, Fn1(Reciprocal), {V(d, {4}, {1, -1, 2, -3})},
          {V(d, {4}, {1, -1, 0, 0})});
  }
  for (DType d : kUnsignedInts) {
    L.Add("Reciprocal", "unsigned", d, Fn1(Reciprocal), {V(d, {3}, {1, 2, 5})}, {V(d, {3}, {1, 0, 0})});
  }

  // ---- Floor, Ceil, Round (half to even), IsFinite, IsNaN ----------------------------------------
  for (DType d : kFloats) {
    const Tensor x = V(d, {12}, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.25, -0.75, 3, kInf, kNaN});
    L.Add("Floor", "values", d, Fn1(Floor), {x},
          {V(d, {12}, {-3, -2, -1, 0, 1, 2, 3, 0, -1, 3, kInf, kNaN})});
    L.Add("Ceil", "values", d, Fn1(Ceil), {x},
          {V(d, {12}, {-2, -1, -0.0, 1, 2, 3, 4, 1, -0.0, 3, kInf, kNaN})});
    L.Add("Round", "half_to_even", d, Fn1(Round), {x},
          {V(d, {12}, {-2, -2, -0.0, 0, 2, 2, 4, 0, -1, 3, kInf, kNaN})});
    L.Add("Round", "near_half", d, Fn1(Round), {V(d, {4}, {0.625, -0.375, 1.25, 1.75})},
          {V(d, {4}, {1, -0.0, 1, 2})});
    const Tensor special = V(d, {6}, {0, 1.5, kInf, -kInf, kNaN, -2});
    L.Add("IsFinite", "special", d, Fn1(IsFinite), {special}, {V(DType::Bool, {6}, {1, 1, 0, 0, 0, 1})});
    L.Add("IsNaN", "special", d, Fn1(IsNaN), {special}, {V(DType::Bool, {6}, {0, 0, 0, 0, 1, 0})});
  }
  // Large floats are integers already: Floor/Ceil/Round leave them.
  L.Add("Round", "large", DType::Float32, Fn1(Round), {V(DType::Float32, {2}, {8388609, -16777216})},
        {V(DType::Float32, {2}, {8388609, -16777216})});
  L.Add("Floor", "large", DType::Float64, Fn1(Floor), {V(DType::Float64, {1}, {4503599627370497.0})},
        {V(DType::Float64, {1}, {4503599627370497.0})});

  // ---- Logical and bitwise -----------------------------------------------------------------------
  L.Add("LogicalNot", "values", DType::Bool, Fn1(LogicalNot), {V(DType::Bool, {3}, {1, 0, 1})},
        {V(DType::Bool, {3}, {0, 1, 0})});
  L.Add("LogicalNot", "matrix", DType::Bool, Fn1(LogicalNot), {V(DType::Bool, {2, 2}, {0, 0, 1, 1})},
        {V(DType::Bool, {2, 2}, {1, 1, 0, 0})});
  for (DType d : kInts) {
    const int bits = DTypeBits(d);
    L.Add("BitwiseNot", "values", d, Fn1(BitwiseNot), {W(d, {4}, {0, 1, -1, 0x5A})},
          {W(d, {4}, {-1, -2, 0, ~int64_t{0x5A}})});
    L.Add("BitCount", "values", d, Fn1(BitCount), {W(d, {5}, {0, 1, 7, -1, 0x5A})},
          {W(d, {5}, {0, 1, 3, bits, 4})});
    const int64_t top = static_cast<int64_t>(uint64_t{1} << (bits - 1));
    L.Add("BitCount", "top_bit", d, Fn1(BitCount), {W(d, {1}, {top})}, {W(d, {1}, {1})});
    L.Add("Clz", "values", d, Fn1(Clz), {W(d, {6}, {0, 1, 7, -1, 64, top})},
          {W(d, {6}, {bits, bits - 1, bits - 3, 0, bits - 7, 0})});
  }

  // ---- Identity (every dtype) and StopGradient (its value is x) ---------------------------------
  for (DType d : kAll) {
    L.Add("Identity", "vector", d, Fn1(Identity), {V(d, {4}, Seq(d, 4))}, {V(d, {4}, Seq(d, 4))});
  }
  for (DType d : kUnpacked) {
    L.Add("StopGradient", "vector", d, Fn1(StopGradient), {V(d, {4}, Seq(d, 4))}, {V(d, {4}, Seq(d, 4))});
    L.Add("StopGradient", "scalar", d, Fn1(StopGradient), {V(d, {}, Seq(d, 1))}, {V(d, {}, Seq(d, 1))});
  }
  for (DType d : kFloats) {
    L.Add("StopGradient", "in_expression", d,
          P([](const std::vector<Node>& p) { return Add(StopGradient(p[0]), p[0]); }), {V(d, {2}, {1.5, -2})},
          {V(d, {2}, {3, -4})});
  }
}

}  // namespace kiln::conformance::internal
