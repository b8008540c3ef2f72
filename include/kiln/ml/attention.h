#pragma once
/// @file
/// Attention: scaled dot-product attention (kiln::nn, stateless), rotary position embeddings,
/// and the multi-head attention layer (kiln::layers) with its projections in a model::Scope.
///
/// Layout (heads on the third axis, as GoMLX and most checkpoints keep them):
///   query [batch, q_len, heads, head_dim], key [batch, kv_len, kv_heads, head_dim],
///   value [batch, kv_len, kv_heads, value_dim]  ->  [batch, q_len, heads, value_dim].
///
///   Node y = layers::MultiHeadAttention(scope.In("attn"), x, x, x).NumHeads(8).Causal().Done();
///   Node o = nn::ScaledDotProductAttention(q, k, v, /*mask=*/{}, /*causal=*/true);

#include <cstdint>
#include <functional>
#include <optional>

#include "kiln/graph/ops.h"
#include "kiln/model/store.h"

namespace kiln::nn {

using graph::Node;

/// softmax(q·kᵀ·scale + mask)·v per head. `mask` (optional: an invalid Node means none) is Bool,
/// true where a query may attend a key, and of rank 4 broadcastable to [batch, heads, q_len,
/// kv_len] (or lower rank, aligned to the right, e.g. [q_len, kv_len]). `causal` lets query i
/// attend keys j <= i (aligned at the first position, as torch's triu(1) attention mask).
/// Grouped-query attention: kv_heads must divide heads, and query head h uses key/value head
/// h / (heads / kv_heads). `scale` defaults to 1/sqrt(head_dim). A query with no allowed key
/// gets zeros. `on_weights`, if set, transforms the attention weights [batch, heads, q_len,
/// kv_len] before they weigh the values (dropout does).
Node ScaledDotProductAttention(Node query, Node key, Node value, Node mask = {}, bool causal = false,
                               std::optional<double> scale = std::nullopt,
                               const std::function<Node(Node)>& on_weights = {});

/// Rotary position embeddings (RoFormer), rotate-half form (GPT-NeoX / LLaMA layout: dimension i
/// pairs with i + head_dim/2, not with its neighbour): with inv_freq[i] = base^(-2i/head_dim) and
/// angle = position·inv_freq (repeated on both halves), x·cos(angle) + [-x2, x1]·sin(angle).
/// x: [batch, seq, heads, head_dim] (head_dim even), float; positions: integer or float, [seq]
/// or [batch, seq].
Node ApplyRoPE(Node x, Node positions, double base = 10000.0);
/// ApplyRoPE with the inverse frequencies given: `inv_freq` is float [head_dim / 2] (a constant
/// or an input), for scaled rotary embeddings (linear, NTK, Llama 3's) whose frequencies are not
/// base^(-2i/head_dim).
Node ApplyRoPEWithFrequencies(Node x, Node positions, Node inv_freq);

}  // namespace kiln::nn

namespace kiln::layers {

using graph::Node;

/// Multi-head attention with learned projections. Variables, each a layers::Dense in its own
/// sub-scope: "query" (weights [q_features, heads, key_query_dim]), "key" ([k_features,
/// kv_heads, key_query_dim]), "value" ([v_features, kv_heads, value_dim]), and "output"
/// (weights [heads·value_dim, output_dim]), each with "biases" unless UseProjectionBias(false).
/// Inputs are [batch, seq, features]; the result is [batch, q_len, output_dim].
///
/// Copying torch.nn.MultiheadAttention(E, H, batch_first=True): query/weights =
/// in_proj_weight[:E]ᵀ reshaped [E, H, E/H] (key and value from the next rows), query/biases =
/// in_proj_bias[:E] reshaped [H, E/H], output/weights = out_proj.weightᵀ, output/biases =
/// out_proj.bias.
class MultiHeadAttentionBuilder {
 public:
  /// Attention of `query` over `key` and `value` ([batch, seq, features] each), with the
  /// projections' variables under `scope`; layers::MultiHeadAttention(...) makes one.
  MultiHeadAttentionBuilder(model::Scope scope, Node query, Node key, Node value)
      : scope_(std::move(scope)), query_(query), key_(key), value_(value) {}
  /// Number of query heads (required).
  MultiHeadAttentionBuilder& NumHeads(int64_t heads);
  /// Per-head dimension of queries and keys (default: query features / heads).
  MultiHeadAttentionBuilder& KeyQueryDim(int64_t dim);
  /// Per-head dimension of values (default: KeyQueryDim).
  MultiHeadAttentionBuilder& ValueDim(int64_t dim);
  /// Key/value heads for grouped-query attention (default: NumHeads; must divide it).
  MultiHeadAttentionBuilder& NumKVHeads(int64_t heads);
  /// Output features (default: the query's features).
  MultiHeadAttentionBuilder& OutputDim(int64_t dim);
  /// Whether the four projections have "biases" (true by default).
  MultiHeadAttentionBuilder& UseProjectionBias(bool use);
  /// Bool mask, true where attending is allowed, broadcastable to [batch, heads, q_len, kv_len].
  MultiHeadAttentionBuilder& Mask(Node mask);
  /// Bool [batch, kv_len], true for real keys (false for padding), combined with the others.
  MultiHeadAttentionBuilder& KeyMask(Node mask);
  /// Query i attends keys j <= i only.
  MultiHeadAttentionBuilder& Causal(bool causal = true);
  /// Dropout of the attention weights while training (model::IsTraining).
  MultiHeadAttentionBuilder& Dropout(double rate);
  /// Rotary embeddings on the projected queries and keys, at positions 0, 1, 2... (or those of
  /// RoPEPositions).
  MultiHeadAttentionBuilder& RoPE(double base = 10000.0);
  /// Positions for RoPE ([seq] or [batch, seq]; query and key share them: self-attention).
  MultiHeadAttentionBuilder& RoPEPositions(Node positions);
  /// The attention output [batch, q_len, output_dim]; kiln::Error naming MultiHeadAttention when
  /// NumHeads is unset, the inputs are not float [batch, seq, features] agreeing on batch and key
  /// length, or the dimensions do not fit (heads not dividing the features, kv_heads not
  /// dividing heads).
  Node Done();

 private:
  model::Scope scope_;
  Node query_, key_, value_, mask_, key_mask_, rope_positions_;
  int64_t heads_ = 0, kv_heads_ = 0, key_query_dim_ = 0, value_dim_ = 0, output_dim_ = 0;
  bool bias_ = true, causal_ = false;
  double dropout_ = 0;
  std::optional<double> rope_base_;
};
/// Starts a multi-head attention layer: MultiHeadAttention(scope, q, k, v).NumHeads(8).Done().
inline MultiHeadAttentionBuilder MultiHeadAttention(model::Scope scope, Node query, Node key, Node value) {
  return MultiHeadAttentionBuilder(std::move(scope), query, key, value);
}

}  // namespace kiln::layers
