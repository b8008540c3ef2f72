// Complex numbers: the elementwise ops on complex operands, Complex/Real/Imag/Conj, and the
// Fourier transforms (Fft), computed with Eigen's FFT module (its kissfft backend: mixed radix,
// any length). Complex64 computes in std::complex<float>, Complex128 in std::complex<double>.

#include <unsupported/Eigen/FFT>

#include <complex>
#include <cstring>
#include <vector>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

template <typename C>
Kernel Elementwise(OpType op, DType dtype, int64_t n) {
  using R = typename C::value_type;
  switch (op) {
    case OpType::Neg:
      return Map<C, C>(n, [](C x) { return -x; });
    case OpType::Abs:
      return Map<C, R>(n, [](C x) { return std::abs(x); });
    case OpType::Sqrt:
      return Map<C, C>(n, [](C x) { return std::sqrt(x); });
    case OpType::Rsqrt:
      return Map<C, C>(n, [](C x) { return C(1) / std::sqrt(x); });
    case OpType::Exp:
      return Map<C, C>(n, [](C x) { return std::exp(x); });
    case OpType::Log:
      return Map<C, C>(n, [](C x) { return std::log(x); });
    case OpType::Add:
      return Zip<C, C>(n, [](C a, C b) { return a + b; });
    case OpType::Sub:
      return Zip<C, C>(n, [](C a, C b) { return a - b; });
    case OpType::Mul:
      return Zip<C, C>(n, [](C a, C b) { return a * b; });
    case OpType::Div:
      return Zip<C, C>(n, [](C a, C b) { return a / b; });
    case OpType::Equal:
      return Zip<C, uint8_t>(n, [](C a, C b) { return static_cast<uint8_t>(a == b); });
    case OpType::NotEqual:
      return Zip<C, uint8_t>(n, [](C a, C b) { return static_cast<uint8_t>(a != b); });
    default:
      NoKernel(op, dtype);
  }
}

/// The transform of `rows` signals of length n, each row of the operand read in place.
template <typename R>
Kernel FftKernel(FftType type, int64_t rows, int64_t n) {
  using C = std::complex<R>;
  const int64_t half = n / 2 + 1;
  return [type, rows, n, half](Operands in, uint8_t* out) {
    Eigen::FFT<R> fft;  // Per call: its plans are not shared between threads.
    std::vector<C> signal(static_cast<size_t>(n)), spectrum(static_cast<size_t>(n));
    const auto nfft = static_cast<Eigen::Index>(n);
    for (int64_t r = 0; r < rows; ++r) {
      switch (type) {
        case FftType::Forward:
        case FftType::Inverse: {
          const C* x = reinterpret_cast<const C*>(in[0]) + r * n;
          C* y = reinterpret_cast<C*>(out) + r * n;
          std::copy(x, x + n, signal.begin());
          if (type == FftType::Forward) {
            fft.fwd(spectrum.data(), signal.data(), nfft);
          } else {
            fft.inv(spectrum.data(), signal.data(), nfft);  // Scaled by 1/n.
          }
          std::copy(spectrum.begin(), spectrum.end(), y);
          break;
        }
        case FftType::ForwardReal: {
          // The complex transform of the real signal; its first n/2+1 values are the result.
          const R* x = reinterpret_cast<const R*>(in[0]) + r * n;
          C* y = reinterpret_cast<C*>(out) + r * half;
          for (int64_t i = 0; i < n; ++i) signal[static_cast<size_t>(i)] = C(x[i], 0);
          fft.fwd(spectrum.data(), signal.data(), nfft);
          std::copy(spectrum.begin(), spectrum.begin() + half, y);
          break;
        }
        case FftType::InverseReal: {
          // The Hermitian spectrum the n/2+1 values stand for (X[n-k] = conj(X[k])); the real
          // part of its inverse transform is the result, as NumPy's irfft computes it (the
          // imaginary parts of X[0] and, for even n, X[n/2] do not count).
          const C* x = reinterpret_cast<const C*>(in[0]) + r * half;
          R* y = reinterpret_cast<R*>(out) + r * n;
          for (int64_t k = 0; k < n; ++k)
            spectrum[static_cast<size_t>(k)] = k < half ? x[k] : std::conj(x[n - k]);
          fft.inv(signal.data(), spectrum.data(), nfft);
          for (int64_t i = 0; i < n; ++i) y[i] = signal[static_cast<size_t>(i)].real();
          break;
        }
      }
    }
  };
}

}  // namespace

Kernel MakeComplexElementwiseKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const DType dtype = operands[0].dtype();
  const int64_t n = operands[0].Size();
  return DispatchComplexDType(dtype, [&](auto tag) { return Elementwise<decltype(tag)>(inst.op, dtype, n); });
}

Kernel MakeComplexKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpType op = inst.op;
  const Shape& x = operands[0];
  const int64_t n = x.Size();
  switch (op) {
    case OpType::Complex:
      if (x.dtype() == DType::Float32)
        return Zip<float, std::complex<float>>(n, [](float a, float b) { return std::complex<float>(a, b); });
      return Zip<double, std::complex<double>>(n,
                                               [](double a, double b) { return std::complex<double>(a, b); });
    case OpType::Real:
    case OpType::Imag:
    case OpType::Conj:
      return DispatchComplexDType(x.dtype(), [&](auto tag) -> Kernel {
        using C = decltype(tag);
        using R = typename C::value_type;
        if (op == OpType::Real) return Map<C, R>(n, [](C z) { return z.real(); });
        if (op == OpType::Imag) return Map<C, R>(n, [](C z) { return z.imag(); });
        return Map<C, C>(n, [](C z) { return std::conj(z); });
      });
    case OpType::Fft: {
      const int64_t length = inst.attrs.fft_length;
      const int64_t last = x.Dimensions().back();
      const int64_t rows = last == 0 ? 0 : n / last;
      const bool is_double = x.dtype() == DType::Float64 || x.dtype() == DType::Complex128;
      return is_double ? FftKernel<double>(inst.attrs.fft_type, rows, length)
                       : FftKernel<float>(inst.attrs.fft_type, rows, length);
    }
#define KILN_LISTED_Complex
#include "kiln/compute/op_cases.inc"
    break;
  }
  NoKernel(op, x.dtype());
}

}  // namespace kiln::compute::ref
