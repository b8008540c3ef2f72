// ONNX's quantized operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the
// integer and QLinear contractions.
//
// The contractions are exact: the 8-bit operands, less their zero points, are converted to int32
// and multiplied and summed in int32 (the cpu backend runs DotGeneral and ConvGeneral on int32
// operands), as ONNX's reference does. The QLinear ops then requantize that int32 sum as the
// reference does: times the float32 multiplier (scale_a * scale_b / scale_y) in float64 (NumPy's
// int32 x float32), plus the output zero point, rounded half to even and saturated.

#include <fmt/format.h>

#include <array>

#include "kiln/graph/conv.h"
#include "kiln/graph/ops_util.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// The range of a quantized integer dtype.
struct QRange {
  double lo, hi;
};
QRange QuantRange(const Context& c, DType dtype) {
  switch (dtype) {
    case DType::Uint8:
      return {0, 255};
    case DType::Int8:
      return {-128, 127};
    case DType::Uint16:
      return {0, 65535};
    case DType::Int16:
      return {-32768, 32767};
    case DType::Uint4:
      return {0, 15};
    case DType::Int4:
      return {-8, 7};
    default:
      c.Fail(fmt::format("quantized type {} is not supported (uint8, int8, uint16, int16, uint4, int4)",
                         DTypeName(dtype)));
  }
}

/// Whether v holds one element (a scalar, or any shape of size 1).
bool OneElement(Node v) {
  for (int64_t d : v.shape().Dimensions())
    if (d != 1) return false;
  return true;
}

/// A per-tensor parameter (scale or zero point): one element, as a scalar.
Node PerTensor(const Context& c, Node v, const char* what) {
  if (!OneElement(v)) c.Fail(fmt::format("{} {} must be a scalar", what, v.shape()));
  return v.rank() == 0 ? v : Reshape(v, {});
}

/// A scale or zero point `v` (already in the compute dtype) shaped to broadcast against x: one
/// element as a scalar; a vector along `axis` (per-axis); with block_size > 0, a tensor shaped as
/// x but for ceil(x's size / block_size) along `axis`, each entry repeated over its block.
Node QuantParam(const Context& c, Node v, Node x, int64_t axis_attr, int64_t block, const char* what) {
  if (block < 0) c.Fail(fmt::format("block_size {} must not be negative", block));
  if (block == 0 && OneElement(v)) return v.rank() == 0 ? v : Reshape(v, {});
  if (x.rank() == 0) c.Fail(fmt::format("{} {} must be a scalar for a scalar input", what, v.shape()));
  const int axis = Axis(c, axis_attr, x.rank());
  const int64_t n = x.shape().Dimensions()[static_cast<size_t>(axis)];
  if (n == Shape::kDynamic) c.Fail(fmt::format("per-axis {} needs a static size along axis {}", what, axis));
  if (block == 0) {
    if (v.rank() != 1 || v.shape().Dimensions()[0] != n)
      c.Fail(
          fmt::format("{} {} must be a scalar or have x's size {} along axis {}", what, v.shape(), n, axis));
    std::vector<int64_t> dims(static_cast<size_t>(x.rank()), 1);
    dims[static_cast<size_t>(axis)] = n;
    return Reshape(v, dims);
  }
  // Blocked: repeat each entry block_size times along the axis, then cut to x's size. A block no
  // longer than the axis keeps blocks * block below 2n.
  if (block > n)
    c.Fail(fmt::format("block_size {} is longer than x's size {} along axis {}", block, n, axis));
  std::vector<int64_t> want = x.shape().Dimensions();
  const int64_t blocks = (n - 1) / block + 1;
  want[static_cast<size_t>(axis)] = blocks;
  if (v.shape().Dimensions() != want)
    c.Fail(fmt::format("{} {} must have x's shape with {} blocks of {} along axis {}", what, v.shape(),
                       blocks, block, axis));
  for (int64_t d : want)
    if (d == Shape::kDynamic) c.Fail("blocked quantization needs static shapes");
  Node r = InsertAxes(v, {axis + 1});
  std::vector<int64_t> wide = want;
  wide.insert(wide.begin() + axis + 1, block);
  r = BroadcastToDims(r, wide);
  want[static_cast<size_t>(axis)] = blocks * block;
  r = Reshape(r, want);
  return blocks * block == n ? r : SliceAxis(r, axis, AxisRange(0, n));
}

/// QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point), per tensor, per axis or
/// per block; y takes the zero point's dtype (uint8 without one, or output_dtype at opset 21+).
V QuantizeLinear(const Context& c) {
  Node x = c.In(0);
  DType out = DType::Uint8;
  if (c.HasAttr("output_dtype") && c.Int("output_dtype", 0) != 0)
    out = DTypeFromOnnx(static_cast<int>(c.Int("output_dtype", 0)), "QuantizeLinear output_dtype");
  if (c.Has(2)) {
    if (c.HasAttr("output_dtype") && c.Int("output_dtype", 0) != 0 && c.In(2).dtype() != out)
      c.Fail(fmt::format("output_dtype {} differs from the zero point's {}", DTypeName(out),
                         DTypeName(c.In(2).dtype())));
    out = c.In(2).dtype();
  }
  const QRange range = QuantRange(c, out);
  if (c.Int("precision", 0) != 0) c.Fail("the precision attribute is not supported");
  // Floats divide in their own precision (float16 and bfloat16 in float32); int32 in float64.
  const DType ct = x.dtype() == DType::Float64 || x.dtype() == DType::Int32 ? DType::Float64 : DType::Float32;
  if (!IsFloat(x.dtype()) && x.dtype() != DType::Int32)
    c.Fail(fmt::format("x of dtype {} is not a float or int32", DTypeName(x.dtype())));
  const int64_t axis = c.Int("axis", 1), block = c.Int("block_size", 0);
  Node xf = ConvertDType(x, ct);
  Node scale = QuantParam(c, ConvertDType(c.In(1), ct), x, axis, block, "y_scale");
  Node y = Round(xf / scale);
  if (c.Has(2)) y = y + QuantParam(c, ConvertDType(c.In(2), ct), x, axis, block, "y_zero_point");
  y = Clamp(ScalarLike(y, range.lo), y, ScalarLike(y, range.hi));
  return {ConvertDType(y, out)};
}

/// DequantizeLinear: y = (x - zero_point) * scale, in float32 (float64 for int32 x or a float64
/// scale), as the scale's dtype (or output_dtype at opset 23+).
V DequantizeLinear(const Context& c) {
  Node x = c.In(0), scale = c.In(1);
  if (!IsFloat(scale.dtype()))
    c.Fail(fmt::format("x_scale of dtype {} is not a float", DTypeName(scale.dtype())));
  if (IsFloat(x.dtype()) || IsComplex(x.dtype()) || x.dtype() == DType::Bool)
    c.Fail(fmt::format("x of dtype {} is not a quantized type", DTypeName(x.dtype())));
  DType out = scale.dtype();
  if (c.HasAttr("output_dtype") && c.Int("output_dtype", 0) != 0)
    out = DTypeFromOnnx(static_cast<int>(c.Int("output_dtype", 0)), "DequantizeLinear output_dtype");
  const DType ct =
      scale.dtype() == DType::Float64 || x.dtype() == DType::Int32 ? DType::Float64 : DType::Float32;
  const int64_t axis = c.Int("axis", 1), block = c.Int("block_size", 0);
  Node y = ConvertDType(x, ct);
  if (c.Has(2)) {
    if (c.In(2).dtype() != x.dtype())
      c.Fail(fmt::format("x_zero_point's dtype {} differs from x's {}", DTypeName(c.In(2).dtype()),
                         DTypeName(x.dtype())));
    y = y - QuantParam(c, ConvertDType(c.In(2), ct), x, axis, block, "x_zero_point");
  }
  y = y * QuantParam(c, ConvertDType(scale, ct), x, axis, block, "x_scale");
  return {ConvertDType(y, out)};
}

/// DynamicQuantizeLinear: uint8 quantization over x's range widened to include 0:
/// scale = (max(0, max x) - min(0, min x)) / 255 (1/255 when that range is empty), zero point =
/// round(saturate(-min / scale)), y = saturate(round(x / scale) + zero point).
V DynamicQuantizeLinear(const Context& c) {
  Node x = c.In(0);
  if (!IsFloat(x.dtype())) c.Fail(fmt::format("x of dtype {} is not a float", DTypeName(x.dtype())));
  x = ConvertDType(x, DType::Float32);
  Node zero = ScalarLike(x, 0.0f), top = ScalarLike(x, 255.0f);
  Node lo = Min(ReduceAllMin(x), zero), hi = Max(ReduceAllMax(x), zero);
  Node span = Where(Equal(hi, lo), ScalarLike(x, 1.0f), hi - lo);
  Node scale = span / top;
  Node zp = Round(Clamp(zero, zero - lo / scale, top));
  Node y = Clamp(zero, Round(x / scale) + zp, top);
  return {ConvertDType(y, DType::Uint8), scale, ConvertDType(zp, DType::Uint8)};
}

