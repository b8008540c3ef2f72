// quant::Quantize and quant::Dequantize: linear (Int8/Int4, symmetric or with a zero point),
// NF4 and ggml block quantization of a float matrix on the host.

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kiln/compute/composite.h"
#include "kiln/quant/quant.h"
#include "quant/float_values.h"

namespace kiln::quant {

const std::array<float, 16> kNF4Table = compute::composite::kNF4Values;

namespace {

struct SchemeInfo {
  Scheme scheme;
  const char* name;
};

constexpr SchemeInfo kSchemes[] = {
    {Scheme::Int8, "Int8"}, {Scheme::Int8Asymmetric, "Int8Asymmetric"},
    {Scheme::Int4, "Int4"}, {Scheme::Int4Asymmetric, "Int4Asymmetric"},
    {Scheme::NF4, "NF4"},   {Scheme::Q8_0, "Q8_0"},
    {Scheme::Q4_0, "Q4_0"}, {Scheme::Q4_K, "Q4_K"},
    {Scheme::Q6_K, "Q6_K"},
};

bool IsLinear(Scheme s) {
  return s == Scheme::Int8 || s == Scheme::Int8Asymmetric || s == Scheme::Int4 || s == Scheme::Int4Asymmetric;
}
bool IsFourBit(Scheme s) { return s == Scheme::Int4 || s == Scheme::Int4Asymmetric; }

/// The storage dtype of the weights of a Linear or NF4 scheme.
DType StorageDType(Scheme s) {
  if (s == Scheme::NF4) return DType::Uint4;
  return IsFourBit(s) ? DType::Int4 : DType::Int8;
}

/// Packs values (each in the 4-bit range of `dtype`) two per byte, the first in the low nibble.
Tensor PackNibbles(const Shape& shape, const std::vector<int8_t>& values) {
  std::vector<uint8_t> bytes(static_cast<size_t>(shape.ByteSize()), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    const auto nibble = static_cast<uint8_t>(values[i] & 0x0F);
    bytes[i / 2] = static_cast<uint8_t>(bytes[i / 2] | (i % 2 == 0 ? nibble : nibble << 4));
  }
  return Tensor::FromBytes(shape, bytes);
}

/// The integer values of Int8, Int4, Uint8 or Uint4 weights, one per element.
std::vector<int> IntValues(const Tensor& t) {
  std::vector<int> out(static_cast<size_t>(t.Size()));
  t.ConstBytes([&](std::span<const uint8_t> b) {
    for (size_t i = 0; i < out.size(); ++i) {
      switch (t.dtype()) {
        case DType::Int8:
          out[i] = static_cast<int8_t>(b[i]);
          break;
        case DType::Uint8:
          out[i] = b[i];
          break;
        case DType::Int4: {
          const int nibble = (b[i / 2] >> (i % 2 == 0 ? 0 : 4)) & 0x0F;
          out[i] = nibble >= 8 ? nibble - 16 : nibble;
          break;
        }
        case DType::Uint4:
          out[i] = (b[i / 2] >> (i % 2 == 0 ? 0 : 4)) & 0x0F;
          break;
        default:
          kiln::detail::Throw("quant: weights of dtype {} are not integers", t.dtype());
      }
    }
  });
  return out;
}

/// The block-parameter dims: dims with the block axis's size divided by the block size.
std::vector<int64_t> ScaleDims(const std::vector<int64_t>& dims, int block_axis, int64_t block_size) {
  std::vector<int64_t> s = dims;
  s[static_cast<size_t>(block_axis)] /= block_size;
  return s;
}

/// Index of the scale of element (i, j) of [K, N] in the scale matrix.
int64_t ScaleIndex(int64_t i, int64_t j, const std::vector<int64_t>& sdims, int block_axis, int64_t bs) {
  return block_axis == 0 ? (i / bs) * sdims[1] + j : i * sdims[1] + j / bs;
}

Quantized QuantizeLinearOrNF4(const std::vector<float>& w, const std::vector<int64_t>& dims, Scheme scheme,
                              int64_t bs, int block_axis) {
  const int64_t K = dims[0], N = dims[1];
  const std::vector<int64_t> sdims = ScaleDims(dims, block_axis, bs);
  const int64_t nscales = sdims[0] * sdims[1];
  std::vector<float> lo(static_cast<size_t>(nscales), INFINITY), hi(static_cast<size_t>(nscales), -INFINITY),
      amax(static_cast<size_t>(nscales), 0);
  for (int64_t i = 0; i < K; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      const auto s = static_cast<size_t>(ScaleIndex(i, j, sdims, block_axis, bs));
      const float v = w[static_cast<size_t>(i * N + j)];
      lo[s] = std::min(lo[s], v);
      hi[s] = std::max(hi[s], v);
      amax[s] = std::max(amax[s], std::abs(v));
    }
  }
  const bool four = IsFourBit(scheme);
  const int qmin = four ? -8 : -128, qmax = four ? 7 : 127;
  std::vector<float> scale(static_cast<size_t>(nscales)),
      zero(IsAsymmetric(scheme) ? static_cast<size_t>(nscales) : 0);
  for (size_t s = 0; s < scale.size(); ++s) {
    if (scheme == Scheme::NF4) {
      scale[s] = amax[s];
    } else if (IsAsymmetric(scheme)) {
      scale[s] = (hi[s] - lo[s]) / static_cast<float>(qmax - qmin);
      zero[s] = scale[s] != 0 ? lo[s] - static_cast<float>(qmin) * scale[s] : lo[s];
    } else {
      scale[s] = amax[s] / static_cast<float>(qmax);
    }
  }
  std::vector<int8_t> q(w.size());
  for (int64_t i = 0; i < K; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      const auto e = static_cast<size_t>(i * N + j);
      const auto s = static_cast<size_t>(ScaleIndex(i, j, sdims, block_axis, bs));
      if (scheme == Scheme::NF4) {
        const float v = scale[s] != 0 ? w[e] / scale[s] : 0;
        int best = 0;
        for (int k = 1; k < 16; ++k) {
          if (std::abs(kNF4Table[static_cast<size_t>(k)] - v) <
              std::abs(kNF4Table[static_cast<size_t>(best)] - v))
            best = k;
        }
        q[e] = static_cast<int8_t>(best);
      } else if (scale[s] == 0) {
        q[e] = 0;
      } else {
        const float centred = IsAsymmetric(scheme) ? w[e] - zero[s] : w[e];
        const int lim = IsAsymmetric(scheme) ? qmin : -qmax;
        q[e] =
            static_cast<int8_t>(std::clamp(static_cast<int>(std::nearbyint(centred / scale[s])), lim, qmax));
      }
    }
  }
  Quantized out;
  out.scheme = scheme;
  out.dims = dims;
  out.block_axis = block_axis;
  out.block_size = bs;
  const Shape wshape(StorageDType(scheme), dims);
  if (IsPacked(wshape.dtype())) {
    out.weights = PackNibbles(wshape, q);
  } else {
    out.weights = Tensor::FromFlat(wshape, q);
  }
  out.scales = Tensor::FromFlat(Shape(DType::Float32, sdims), scale);
  if (IsAsymmetric(scheme)) out.zero_points = Tensor::FromFlat(Shape(DType::Float32, sdims), zero);
  return out;
}

