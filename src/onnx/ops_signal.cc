// ONNX's signal operators: DFT (on kiln's Fft) and the Hann, Hamming and Blackman windows.

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "kiln/graph/ops_complex.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// DFT(x [..., n, 1 or 2]): the transform along `axis` of the real (last axis 1) or complex
/// (last axis 2: real, imaginary) signal, as [..., m, 2].
V DFT(const Context& c) {
  Node x = c.In(0);
  const int rank = x.rank();
  if (rank < 2) c.Fail(fmt::format("input {} needs a signal axis and a last axis of 1 or 2", x.shape()));
  const int64_t parts = x.shape().Dimensions().back();
  if (parts != 1 && parts != 2)
    c.Fail(fmt::format("the last axis of {} must be 1 (real) or 2 (complex)", x.shape()));
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
    c.Fail(fmt::format("DFT takes Float32 or Float64, got {}", x.dtype()));
  const int axis = Axis(c, c.Int("axis", 1), rank - 1);
  const bool inverse = c.Int("inverse", 0) != 0, onesided = c.Int("onesided", 0) != 0;
  if (inverse && onesided) c.Fail("onesided with inverse is not supported");
  // The complex signal, its transformed axis last.
  std::vector<AxisRangeSpec> first(static_cast<size_t>(rank), AxisRange());
  first.back() = AxisRange(0, 1);
  Node real = Squeeze(graph::Slice(x, first), {rank - 1});
  Node imag = ZerosLike(real);
  if (parts == 2) {
    std::vector<AxisRangeSpec> second(static_cast<size_t>(rank), AxisRange());
    second.back() = AxisRange(1, 2);
    imag = Squeeze(graph::Slice(x, second), {rank - 1});
  }
  Node z = Complex(real, imag);
  const int last = rank - 2;
  std::vector<int> perm;
  for (int i = 0; i <= last; ++i) perm.push_back(i == axis ? last : (i == last ? axis : i));
  z = TransposeAllAxes(z, perm);
  const int64_t n = z.shape().Dimensions().back();
  if (n == Shape::kDynamic) c.Fail("the signal axis must be static");
  int64_t length = n;
  if (c.Has(1)) length = c.Ints(1, "dft_length").at(0);
  if (length < 1) c.Fail(fmt::format("dft_length {} is not positive", length));
  if (length < n) {
    std::vector<AxisRangeSpec> r(static_cast<size_t>(z.rank()), AxisRange());
    r.back() = AxisRange(0, length);
    z = graph::Slice(z, r);
  } else if (length > n) {
    std::vector<compute::PadAxis> pad(static_cast<size_t>(z.rank()));
    pad.back() = compute::PadAxis{0, length - n, 0};
    z = Pad(z, ScalarLike(z, 0), pad);
  }
  Node y = inverse ? InverseFFT(z) : FFT(z);
  if (onesided) {
    std::vector<AxisRangeSpec> r(static_cast<size_t>(y.rank()), AxisRange());
    r.back() = AxisRange(0, length / 2 + 1);
    y = graph::Slice(y, r);
  }
  y = TransposeAllAxes(y, perm);  // The permutation swaps two axes: it is its own inverse.
  return {Stack({Real(y), Imag(y)}, -1)};
}

/// The generalized cosine windows: sum_k a_k cos(2 pi k n / N) (signs alternating), N the size
/// for a periodic window, size - 1 for a symmetric one.
template <int kKind>
V Window(const Context& c) {
  const std::vector<int64_t> size_v = c.Ints(0, "size");
  if (size_v.size() != 1 || size_v[0] < 0) c.Fail("size must be a non-negative scalar");
  const int64_t size = size_v[0];
  const bool periodic = c.Int("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double t = denom > 0 ? 2 * std::numbers::pi * static_cast<double>(i) / denom : 0;
    switch (kKind) {
      case 0:  // Hann.
        w[static_cast<size_t>(i)] = 0.5 - 0.5 * std::cos(t);
        break;
      case 1:  // Hamming: a0 = 25/46.
        w[static_cast<size_t>(i)] = 25.0 / 46 - (1 - 25.0 / 46) * std::cos(t);
        break;
      default:  // Blackman.
        w[static_cast<size_t>(i)] = 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2 * t);
        break;
    }
  }
  const DType dtype = DTypeFromOnnx(static_cast<int>(c.Int("output_datatype", 1)), "window output_datatype");
  return {ConvertDType(Const(c.graph(), Tensor::FromValue(w)), dtype)};
}

}  // namespace

void AddSignalConverters(std::map<std::string, Converter>& m) {
  m["DFT"] = DFT;
  m["HannWindow"] = Window<0>;
  m["HammingWindow"] = Window<1>;
  m["BlackmanWindow"] = Window<2>;
}

}  // namespace kiln::onnx::internal
