// Attention: scaled dot-product attention (grouped-query capable), rotary position embeddings
// and the multi-head attention layer.

#include "kiln/ml/attention.h"

#include <cmath>
#include <string>
#include <vector>

#include "compute/shape_dims.h"
#include "core/check.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/ops.h"
#include "kiln/ml/layers.h"

namespace kiln::nn {

namespace {

using graph::DimensionSpec;
using graph::StaticDim;

using compute::MayBeEqual;

/// Throws unless axis `axis` of x is static (head counts and widths decide the weights' shapes).
int64_t StaticAxis(const char* fn, Node x, int axis, const char* what) {
  const int64_t d = x.shape().Dim(axis);
  if (d == Shape::kDynamic)
    kiln::detail::Throw("{}: the {} axis {} of {} must be static (only batch and lengths may be dynamic)", fn,
                        what, axis, x.shape());
  return d;
}

/// `mask` (Bool, rank <= 4, aligned to the right) broadcast to `dims` ([batch, heads, q, kv]).
Node BroadcastMask(const char* fn, Node mask, const std::vector<DimensionSpec>& dims) {
  if (mask.dtype() != DType::Bool) kiln::detail::Throw("{}: the mask must be Bool, got {}", fn, mask.shape());
  if (mask.rank() > 4)
    kiln::detail::Throw("{}: the mask {} has more than 4 axes ([batch, heads, q_len, kv_len])", fn,
                        mask.shape());
  const Shape target = graph::ShapeFromSpecs(DType::Bool, dims);
  Node m4 = graph::InsertAxes(mask, std::vector<int>(4 - static_cast<size_t>(mask.rank()), 0));
  for (int a = 0; a < 4; ++a) {
    const int64_t md = m4.shape().Dim(a);
    if (md != 1 && !MayBeEqual(md, target.Dim(a))) {
      kiln::detail::Throw(
          "{}: the mask {} does not broadcast to [batch, heads, q_len, kv_len] = [{}, {}, {}, {}]", fn,
          mask.shape(), dims[0].ToString(), dims[1].ToString(), dims[2].ToString(), dims[3].ToString());
    }
  }
  return graph::BroadcastToShape(m4, target);
}

}  // namespace

Node ScaledDotProductAttention(Node query, Node key, Node value, Node mask, bool causal,
                               std::optional<double> scale, const std::function<Node(Node)>& on_weights) {
  const char* fn = "nn::ScaledDotProductAttention";
  if (!query.Ok() || !key.Ok() || !value.Ok())
    kiln::detail::Throw("{}: query, key and value must be valid", fn);
  if (query.rank() != 4 || key.rank() != 4 || value.rank() != 4) {
    kiln::detail::Throw("{}: query {}, key {} and value {} must be [batch, len, heads, dim]", fn,
                        query.shape(), key.shape(), value.shape());
  }
  if (!IsFloat(query.dtype()) || key.dtype() != query.dtype() || value.dtype() != query.dtype()) {
    kiln::detail::Throw("{}: query {}, key {} and value {} must share one float dtype", fn, query.shape(),
                        key.shape(), value.shape());
  }
  // Batch and lengths may be dynamic; heads and widths are static.
  const int64_t batch = query.shape().Dim(0);
  const int64_t heads = StaticAxis(fn, query, 2, "heads"), dim = StaticAxis(fn, query, 3, "head width");
  const int64_t kv_len = key.shape().Dim(1), kv_heads = StaticAxis(fn, key, 2, "heads");
  const int64_t value_dim = StaticAxis(fn, value, 3, "head width");
  if (!MayBeEqual(key.shape().Dim(0), batch) || !MayBeEqual(value.shape().Dim(0), batch) ||
      StaticAxis(fn, key, 3, "head width") != dim || !MayBeEqual(value.shape().Dim(1), kv_len) ||
      StaticAxis(fn, value, 2, "heads") != kv_heads) {
    kiln::detail::Throw(
        "{}: query {}, key {} and value {} disagree: key must be [batch, kv_len, kv_heads, head_dim] and "
        "value "
        "[batch, kv_len, kv_heads, value_dim]",
        fn, query.shape(), key.shape(), value.shape());
  }
  if (kv_heads < 1 || heads % kv_heads != 0)
    kiln::detail::Throw("{}: {} key/value heads must divide the {} query heads", fn, kv_heads, heads);
  const int64_t group = heads / kv_heads;
  const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(dim));