Quantized QuantizeGGML(const std::vector<float>& w, const std::vector<int64_t>& dims, Scheme scheme) {
  const nn::GGMLType type = GGMLTypeOf(scheme);
  const int64_t K = dims[0], N = dims[1];
  const int64_t row_bytes = K / GGMLBlockValues(type) * GGMLBlockBytes(type);
  std::vector<uint8_t> bytes(static_cast<size_t>(N * row_bytes));
  std::vector<float> row(static_cast<size_t>(K)), back(static_cast<size_t>(K));
  for (int64_t j = 0; j < N; ++j) {
    for (int64_t i = 0; i < K; ++i) row[static_cast<size_t>(i)] = w[static_cast<size_t>(i * N + j)];
    uint8_t* dst = bytes.data() + j * row_bytes;
    EncodeGGML(type, row.data(), K, dst);
    DecodeGGML(type, dst, K, back.data());
    for (float v : back) {
      if (!std::isfinite(v))
        kiln::detail::Throw("quant::Quantize: output feature {} has values too large for {}'s float16 scales",
                            j, SchemeName(scheme));
    }
  }
  Quantized out;
  out.scheme = scheme;
  out.dims = dims;
  out.block_axis = 0;
  out.block_size = GGMLBlockValues(type);
  out.weights = Tensor::FromFlat(Shape(DType::Uint8, {N, row_bytes}), bytes);
  return out;
}

}  // namespace

std::string SchemeName(Scheme scheme) {
  for (const SchemeInfo& s : kSchemes) {
    if (s.scheme == scheme) return s.name;
  }
  return fmt::format("Scheme({})", static_cast<int>(scheme));
}

Scheme SchemeFromName(const std::string& name) {
  for (const SchemeInfo& s : kSchemes) {
    if (name == s.name) return s.scheme;
  }
  std::vector<std::string> names;
  for (const SchemeInfo& s : kSchemes) names.emplace_back(s.name);
  kiln::detail::Throw("quant: unknown scheme \"{}\" (known: {})", name, fmt::join(names, ", "));
}

