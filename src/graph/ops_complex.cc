// Complex, Real, Imag, Conj and the Fourier transforms.

#include "kiln/graph/ops_complex.h"

#include "graph/ops_internal.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using compute::FftType;
using compute::OpType;

Node Complex(Node re, Node im) {
  ops_internal::CheckNodes("Complex", {re, im});
  const Shape shape = ops_internal::BroadcastShape("Complex", {re, im});
  return ops_internal::Emit(
      "Complex", OpType::Complex,
      {ops_internal::BroadcastTo("Complex", re, shape), ops_internal::BroadcastTo("Complex", im, shape)});
}

Node Real(Node x) {
  ops_internal::CheckNodes("Real", {x});
  if (IsFloat(x.dtype())) return x;
  return ops_internal::Emit("Real", OpType::Real, {x});
}

Node Imag(Node x) {
  ops_internal::CheckNodes("Imag", {x});
  if (IsFloat(x.dtype())) return ZerosLike(x);
  return ops_internal::Emit("Imag", OpType::Imag, {x});
}

Node Conj(Node x) {
  ops_internal::CheckNodes("Conj", {x});
  if (IsFloat(x.dtype())) return x;
  return ops_internal::Emit("Conj", OpType::Conj, {x});
}

namespace {

/// The transform of kind `type` over x's last axis; `fft_lengths` holds at most one length,
/// `n` is the default.
Node Transform(const char* op, FftType type, Node x, const std::vector<int64_t>& fft_lengths) {
  ops_internal::CheckNodes(op, {x});
  if (x.rank() < 1)
    kiln::detail::Throw("{}: x is the scalar {}; the transform runs over the last axis", op, x.shape());
  if (fft_lengths.size() > 1)
    kiln::detail::Throw("{}: {} fft lengths given; kiln's transforms are 1-D (one length, the last axis)", op,
                        fft_lengths.size());
  const int64_t last = x.shape().Dimensions().back();
  int64_t n = last;
  if (!fft_lengths.empty()) {
    n = fft_lengths[0];
  } else if (type == FftType::InverseReal) {
    n = 2 * (last - 1);
  }
  if (last == Shape::kDynamic && fft_lengths.empty())
    kiln::detail::Throw("{}: the last axis of {} is dynamic; pass its length in fft_lengths", op, x.shape());
  compute::OpAttributes at;
  at.fft_type = type;
  at.fft_length = n;
  return ops_internal::Emit(op, OpType::Fft, {x}, std::move(at));
}

}  // namespace

Node FFT(Node x, const std::vector<int64_t>& fft_lengths) {
  return Transform("FFT", FftType::Forward, x, fft_lengths);
}
Node InverseFFT(Node x, const std::vector<int64_t>& fft_lengths) {
  return Transform("InverseFFT", FftType::Inverse, x, fft_lengths);
}
Node RealFFT(Node x, const std::vector<int64_t>& fft_lengths) {
  return Transform("RealFFT", FftType::ForwardReal, x, fft_lengths);
}
Node InverseRealFFT(Node x, const std::vector<int64_t>& fft_lengths) {
  return Transform("InverseRealFFT", FftType::InverseReal, x, fft_lengths);
}

}  // namespace kiln::graph