  const DimensionSpec B = graph::DimensionSpecFor(query, 0), Q = graph::DimensionSpecFor(query, 1),
                      K = graph::DimensionSpecFor(key, 1);
  // Scores per key/value head and group: [batch, kv_heads, q_len, group, kv_len].
  Node q5 = graph::DynamicReshape(query, {B, Q, StaticDim(kv_heads), StaticDim(group), StaticDim(dim)});
  Node scores = graph::Dot(q5, key).General({4}, {0, 2}, {3}, {0, 2});
  scores = graph::TransposeAllAxes(scores, {0, 1, 3, 2, 4});
  const std::vector<DimensionSpec> sdims = {B, StaticDim(heads), Q, K};
  scores = graph::DynamicReshape(scores, sdims) * graph::ScalarLike(scores, s);

  Node allowed;
  if (mask.Ok()) allowed = BroadcastMask(fn, mask, sdims);
  if (causal) {
    graph::Graph& g = query.graph();
    const std::vector<DimensionSpec> qk = {StaticDim(1), StaticDim(1), Q, K};
    Node c = graph::BroadcastToShape(graph::GreaterOrEqual(graph::DynamicIota(g, DType::Int32, 2, qk),
                                                           graph::DynamicIota(g, DType::Int32, 3, qk)),
                                     graph::ShapeFromSpecs(DType::Bool, sdims));
    allowed = allowed.Ok() ? graph::LogicalAnd(allowed, c) : c;
  }
  Node weights = allowed.Ok() ? graph::MaskedSoftmax(scores, allowed, {-1}) : graph::Softmax(scores, {-1});
  if (on_weights) weights = on_weights(weights);

  // Weighted values: [batch, kv_heads, group, q_len, value_dim] -> [batch, q_len, heads, value_dim].
  Node w5 = graph::DynamicReshape(weights, {B, StaticDim(kv_heads), StaticDim(group), Q, K});
  Node out = graph::Dot(w5, value).General({4}, {0, 1}, {1}, {0, 2});
  out = graph::TransposeAllAxes(out, {0, 3, 1, 2, 4});
  return graph::DynamicReshape(out, {B, Q, StaticDim(heads), StaticDim(value_dim)});
}