bool IsAsymmetric(Scheme s) { return s == Scheme::Int8Asymmetric || s == Scheme::Int4Asymmetric; }

bool IsGGML(Scheme s) {
  return s == Scheme::Q8_0 || s == Scheme::Q4_0 || s == Scheme::Q4_K || s == Scheme::Q6_K;
}

nn::QuantizationScheme GraphScheme(Scheme scheme) {
  if (IsGGML(scheme)) return nn::QuantizationScheme::GGML;
  return scheme == Scheme::NF4 ? nn::QuantizationScheme::NF4 : nn::QuantizationScheme::Linear;
}

nn::GGMLType GGMLTypeOf(Scheme scheme) {
  switch (scheme) {
    case Scheme::Q8_0:
      return nn::GGMLType::Q8_0;
    case Scheme::Q4_0:
      return nn::GGMLType::Q4_0;
    case Scheme::Q4_K:
      return nn::GGMLType::Q4_K;
    case Scheme::Q6_K:
      return nn::GGMLType::Q6_K;
    default:
      kiln::detail::Throw("quant: scheme {} is not a ggml block format", SchemeName(scheme));
  }
}

Scheme SchemeOf(nn::GGMLType type) {
  switch (type) {
    case nn::GGMLType::Q8_0:
      return Scheme::Q8_0;
    case nn::GGMLType::Q4_0:
      return Scheme::Q4_0;
    case nn::GGMLType::Q4_K:
      return Scheme::Q4_K;
    case nn::GGMLType::Q6_K:
      return Scheme::Q6_K;
    default:
      kiln::detail::Throw("quant: ggml type {} is not a quantized block format", nn::GGMLTypeName(type));
  }
}

Quantized Quantize(const Tensor& w, Scheme scheme, int64_t block_size, int block_axis) {
  if (!w.Ok()) kiln::detail::Throw("quant::Quantize: the tensor is empty (default-constructed)");
  if (!IsFloat(w.dtype()) || w.rank() != 2)
    kiln::detail::Throw("quant::Quantize: want a float matrix [K, N], got {}", w.shape());
  if (block_axis != 0 && block_axis != 1)
    kiln::detail::Throw("quant::Quantize: block_axis {} is not 0 (K) or 1 (N)", block_axis);
  const std::vector<int64_t> dims = w.shape().Dimensions();
  if (dims[0] == 0 || dims[1] == 0) kiln::detail::Throw("quant::Quantize: the matrix {} is empty", w.shape());
  const std::vector<float> v = float_values::FloatValues(w);
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]))
      kiln::detail::Throw("quant::Quantize: element {} of {} is {}", i, w.shape(), v[i]);
  }
  if (IsGGML(scheme)) {
    const int64_t values = GGMLBlockValues(GGMLTypeOf(scheme));
    if (block_axis != 0 || (block_size != 0 && block_size != values))
      kiln::detail::Throw("quant::Quantize: {} has blocks of {} along axis 0, not {} along axis {}",
                          SchemeName(scheme), values, block_size, block_axis);
    if (dims[0] % values != 0)
      kiln::detail::Throw("quant::Quantize: {} needs K a multiple of {}; the matrix is {}",
                          SchemeName(scheme), values, w.shape());
    return QuantizeGGML(v, dims, scheme);
  }
  if (!IsLinear(scheme) && scheme != Scheme::NF4)
    kiln::detail::Throw("quant::Quantize: unknown scheme {}", static_cast<int>(scheme));
  const int64_t axis_size = dims[static_cast<size_t>(block_axis)];
  const int64_t bs = block_size == 0 ? axis_size : block_size;
  if (bs < 0 || axis_size % bs != 0)
    kiln::detail::Throw("quant::Quantize: block size {} does not divide axis {} (size {}) of {}", block_size,
                        block_axis, axis_size, w.shape());
  return QuantizeLinearOrNF4(v, dims, scheme, bs, block_axis);
}

