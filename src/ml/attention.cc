// Attention: scaled dot-product attention (grouped-query capable), rotary position embeddings
// and the multi-head attention layer.

#include "kiln/ml/attention.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "kiln/graph/ops.h"
#include "kiln/ml/layers.h"

namespace kiln::nn {

namespace {

/// `mask` (Bool, rank <= 4, aligned to the right) broadcast to `dims` ([batch, heads, q, kv]).
Node BroadcastMask(const char* fn, Node mask, const std::vector<int64_t>& dims) {
  if (mask.dtype() != DType::Bool) kiln::detail::Throw("{}: the mask must be Bool, got {}", fn, mask.shape());
  if (mask.rank() > 4)
    kiln::detail::Throw("{}: the mask {} has more than 4 axes ([batch, heads, q_len, kv_len])", fn,
                        mask.shape());
  std::vector<int64_t> md(4 - static_cast<size_t>(mask.rank()), 1);
  for (int a = 0; a < mask.rank(); ++a) md.push_back(mask.shape().Dim(a));
  for (size_t a = 0; a < 4; ++a) {
    if (md[a] != 1 && md[a] != dims[a]) {
      kiln::detail::Throw(
          "{}: the mask {} does not broadcast to [batch, heads, q_len, kv_len] = [{}, {}, {}, {}]", fn,
          mask.shape(), dims[0], dims[1], dims[2], dims[3]);
    }
  }
  return graph::BroadcastToDims(graph::Reshape(mask, md), dims);
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
  const int64_t batch = query.shape().Dim(0), q_len = query.shape().Dim(1), heads = query.shape().Dim(2),
                dim = query.shape().Dim(3);
  const int64_t kv_len = key.shape().Dim(1), kv_heads = key.shape().Dim(2), value_dim = value.shape().Dim(3);
  if (key.shape().Dim(0) != batch || value.shape().Dim(0) != batch || key.shape().Dim(3) != dim ||
      value.shape().Dim(1) != kv_len || value.shape().Dim(2) != kv_heads) {
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

  // Scores per key/value head and group: [batch, kv_heads, q_len, group, kv_len].
  Node q5 = graph::Reshape(query, {batch, q_len, kv_heads, group, dim});
  Node scores = graph::Dot(q5, key).General({4}, {0, 2}, {3}, {0, 2});
  scores = graph::TransposeAllAxes(scores, {0, 1, 3, 2, 4});
  const std::vector<int64_t> sdims = {batch, heads, q_len, kv_len};
  scores = graph::Reshape(scores, sdims) * graph::ScalarLike(scores, s);

  Node allowed;
  if (mask.Ok()) allowed = BroadcastMask(fn, mask, sdims);
  if (causal) {
    graph::Graph& g = query.graph();
    const Shape qk(DType::Int32, {1, 1, q_len, kv_len});
    Node c =
        graph::BroadcastToDims(graph::GreaterOrEqual(graph::Iota(g, qk, 2), graph::Iota(g, qk, 3)), sdims);
    allowed = allowed.Ok() ? graph::LogicalAnd(allowed, c) : c;
  }
  Node weights = allowed.Ok() ? graph::MaskedSoftmax(scores, allowed, {-1}) : graph::Softmax(scores, {-1});
  if (on_weights) weights = on_weights(weights);

  // Weighted values: [batch, kv_heads, group, q_len, value_dim] -> [batch, q_len, heads, value_dim].
  Node w5 = graph::Reshape(weights, {batch, kv_heads, group, q_len, kv_len});
  Node out = graph::Dot(w5, value).General({4}, {0, 1}, {1}, {0, 2});
  out = graph::TransposeAllAxes(out, {0, 3, 1, 2, 4});
  return graph::Reshape(out, {batch, q_len, heads, value_dim});
}

Node ApplyRoPE(Node x, Node positions, double base) {
  const char* fn = "nn::ApplyRoPE";
  if (!x.Ok() || !positions.Ok()) kiln::detail::Throw("{}: x and positions must be valid", fn);
  if (x.rank() != 4 || !IsFloat(x.dtype()))
    kiln::detail::Throw("{}: x {} must be float [batch, seq, heads, head_dim]", fn, x.shape());
  const int64_t batch = x.shape().Dim(0), seq = x.shape().Dim(1), dim = x.shape().Dim(3);
  if (dim % 2 != 0) kiln::detail::Throw("{}: head_dim {} of x {} must be even", fn, dim, x.shape());
  if (!(base > 0)) kiln::detail::Throw("{}: base {} must be positive", fn, base);
  const bool per_batch = positions.rank() == 2;
  if (!(positions.rank() == 1 && positions.shape().Dim(0) == seq) &&
      !(per_batch && positions.shape().Dim(0) == batch && positions.shape().Dim(1) == seq)) {
    kiln::detail::Throw("{}: positions {} must be [seq] or [batch, seq] for x {}", fn, positions.shape(),
                        x.shape());
  }
  if (IsPacked(positions.dtype()) || positions.dtype() == DType::Bool)
    kiln::detail::Throw("{}: positions {} must be integer or float", fn, positions.shape());
  const int64_t half = dim / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inv[static_cast<size_t>(i)] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
  graph::Graph& g = x.graph();
  // Angles in float64 (large positions lose digits in float32), then cos/sin in x's dtype.
  const int64_t pb = per_batch ? batch : 1;
  Node pos = graph::Reshape(graph::ConvertDType(positions, DType::Float64), {pb, seq, 1});
  Node freq = graph::Reshape(graph::Const(g, inv), {1, 1, half});
  Node angle = pos * freq;
  angle = graph::Reshape(graph::Concatenate({angle, angle}, 2), {pb, seq, 1, dim});
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
  const int64_t batch = query_.shape().Dim(0), q_len = query_.shape().Dim(1),
                features = query_.shape().Dim(2);
  const int64_t kv_len = key_.shape().Dim(1);
  if (key_.shape().Dim(0) != batch || value_.shape().Dim(0) != batch || value_.shape().Dim(1) != kv_len) {
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
      qpos = graph::Iota(g, Shape(DType::Int32, {q_len}), 0);
      kpos = graph::Iota(g, Shape(DType::Int32, {kv_len}), 0);
    } else if (q_len != kv_len) {
      kiln::detail::Throw("{}: RoPEPositions {} are shared by queries ({}) and keys ({}): lengths must agree",
                          where, rope_positions_.shape(), q_len, kv_len);
    }
    q = nn::ApplyRoPE(q, qpos, *rope_base_);
    k = nn::ApplyRoPE(k, kpos, *rope_base_);
  }

  const std::vector<int64_t> sdims = {batch, heads_, q_len, kv_len};
  Node mask = mask_;
  if (key_mask_.Ok()) {
    if (key_mask_.dtype() != DType::Bool || key_mask_.rank() != 2 || key_mask_.shape().Dim(0) != batch ||
        key_mask_.shape().Dim(1) != kv_len) {
      kiln::detail::Throw("{}: KeyMask {} must be Bool [batch, kv_len] = [{}, {}]", where, key_mask_.shape(),
                          batch, kv_len);
    }
    Node km = graph::Reshape(key_mask_, {batch, 1, 1, kv_len});
    mask = mask.Ok() ? graph::LogicalAnd(nn::BroadcastMask(where.c_str(), mask, sdims),
                                         graph::BroadcastToDims(km, sdims))
                     : km;
  }
  std::function<Node(Node)> on_weights;
  if (dropout_ > 0) {
    model::Scope dropout_scope = scope_.In("dropout");
    on_weights = [dropout_scope, rate = dropout_](Node w) { return layers::Dropout(dropout_scope, w, rate); };
  }
  Node out = nn::ScaledDotProductAttention(q, k, v, mask, causal_, std::nullopt, on_weights);
  out = graph::Reshape(out, {batch, q_len, heads_ * vd});
  return DenseWithDims(scope_.In("output"), out, bias_, {od});
}

}  // namespace kiln::layers
