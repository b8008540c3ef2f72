// Gradient rules of the elementwise ops: unary, binary, Where and ConvertDType. Operands of
// binary primitives have equal shapes (the frontend broadcasts with BroadcastInDim, whose rule
// sums the gradient back), so these rules never reduce.

#include <cmath>
#include <numbers>

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using V = std::vector<Node>;

namespace {

Node Zero(Node like) { return ScalarLike(like, 0); }

// ---- Unary -----------------------------------------------------------------------------------

V NegRule(const VJPContext& c) { return {Neg(c.Adjoint())}; }
// Complex operands follow the conjugate convention (ops_complex.h): a holomorphic f's rule is
// adjoint * conj(f'(z)); Conj is the identity on floats, so one rule serves both.
V AbsRule(const VJPContext& c) {
  Node x = c.X(0);
  if (!IsComplex(x.dtype())) return {c.Adjoint() * Sign(x)};
  // |z| = sqrt(re² + im²): the gradient is adjoint * z / |z| (0 at z = 0).
  Node y = c.Y();
  Node unit = Where(Equal(y, Zero(y)), Zero(x), x / ConvertDType(y, x.dtype()));
  return {ConvertDType(c.Adjoint(), x.dtype()) * unit};
}
V SqrtRule(const VJPContext& c) { return {c.Adjoint() / (Conj(c.Y()) * 2)}; }
V RsqrtRule(const VJPContext& c) {
  Node y = Conj(c.Y());
  return {c.Adjoint() * (y * y * y) * -0.5};
}
V ExpRule(const VJPContext& c) { return {c.Adjoint() * Conj(c.Y())}; }
V Expm1Rule(const VJPContext& c) { return {c.Adjoint() * (c.Y() + 1)}; }
V LogRule(const VJPContext& c) { return {c.Adjoint() / Conj(c.X(0))}; }
V Log1pRule(const VJPContext& c) { return {c.Adjoint() / (c.X(0) + 1)}; }
V SinRule(const VJPContext& c) { return {c.Adjoint() * Cos(c.X(0))}; }
V CosRule(const VJPContext& c) { return {Neg(c.Adjoint() * Sin(c.X(0)))}; }
// d tan = 1 + tan^2.
V TanRule(const VJPContext& c) {
  Node y = c.Y();
  return {c.Adjoint() * (1 + y * y)};
}
// d asin = 1 / sqrt(1 - x^2), d acos its negation, d atan = 1 / (1 + x^2).
V AsinRule(const VJPContext& c) {
  Node x = c.X(0);
  return {c.Adjoint() * Rsqrt(1 - x * x)};
}
V AcosRule(const VJPContext& c) {
  Node x = c.X(0);
  return {Neg(c.Adjoint() * Rsqrt(1 - x * x))};
}
V AtanRule(const VJPContext& c) {
  Node x = c.X(0);
  return {c.Adjoint() / (1 + x * x)};
}
V SinhRule(const VJPContext& c) { return {c.Adjoint() * Cosh(c.X(0))}; }
V CoshRule(const VJPContext& c) { return {c.Adjoint() * Sinh(c.X(0))}; }
// d asinh = 1 / sqrt(x^2 + 1), d acosh = 1 / sqrt(x^2 - 1), d atanh = 1 / (1 - x^2).
V AsinhRule(const VJPContext& c) {
  Node x = c.X(0);
  return {c.Adjoint() * Rsqrt(x * x + 1)};
}
V AcoshRule(const VJPContext& c) {
  Node x = c.X(0);
  return {c.Adjoint() * Rsqrt(x * x - 1)};
}
V AtanhRule(const VJPContext& c) {
  Node x = c.X(0);
  return {c.Adjoint() / (1 - x * x)};
}
V TanhRule(const VJPContext& c) {
  Node y = c.Y();
  return {c.Adjoint() * (1 - y * y)};
}
V LogisticRule(const VJPContext& c) {
  Node y = c.Y();
  return {c.Adjoint() * (y * (1 - y))};
}
V ErfRule(const VJPContext& c) {
  Node x = c.X(0);
  return {c.Adjoint() * (Exp(Neg(x * x)) * (2 / std::sqrt(std::numbers::pi)))};
}

// ---- Binary ----------------------------------------------------------------------------------

V AddRule(const VJPContext& c) { return {c.Adjoint(), c.Adjoint()}; }
V SubRule(const VJPContext& c) { return {c.Adjoint(), Neg(c.Adjoint())}; }
V MulRule(const VJPContext& c) {
  return {c.Needs(0) ? c.Adjoint() * Conj(c.X(1)) : Node(), c.Needs(1) ? c.Adjoint() * Conj(c.X(0)) : Node()};
}
V DivRule(const VJPContext& c) {
  Node ga = c.Adjoint() / Conj(c.X(1));
  return {ga, c.Needs(1) ? Neg(ga * Conj(c.Y())) : Node()};
}
// x % y = x - trunc(x / y) * y.
V RemRule(const VJPContext& c) {
  Node g1;
  if (c.Needs(1)) {
    Node q = c.X(0) / c.X(1);
    g1 = Neg(c.Adjoint() * (Sign(q) * Floor(Abs(q))));
  }
  return {c.Adjoint(), g1};
}
// d/dx x^y = y x^(y-1) (0 where y == 0, so 0^0 has derivative 0 in x); d/dy = log(x) x^y (0 at x == 0).
V PowRule(const VJPContext& c) {
  Node x = c.X(0), y = c.X(1), a = c.Adjoint();
  Node gx, gy;
  if (c.Needs(0)) gx = a * Where(Equal(y, Zero(y)), Zero(y), y * Pow(x, y - 1));
  if (c.Needs(1)) {
    Node x_is_0 = Equal(x, Zero(x));
    gy = a * (Log(Where(x_is_0, OnesLike(x), x)) * c.Y());
  }
  return {gx, gy};
}
// Ties go to the first operand.
V MaxRule(const VJPContext& c) {
  Node first = GreaterOrEqual(c.X(0), c.X(1)), a = c.Adjoint();
  return {Where(first, a, Zero(a)), Where(first, Zero(a), a)};
}
V MinRule(const VJPContext& c) {
  Node first = LessOrEqual(c.X(0), c.X(1)), a = c.Adjoint();
  return {Where(first, a, Zero(a)), Where(first, Zero(a), a)};
}
// atan2(y, x): d/dy = x / (x² + y²), d/dx = -y / (x² + y²).
V Atan2Rule(const VJPContext& c) {
  Node y = c.X(0), x = c.X(1);
  Node s = c.Adjoint() / (x * x + y * y);
  return {s * x, Neg(s * y)};
}
V WhereRule(const VJPContext& c) {
  Node cond = c.X(0), a = c.Adjoint();
  return {Node(), c.Needs(1) ? Where(cond, a, Zero(a)) : Node(),
          c.Needs(2) ? Where(cond, Zero(a), a) : Node()};
}
// Between real and complex dtypes too: a real part's adjoint g becomes g + 0i, a complex
// adjoint's real part is a real operand's.
V ConvertRule(const VJPContext& c) { return {ConvertDType(c.Adjoint(), c.OperandShape(0).dtype())}; }

}  // namespace

