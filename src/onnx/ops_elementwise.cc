// ONNX's elementwise operators: math, comparisons, logic, casts and activations (NumPy
// broadcasting through SameRank and kiln's size-1 broadcasting).

#include <fmt/format.h>

#include <cmath>

#include "kiln/graph/ops_util.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

Node LeakyReluOf(Node x, double alpha) {
  return graph::Where(graph::GreaterOrEqual(x, graph::ZerosLike(x)), x, x * alpha);
}
Node EluOf(Node x, double alpha) {
  return graph::Where(graph::GreaterOrEqual(x, graph::ZerosLike(x)), x, graph::Expm1(x) * alpha);
}
Node HardSigmoidOf(Node x, double alpha, double beta) {
  Node y = x * alpha + beta;
  return graph::Min(graph::Max(y, graph::ZerosLike(y)), graph::OnesLike(y));
}
Node ThresholdedReluOf(Node x, double alpha) {
  return graph::Where(graph::Greater(x, graph::ScalarLike(x, alpha)), x, graph::ZerosLike(x));
}
Node SoftsignOf(Node x) { return x / (graph::Abs(x) + 1); }

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

template <Node (*F)(Node)>
V Unary(const Context& c) {
  return {F(c.In(0))};
}

/// The operands of a binary op, broadcast to one rank. Before opset 7 broadcasting was opt-in:
/// `broadcast` 1 lets B (of lower rank) broadcast against A, aligned at `axis` when given (else
/// with the trailing axes, as NumPy); without it the shapes must be equal.
std::pair<Node, Node> BinaryOperands(const Context& c, Node a, Node b) {
  if (c.opset() >= 7) return SameRank(a, b);
  if (c.Int("broadcast", 0) == 0) {
    if (a.shape().Dimensions() != b.shape().Dimensions())
      c.Fail(fmt::format("{} and {} differ, and broadcast is 0 (opset {} broadcasts only when asked)",
                         a.shape(), b.shape(), c.opset()));
    return {a, b};
  }
  if (b.rank() > a.rank())
    c.Fail(fmt::format("with broadcast 1, B {} must not outrank A {}", b.shape(), a.shape()));
  if (!c.HasAttr("axis")) return SameRank(a, b);
  const int axis = Axis(c, c.Int("axis", 0), a.rank());
  if (axis + b.rank() > a.rank())
    c.Fail(fmt::format("B {} placed at axis {} runs past A {}", b.shape(), axis, a.shape()));
  std::vector<int64_t> dims(static_cast<size_t>(axis), 1);
  dims.insert(dims.end(), b.shape().Dimensions().begin(), b.shape().Dimensions().end());
  dims.resize(static_cast<size_t>(a.rank()), 1);
  return {a, Reshape(b, dims)};
}

template <Node (*F)(Node, Node)>
V Binary(const Context& c) {
  auto [a, b] = BinaryOperands(c, c.In(0), c.In(1));
  return {F(a, b)};
}

/// Sum, Mean, Max, Min over any number of inputs.
template <Node (*F)(Node, Node)>
V Variadic(const Context& c) {
  Node acc = c.In(0);
  for (int i = 1; i < c.NumInputs(); ++i) {
    auto [a, b] = SameRank(acc, c.In(i));
    acc = F(a, b);
  }
  return {acc};
}

V Mean(const Context& c) {
  Node sum = Variadic<graph::Add>(c)[0];
  return {DivScalar(sum, c.NumInputs())};
}

V Identity(const Context& c) { return {c.In(0)}; }

V Cast(const Context& c) {
  const DType to = DTypeFromOnnx(static_cast<int>(c.Int("to", 0)), "Cast");
  return {ConvertDType(c.In(0), to)};
}

V CastLike(const Context& c) { return {ConvertDType(c.In(0), c.In(1).dtype())}; }

V Clip(const Context& c) {
  Node x = c.In(0);
  if (c.opset() < 11) {
    const float lo = c.Float("min", -std::numeric_limits<float>::infinity());
    const float hi = c.Float("max", std::numeric_limits<float>::infinity());
    return {Min(Max(x, ScalarLike(x, lo)), ScalarLike(x, hi))};
  }
  if (c.Has(1)) x = Max(x, c.In(1));
  if (c.Has(2)) x = Min(x, c.In(2));
  return {x};
}

