#pragma once
/// @file
/// Complex numbers and Fourier transforms, under GoMLX's names: Complex, Real, Imag, Conj, FFT,
/// InverseFFT, RealFFT, InverseRealFFT. Complex64 has Float32 parts, Complex128 Float64 ones.
///
/// Gradients of complex values follow the conjugate convention (TensorFlow's and PyTorch's, and
/// GoMLX's for the transforms): for a real loss L of a complex z, the gradient is
/// dL/dRe(z) + i dL/dIm(z), so that gradient descent on z is gradient descent on its two parts.

#include <cstdint>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln::graph {

/// The complex number re + i im (Float32 parts give Complex64, Float64 parts Complex128); equal
/// shapes, or one a scalar broadcast to the other's shape.
Node Complex(Node re, Node im);
/// The real part of a complex x (Float32 or Float64); a float x itself.
Node Real(Node x);
/// The imaginary part of a complex x; zeros for a float x.
Node Imag(Node x);
/// The complex conjugate, Conj(1+3i) = 1-3i; a float x itself.
Node Conj(Node x);

/// The 1-D discrete Fourier transform of complex x over its last axis, X[k] = sum_t x[t]
/// e^(-2 pi i k t / n) with n the axis' size. `fft_lengths`, when given, holds one length, which
/// must equal the last axis' size (the transforms neither pad nor crop).
Node FFT(Node x, const std::vector<int64_t>& fft_lengths = {});
/// The inverse of FFT: x[t] = (1/n) sum_k X[k] e^(2 pi i k t / n), over the last axis.
Node InverseFFT(Node x, const std::vector<int64_t>& fft_lengths = {});
/// The FFT of a real (Float32 or Float64) x over its last axis of size n: its n/2+1 non-negative
/// frequencies (the others are their conjugates), as Complex64 or Complex128.
Node RealFFT(Node x, const std::vector<int64_t>& fft_lengths = {});
/// The inverse of RealFFT: a real signal of length n from its n/2+1 non-negative frequencies
/// (the last axis). n defaults to 2 (m - 1) for a last axis of size m; pass it to recover an odd
/// length. The imaginary parts of the frequency 0 and, for even n, n/2 are ignored.
Node InverseRealFFT(Node x, const std::vector<int64_t>& fft_lengths = {});

}  // namespace kiln::graph