Node ApplyRoPE(Node x, Node positions, double base) {
  if (!(base > 0)) kiln::detail::Throw("nn::ApplyRoPE: base {} must be positive", base);
  if (!x.Ok()) kiln::detail::Throw("nn::ApplyRoPE: x and positions must be valid");
  if (x.rank() != 4)
    kiln::detail::Throw("nn::ApplyRoPE: x {} must be float [batch, seq, heads, head_dim]", x.shape());
  const int64_t dim = x.shape().Dim(3);
  if (dim % 2 != 0) kiln::detail::Throw("nn::ApplyRoPE: head_dim {} of x {} must be even", dim, x.shape());
  std::vector<double> inv(static_cast<size_t>(dim / 2));
  for (size_t i = 0; i < inv.size(); ++i)
    inv[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
  return ApplyRoPEWithFrequencies(x, positions, graph::Const(x.graph(), inv));
}

Node ApplyRoPEWithFrequencies(Node x, Node positions, Node inv_freq) {
  const char* fn = "nn::ApplyRoPE";
  if (!x.Ok() || !positions.Ok() || !inv_freq.Ok())
    kiln::detail::Throw("{}: x and positions must be valid", fn);
  if (x.rank() != 4 || !IsFloat(x.dtype()))
    kiln::detail::Throw("{}: x {} must be float [batch, seq, heads, head_dim]", fn, x.shape());
  const int64_t batch = x.shape().Dim(0), seq = x.shape().Dim(1), dim = x.shape().Dim(3);
  if (dim % 2 != 0) kiln::detail::Throw("{}: head_dim {} of x {} must be even", fn, dim, x.shape());
  const int64_t half = dim / 2;
  if (inv_freq.rank() != 1 || inv_freq.shape().Dim(0) != half || !IsFloat(inv_freq.dtype()))
    kiln::detail::Throw("{}: inverse frequencies {} must be float [{}] (head_dim / 2)", fn, inv_freq.shape(),
                        half);
  const bool per_batch = positions.rank() == 2;
  if (!(positions.rank() == 1 && MayBeEqual(positions.shape().Dim(0), seq)) &&
      !(per_batch && MayBeEqual(positions.shape().Dim(0), batch) &&
        MayBeEqual(positions.shape().Dim(1), seq))) {
    kiln::detail::Throw("{}: positions {} must be [seq] or [batch, seq] for x {}", fn, positions.shape(),
                        x.shape());
  }
  if (IsPacked(positions.dtype()) || positions.dtype() == DType::Bool)
    kiln::detail::Throw("{}: positions {} must be integer or float", fn, positions.shape());
  // Angles in float64 (large positions lose digits in float32), then cos/sin in x's dtype.
  const DimensionSpec pb = per_batch ? graph::DimensionSpecFor(x, 0) : StaticDim(1);
  const DimensionSpec S = graph::DimensionSpecFor(x, 1);
  Node pos = graph::DynamicReshape(graph::ConvertDType(positions, DType::Float64), {pb, S, StaticDim(1)});
  Node freq = graph::Reshape(graph::ConvertDType(inv_freq, DType::Float64), {1, 1, half});
  Node angle = pos * freq;
  angle = graph::DynamicReshape(graph::Concatenate({angle, angle}, 2), {pb, S, StaticDim(1), StaticDim(dim)});
  Node cos = graph::ConvertDType(graph::Cos(angle), x.dtype());
  Node sin = graph::ConvertDType(graph::Sin(angle), x.dtype());
  std::vector<Node> halves = graph::Split(x, 3, 2);
  Node rotated = graph::Concatenate({graph::Neg(halves[1]), halves[0]}, 3);
  return x * cos + rotated * sin;
}

}  // namespace kiln::nn