void Validate(const Quantized& q) {
  const std::string what = SchemeName(q.scheme);
  if (q.dims.size() != 2 || q.dims[0] <= 0 || q.dims[1] <= 0)
    kiln::detail::Throw("quant: {} weights need dims [K, N], got [{}]", what, fmt::join(q.dims, ", "));
  if (!q.weights.Ok()) kiln::detail::Throw("quant: {} has no weights tensor", what);
  const int64_t K = q.dims[0], N = q.dims[1];
  if (IsGGML(q.scheme)) {
    const nn::GGMLType type = GGMLTypeOf(q.scheme);
    const int64_t values = GGMLBlockValues(type);
    if (K % values != 0)
      kiln::detail::Throw("quant: {} needs K a multiple of {}, got K = {}", what, values, K);
    const Shape want(DType::Uint8, {N, K / values * GGMLBlockBytes(type)});
    if (q.weights.shape() != want)
      kiln::detail::Throw("quant: {} weights for [{}, {}] must be {}, got {}", what, K, N, want,
                          q.weights.shape());
    return;
  }
  const DType storage = StorageDType(q.scheme);
  if (q.weights.shape() != Shape(storage, q.dims))
    kiln::detail::Throw("quant: {} weights must be {}, got {}", what, Shape(storage, q.dims),
                        q.weights.shape());
  if (q.block_axis != 0 && q.block_axis != 1)
    kiln::detail::Throw("quant: {} block_axis {} is not 0 or 1", what, q.block_axis);
  const int64_t axis_size = q.dims[static_cast<size_t>(q.block_axis)];
  if (q.block_size <= 0 || axis_size % q.block_size != 0)
    kiln::detail::Throw("quant: {} block size {} does not divide axis {} (size {})", what, q.block_size,
                        q.block_axis, axis_size);
  const Shape sshape(DType::Float32, ScaleDims(q.dims, q.block_axis, q.block_size));
  if (q.scales.shape() != sshape)
    kiln::detail::Throw("quant: {} scales must be {}, got {}", what, sshape,
                        q.scales.Ok() ? q.scales.shape().ToString() : "none");
  if (IsAsymmetric(q.scheme) != q.zero_points.Ok() || (q.zero_points.Ok() && q.zero_points.shape() != sshape))
    kiln::detail::Throw("quant: {} zero points must be {}, got {}", what,
                        IsAsymmetric(q.scheme) ? sshape.ToString() : "none",
                        q.zero_points.Ok() ? q.zero_points.shape().ToString() : "none");
}

Tensor Dequantize(const Quantized& q) {
  Validate(q);
  const int64_t K = q.dims[0], N = q.dims[1];
  std::vector<float> out(static_cast<size_t>(K * N));
  if (IsGGML(q.scheme)) {
    const nn::GGMLType type = GGMLTypeOf(q.scheme);
    const int64_t row_bytes = q.weights.shape().Dim(1);
    std::vector<float> row(static_cast<size_t>(K));
    q.weights.ConstBytes([&](std::span<const uint8_t> b) {
      for (int64_t j = 0; j < N; ++j) {
        DecodeGGML(type, b.data() + j * row_bytes, K, row.data());
        for (int64_t i = 0; i < K; ++i) out[static_cast<size_t>(i * N + j)] = row[static_cast<size_t>(i)];
      }
    });
    return Tensor::FromFlat(Shape(DType::Float32, q.dims), out);
  }
  const std::vector<int> ints = IntValues(q.weights);
  const std::vector<float> scale = q.scales.ToVector<float>();
  const std::vector<float> zero = q.zero_points.Ok() ? q.zero_points.ToVector<float>() : std::vector<float>{};
  const std::vector<int64_t> sdims = q.scales.shape().Dimensions();
  for (int64_t i = 0; i < K; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      const auto e = static_cast<size_t>(i * N + j);
      const auto s = static_cast<size_t>(ScaleIndex(i, j, sdims, q.block_axis, q.block_size));
      if (q.scheme == Scheme::NF4) {
        out[e] = kNF4Table[static_cast<size_t>(ints[e] & 0x0F)] * scale[s];
      } else {
        out[e] = static_cast<float>(ints[e]) * scale[s];
        if (!zero.empty()) out[e] += zero[s];
      }
    }
  }
  return Tensor::FromFlat(Shape(DType::Float32, q.dims), out);
}

int64_t Quantized::ByteSize() const {
  int64_t n = 0;
  for (const Tensor* t : {&weights, &scales, &zero_points}) {
    if (t->Ok()) n += t->shape().ByteSize();
  }
  return n;
}

graph::Node Quantized::WeightsIn(graph::Graph& g) const {
  Validate(*this);
  return graph::Const(g, weights);
}

nn::Quantization Quantized::QuantizationIn(graph::Graph& g) const {
  Validate(*this);
  nn::Quantization out;
  out.scheme = GraphScheme(scheme);
  out.block_axis = block_axis;
  out.block_size = block_size;
  if (IsGGML(scheme)) {
    out.ggml_type = GGMLTypeOf(scheme);
    return out;
  }
  out.scale = graph::Const(g, scales);
  if (zero_points.Ok()) out.zero_point = graph::Const(g, zero_points);
  return out;
}

}  // namespace kiln::quant
