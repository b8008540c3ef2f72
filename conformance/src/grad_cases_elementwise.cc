// Gradient rows of the elementwise ops: every differentiable unary and binary primitive on
// random inputs inside its smooth domain, in several shapes (scalar, empty, matrix), binary ops
// with broadcasting (row, column, scalar, both), Where, Clamp and ConvertDType.

#include "grad_internal.h"

namespace kiln::conformance::internal {

namespace {

struct UnaryRow {
  const char* name;
  Node (*fn)(Node);
  double lo, hi;
};

}  // namespace

void AddElementwiseGrads(std::vector<GradCase>& out) {
  GradList L(out, "elementwise");
  const UnaryRow unary[] = {
      {"Neg", graph::Neg, -2, 2},       {"Abs", graph::Abs, 0.1, 2},  // one side of the kink
      {"Sqrt", graph::Sqrt, 0.2, 3},    {"Rsqrt", graph::Rsqrt, 0.2, 3},
      {"Exp", graph::Exp, -2, 2},       {"Expm1", graph::Expm1, -2, 2},
      {"Log", graph::Log, 0.2, 3},      {"Log1p", graph::Log1p, -0.5, 2},
      {"Sin", graph::Sin, -3, 3},       {"Cos", graph::Cos, -3, 3},
      {"Tanh", graph::Tanh, -2, 2},     {"Sigmoid", graph::Sigmoid, -3, 3},
      {"Erf", graph::Erf, -2, 2},       {"Tan", graph::Tan, -1.2, 1.2},
      {"Asin", graph::Asin, -0.8, 0.8}, {"Acos", graph::Acos, -0.8, 0.8},
      {"Atan", graph::Atan, -3, 3},     {"Sinh", graph::Sinh, -2, 2},
      {"Cosh", graph::Cosh, -2, 2},     {"Asinh", graph::Asinh, -3, 3},
      {"Acosh", graph::Acosh, 1.2, 3},  {"Atanh", graph::Atanh, -0.8, 0.8},
      {"Square", graph::Square, -2, 2}, {"Reciprocal", graph::Reciprocal, 0.3, 2},
  };
  for (const UnaryRow& u : unary) {
    L.Add(std::string(u.name) + "/matrix", Fn1(u.fn), {L.Rand({2, 3}, u.lo, u.hi)});
    L.Add(std::string(u.name) + "/scalar", Fn1(u.fn), {L.Rand({}, u.lo, u.hi)});
  }
  L.Add("Abs/negative", Fn1(graph::Abs), {L.Rand({4}, -2, -0.1)});
  L.Add("Tanh/empty", Fn1(graph::Tanh), {L.Rand({0, 3})});
  // Piecewise constant: zero gradient away from the steps.
  L.Add("Floor/zero", P([](const std::vector<Node>& p) { return graph::Floor(p[0]) + p[0]; }),
        {L.Rand({5}, 0.1, 0.9)});
  L.Add("Round/zero", P([](const std::vector<Node>& p) { return graph::Round(p[0]) * p[0]; }),
        {L.Rand({5}, 0.1, 0.4)});
  L.Add("Sign/zero", P([](const std::vector<Node>& p) { return graph::Sign(p[0]) * p[0]; }),
        {L.Rand({5}, 0.1, 1)});
  L.Add("Ceil/zero", P([](const std::vector<Node>& p) { return graph::Ceil(p[0]) * p[0]; }),
        {L.Rand({5}, 0.1, 0.9)});

  struct BinaryRow {
    const char* name;
    Node (*fn)(Node, Node);
    double alo, ahi, blo, bhi;
  };
  const BinaryRow binary[] = {
      {"Add", graph::Add, -2, 2, -2, 2},        {"Sub", graph::Sub, -2, 2, -2, 2},
      {"Mul", graph::Mul, -2, 2, -2, 2},        {"Div", graph::Div, -2, 2, 0.5, 2},
      {"Pow", graph::Pow, 0.3, 2, -1.5, 1.5},   {"Atan2", graph::Atan2, -2, 2, 0.3, 2},
      {"Rem", graph::Rem, 1.1, 1.9, 0.5, 0.52},  // x/y stays inside (2, 4): away from jumps
      {"Max", graph::Max, -2, 2, -2, 2},        {"Min", graph::Min, -2, 2, -2, 2},
  };
  for (const BinaryRow& b : binary) {
    const std::string n = b.name;
    L.Add(n + "/same_shape", Fn2(b.fn), {L.Rand({2, 3}, b.alo, b.ahi), L.Rand({2, 3}, b.blo, b.bhi)});
    L.Add(n + "/broadcast_row", Fn2(b.fn), {L.Rand({2, 3}, b.alo, b.ahi), L.Rand({1, 3}, b.blo, b.bhi)});
    L.Add(n + "/broadcast_column_first", Fn2(b.fn),
          {L.Rand({2, 1}, b.alo, b.ahi), L.Rand({2, 3}, b.blo, b.bhi)});
    L.Add(n + "/broadcast_both", Fn2(b.fn), {L.Rand({2, 1}, b.alo, b.ahi), L.Rand({1, 3}, b.blo, b.bhi)});
    L.Add(n + "/scalar", Fn2(b.fn), {L.Rand({}, b.alo, b.ahi), L.Rand({3}, b.blo, b.bhi)});
    L.Add(n + "/empty", Fn2(b.fn), {L.Rand({0, 2}, b.alo, b.ahi), L.Rand({1, 2}, b.blo, b.bhi)});
  }
  L.Add("Pow/zero_exponent", Fn2(graph::Pow),
        {L.Rand({3}, 0.5, 2), Tensor::FromFlat(Shape(DType::Float64, {3}), std::vector<double>{0, 0, 0})})
      .second_order = false;
  L.Add("Where/mixed", P([](const std::vector<Node>& p) {
          return graph::Where(graph::Greater(p[0], p[1]), p[0] * 2, p[1]);
        }),
        {L.Distinct({2, 3}), L.Distinct({2, 3}, 1.1, 2)});
  L.Add("Where/broadcast", P([](const std::vector<Node>& p) {
          return graph::Where(graph::Greater(p[0], graph::ScalarLike(p[0], 0)), p[0], p[1]);
        }),
        {L.Distinct({2, 3}), L.Rand({})});
  L.Add("Clamp/inside_and_outside",
        P([](const std::vector<Node>& p) { return graph::Clamp(p[1], p[0], p[2]); }),
        {L.Distinct({6}, -2, 2), L.Rand({}, -1.1, -0.9), L.Rand({}, 0.9, 1.1)});
  // Float32 inside: a quadratic, so a large step is exact and float32 rounding stays small.
  GradCase& f32 = L.Add("ConvertDType/f32_roundtrip", P([](const std::vector<Node>& p) {
                          return graph::ConvertDType(graph::Square(graph::ConvertDType(p[0], DType::Float32)),
                                                     DType::Float64);
                        }),
                        {L.Rand({3})});
  f32.epsilon = 1e-2;
  f32.tolerance = 1e-5;
}

}  // namespace kiln::conformance::internal