void RegisterElementwiseRules(RuleTable& t) {
  t.Set(OpType::Neg, NegRule);
  t.Set(OpType::Abs, AbsRule);
  t.Set(OpType::Sqrt, SqrtRule);
  t.Set(OpType::Rsqrt, RsqrtRule);
  t.Set(OpType::Exp, ExpRule);
  t.Set(OpType::Expm1, Expm1Rule);
  t.Set(OpType::Log, LogRule);
  t.Set(OpType::Log1p, Log1pRule);
  t.Set(OpType::Sin, SinRule);
  t.Set(OpType::Cos, CosRule);
  t.Set(OpType::Tan, TanRule);
  t.Set(OpType::Asin, AsinRule);
  t.Set(OpType::Acos, AcosRule);
  t.Set(OpType::Atan, AtanRule);
  t.Set(OpType::Sinh, SinhRule);
  t.Set(OpType::Cosh, CoshRule);
  t.Set(OpType::Tanh, TanhRule);
  t.Set(OpType::Asinh, AsinhRule);
  t.Set(OpType::Acosh, AcoshRule);
  t.Set(OpType::Atanh, AtanhRule);
  t.Set(OpType::Logistic, LogisticRule);
  t.Set(OpType::Erf, ErfRule);
  for (OpType op : {OpType::Sign, OpType::Floor, OpType::Ceil, OpType::Round})
    t.Zero(op, "piecewise constant: derivative 0 wherever defined");
  t.Zero(OpType::StopGradient, "StopGradient blocks gradients");
  for (OpType op : {OpType::IsFinite, OpType::IsNaN}) t.None(op, "a predicate with a Bool result");
  for (OpType op :
       {OpType::LogicalNot, OpType::BitwiseNot, OpType::BitCount, OpType::Clz, OpType::LogicalAnd,
        OpType::LogicalOr, OpType::LogicalXor, OpType::BitwiseAnd, OpType::BitwiseOr, OpType::BitwiseXor,
        OpType::ShiftLeft, OpType::ShiftRightArithmetic, OpType::ShiftRightLogical})
    t.None(op, "a Bool or integer op");
  for (OpType op : {OpType::Equal, OpType::NotEqual, OpType::Less, OpType::LessOrEqual, OpType::Greater,
                    OpType::GreaterOrEqual})
    t.None(op, "a comparison with a Bool result");

  t.Set(OpType::Add, AddRule);
  t.Set(OpType::Sub, SubRule);
  t.Set(OpType::Mul, MulRule);
  t.Set(OpType::Div, DivRule);
  t.Set(OpType::Rem, RemRule);
  t.Set(OpType::Pow, PowRule);
  t.Set(OpType::Max, MaxRule);
  t.Set(OpType::Min, MinRule);
  t.Set(OpType::Atan2, Atan2Rule);
  t.Set(OpType::Where, WhereRule);
  t.Set(OpType::ConvertDType, ConvertRule);
  t.None(OpType::Bitcast, "it reinterprets bits");
}

}  // namespace kiln::graph::autodiff