/// A parameter of matmul operand a: a scalar, or per row (a vector of a's row count, as a column).
Node PerRow(const Context& c, Node v, Node a, const char* what) {
  if (OneElement(v)) return v.rank() == 0 ? v : Reshape(v, {});
  const int64_t rows = a.rank() >= 2 ? a.shape().Dimensions()[static_cast<size_t>(a.rank() - 2)] : -1;
  if (v.rank() == 1 && v.shape().Dimensions()[0] == rows) return Reshape(v, {rows, 1});
  if (v.rank() == 1) c.Fail(fmt::format("{} {} must be a scalar or have a's {} rows", what, v.shape(), rows));
  return v;  // N-D: broadcast as it is.
}

/// A parameter of matmul operand b: a scalar, or per column (a vector of b's column count).
Node PerColumn(Node v) {
  if (OneElement(v)) return v.rank() == 0 ? v : Reshape(v, {});
  return v;  // A vector broadcasts along the last axis, as the columns are.
}

/// v converted to int32, less the zero point `zp` (already shaped to broadcast), when given.
Node Centered(Node v, std::optional<Node> zp) {
  Node r = ConvertDType(v, DType::Int32);
  if (!zp) return r;
  auto [a, b] = SameRank(r, ConvertDType(*zp, DType::Int32));
  return a - b;
}

void CheckQuantized(const Context& c, Node v, const char* what) {
  if (v.dtype() != DType::Uint8 && v.dtype() != DType::Int8)
    c.Fail(fmt::format("{} of dtype {} is not uint8 or int8", what, DTypeName(v.dtype())));
}

/// The exact int32 product of a and b, less their zero points (inputs za and zb, when given).
Node IntegerMatMul(const Context& c, int a_in, int za, int b_in, int zb) {
  Node a = c.In(a_in), b = c.In(b_in);
  CheckQuantized(c, a, "a");
  CheckQuantized(c, b, "b");
  std::optional<Node> a_zp, b_zp;
  if (c.Has(za)) a_zp = PerRow(c, c.In(za), a, "a_zero_point");
  if (c.Has(zb)) b_zp = PerColumn(c.In(zb));
  return MatMul(Centered(a, a_zp), Centered(b, b_zp));
}

/// MatMulInteger: (a - a_zero_point) · (b - b_zero_point), NumPy's matmul, in int32.
V MatMulInteger(const Context& c) { return {IntegerMatMul(c, 0, 2, 1, 3)}; }

/// acc (int32) times `multiplier` (float32), plus the output zero point `zp` (input zp_in, when
/// given), rounded half to even and saturated to the zero point's dtype (else `fallback`).
Node Requantize(const Context& c, Node acc, Node multiplier, int zp_in, DType fallback) {
  const DType out = c.Has(zp_in) ? c.In(zp_in).dtype() : fallback;
  const QRange range = QuantRange(c, out);
  auto [a, m] = SameRank(ConvertDType(acc, DType::Float64), ConvertDType(multiplier, DType::Float64));
  Node r = a * m;
  if (c.Has(zp_in)) r = r + ConvertDType(PerTensor(c, c.In(zp_in), "y_zero_point"), DType::Float64);
  r = Clamp(ScalarLike(r, range.lo), Round(r), ScalarLike(r, range.hi));
  return ConvertDType(r, out);
}

/// QLinearMatMul: the int32 product of the centred operands, requantized with
/// a_scale * b_scale / y_scale (a_scale per row or scalar, b_scale per column or scalar).
V QLinearMatMul(const Context& c) {
  Node acc = IntegerMatMul(c, 0, 2, 3, 5);
  Node sa = PerRow(c, c.In(1), c.In(0), "a_scale"), sb = PerColumn(c.In(4));
  Node sy = PerTensor(c, c.In(6), "y_scale");
  if (!IsFloat(sa.dtype()) || sb.dtype() != sa.dtype() || sy.dtype() != sa.dtype())
    c.Fail("a_scale, b_scale and y_scale must be floats of one dtype");
  auto [a, b] = SameRank(sa, sb);
  return {Requantize(c, acc, a * b / sy, 7, c.In(0).dtype())};
}

/// A per-output-channel parameter of kernel w [M, C/g, k...]: a scalar, or a vector of M reshaped
/// to [M, 1, ...] (rank `rank`, with the channels at `at`).
Node PerChannel(const Context& c, Node v, int64_t channels, int rank, int at, const char* what) {
  if (OneElement(v)) return v.rank() == 0 ? v : Reshape(v, {});
  if (v.rank() != 1 || v.shape().Dimensions()[0] != channels)
    c.Fail(fmt::format("{} {} must be a scalar or have one entry per output channel ({})", what, v.shape(),
                       channels));
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  dims[static_cast<size_t>(at)] = channels;
  return Reshape(v, dims);
}