V Relu(const Context& c) {
  Node x = c.In(0);
  return {Max(x, ZerosLike(x))};
}
V LeakyRelu(const Context& c) { return {LeakyReluOf(c.In(0), c.Float("alpha", 0.01f))}; }
V PRelu(const Context& c) {
  Node x = c.In(0), slope = c.In(1);
  if (c.opset() < 7 && slope.rank() == 1 && x.rank() > 2 &&
      slope.shape().Dimensions()[0] == x.shape().Dimensions()[1]) {
    // Before opset 7 a slope of one value per channel applies along axis 1.
    std::vector<int64_t> dims(static_cast<size_t>(x.rank() - 1), 1);
    dims[0] = slope.shape().Dimensions()[0];
    slope = Reshape(slope, dims);
  }
  auto [a, s] = SameRank(x, slope);
  return {Where(GreaterOrEqual(a, ZerosLike(a)), a, a * s)};
}
V Elu(const Context& c) { return {EluOf(c.In(0), c.Float("alpha", 1.0f))}; }
V Selu(const Context& c) {
  Node x = c.In(0);
  const double alpha = c.Float("alpha", 1.67326319217681884765625f);
  const double gamma = c.Float("gamma", 1.05070102214813232421875f);
  return {Where(Greater(x, ZerosLike(x)), x * gamma, (Exp(x) - 1) * (alpha * gamma))};
}
V Celu(const Context& c) {
  Node x = c.In(0);
  const double alpha = c.Float("alpha", 1.0f);
  return {Max(x, ZerosLike(x)) + Min(ZerosLike(x), Expm1(x / alpha) * alpha)};
}
V ThresholdedRelu(const Context& c) { return {ThresholdedReluOf(c.In(0), c.Float("alpha", 1.0f))}; }
V Sigmoid(const Context& c) { return {graph::Sigmoid(c.In(0))}; }
V HardSigmoid(const Context& c) {
  return {HardSigmoidOf(c.In(0), c.Float("alpha", 0.2f), c.Float("beta", 0.5f))};
}
V HardSwish(const Context& c) {
  Node x = c.In(0);
  Node y = x * (1.0 / 6) + 0.5;
  return {x * Min(Max(y, ZerosLike(y)), OnesLike(y))};
}
V Softplus(const Context& c) { return {graph::Softplus(c.In(0))}; }
V Softsign(const Context& c) { return {SoftsignOf(c.In(0))}; }
V Mish(const Context& c) {
  Node x = c.In(0);
  return {x * Tanh(graph::Softplus(x))};
}
V Shrink(const Context& c) {
  Node x = c.In(0);
  const double bias = c.Float("bias", 0), lambd = c.Float("lambd", 0.5f);
  return {Where(Less(x, ScalarLike(x, -lambd)), x + bias,
                Where(Greater(x, ScalarLike(x, lambd)), x - bias, ZerosLike(x)))};
}
V Reciprocal(const Context& c) { return {graph::Reciprocal(c.In(0))}; }

V Pow(const Context& c) {
  Node x = c.In(0);
  // A known exponent of 2 (LayerNorm's variance, as exporters write it) is x * x, as ONNX
  // Runtime computes it: correctly rounded, and an elementwise product instead of powf.
  if (const std::optional<Tensor>& e = c.Constant(1); e && e->shape().Size() == 1 && IsFloat(x.dtype()) &&
                                                      e->shape().Rank() <= x.rank() &&
                                                      e->ToDoubles()[0] == 2.0)
    return {x * x};
  Node y = c.In(1);
  if (y.dtype() != x.dtype()) y = ConvertDType(y, x.dtype());
  auto [a, b] = BinaryOperands(c, x, y);
  return {graph::Pow(a, b)};
}

V Mod(const Context& c) {
  auto [a, b] = SameRank(c.In(0), c.In(1));
  if (c.Int("fmod", 0) != 0) return {Rem(a, b)};  // C's fmod: the sign of the dividend.
  if (IsFloat(a.dtype())) c.Fail("fmod must be 1 for float operands");
  // Python's %: the sign of the divisor.
  Node r = Rem(a, b);
  Node fix = LogicalAnd(NotEqual(r, ZerosLike(r)), NotEqual(Less(r, ZerosLike(r)), Less(b, ZerosLike(b))));
  return {Where(fix, r + b, r)};
}

V Not(const Context& c) { return {LogicalNot(c.In(0))}; }
V IsNaN(const Context& c) { return {graph::IsNaN(c.In(0))}; }
V IsInf(const Context& c) {
  Node x = c.In(0);
  Node inf = Equal(Abs(x), ScalarLike(x, std::numeric_limits<double>::infinity()));
  const bool pos = c.Int("detect_positive", 1) != 0, neg = c.Int("detect_negative", 1) != 0;
  if (pos && neg) return {inf};
  if (!pos && !neg) return {Zeros(c.graph(), x.shape().WithDType(DType::Bool))};
  return {LogicalAnd(inf, pos ? Greater(x, ZerosLike(x)) : Less(x, ZerosLike(x)))};
}

