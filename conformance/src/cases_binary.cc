// Rows for the broadcasting binary functions and their scalar forms: Add, Sub, Mul, Div, Rem,
// Pow, Max, Min, Atan2, the logical and bitwise ops and the shifts. (Integer corner cases: see
// cases_int_semantics.cc.)

#include <limits>
#include <string>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

void AddBinaryCases(CaseList& L) {
  // ---- Arithmetic on every numeric dtype ----------------------------------------------------------
  for (DType d : kNumeric) {
    const Tensor a = V(d, {4}, {1, 2, 3, 4}), b = V(d, {4}, {5, 6, 7, 8});
    Smooth(L.Add("Add", "values", d, Fn2(Add), {a, b}, {V(d, {4}, {6, 8, 10, 12})}));
    Smooth(L.Add("Sub", "values", d, Fn2(Sub), {V(d, {4}, {9, 6, 7, 8}), V(d, {4}, {1, 2, 3, 8})},
                 {V(d, {4}, {8, 4, 4, 0})}));
    Smooth(L.Add("Mul", "values", d, Fn2(Mul), {a, V(d, {4}, {5, 6, 7, 0})}, {V(d, {4}, {5, 12, 21, 0})}));
    Smooth(L.Add("Div", "exact", d, Fn2(Div), {V(d, {4}, {8, 9, 0, 12}), V(d, {4}, {2, 3, 5, 4})},
                 {V(d, {4}, {4, 3, 0, 3})}));
    L.Add("Rem", "values", d, Fn2(Rem), {V(d, {4}, {7, 8, 9, 0}), V(d, {4}, {2, 4, 5, 5})},
          {V(d, {4}, {1, 0, 4, 0})});
    L.Add("Pow", "values", d, Fn2(Pow), {V(d, {5}, {2, 3, 1, 5, 0}), V(d, {5}, {3, 2, 5, 0, 0})},
          {V(d, {5}, {8, 9, 1, 1, 1})});
    L.Add("Max", "values", d, Fn2(Max), {V(d, {4}, {1, 5, 3, 7}), V(d, {4}, {4, 2, 3, 8})},
          {V(d, {4}, {4, 5, 3, 8})});
    L.Add("Min", "values", d, Fn2(Min), {V(d, {4}, {1, 5, 3, 7}), V(d, {4}, {4, 2, 3, 8})},
          {V(d, {4}, {1, 2, 3, 7})});

    // Broadcasting: size-1 axes and scalars.
    const Tensor m = V(d, {2, 3}, {1, 2, 3, 4, 5, 6});
    Smooth(L.Add("Add", "broadcast_row", d, Fn2(Add), {m, V(d, {1, 3}, {10, 20, 30})},
                 {V(d, {2, 3}, {11, 22, 33, 14, 25, 36})}));
    Smooth(L.Add("Add", "broadcast_both", d, Fn2(Add), {V(d, {2, 1}, {1, 2}), V(d, {1, 3}, {10, 20, 30})},
                 {V(d, {2, 3}, {11, 21, 31, 12, 22, 32})}));
    Smooth(L.Add("Mul", "broadcast_scalar", d, Fn2(Mul), {S(d, 2), m}, {V(d, {2, 3}, {2, 4, 6, 8, 10, 12})}));
    Smooth(L.Add("Sub", "broadcast_column", d, Fn2(Sub), {m, V(d, {2, 1}, {1, 2})},
                 {V(d, {2, 3}, {0, 1, 2, 2, 3, 4})}));
    L.Add("Max", "broadcast_scalar", d, Fn2(Max), {m, S(d, 4)}, {V(d, {2, 3}, {4, 4, 4, 4, 5, 6})});
    L.Add("Min", "broadcast_row", d, Fn2(Min), {m, V(d, {1, 3}, {2, 2, 7})},
          {V(d, {2, 3}, {1, 2, 3, 2, 2, 6})});
    L.Add("Div", "broadcast_scalar", d, Fn2(Div), {V(d, {3}, {2, 4, 6}), S(d, 2)}, {V(d, {3}, {1, 2, 3})});
    L.Add("Rem", "broadcast_scalar", d, Fn2(Rem), {V(d, {3}, {5, 6, 7}), S(d, 3)}, {V(d, {3}, {2, 0, 1})});
    L.Add("Pow", "broadcast_scalar", d, Fn2(Pow), {V(d, {3}, {1, 2, 3}), S(d, 2)}, {V(d, {3}, {1, 4, 9})});

    // The operators and the scalar forms (the C++ number takes the node's dtype).
    L.Add("Add", "operators", d, P([](const std::vector<Node>& p) { return (p[0] + 2) * 3 - p[0] / 1; }),
          {V(d, {3}, {1, 2, 3})}, {V(d, {3}, {8, 10, 12})});
    const Tensor x = V(d, {3}, {1, 2, 3});
    L.Add("AddScalar", "values", d, P([](const std::vector<Node>& p) { return AddScalar(p[0], 2); }), {x},
          {V(d, {3}, {3, 4, 5})});
    L.Add("SubScalar", "values", d, P([](const std::vector<Node>& p) { return SubScalar(p[0], 1); }), {x},
          {V(d, {3}, {0, 1, 2})});
    L.Add("MulScalar", "values", d, P([](const std::vector<Node>& p) { return MulScalar(p[0], 3); }), {x},
          {V(d, {3}, {3, 6, 9})});
    L.Add("DivScalar", "exact", d, P([](const std::vector<Node>& p) { return DivScalar(p[0], 2); }),
          {V(d, {3}, {2, 4, 8})}, {V(d, {3}, {1, 2, 4})});
    L.Add("PowScalar", "square", d, P([](const std::vector<Node>& p) { return PowScalar(p[0], 2); }), {x},
          {V(d, {3}, {1, 4, 9})});
    L.Add("MaxScalar", "values", d, P([](const std::vector<Node>& p) { return MaxScalar(p[0], 2); }), {x},
          {V(d, {3}, {2, 2, 3})});
    L.Add("MinScalar", "values", d, P([](const std::vector<Node>& p) { return MinScalar(p[0], 2); }), {x},
          {V(d, {3}, {1, 2, 2})});
    L.Add("ModScalar", "values", d, P([](const std::vector<Node>& p) { return ModScalar(p[0], 2); }), {x},
          {V(d, {3}, {1, 0, 1})});
  }
  for (DType d : kSignedNumeric) {
    Smooth(L.Add("Add", "signed", d, Fn2(Add), {V(d, {4}, {-1, 2, -3, 0}), V(d, {4}, {5, -6, -7, 0})},
                 {V(d, {4}, {4, -4, -10, 0})}));
    L.Add("Sub", "signed", d, Fn2(Sub), {V(d, {3}, {1, -2, 0}), V(d, {3}, {3, -5, 4})},
          {V(d, {3}, {-2, 3, -4})});
    Smooth(L.Add("Mul", "signed", d, Fn2(Mul), {V(d, {3}, {-2, 3, -4}), V(d, {3}, {3, -5, -6})},
                 {V(d, {3}, {-6, -15, 24})}));
    L.Add("Max", "signed", d, Fn2(Max), {V(d, {3}, {-1, -5, 0}), V(d, {3}, {-3, 2, -0.0})},
          {V(d, {3}, {-1, 2, 0})});
    L.Add("Min", "signed", d, Fn2(Min), {V(d, {3}, {-1, -5, 3}), V(d, {3}, {-3, 2, -4})},
          {V(d, {3}, {-3, -5, -4})});
    L.Add("Pow", "negative_base", d, Fn2(Pow), {V(d, {3}, {-2, -3, -1}), V(d, {3}, {3, 2, 7})},
          {V(d, {3}, {-8, 9, -1})});
    L.Add("SubScalar", "to_negative", d, P([](const std::vector<Node>& p) { return SubScalar(p[0], 5); }),
          {V(d, {2}, {1, 7})}, {V(d, {2}, {-4, 2})});
  }

  // ---- Floats: rounding, infinities, NaN ------------------------------------------------------------
  for (DType d : kFloats) {
    L.Add("Add", "special", d, Fn2(Add), {V(d, {4}, {kInf, kInf, kNaN, 0.5}), V(d, {4}, {-kInf, 1, 1, 0.25})},
          {V(d, {4}, {kNaN, kInf, kNaN, 0.75})});
    L.Add("Mul", "special", d, Fn2(Mul), {V(d, {3}, {kInf, 0, -0.5}), V(d, {3}, {0, -2, 0.5})},
          {V(d, {3}, {kNaN, -0.0, -0.25})});
    L.Add("Div", "float", d, Fn2(Div), {V(d, {6}, {7, 1, -1, 0, 1, kInf}), V(d, {6}, {2, 0, 0, 0, -8, kInf})},
          {V(d, {6}, {3.5, kInf, -kInf, kNaN, -0.125, kNaN})});
    Smooth(L.Add("Div", "rounded", d, Fn2(Div), {V(d, {3}, {1, 2, 10}), V(d, {3}, {3, 7, 3})},
                 {Rounded(d, {3}, {1.0 / 3, 2.0 / 7, 10.0 / 3})}, OneOp(d)));
    L.Add("DivScalar", "fraction", d, P([](const std::vector<Node>& p) { return DivScalar(p[0], 4); }),
          {V(d, {2}, {1, -3})}, {V(d, {2}, {0.25, -0.75})});
    L.Add("Max", "nan_propagates", d, Fn2(Max),
          {V(d, {4}, {kNaN, 1, kNaN, -kInf}), V(d, {4}, {1, kNaN, kNaN, 2})},
          {V(d, {4}, {kNaN, kNaN, kNaN, 2})});
    L.Add("Min", "nan_propagates", d, Fn2(Min),
          {V(d, {4}, {kNaN, 1, kNaN, kInf}), V(d, {4}, {1, kNaN, kNaN, 2})},
          {V(d, {4}, {kNaN, kNaN, kNaN, 2})});
    L.Add("MaxScalar", "nan_propagates", d, P([](const std::vector<Node>& p) { return MaxScalar(p[0], 0); }),
          {V(d, {2}, {kNaN, -1})}, {V(d, {2}, {kNaN, 0})});
    L.Add("MinScalar", "nan_propagates", d, P([](const std::vector<Node>& p) { return MinScalar(p[0], 0); }),
          {V(d, {2}, {kNaN, 1})}, {V(d, {2}, {kNaN, 0})});
    Smooth(L.Add("PowScalar", "sqrt", d, P([](const std::vector<Node>& p) { return PowScalar(p[0], 0.5); }),
                 {V(d, {3}, {4, 0.25, 9})}, {V(d, {3}, {2, 0.5, 3})}, OneOp(d)));
    L.Add("ModScalar", "fraction", d, P([](const std::vector<Node>& p) { return ModScalar(p[0], 1.5); }),
          {V(d, {3}, {4, -4, 1})}, {V(d, {3}, {1, -1, 1})});
    // NumPy's values: atan2, pow, fmod (the dividend's sign).
    for (const char* name : {"Atan2", "Pow", "Rem"}) {
      const std::string k = name;
      Node (*fn)(Node, Node) = k == "Atan2" ? Atan2 : k == "Pow" ? Pow : Rem;
      L.Add(name, "numpy", d, Fn2(fn),
            {FixtureAs(d, "binary.npz", k + ".a", true), FixtureAs(d, "binary.npz", k + ".b", true)},
            {FixtureAs(d, "binary.npz", k + ".y", false)}, OneOp(d));
    }
    L.Add("Atan2", "quadrants", d, Fn2(Atan2), {V(d, {4}, {0, 1, -0.0, -1}), V(d, {4}, {1, 0, 1, 0})},
          {Rounded(d, {4}, {0, 1.5707963267948966, -0.0, -1.5707963267948966})}, OneOp(d));
  }

  // ---- Logical (Bool) -----------------------------------------------------------------------------
  const Tensor ta = V(DType::Bool, {4}, {0, 0, 1, 1}), tb = V(DType::Bool, {4}, {0, 1, 0, 1});
  L.Add("LogicalAnd", "truth_table", DType::Bool, Fn2(LogicalAnd), {ta, tb},
        {V(DType::Bool, {4}, {0, 0, 0, 1})});
  L.Add("LogicalOr", "truth_table", DType::Bool, Fn2(LogicalOr), {ta, tb},
        {V(DType::Bool, {4}, {0, 1, 1, 1})});
  L.Add("LogicalXor", "truth_table", DType::Bool, Fn2(LogicalXor), {ta, tb},
        {V(DType::Bool, {4}, {0, 1, 1, 0})});
  const Tensor bm = V(DType::Bool, {2, 2}, {1, 0, 1, 1});
  L.Add("LogicalAnd", "broadcast_scalar", DType::Bool, Fn2(LogicalAnd), {bm, S(DType::Bool, 1)}, {bm});
  L.Add("LogicalOr", "broadcast_row", DType::Bool, Fn2(LogicalOr), {bm, V(DType::Bool, {1, 2}, {0, 1})},
        {V(DType::Bool, {2, 2}, {1, 1, 1, 1})});
  L.Add("LogicalXor", "broadcast_column", DType::Bool, Fn2(LogicalXor), {bm, V(DType::Bool, {2, 1}, {1, 0})},
        {V(DType::Bool, {2, 2}, {0, 1, 1, 1})});

  // ---- Bitwise and shifts (integers) --------------------------------------------------------------
  for (DType d : kInts) {
    const int bits = DTypeBits(d);
    const int64_t top = static_cast<int64_t>(uint64_t{1} << (bits - 1));
    const Tensor a = W(d, {3}, {0b1100, -1, 0}), b = W(d, {3}, {0b1010, 0b0110, -1});
    L.Add("BitwiseAnd", "values", d, Fn2(BitwiseAnd), {a, b}, {W(d, {3}, {0b1000, 0b0110, 0})});
    L.Add("BitwiseOr", "values", d, Fn2(BitwiseOr), {a, b}, {W(d, {3}, {0b1110, -1, -1})});
    L.Add("BitwiseXor", "values", d, Fn2(BitwiseXor), {a, b}, {W(d, {3}, {0b0110, ~int64_t{0b0110}, -1})});
    L.Add("BitwiseAnd", "broadcast_scalar", d, Fn2(BitwiseAnd), {W(d, {3}, {5, 6, 7}), W(d, {}, {3})},
          {W(d, {3}, {1, 2, 3})});
    L.Add("BitwiseShiftLeft", "values", d, Fn2(BitwiseShiftLeft),
          {W(d, {4}, {1, 3, -1, 1}), W(d, {4}, {0, 2, 1, bits - 1})}, {W(d, {4}, {1, 12, -2, top})});
    const uint64_t ones = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    L.Add("BitwiseShiftRightLogical", "values", d, Fn2(BitwiseShiftRightLogical),
          {W(d, {4}, {8, -1, top, 12}), W(d, {4}, {1, 1, bits - 1, 2})},
          {W(d, {4}, {4, static_cast<int64_t>(ones >> 1), 1, 3})});
    L.Add("BitwiseShiftRightArithmetic", "positive", d, Fn2(BitwiseShiftRightArithmetic),
          {W(d, {3}, {8, 12, 1}), W(d, {3}, {1, 2, 1})}, {W(d, {3}, {4, 3, 0})});
    L.Add("BitwiseShiftLeft", "broadcast_scalar", d, Fn2(BitwiseShiftLeft),
          {W(d, {3}, {1, 2, 3}), W(d, {}, {2})}, {W(d, {3}, {4, 8, 12})});
  }
  for (DType d : kSignedInts) {
    const int bits = DTypeBits(d);
    L.Add("BitwiseShiftRightArithmetic", "sign_fill", d, Fn2(BitwiseShiftRightArithmetic),
          {W(d, {4}, {-8, -1, MinI(d), -7}), W(d, {4}, {1, 5, bits - 1, 1})}, {W(d, {4}, {-4, -1, -1, -4})});
  }
}

}  // namespace kiln::conformance::internal