namespace kiln::layers {

MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::NumHeads(int64_t heads) {
  heads_ = heads;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::KeyQueryDim(int64_t dim) {
  key_query_dim_ = dim;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::ValueDim(int64_t dim) {
  value_dim_ = dim;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::NumKVHeads(int64_t heads) {
  kv_heads_ = heads;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::OutputDim(int64_t dim) {
  output_dim_ = dim;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::UseProjectionBias(bool use) {
  bias_ = use;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::Mask(Node mask) {
  mask_ = mask;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::KeyMask(Node mask) {
  key_mask_ = mask;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::Causal(bool causal) {
  causal_ = causal;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::Dropout(double rate) {
  dropout_ = rate;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::RoPE(double base) {
  rope_base_ = base;
  return *this;
}
MultiHeadAttentionBuilder& MultiHeadAttentionBuilder::RoPEPositions(Node positions) {
  rope_positions_ = positions;
  if (!rope_base_) rope_base_ = 10000.0;
  return *this;
}

Node MultiHeadAttentionBuilder::Done() {
  const std::string where = "layers::MultiHeadAttention(" + scope_.Path() + ")";
  if (!query_.Ok() || !key_.Ok() || !value_.Ok())
    kiln::detail::Throw("{}: query, key and value must be valid nodes", where);
  for (Node n : {query_, key_, value_}) {
    if (n.rank() != 3 || !IsFloat(n.dtype()))
      kiln::detail::Throw("{}: input {} must be float [batch, seq, features]", where, n.shape());
  }
  const int64_t batch = query_.shape().Dim(0), q_len = query_.shape().Dim(1);
  const int64_t features = nn::StaticAxis(where.c_str(), query_, 2, "features");
  const int64_t kv_len = key_.shape().Dim(1);
  if (!nn::MayBeEqual(key_.shape().Dim(0), batch) || !nn::MayBeEqual(value_.shape().Dim(0), batch) ||
      !nn::MayBeEqual(value_.shape().Dim(1), kv_len)) {
    kiln::detail::Throw("{}: query {}, key {} and value {} disagree on batch or key length", where,
                        query_.shape(), key_.shape(), value_.shape());
  }
  if (heads_ < 1) kiln::detail::Throw("{}: NumHeads(n) must be set to a positive count", where);
  int64_t kq = key_query_dim_;
  if (kq == 0) {
    if (features % heads_ != 0) {
      kiln::detail::Throw("{}: query features {} do not split into {} heads: set KeyQueryDim", where,
                          features, heads_);
    }
    kq = features / heads_;
  }
  const int64_t vd = value_dim_ > 0 ? value_dim_ : kq;
  const int64_t kvh = kv_heads_ > 0 ? kv_heads_ : heads_;
  const int64_t od = output_dim_ > 0 ? output_dim_ : features;
  if (kq < 1 || vd < 1 || od < 1)
    kiln::detail::Throw("{}: dimensions must be positive (key/query {}, value {}, output {})", where, kq, vd,
                        od);
  if (heads_ % kvh != 0)
    kiln::detail::Throw("{}: NumKVHeads({}) must divide NumHeads({})", where, kvh, heads_);
  if (dropout_ < 0 || dropout_ >= 1)
    kiln::detail::Throw("{}: Dropout({}) must be in [0, 1)", where, dropout_);

  Node q = DenseWithDims(scope_.In("query"), query_, bias_, {heads_, kq});
  Node k = DenseWithDims(scope_.In("key"), key_, bias_, {kvh, kq});
  Node v = DenseWithDims(scope_.In("value"), value_, bias_, {kvh, vd});
  if (rope_base_) {
    graph::Graph& g = query_.graph();
    Node qpos = rope_positions_, kpos = rope_positions_;
    if (!rope_positions_.Ok()) {
      qpos = graph::DynamicIota(g, DType::Int32, 0, {graph::DimensionSpecFor(query_, 1)});
      kpos = graph::DynamicIota(g, DType::Int32, 0, {graph::DimensionSpecFor(key_, 1)});
    } else if (!nn::MayBeEqual(q_len, kv_len)) {
      kiln::detail::Throw("{}: RoPEPositions {} are shared by queries ({}) and keys ({}): lengths must agree",
                          where, rope_positions_.shape(), q_len, kv_len);
    }
    q = nn::ApplyRoPE(q, qpos, *rope_base_);
    k = nn::ApplyRoPE(k, kpos, *rope_base_);
  }

  const std::vector<graph::DimensionSpec> sdims = {
      graph::DimensionSpecFor(query_, 0), graph::StaticDim(heads_), graph::DimensionSpecFor(query_, 1),
      graph::DimensionSpecFor(key_, 1)};
  Node mask = mask_;
  if (key_mask_.Ok()) {
    if (key_mask_.dtype() != DType::Bool || key_mask_.rank() != 2 ||
        !nn::MayBeEqual(key_mask_.shape().Dim(0), batch) ||
        !nn::MayBeEqual(key_mask_.shape().Dim(1), kv_len)) {
      kiln::detail::Throw("{}: KeyMask {} must be Bool [batch, kv_len] = [{}, {}]", where, key_mask_.shape(),
                          batch, kv_len);
    }
    Node km = graph::InsertAxes(key_mask_, {1, 1});  // [batch, 1, 1, kv_len]
    mask = mask.Ok()
               ? graph::LogicalAnd(nn::BroadcastMask(where.c_str(), mask, sdims),
                                   graph::BroadcastToShape(km, graph::ShapeFromSpecs(DType::Bool, sdims)))
               : km;
  }
  std::function<Node(Node)> on_weights;
  if (dropout_ > 0) {
    model::Scope dropout_scope = scope_.In("dropout");
    on_weights = [dropout_scope, rate = dropout_](Node w) { return layers::Dropout(dropout_scope, w, rate); };
  }
  Node out = nn::ScaledDotProductAttention(q, k, v, mask, causal_, std::nullopt, on_weights);
  out = graph::DynamicReshape(out, {graph::DimensionSpecFor(query_, 0), graph::DimensionSpecFor(query_, 1),
                                    graph::StaticDim(heads_ * vd)});
  return DenseWithDims(scope_.In("output"), out, bias_, {od});
}

}  // namespace kiln::layers
