// Gradient rows of complex numbers: each function runs on complex values built from Float64
// parts (Complex(re, im)) and returns its result's parts (Real, Imag), so central differences
// in the real inputs check every rule on the way, in the conjugate convention of
// kiln/graph/ops_complex.h (a rule that forgot a conjugate fails here).

#include "grad_internal.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops_complex.h"
#include "kiln/graph/ops_util.h"

namespace kiln::conformance::internal {

namespace {

using Nodes = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// The parts of y (y itself when real).
Nodes Parts(Node y) {
  if (!IsComplex(y.dtype())) return {y};
  return {Real(y), Imag(y)};
}

/// A row of f(z) with z = Complex(p[0], p[1]).
template <typename F>
graph::GraphFn Unary(F f) {
  return P([f](const Nodes& p) { return Parts(f(Complex(p[0], p[1]))); });
}

/// A row of f(a, b) with a = Complex(p[0], p[1]), b = Complex(p[2], p[3]).
template <typename F>
graph::GraphFn Binary(F f) {
  return P([f](const Nodes& p) { return Parts(f(Complex(p[0], p[1]), Complex(p[2], p[3]))); });
}

}  // namespace

void AddComplexGrads(std::vector<GradCase>& out) {
  GradList L(out, "complex");
  // Parts in [0.5, 2): away from 0 (Abs, Div) and from the negative real axis (Sqrt, Log).
  auto parts = [&L](std::vector<int64_t> dims) {
    return std::vector<Tensor>{L.Rand(dims, 0.5, 2), L.Rand(dims, -2, 2)};
  };
  auto four = [&L](std::vector<int64_t> dims) {
    return std::vector<Tensor>{L.Rand(dims, 0.5, 2), L.Rand(dims, -2, 2), L.Rand(dims, 0.5, 2),
                               L.Rand(dims, -2, 2)};
  };
  L.Add("Complex.parts", P([](const Nodes& p) { return Parts(Complex(p[0], p[1]) * Complex(p[1], p[0])); }),
        parts({3}));
  L.Add("Conj", Unary([](Node z) { return Conj(z) * z * z; }), parts({3}));
  L.Add("Neg/complex", Unary([](Node z) { return Neg(z) * z; }), parts({3}));
  L.Add("Abs/complex", Unary([](Node z) { return Abs(z); }), parts({4}));
  L.Add("Sqrt/complex", Unary([](Node z) { return Sqrt(z); }), parts({4}));
  L.Add("Rsqrt/complex", Unary([](Node z) { return Rsqrt(z); }), parts({4}));
  L.Add("Exp/complex", Unary([](Node z) { return Exp(z); }), parts({4}));
  L.Add("Log/complex", Unary([](Node z) { return Log(z); }), parts({4}));
  L.Add("Add/complex", Binary([](Node a, Node b) { return (a + b) * a; }), four({3}));
  L.Add("Sub/complex", Binary([](Node a, Node b) { return (a - b) * b; }), four({3}));
  L.Add("Mul/complex", Binary([](Node a, Node b) { return a * b; }), four({3}));
  L.Add("Div/complex", Binary([](Node a, Node b) { return a / b; }), four({3}));
  L.Add("ReduceSum/complex", Unary([](Node z) { return ReduceSum(z * z, {1}); }), parts({2, 3}));
  L.Add("ReduceProduct/complex", Unary([](Node z) { return ReduceProduct(z, {0}); }), parts({3, 2}));
  L.Add("MatMul/complex", Binary([](Node a, Node b) { return MatMul(a, b); }), four({2, 2}));
  L.Add("Dot.General/complex", P([](const Nodes& p) {
          return Parts(Dot(Complex(p[0], p[1]), Complex(p[2], p[3])).General({2}, {0}, {1}, {0}));
        }),
        {L.Rand({2, 2, 3}), L.Rand({2, 2, 3}), L.Rand({2, 3, 2}), L.Rand({2, 3, 2})});
  L.Add("Transpose/complex", Unary([](Node z) { return Transpose(z * z, 0, 1); }), parts({2, 3}));
  L.Add("Gather/complex",
        P([](const Nodes& p) { return Parts(Gather(Complex(p[0], p[1]) * Complex(p[0], p[1]), p[2])); }),
        {L.Rand({4}), L.Rand({4}), I32({3, 1}, {2, 0, 2})});
  L.Add("ConvertDType/complex_to_real", Unary([](Node z) { return ConvertDType(z * z, DType::Float64); }),
        parts({3}));
  L.Add("ConvertDType/real_to_complex",
        P([](const Nodes& p) { return Parts(ConvertDType(p[0], DType::Complex128) * Complex(p[1], p[0])); }),
        {L.Rand({3}), L.Rand({3})});
  L.Add("Real.Imag", Unary([](Node z) { return Real(z) * Imag(z * z); }), parts({3}));
  // The transforms: a mixed-radix and a prime length, and the real ones of even and odd length.
  L.Add("FFT/6", Unary([](Node z) { return FFT(z * z); }), parts({2, 6}));
  L.Add("FFT/5", Unary([](Node z) { return FFT(z); }), parts({5}));
  L.Add("InverseFFT/6", Unary([](Node z) { return InverseFFT(z * z); }), parts({2, 6}));
  L.Add("InverseFFT/5", Unary([](Node z) { return InverseFFT(z); }), parts({5}));
  L.Add("RealFFT/6", P([](const Nodes& p) { return Parts(RealFFT(p[0] * p[0])); }), {L.Rand({2, 6})});
  L.Add("RealFFT/5", P([](const Nodes& p) { return Parts(RealFFT(p[0])); }), {L.Rand({5})});
  L.Add("InverseRealFFT/6", Unary([](Node z) { return InverseRealFFT(z * z); }), parts({2, 4}));
  L.Add("InverseRealFFT/5", Unary([](Node z) { return InverseRealFFT(z, {5}); }), parts({3}));
}

}  // namespace kiln::conformance::internal
