// ONNX's signal operators: DFT and STFT (on kiln's Fft), the Hann, Hamming and Blackman windows,
// and MelWeightMatrix.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "kiln/graph/ops_complex.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// The transform of x [..., n, 1 or 2], a real (last axis 1) or complex (last axis 2: real,
/// imaginary) signal, along `axis` (not the last), the signal cut or zero-padded to `length`
/// (n when not given): [..., m, 2] with m = length, or length / 2 + 1 when onesided.
Node Transform(const Context& c, Node x, int axis, std::optional<int64_t> dft_length, bool inverse,
               bool onesided) {
  const int rank = x.rank();
  if (rank < 2) c.Fail(fmt::format("input {} needs a signal axis and a last axis of 1 or 2", x.shape()));
  const int64_t parts = x.shape().Dimensions().back();
  if (parts != 1 && parts != 2)
    c.Fail(fmt::format("the last axis of {} must be 1 (real) or 2 (complex)", x.shape()));
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
    c.Fail(fmt::format("{} takes Float32 or Float64, got {}", c.node().op_type(), x.dtype()));
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
  const int64_t length = dft_length.value_or(n);
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
  return Stack({Real(y), Imag(y)}, -1);
}

/// A scalar input that must be known at import, as an int64.
int64_t KnownInt(const Context& c, int i, const char* what) {
  const std::vector<int64_t> v = c.Ints(i, what);
  if (v.size() != 1) c.Fail(fmt::format("{} must be a scalar, got {} values", what, v.size()));
  return v[0];
}

/// DFT(x [..., n, 1 or 2]): the transform along `axis` of the real or complex signal, as
/// [..., m, 2]. The axis is an attribute (default 1) before opset 20, then input 2 (default -2);
/// it is never the last axis (the parts): [-r, -2] or [0, r - 2].
V DFT(const Context& c) {
  Node x = c.In(0);
  const int rank = x.rank();
  if (rank < 2) c.Fail(fmt::format("input {} needs a signal axis and a last axis of 1 or 2", x.shape()));
  int64_t axis = c.opset() >= 20 ? (c.Has(2) ? KnownInt(c, 2, "axis") : -2) : c.Int("axis", 1);
  if (axis < -rank || axis == -1 || axis > rank - 2)
    c.Fail(fmt::format("axis {} is outside [-{}, -2] and [0, {}] (the last axis holds the parts)", axis, rank,
                       rank - 2));
  if (axis < 0) axis += rank;
  std::optional<int64_t> length;
  if (c.Has(1)) length = KnownInt(c, 1, "dft_length");
  return {
      Transform(c, x, static_cast<int>(axis), length, c.Int("inverse", 0) != 0, c.Int("onesided", 0) != 0)};
}

/// STFT(signal [batch, length, 1 or 2], frame_step, window?, frame_length?): the DFT of each
/// frame (frame_length samples every frame_step, times the window), as
/// [batch, frames, bins, 2] with frames = 1 + (length - frame_length) / frame_step and bins =
/// frame_length / 2 + 1 when onesided (the default), else frame_length.
V STFT(const Context& c) {
  Node x = c.In(0);
  if (x.rank() != 3) c.Fail(fmt::format("the signal must be [batch, length, 1 or 2], got {}", x.shape()));
  const int64_t length = x.shape().Dimensions()[1];
  if (length == Shape::kDynamic) c.Fail("the signal length must be static");
  const int64_t step = KnownInt(c, 1, "frame_step");
  if (step < 1) c.Fail(fmt::format("frame_step {} is not positive", step));
  std::optional<Node> window;
  int64_t frame = length;
  if (c.Has(2)) {
    window = c.In(2);
    if (window->rank() != 1 || window->shape().Dimensions()[0] == Shape::kDynamic)
      c.Fail(fmt::format("the window must be a vector of static length, got {}", window->shape()));
    frame = window->shape().Dimensions()[0];
  }
  if (c.Has(3)) {
    const int64_t given = KnownInt(c, 3, "frame_length");
    if (window && given != frame)
      c.Fail(fmt::format("frame_length {} differs from the window's length {}", given, frame));
    frame = given;
  }
  if (frame < 1 || frame > length)
    c.Fail(fmt::format("frame_length {} must be in [1, {}] (the signal length)", frame, length));
  const int64_t frames = 1 + (length - frame) / step;
  CheckedProduct(c, frames, frame, "the STFT frames (frames x frame_length)");
  // The frames, [batch, frames, frame_length, parts]: sample f * step + j of frame f.
  std::vector<int64_t> idx(static_cast<size_t>(frames * frame));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < frame; ++j) idx[static_cast<size_t>(f * frame + j)] = f * step + j;
  Node framed = GatherAlongAxis(x, Reshape(Const(c.graph(), Tensor::FromValue(idx)), {frames, frame}), 1);
  if (window) {
    Node w = window->dtype() == x.dtype() ? *window : ConvertDType(*window, x.dtype());
    framed = framed * Reshape(w, {1, 1, frame, 1});
  }
  return {Transform(c, framed, 2, std::nullopt, false, c.Int("onesided", 1) != 0)};
}

