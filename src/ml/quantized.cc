// nn::QuantizedDense, nn::QuantizedEmbedding and nn::Dequantized: quantized weights turned back
// into floats with graph primitives (converts, bit operations, gathers, broadcasts), so they run
// on every backend. ggml blocks are decoded by slicing their bytes: float16 scales by Bitcast,
// nibbles and 2-bit fields by shifts and masks.

#include "kiln/ml/quantized.h"

#include <string>
#include <vector>

#include "core/check.h"
#include "kiln/compute/composite.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/gather.h"
#include "kiln/ml/nn.h"
#include "kiln/quant/quant.h"

namespace kiln::nn {

using graph::AxisRange;
using graph::Graph;
using graph::Node;

const char* GGMLTypeName(GGMLType type) {
  const quant::GGMLTypeInfo* t = quant::FindGGMLType(static_cast<int32_t>(type));
  return t != nullptr ? t->name : "GGMLType(unknown)";
}

namespace {

const char* SchemeName(QuantizationScheme s) {
  switch (s) {
    case QuantizationScheme::Linear:
      return "Linear";
    case QuantizationScheme::NF4:
      return "NF4";
    case QuantizationScheme::GGML:
      return "GGML";
  }
  return "unknown";
}

/// A ggml block type kiln decodes (the plain F32/F16/BF16 are not blocks of weights).
bool IsQuantizedGGML(GGMLType t) {
  const quant::GGMLTypeInfo* info = quant::FindGGMLType(static_cast<int32_t>(t));
  return info != nullptr && info->decodable && info->block_values > 1;
}

// ---- ggml rows --------------------------------------------------------------------------------

/// Bytes [lo, hi) of every block: blocks [..., nb, bytes] -> [..., nb, hi - lo].
Node Bytes(Node blocks, int64_t lo, int64_t hi) {
  std::vector<graph::AxisRangeSpec> r(static_cast<size_t>(blocks.rank() - 1), AxisRange(0));
  r.push_back(AxisRange(lo, hi));
  return graph::Slice(blocks, r);
}

/// The float16 at bytes [at, at + 2) of every block, as float32 [..., nb].
Node F16At(Node blocks, int64_t at) {
  return graph::ConvertDType(graph::Bitcast(Bytes(blocks, at, at + 2), DType::Float16), DType::Float32);
}

Node U8(Graph& g, int v) { return graph::Scalar(g, DType::Uint8, v); }
Node And(Node x, int mask) { return graph::BitwiseAnd(x, U8(x.graph(), mask)); }
Node Shr(Node x, int bits) { return graph::BitwiseShiftRightLogical(x, U8(x.graph(), bits)); }
Node Shl(Node x, int bits) { return graph::BitwiseShiftLeft(x, U8(x.graph(), bits)); }
Node F32(Node x) { return graph::ConvertDType(x, DType::Float32); }

/// x with `ones` axes of size 1 appended.
Node AppendAxes(Node x, int ones) {
  std::vector<int64_t> dims = x.shape().Dimensions();
  dims.insert(dims.end(), static_cast<size_t>(ones), 1);
  return graph::Reshape(x, dims);
}

/// dims of `blocks` without the last axis, followed by `tail`.
std::vector<int64_t> Lead(Node blocks, std::vector<int64_t> tail) {
  std::vector<int64_t> dims = blocks.shape().Dimensions();
  dims.pop_back();
  dims.insert(dims.end(), tail.begin(), tail.end());
  return dims;
}

/// Blocks [..., nb, 34] of block_q8_0 -> values [..., nb, 32].
Node DecodeQ8_0(Node b) {
  Node q = F32(graph::Bitcast(Bytes(b, 2, 34), DType::Int8));
  return q * AppendAxes(F16At(b, 0), 1);
}

/// Blocks [..., nb, 18] of block_q4_0 -> values [..., nb, 32].
Node DecodeQ4_0(Node b) {
  Node qs = Bytes(b, 2, 18);
  Node nibbles = graph::Concatenate({And(qs, 0x0F), Shr(qs, 4)}, qs.rank() - 1);
  return (F32(nibbles) - 8.0f) * AppendAxes(F16At(b, 0), 1);
}

/// Blocks [..., nb, 144] of block_q4_K -> values [..., nb, 256].
Node DecodeQ4_K(Node b) {
  const int last = b.rank() - 1;
  Node a = Bytes(b, 4, 8), m6 = Bytes(b, 8, 12), c = Bytes(b, 12, 16);
  Node sc = graph::Concatenate({And(a, 63), graph::BitwiseOr(And(c, 0x0F), Shl(Shr(a, 6), 4))}, last);
  Node mn = graph::Concatenate({And(m6, 63), graph::BitwiseOr(Shr(c, 4), Shl(Shr(m6, 6), 4))}, last);
  Node qs = graph::Reshape(Bytes(b, 16, 144), Lead(b, {4, 1, 32}));
  Node q = graph::Reshape(graph::Concatenate({And(qs, 0x0F), Shr(qs, 4)}, last + 1), Lead(b, {8, 32}));
  Node d1 = AppendAxes(AppendAxes(F16At(b, 0), 1) * F32(sc), 1);  // [..., nb, 8, 1]
  Node m1 = AppendAxes(AppendAxes(F16At(b, 2), 1) * F32(mn), 1);
  return graph::Reshape(d1 * F32(q) - m1, Lead(b, {256}));
}

/// Blocks [..., nb, 210] of block_q6_K -> values [..., nb, 256]. Value 128h + 32i + l (half h,
/// quarter i = 2·nibble + part, l < 32) takes its low 4 bits from nibble `nibble` of
/// ql[64h + 32·part + l], its high 2 bits from bits 2i of qh[32h + l], and scale
/// sc[8h + 2i + l / 16].
Node DecodeQ6_K(Node b) {
  const int last = b.rank() - 1;
  Graph& g = b.graph();
  Node ql = graph::Reshape(Bytes(b, 0, 128), Lead(b, {2, 1, 2, 32}));    // h, nibble, part, l
  Node low = graph::Concatenate({And(ql, 0x0F), Shr(ql, 4)}, last + 2);  // [.., 2, 2, 2, 32]
  Node qh = graph::Reshape(Bytes(b, 128, 192), Lead(b, {2, 1, 32}));     // h, i, l
  std::vector<int64_t> shift_dims(static_cast<size_t>(last + 3), 1);
  shift_dims[static_cast<size_t>(last + 1)] = 4;
  Node shifts = graph::Reshape(graph::Const(g, std::vector<uint8_t>{0, 2, 4, 6}), shift_dims);
  Node high = And(graph::BitwiseShiftRightLogical(qh, shifts), 3);  // [.., 2, 4, 32]
  Node q = graph::BitwiseOr(graph::Reshape(low, Lead(b, {2, 4, 32})), Shl(high, 4));
  Node values = graph::Reshape(F32(q) - 32.0f, Lead(b, {2, 4, 2, 16}));
  Node sc = graph::Reshape(F32(graph::Bitcast(Bytes(b, 192, 208), DType::Int8)), Lead(b, {2, 4, 2, 1}));
  Node d = graph::Reshape(F16At(b, 208), Lead(b, {1, 1, 1, 1}));
  return graph::Reshape(d * sc * values, Lead(b, {256}));
}

/// Checks that `rows` are Uint8 [..., bytes per row] of whole `type` blocks; returns the values
/// per row.
int64_t CheckRows(const char* fn, Node rows, GGMLType type) {
  if (!IsQuantizedGGML(type))
    kiln::detail::Throw("nn::{}: ggml type {} is not a quantized block format (Q8_0, Q4_0, Q4_K, Q6_K)", fn,
                        GGMLTypeName(type));
  const int64_t bytes = quant::GGMLBlockBytes(type);
  if (rows.dtype() != DType::Uint8 || rows.rank() < 1 || rows.shape().Dimensions().back() % bytes != 0 ||
      rows.shape().Dimensions().back() == 0)
    kiln::detail::Throw("nn::{}: {} weights must be Uint8 rows of whole {}-byte blocks, got {}", fn,
                        GGMLTypeName(type), bytes, rows.shape());
  return rows.shape().Dimensions().back() / bytes * quant::GGMLBlockValues(type);
}

/// Rows of ggml blocks, Uint8 [..., bytes per row] -> float32 [..., values per row].
Node DecodeRows(const char* fn, Node rows, GGMLType type) {
  CheckRows(fn, rows, type);
  const int64_t bytes = quant::GGMLBlockBytes(type), values = quant::GGMLBlockValues(type);
  std::vector<int64_t> dims = rows.shape().Dimensions();
  const int64_t nb = dims.back() / bytes;
  dims.back() = nb;
  dims.push_back(bytes);
  Node blocks = graph::Reshape(rows, dims);
  Node v;
  switch (type) {
    case GGMLType::Q8_0:
      v = DecodeQ8_0(blocks);
      break;
    case GGMLType::Q4_0:
      v = DecodeQ4_0(blocks);
      break;
    case GGMLType::Q4_K:
      v = DecodeQ4_K(blocks);
      break;
    default:
      v = DecodeQ6_K(blocks);
      break;
  }
  dims.pop_back();
  dims.back() = nb * values;
  return graph::Reshape(v, dims);
}

// ---- Linear and NF4 ---------------------------------------------------------------------------

/// Scales (or zero points) [.., dim / block, ..] repeated `block` times along `axis` to `dims`.
Node ExpandBlocks(Node s, int axis, int64_t block, const std::vector<int64_t>& dims) {
  if (block == 1) return s;
  if (s.shape().Dim(axis) == 1) return s;  // One block: broadcasts as it is.
  std::vector<int64_t> split = s.shape().Dimensions();
  split.insert(split.begin() + axis + 1, 1);
  std::vector<int64_t> wide = split;
  wide[static_cast<size_t>(axis + 1)] = block;
  return graph::Reshape(graph::BroadcastToDims(graph::Reshape(s, split), wide), dims);
}

/// Checks `q` against weights of logical dims [K, N] for Linear/NF4; returns the block size.
int64_t CheckScales(const char* fn, const Quantization& q, Node weights) {
  const std::vector<int64_t> dims = weights.shape().Dimensions();
  if (q.scheme == QuantizationScheme::Linear) {
    const DType t = weights.dtype();
    if (t != DType::Int8 && t != DType::Uint8 && t != DType::Int4 && t != DType::Uint4)
      kiln::detail::Throw("nn::{}: Linear weights must be Int8, Uint8, Int4 or Uint4, got {}", fn,
                          weights.shape());
  } else if (weights.dtype() != DType::Uint4 && weights.dtype() != DType::Int4) {
    kiln::detail::Throw("nn::{}: NF4 weights must be Uint4 (or Int4) indices, got {}", fn, weights.shape());
  }
  if (q.block_axis != 0 && q.block_axis != 1)
    kiln::detail::Throw("nn::{}: block_axis {} is not 0 or 1", fn, q.block_axis);
  const int64_t axis_size = dims[static_cast<size_t>(q.block_axis)];
  const int64_t block = q.block_size == 0 ? axis_size : q.block_size;
  if (block <= 0 || axis_size % block != 0)
    kiln::detail::Throw("nn::{}: block size {} does not divide axis {} (size {}) of the weights {}", fn,
                        q.block_size, q.block_axis, axis_size, weights.shape());
  std::vector<int64_t> want = dims;
  want[static_cast<size_t>(q.block_axis)] /= block;
  if (!q.scale.Ok() || !IsFloat(q.scale.dtype()) || q.scale.shape().Dimensions() != want)
    kiln::detail::Throw(
        "nn::{}: the scale must be float [{}] for weights {} with blocks of {} along axis {}, got {}", fn,
        fmt::join(want, ", "), weights.shape(), block, q.block_axis,
        q.scale.Ok() ? q.scale.shape().ToString() : "none");
  if (q.zero_point.Ok()) {
    if (q.scheme != QuantizationScheme::Linear) kiln::detail::Throw("nn::{}: NF4 takes no zero point", fn);
    if (q.zero_point.shape() != q.scale.shape())
      kiln::detail::Throw("nn::{}: the zero point {} must have the scale's shape {}", fn,
                          q.zero_point.shape(), q.scale.shape());
  }
  return block;
}

/// Integer values [R, C] (Int32 or any integer) of a Linear/NF4 matrix with `q`'s parameters
/// `scale`/`zero` shaped for them -> floats in the scale's dtype.
Node Scaled(Node ints, const Quantization& q, Node scale, Node zero) {
  Node v;
  if (q.scheme == QuantizationScheme::NF4) {
    Graph& g = ints.graph();
    const std::vector<float> table(quant::kNF4Table.begin(), quant::kNF4Table.end());
    Node idx = graph::BitwiseAnd(graph::ConvertDType(ints, DType::Int32), graph::Scalar(g, DType::Int32, 15));
    v = graph::ConvertDType(graph::Gather(graph::Const(g, table), graph::ExpandAxes(idx, {-1})),
                            scale.dtype());
  } else {
    v = graph::ConvertDType(ints, scale.dtype());
  }
  v = v * scale;
  if (zero.Ok()) v = v + graph::ConvertDType(zero, scale.dtype());
  return v;
}

}  // namespace

Node Dequantized(Node weights, const Quantization& q, DType dtype) {
  if (!weights.Ok()) kiln::detail::Throw("nn::Dequantized: weights is an invalid node");
  if (!IsFloat(dtype)) kiln::detail::Throw("nn::Dequantized: dtype {} is not a float dtype", dtype);
  if (q.scheme == QuantizationScheme::GGML) {
    if (weights.rank() != 2)
      kiln::detail::Throw("nn::Dequantized: GGML weights must be Uint8 [N, bytes per row], got {}",
                          weights.shape());
    return graph::ConvertDType(graph::Transpose(DecodeRows("Dequantized", weights, q.ggml_type), 0, 1),
                               dtype);
  }
  if (weights.rank() != 2)
    kiln::detail::Throw("nn::Dequantized: {} weights must be [K, N], got {}", SchemeName(q.scheme),
                        weights.shape());
  const int64_t block = CheckScales("Dequantized", q, weights);
  const std::vector<int64_t> dims = weights.shape().Dimensions();
  Node scale = ExpandBlocks(q.scale, q.block_axis, block, dims);
  Node zero = q.zero_point.Ok() ? ExpandBlocks(q.zero_point, q.block_axis, block, dims) : Node();
  return graph::ConvertDType(Scaled(weights, q, scale, zero), dtype);
}

namespace {

/// x [..., K] · dequantized(weights) -> [..., N] through the kQuantizedMatmul composite, whose
/// decomposition is the product with Dequantized(weights) (the rows of ggml blocks for GGML).
Node QuantizedMatmul(Node x, Node weights, const Quantization& q, int64_t block) {
  namespace cm = compute::composite;
  std::vector<Node> operands = {x, weights};
  if (q.scheme != QuantizationScheme::GGML) operands.push_back(q.scale);
  if (q.zero_point.Ok()) operands.push_back(q.zero_point);
  std::vector<int64_t> values(cm::kNumQuantizedMatmulValues, 0);
  values[cm::kScheme] = static_cast<int64_t>(q.scheme);
  values[cm::kGGMLType] = static_cast<int64_t>(q.ggml_type);
  values[cm::kBlockAxis] = q.block_axis;
  values[cm::kBlockSize] = block;
  values[cm::kHasZero] = q.zero_point.Ok() ? 1 : 0;
  const DType dtype = x.dtype();
  const int last = x.rank() - 1;
  return graph::Composite(cm::kQuantizedMatmul, values, operands, [&](const std::vector<Node>& p) {
    Quantization inner = q;  // The same, its nodes the decomposition's parameters.
    inner.scale = inner.scheme != QuantizationScheme::GGML ? p[2] : Node();
    inner.zero_point = q.zero_point.Ok() ? p[3] : Node();
    if (inner.scheme == QuantizationScheme::GGML) {
      Node rows = graph::ConvertDType(DecodeRows("QuantizedDense", p[1], inner.ggml_type), dtype);  // [N, K]
      return std::vector<Node>{graph::Dot(p[0], rows).General({last}, {}, {1}, {})};
    }
    return std::vector<Node>{graph::Dot(p[0], Dequantized(p[1], inner, dtype)).General({last}, {}, {0}, {})};
  })[0];
}

}  // namespace

Node QuantizedDense(Node x, Node weights, const Quantization& q, Node bias,
                    const std::function<Node(Node)>& activation) {
  if (!x.Ok() || !IsFloat(x.dtype()) || x.rank() < 1)
    kiln::detail::Throw("nn::QuantizedDense: x must be a float node with at least one axis");
  if (!weights.Ok()) kiln::detail::Throw("nn::QuantizedDense: weights is an invalid node");
  const int64_t k = x.shape().Dimensions().back();
  int64_t n = 0, block = 0;
  if (q.scheme == QuantizationScheme::GGML) {
    const int64_t row_values = CheckRows("QuantizedDense", weights, q.ggml_type);
    if (weights.rank() != 2 || row_values != k)
      kiln::detail::Throw(
          "nn::QuantizedDense: {} weights {} hold rows of {} values; x {} has {} input features",
          GGMLTypeName(q.ggml_type), weights.shape(), row_values, x.shape(), k);
    n = weights.shape().Dim(0);
    block = quant::GGMLBlockValues(q.ggml_type);
  } else {
    if (weights.rank() != 2 || weights.shape().Dim(0) != k)
      kiln::detail::Throw("nn::QuantizedDense: weights {} must be [K, N] with K = {}, x's last axis (x {})",
                          weights.shape(), k, x.shape());
    block = CheckScales("QuantizedDense", q, weights);
    n = weights.shape().Dim(1);
  }
  Node y = QuantizedMatmul(x, weights, q, block);
  if (bias.Ok()) {
    if (bias.shape().Dimensions() != std::vector<int64_t>{n})
      kiln::detail::Throw("nn::QuantizedDense: bias {} must be [{}]", bias.shape(), n);
    // Size-1 leading axes broadcast on the add (x's leading axes may be dynamic).
    y = y + graph::InsertAxes(graph::ConvertDType(bias, y.dtype()),
                              std::vector<int>(static_cast<size_t>(x.rank() - 1), 0));
  }
  return activation ? activation(y) : y;
}

Node QuantizedEmbedding(Node ids, Node table, const Quantization& q) {
  if (!ids.Ok() || !IsInt(ids.dtype()) || IsPacked(ids.dtype()))
    kiln::detail::Throw("nn::QuantizedEmbedding: ids must be an integer node");
  if (!table.Ok() || table.rank() != 2)
    kiln::detail::Throw("nn::QuantizedEmbedding: the table must be [vocab, dims]");
  Node at = graph::ExpandAxes(ids, {-1});
  if (q.scheme == QuantizationScheme::GGML) {
    CheckRows("QuantizedEmbedding", table, q.ggml_type);
    return DecodeRows("QuantizedEmbedding", graph::Gather(table, at), q.ggml_type);
  }
  const int64_t block = CheckScales("QuantizedEmbedding", q, table);
  // Packed 4-bit tables are widened to Int8 before the gather (Gather takes no packed operand).
  Node ints = graph::Gather(IsPacked(table.dtype()) ? graph::ConvertDType(table, DType::Int8) : table, at);
  // The scale rows of the gathered rows: blocks along the row are expanded across it; blocks
  // down the columns (block_axis 0) give one scale row per `block` ids.
  Node scale, zero;
  if (q.block_axis == 1) {
    const std::vector<int64_t> out = ints.shape().Dimensions();
    scale = ExpandBlocks(graph::Gather(q.scale, at), ints.rank() - 1, block, out);
    if (q.zero_point.Ok()) zero = ExpandBlocks(graph::Gather(q.zero_point, at), ints.rank() - 1, block, out);
  } else {
    Node row = graph::ConvertDType(at, DType::Int64) / graph::Scalar(at.graph(), DType::Int64, block);
    scale = graph::Gather(q.scale, row);
    if (q.zero_point.Ok()) zero = graph::Gather(q.zero_point, row);
  }
  return graph::ConvertDType(Scaled(ints, q, scale, zero), DType::Float32);
}

}  // namespace kiln::nn