V Where(const Context& c) {
  Node cond = c.In(0), a = c.In(1), b = c.In(2);
  const int rank = std::max({cond.rank(), a.rank(), b.rank()});
  return {graph::Where(ExpandLeftToRank(cond, rank), ExpandLeftToRank(a, rank), ExpandLeftToRank(b, rank))};
}

V BitShift(const Context& c) {
  auto [a, b] = SameRank(c.In(0), c.In(1));
  return {c.String("direction", "") == "LEFT" ? BitwiseShiftLeft(a, b) : BitwiseShiftRightLogical(a, b)};
}

}  // namespace

void AddElementwiseConverters(std::map<std::string, Converter>& m) {
  m["Abs"] = Unary<graph::Abs>;
  m["Neg"] = Unary<graph::Neg>;
  m["Sqrt"] = Unary<graph::Sqrt>;
  m["Exp"] = Unary<graph::Exp>;
  m["Log"] = Unary<graph::Log>;
  m["Sin"] = Unary<graph::Sin>;
  m["Cos"] = Unary<graph::Cos>;
  m["Tan"] = Unary<graph::Tan>;
  m["Asin"] = Unary<graph::Asin>;
  m["Acos"] = Unary<graph::Acos>;
  m["Atan"] = Unary<graph::Atan>;
  m["Sinh"] = Unary<graph::Sinh>;
  m["Cosh"] = Unary<graph::Cosh>;
  m["Asinh"] = Unary<graph::Asinh>;
  m["Acosh"] = Unary<graph::Acosh>;
  m["Atanh"] = Unary<graph::Atanh>;
  m["Tanh"] = Unary<graph::Tanh>;
  m["Erf"] = Unary<graph::Erf>;
  m["Floor"] = Unary<graph::Floor>;
  m["Ceil"] = Unary<graph::Ceil>;
  m["Round"] = Unary<graph::Round>;
  m["Sign"] = Unary<graph::Sign>;
  m["Reciprocal"] = Reciprocal;
  m["Sigmoid"] = Sigmoid;
  m["Relu"] = Relu;
  m["LeakyRelu"] = LeakyRelu;
  m["PRelu"] = PRelu;
  m["Elu"] = Elu;
  m["Selu"] = Selu;
  m["Celu"] = Celu;
  m["ThresholdedRelu"] = ThresholdedRelu;
  m["HardSigmoid"] = HardSigmoid;
  m["HardSwish"] = HardSwish;
  m["Softplus"] = Softplus;
  m["Softsign"] = Softsign;
  m["Mish"] = Mish;
  m["Shrink"] = Shrink;
  m["Add"] = Binary<graph::Add>;
  m["Sub"] = Binary<graph::Sub>;
  m["Mul"] = Binary<graph::Mul>;
  m["Div"] = Binary<graph::Div>;
  m["Pow"] = Pow;
  m["Mod"] = Mod;
  m["Equal"] = Binary<graph::Equal>;
  m["Less"] = Binary<graph::Less>;
  m["LessOrEqual"] = Binary<graph::LessOrEqual>;
  m["Greater"] = Binary<graph::Greater>;
  m["GreaterOrEqual"] = Binary<graph::GreaterOrEqual>;
  m["And"] = Binary<graph::LogicalAnd>;
  m["Or"] = Binary<graph::LogicalOr>;
  m["Xor"] = Binary<graph::LogicalXor>;
  m["BitwiseAnd"] = Binary<graph::BitwiseAnd>;
  m["BitwiseOr"] = Binary<graph::BitwiseOr>;
  m["BitwiseXor"] = Binary<graph::BitwiseXor>;
  m["BitwiseNot"] = Unary<graph::BitwiseNot>;
  m["BitShift"] = BitShift;
  m["Not"] = Not;
  m["IsNaN"] = IsNaN;
  m["IsInf"] = IsInf;
  m["Where"] = Where;
  m["Sum"] = Variadic<graph::Add>;
  m["Max"] = Variadic<graph::Max>;
  m["Min"] = Variadic<graph::Min>;
  m["Mean"] = Mean;
  m["Identity"] = Identity;
  m["Cast"] = Cast;
  m["CastLike"] = CastLike;
  m["Clip"] = Clip;
}

}  // namespace kiln::onnx::internal
