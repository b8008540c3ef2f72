// Rows for the integer semantics every backend must share: Div truncates toward zero and Rem
// takes the dividend's sign; x/0 is -1 (all bits set) and x%0 is x; INT_MIN/-1 is INT_MIN;
// arithmetic wraps; shifts by the bit width or more give 0 (the sign fill for arithmetic right
// shifts).

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

void AddIntegerSemanticsCases(CaseList& L) {
  for (DType d : kSignedInts) {
    const int64_t lo = MinI(d), hi = MaxI(d);
    L.Add("Div", "truncates_toward_zero", d, Fn2(Div), {W(d, {4}, {7, -7, 7, -7}), W(d, {4}, {2, 2, -2, -2})},
          {W(d, {4}, {3, -3, -3, 3})});
    L.Add("Rem", "dividend_sign", d, Fn2(Rem), {W(d, {4}, {7, -7, 7, -7}), W(d, {4}, {2, 2, -2, -2})},
          {W(d, {4}, {1, -1, 1, -1})});
    L.Add("Div", "by_zero_all_bits", d, Fn2(Div), {W(d, {3}, {5, -5, 0}), W(d, {3}, {0, 0, 0})},
          {W(d, {3}, {-1, -1, -1})});
    L.Add("Rem", "by_zero_is_x", d, Fn2(Rem), {W(d, {3}, {5, -5, 0}), W(d, {3}, {0, 0, 0})},
          {W(d, {3}, {5, -5, 0})});
    L.Add("Div", "min_by_minus_one", d, Fn2(Div), {W(d, {2}, {lo, lo}), W(d, {2}, {-1, 1})},
          {W(d, {2}, {lo, lo})});
    L.Add("Rem", "min_by_minus_one", d, Fn2(Rem), {W(d, {1}, {lo}), W(d, {1}, {-1})}, {W(d, {1}, {0})});
    L.Add("DivScalar", "truncates", d, P([](const std::vector<Node>& p) { return DivScalar(p[0], -2); }),
          {W(d, {3}, {7, -7, 1})}, {W(d, {3}, {-3, 3, 0})});
    L.Add("ModScalar", "dividend_sign", d, P([](const std::vector<Node>& p) { return ModScalar(p[0], 3); }),
          {W(d, {3}, {-7, 7, -3})}, {W(d, {3}, {-1, 1, 0})});
    // Wrapping.
    L.Add("Add", "wraps", d, Fn2(Add), {W(d, {2}, {hi, lo}), W(d, {2}, {1, -1})}, {W(d, {2}, {lo, hi})});
    L.Add("Sub", "wraps", d, Fn2(Sub), {W(d, {2}, {lo, hi}), W(d, {2}, {1, -1})}, {W(d, {2}, {hi, lo})});
    L.Add("Mul", "wraps", d, Fn2(Mul), {W(d, {2}, {hi, lo}), W(d, {2}, {2, -1})}, {W(d, {2}, {-2, lo})});
    L.Add("Neg", "min_wraps", d, Fn1(Neg), {W(d, {1}, {lo})}, {W(d, {1}, {lo})});
    L.Add("Abs", "min_wraps", d, Fn1(Abs), {W(d, {1}, {lo})}, {W(d, {1}, {lo})});
    L.Add("AddScalar", "wraps", d, P([](const std::vector<Node>& p) { return AddScalar(p[0], 1); }),
          {W(d, {1}, {hi})}, {W(d, {1}, {lo})});
    // Shifts by the width or more.
    const int bits = DTypeBits(d);
    L.Add("BitwiseShiftRightArithmetic", "by_width_sign_fill", d, Fn2(BitwiseShiftRightArithmetic),
          {W(d, {4}, {-8, 8, -1, hi}), W(d, {4}, {bits, bits, bits + 3, bits})}, {W(d, {4}, {-1, 0, -1, 0})});
  }
  for (DType d : kUnsignedInts) {
    L.Add("Div", "truncates", d, Fn2(Div), {W(d, {3}, {7, 9, -1}), W(d, {3}, {2, 10, -1})},
          {W(d, {3}, {3, 0, 1})});
    L.Add("Div", "by_zero_all_bits", d, Fn2(Div), {W(d, {2}, {5, 0}), W(d, {2}, {0, 0})},
          {W(d, {2}, {-1, -1})});
    L.Add("Rem", "by_zero_is_x", d, Fn2(Rem), {W(d, {2}, {5, -1}), W(d, {2}, {0, 0})}, {W(d, {2}, {5, -1})});
    L.Add("Rem", "large", d, Fn2(Rem), {W(d, {2}, {-1, -1}), W(d, {2}, {-2, 2})}, {W(d, {2}, {1, 1})});
    L.Add("Add", "wraps", d, Fn2(Add), {W(d, {2}, {-1, -2}), W(d, {2}, {1, 3})}, {W(d, {2}, {0, 1})});
    L.Add("Sub", "wraps", d, Fn2(Sub), {W(d, {2}, {0, 1}), W(d, {2}, {1, 3})}, {W(d, {2}, {-1, -2})});
    L.Add("Mul", "wraps", d, Fn2(Mul), {W(d, {2}, {-1, -1}), W(d, {2}, {2, -1})}, {W(d, {2}, {-2, 1})});
    L.Add("SubScalar", "wraps", d, P([](const std::vector<Node>& p) { return SubScalar(p[0], 1); }),
          {W(d, {1}, {0})}, {W(d, {1}, {-1})});
    const int bits = DTypeBits(d);
    L.Add("BitwiseShiftRightArithmetic", "by_width", d, Fn2(BitwiseShiftRightArithmetic),
          {W(d, {2}, {8, 1}), W(d, {2}, {bits, bits + 1})}, {W(d, {2}, {0, 0})});
  }
  for (DType d : kInts) {
    const int bits = DTypeBits(d);
    L.Add("BitwiseShiftLeft", "by_width_is_zero", d, Fn2(BitwiseShiftLeft),
          {W(d, {3}, {1, -1, 3}), W(d, {3}, {bits, bits, bits + 3})}, {W(d, {3}, {0, 0, 0})});
    L.Add("BitwiseShiftRightLogical", "by_width_is_zero", d, Fn2(BitwiseShiftRightLogical),
          {W(d, {3}, {1, -1, -8}), W(d, {3}, {bits, bits, bits + 3})}, {W(d, {3}, {0, 0, 0})});
    L.Add("Square", "wraps", d, Fn1(Square), {W(d, {1}, {int64_t{1} << (bits / 2)})}, {W(d, {1}, {0})});
    // The dtype's largest shift amount.
    const int64_t amount = IsUnsigned(d) ? -1 : MaxI(d);
    L.Add("BitwiseShiftLeft", "by_max_amount", d, Fn2(BitwiseShiftLeft),
          {W(d, {2}, {1, 5}), W(d, {2}, {amount, amount})}, {W(d, {2}, {0, 0})});
    L.Add("BitwiseShiftRightLogical", "by_max_amount", d, Fn2(BitwiseShiftRightLogical),
          {W(d, {2}, {1, -1}), W(d, {2}, {amount, amount})}, {W(d, {2}, {0, 0})});
  }
}

}  // namespace kiln::conformance::internal
