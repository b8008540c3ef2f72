// Gradient rules of Complex, Real, Imag, Conj and Fft, in the conjugate convention (see
// kiln/graph/ops_complex.h): a complex value's adjoint is dL/dRe + i dL/dIm.

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::FftType;
using compute::OpType;
using V = std::vector<Node>;

namespace {

V ComplexRule(const VJPContext& c) { return {Real(c.Adjoint()), Imag(c.Adjoint())}; }
V RealRule(const VJPContext& c) {
  Node a = c.Adjoint();
  return {Complex(a, ZerosLike(a))};
}
V ImagRule(const VJPContext& c) {
  Node a = c.Adjoint();
  return {Complex(ZerosLike(a), a)};
}
V ConjRule(const VJPContext& c) { return {Conj(c.Adjoint())}; }

/// The transform of kind `type` and length n of x (a primitive: no default lengths).
Node Transform(Node x, FftType type, int64_t n) {
  compute::OpAttributes at;
  at.fft_type = type;
  at.fft_length = n;
  return Prim(OpType::Fft, {x}, std::move(at));
}

/// The per-frequency weights [1, 2, ..., 2, 1] (a single 1 at the end only for even n) of the
/// m = n/2+1 non-negative frequencies, as a [1, ..., 1, m] constant of rank `rank` and dtype
/// `dtype` (it broadcasts against the frequencies): each stands for itself and, but for the
/// frequency 0 and (even n) n/2, for its conjugate too.
Node HermitianWeights(Graph& g, int64_t n, int rank, DType dtype) {
  const int64_t m = n / 2 + 1;
  std::vector<double> w(static_cast<size_t>(m), 2.0);
  w.front() = 1.0;
  if (n % 2 == 0) w.back() = 1.0;
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  dims.back() = m;
  return Reshape(ConvertDType(Const(g, w), dtype), dims);
}

V FftRule(const VJPContext& c) {
  const FftType type = c.attrs().fft_type;
  const int64_t n = c.attrs().fft_length;
  Node a = c.Adjoint();
  const auto scale = static_cast<double>(n);
  switch (type) {
    case FftType::Forward:
      // The adjoint of the DFT matrix F is conj(F) = n * F^-1.
      return {Transform(a, FftType::Inverse, n) * scale};
    case FftType::Inverse:
      return {Transform(a, FftType::Forward, n) / scale};
    case FftType::ForwardReal: {
      // y[k] = sum_t x[t] e^(-2 pi i k t / n) for k < m = n/2+1 and a real x: dL/dx[t] =
      // Re(sum_k a[k] e^(2 pi i k t / n)). The inverse real transform of a / w computes exactly
      // that sum divided by n, w[k] counting how many frequencies a[k] stands for.
      Node w = HermitianWeights(c.graph(), n, a.rank(), ComplexPartDType(a.dtype()));
      return {Transform(a / ConvertDType(w, a.dtype()), FftType::InverseReal, n) * scale};
    }
    case FftType::InverseReal: {
      // x = Re(F^-1 X_full) with X_full the Hermitian extension of the m values: dL/dX[k] is
      // (w[k] / n) times the real transform of the adjoint.
      Node w = HermitianWeights(c.graph(), n, a.rank(), ComplexPartDType(c.OperandShape(0).dtype()));
      Node spectrum = Transform(a, FftType::ForwardReal, n);
      return {spectrum * ConvertDType(w / scale, spectrum.dtype())};
    }
  }
  return {Node()};
}

}  // namespace

void RegisterComplexRules(RuleTable& t) {
  t.Set(OpType::Complex, ComplexRule);
  t.Set(OpType::Real, RealRule);
  t.Set(OpType::Imag, ImagRule);
  t.Set(OpType::Conj, ConjRule);
  t.Set(OpType::Fft, FftRule);
}

}  // namespace kiln::graph::autodiff
