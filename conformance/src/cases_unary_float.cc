// Rows for the transcendental float functions, against NumPy's float64 values (unary.npz), and
// the half-precision rounding rule: half ops compute in float32 and round to nearest even after
// each op.

#include <cmath>
#include <string>

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

void AddUnaryFloatCases(CaseList& L) {
  struct Fn {
    const char* name;
    Node (*fn)(Node);
  };
  const Fn fns[] = {{"Sqrt", Sqrt}, {"Rsqrt", Rsqrt},     {"Exp", Exp},     {"Expm1", Expm1},
                    {"Log", Log},   {"Log1p", Log1p},     {"Sin", Sin},     {"Cos", Cos},
                    {"Tanh", Tanh}, {"Sigmoid", Sigmoid}, {"Erf", Erf},     {"Tan", Tan},
                    {"Asin", Asin}, {"Acos", Acos},       {"Atan", Atan},   {"Sinh", Sinh},
                    {"Cosh", Cosh}, {"Asinh", Asinh},     {"Acosh", Acosh}, {"Atanh", Atanh}};
  for (const Fn& f : fns) {
    const std::string x = std::string(f.name) + ".x", y = std::string(f.name) + ".y";
    for (DType d : kFloats) {
      L.Add(f.name, "numpy", d, Fn1(f.fn), {FixtureAs(d, "unary.npz", x, true)},
            {FixtureAs(d, "unary.npz", y, false)}, OneOp(d));
    }
  }
  // Hand-checked values, exact in every float dtype.
  for (DType d : kFloats) {
    Smooth(L.Add("Sqrt", "exact", d, Fn1(Sqrt), {V(d, {3}, {4, 0.25, 64})}, {V(d, {3}, {2, 0.5, 8})}));
    Smooth(L.Add("Rsqrt", "exact", d, Fn1(Rsqrt), {V(d, {3}, {4, 0.25, 64})}, {V(d, {3}, {0.5, 2, 0.125})}));
    Smooth(L.Add("Exp", "zero", d, Fn1(Exp), {V(d, {2}, {0, -0.0})}, {V(d, {2}, {1, 1})}));
    Smooth(L.Add("Log", "one", d, Fn1(Log), {V(d, {1}, {1})}, {V(d, {1}, {0})}));
    Smooth(L.Add("Tanh", "zero", d, Fn1(Tanh), {V(d, {1}, {0})}, {V(d, {1}, {0})}));
    // Exact points of the trigonometric and hyperbolic functions; odd ones keep the sign of zero.
    for (auto [name, fn] : {std::pair<const char*, Node (*)(Node)>{"Tan", Tan},
                            {"Asin", Asin},
                            {"Atan", Atan},
                            {"Sinh", Sinh},
                            {"Asinh", Asinh},
                            {"Atanh", Atanh}})
      Smooth(L.Add(name, "zeros", d, Fn1(fn), {V(d, {2}, {0, -0.0})}, {V(d, {2}, {0, -0.0})}));
    // The ends of Acos's and Acosh's domains: exact values, infinite slopes (no gradient check).
    L.Add("Acos", "one", d, Fn1(Acos), {V(d, {1}, {1})}, {V(d, {1}, {0})});
    L.Add("Acosh", "one", d, Fn1(Acosh), {V(d, {1}, {1})}, {V(d, {1}, {0})});
    Smooth(L.Add("Cosh", "zero", d, Fn1(Cosh), {V(d, {2}, {0, -0.0})}, {V(d, {2}, {1, 1})}));
    Smooth(L.Add("Sigmoid", "zero", d, Fn1(Sigmoid), {V(d, {1}, {0})}, {V(d, {1}, {0.5})}));
  }

  // Half precision: each op rounds to the half type. 1 + u/2 (u: the ulp at 1) is a tie that
  // rounds to 1, twice; computing the chain in float32 and rounding once would give 1 + u.
  {
    const double u16 = std::ldexp(1.0, -10), ub16 = std::ldexp(1.0, -7);
    L.Add("Add", "rounds_after_each_op", DType::Float16,
          P([](const std::vector<Node>& p) { return Add(Add(p[0], p[1]), p[1]); }),
          {V(DType::Float16, {1}, {1}), V(DType::Float16, {1}, {u16 / 2})}, {V(DType::Float16, {1}, {1})});
    L.Add("Add", "rounds_after_each_op", DType::BFloat16,
          P([](const std::vector<Node>& p) { return Add(Add(p[0], p[1]), p[1]); }),
          {V(DType::BFloat16, {1}, {1}), V(DType::BFloat16, {1}, {ub16 / 2})},
          {V(DType::BFloat16, {1}, {1})});
    // Mul computes in float32, then rounds once to nearest even: (1 + u) * 1.5 = 1.5 + 1.5u is a
    // tie between 1.5 + u (odd) and 1.5 + 2u (even).
    L.Add("Mul", "ties_to_even", DType::Float16, Fn2(Mul),
          {V(DType::Float16, {1}, {1 + u16}), V(DType::Float16, {1}, {1.5})},
          {V(DType::Float16, {1}, {1.5 + 2 * u16})});
    L.Add("Mul", "ties_to_even", DType::BFloat16, Fn2(Mul),
          {V(DType::BFloat16, {1}, {1 + ub16}), V(DType::BFloat16, {1}, {1.5})},
          {V(DType::BFloat16, {1}, {1.5 + 2 * ub16})});
    // Sub: (1 + 3u) - u/2 = 1 + 5u/2 is a tie between 1 + 2u and 1 + 3u: to even, 1 + 2u.
    L.Add("Sub", "ties_to_even", DType::Float16, Fn2(Sub),
          {V(DType::Float16, {1}, {1 + 3 * u16}), V(DType::Float16, {1}, {u16 / 2})},
          {V(DType::Float16, {1}, {1 + 2 * u16})});
    L.Add("Sub", "ties_to_even", DType::BFloat16, Fn2(Sub),
          {V(DType::BFloat16, {1}, {1 + 3 * ub16}), V(DType::BFloat16, {1}, {ub16 / 2})},
          {V(DType::BFloat16, {1}, {1 + 2 * ub16})});
    // Float16 overflows to infinity after an op whose float32 result is beyond 65504.
    L.Add("Mul", "overflows_to_inf", DType::Float16, Fn2(Mul),
          {V(DType::Float16, {2}, {256, -300}), V(DType::Float16, {2}, {256, 256})},
          {V(DType::Float16, {2}, {HUGE_VAL, -HUGE_VAL})});
    // A reduction is one op: it accumulates in float32 and rounds once at the end.
    L.Add("ReduceSum", "accumulates_in_float32", DType::Float16, Fn1([](Node x) { return ReduceSum(x); }),
          {V(DType::Float16, {3}, {1, u16 / 2, u16 / 2})}, {V(DType::Float16, {}, {1 + u16})});
    L.Add("ReduceSum", "accumulates_in_float32", DType::BFloat16, Fn1([](Node x) { return ReduceSum(x); }),
          {V(DType::BFloat16, {3}, {1, ub16 / 2, ub16 / 2})}, {V(DType::BFloat16, {}, {1 + ub16})});
  }
}

}  // namespace kiln::conformance::internal