/// The generalized cosine windows: sum_k a_k cos(2 pi k n / N) (signs alternating), N the size
/// for a periodic window, size - 1 for a symmetric one.
template <int kKind>
V Window(const Context& c) {
  const std::vector<int64_t> size_v = c.Ints(0, "size");
  if (size_v.size() != 1 || size_v[0] < 0 || size_v[0] > kMaxHostElements)
    c.Fail(fmt::format("size must be a scalar in [0, {}]", kMaxHostElements));
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

/// A scalar input that must be known at import, as a double.
double KnownReal(const Context& c, int i, const char* what) {
  const std::vector<double> v = KnownInput(c, i, what).ToDoubles();
  if (v.size() != 1) c.Fail(fmt::format("{} must be a scalar, got {} values", what, v.size()));
  return v[0];
}

/// MelWeightMatrix: the [dft_length / 2 + 1, num_mel_bins] matrix of triangular filters that maps
/// a onesided spectrum's bins to mel bands evenly spaced on the mel scale between the edge
/// frequencies (computed here, as ONNX's reference does, into a constant).
V MelWeightMatrix(const Context& c) {
  const int64_t mels = KnownInt(c, 0, "num_mel_bins"), dft = KnownInt(c, 1, "dft_length"),
                rate = KnownInt(c, 2, "sample_rate");
  const double low = KnownReal(c, 3, "lower_edge_hertz"), high = KnownReal(c, 4, "upper_edge_hertz");
  if (mels < 1 || dft < 1 || rate < 1)
    c.Fail(
        fmt::format("num_mel_bins {}, dft_length {} and sample_rate {} must be positive", mels, dft, rate));
  const int64_t bins = dft / 2 + 1;
  CheckedProduct(c, bins, mels, "the MelWeightMatrix [dft_length / 2 + 1, num_mel_bins]");
  if (!(std::isfinite(low) && std::isfinite(high) && low >= 0 && low <= high))
    c.Fail(fmt::format("the edges {} and {} Hz must be finite, with 0 <= lower <= upper", low, high));
  // The num_mel_bins + 2 band edges, evenly spaced in mels (a step of the span / (num_mel_bins + 2),
  // as ONNX's reference computes it), as spectrum bins.
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low_mel = to_mel(low), step = (to_mel(high) - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595) - 1);
    // Clamped into the spectrum (edges above sample_rate / 2 would fall outside it).
    // (in double first: a huge upper edge makes a huge, even infinite, bin).
    const double bin = std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate));
    edge[static_cast<size_t>(i)] =
        std::isnan(bin) ? 0 : static_cast<int64_t>(std::clamp(bin, 0.0, static_cast<double>(bins - 1)));
  }
  std::vector<double> m(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& { return m[static_cast<size_t>(j * mels + i)]; };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = edge[static_cast<size_t>(i)], center = edge[static_cast<size_t>(i + 1)],
                  right = edge[static_cast<size_t>(i + 2)];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j)
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
    }
    for (int64_t j = center; j < right; ++j)
      at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  const DType dtype =
      DTypeFromOnnx(static_cast<int>(c.Int("output_datatype", 1)), "MelWeightMatrix output_datatype");
  return {ConvertDType(Reshape(Const(c.graph(), Tensor::FromValue(m)), {bins, mels}), dtype)};
}

}  // namespace

void AddSignalConverters(std::map<std::string, Converter>& m) {
  m["DFT"] = DFT;
  m["HannWindow"] = Window<0>;
  m["HammingWindow"] = Window<1>;
  m["BlackmanWindow"] = Window<2>;
  m["STFT"] = STFT;
  m["MelWeightMatrix"] = MelWeightMatrix;
}

}  // namespace kiln::onnx::internal