/// The exact int32 convolution (ONNX's Conv attributes) of x and w less their zero points
/// (inputs zx, per tensor, and zw, per tensor or per output channel, when given).
Node IntegerConv(const Context& c, int x_in, int zx, int w_in, int zw) {
  Node x = c.In(x_in), w = c.In(w_in);
  CheckQuantized(c, x, "x");
  CheckQuantized(c, w, "w");
  const int spatial = x.rank() - 2;
  if (spatial < 1 || w.rank() != x.rank())
    c.Fail(fmt::format("x {} and kernel {} must have rank 3 or more", x.shape(), w.shape()));
  const auto n = static_cast<size_t>(spatial);
  std::vector<int64_t> k = c.IntList("kernel_shape");
  if (k.empty()) k.assign(w.shape().Dimensions().begin() + 2, w.shape().Dimensions().end());
  if (k.size() != n) c.Fail("kernel_shape must have one entry per spatial axis");
  const std::vector<int64_t> strides = c.IntList("strides", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> dilations = c.IntList("dilations", std::vector<int64_t>(n, 1));
  if (strides.size() != n || dilations.size() != n)
    c.Fail("strides and dilations must have one entry per spatial axis");
  for (size_t i = 0; i < n; ++i)
    if (k[i] < 1 || strides[i] < 1 || dilations[i] < 1 || k[i] > kMaxHostElements ||
        strides[i] > kMaxHostElements || dilations[i] > kMaxHostElements)
      c.Fail(fmt::format("kernel size {}, stride {} and dilation {} of spatial axis {} must be in [1, {}]",
                         k[i], strides[i], dilations[i], i, kMaxHostElements));
  const int64_t groups = c.Int("group", 1);
  if (groups < 1 || groups > kMaxHostElements)
    c.Fail(fmt::format("group {} is outside [1, {}]", groups, kMaxHostElements));
  std::optional<Node> x_zp, w_zp;
  if (c.Has(zx)) x_zp = PerTensor(c, c.In(zx), "x_zero_point");
  if (c.Has(zw)) w_zp = PerChannel(c, c.In(zw), w.shape().Dimensions()[0], w.rank(), 0, "w_zero_point");
  return Convolve(Centered(x, x_zp), Centered(w, w_zp))
      .ChannelsFirst()
      .Strides(ToInts(strides))
      .Dilations(ToInts(dilations))
      .PaddingPerDim(Paddings(c, x, k, strides, dilations))
      .ChannelGroupCount(static_cast<int>(groups))
      .Done();
}

/// ConvInteger: Conv of (x - x_zero_point) and (w - w_zero_point), in int32.
V ConvInteger(const Context& c) { return {IntegerConv(c, 0, 2, 1, 3)}; }

/// QLinearConv: the int32 convolution of the centred operands plus the int32 bias B, requantized
/// with x_scale * w_scale / y_scale (w_scale per output channel or scalar).
V QLinearConv(const Context& c) {
  Node acc = IntegerConv(c, 0, 2, 3, 5);
  const int64_t channels = c.In(3).shape().Dimensions()[0];
  if (c.Has(8)) {
    Node b = c.In(8);
    if (b.dtype() != DType::Int32 || b.rank() != 1 || b.shape().Dimensions()[0] != channels)
      c.Fail(
          fmt::format("bias {} must be int32 with one entry per output channel ({})", b.shape(), channels));
    acc = acc + PerChannel(c, b, channels, acc.rank(), 1, "B");
  }
  Node sx = PerTensor(c, c.In(1), "x_scale"), sy = PerTensor(c, c.In(6), "y_scale");
  Node sw = PerChannel(c, c.In(4), channels, acc.rank(), 1, "w_scale");
  if (!IsFloat(sx.dtype()) || sw.dtype() != sx.dtype() || sy.dtype() != sx.dtype())
    c.Fail("x_scale, w_scale and y_scale must be floats of one dtype");
  return {Requantize(c, acc, sx * sw / sy, 7, c.In(0).dtype())};
}

}  // namespace

void AddQuantConverters(std::map<std::string, Converter>& m) {
  m["QuantizeLinear"] = QuantizeLinear;
  m["DequantizeLinear"] = DequantizeLinear;
  m["DynamicQuantizeLinear"] = DynamicQuantizeLinear;
  m["MatMulInteger"] = MatMulInteger;
  m["ConvInteger"] = ConvInteger;
  m["QLinearMatMul"] = QLinearMatMul;
  m["QLinearConv"] = QLinearConv;
}

}  // namespace kiln::onnx::internal
