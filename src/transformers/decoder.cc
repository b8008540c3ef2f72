// The decoder stack of transformers::CausalLM and transformers::Generator: Llama's (RMSNorm,
// rotary embeddings, grouped-query attention, SwiGLU) and GPT-2's (LayerNorm, learned positions,
// fused query/key/value projection, GELU), with the variables named after HuggingFace's tensors
// (hf_checkpoint.cc maps them).

#include "transformers/decoder.h"

#include <cmath>
#include <numbers>
#include <string>

#include "core/check.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/gather.h"
#include "kiln/ml/activations.h"
#include "kiln/ml/attention.h"
#include "kiln/ml/initializers.h"
#include "kiln/ml/layers.h"
#include "kiln/ml/normalization.h"

namespace kiln::transformers::internal {

using graph::DimensionSpec;
using graph::StaticDim;

std::vector<double> RopeInverseFrequencies(const Config& cfg, int64_t max_position) {
  const int64_t dim = cfg.head_dim();
  const double dd = static_cast<double>(dim);
  double base = cfg.rope_theta();
  if (cfg.rope_scaling() == RopeScaling::kDynamic) {
    // HuggingFace's dynamic NTK: past the trained length, theta grows with the sequence.
    const int64_t original = cfg.max_positions();
    const int64_t seq = max_position + 1;
    if (seq > original) {
      const double f = cfg.rope_factor() * static_cast<double>(seq) / static_cast<double>(original) -
                       (cfg.rope_factor() - 1);
      base *= std::pow(f, dd / (dd - 2));
    }
  }
  std::vector<double> inv(static_cast<size_t>(dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0 / std::pow(base, 2.0 * static_cast<double>(i) / dd);
  if (cfg.rope_scaling() == RopeScaling::kLinear) {
    for (double& f : inv) f /= cfg.rope_factor();
  } else if (cfg.rope_scaling() == RopeScaling::kLlama3) {
    const double original = static_cast<double>(
        cfg.rope_original_max_positions() > 0 ? cfg.rope_original_max_positions() : cfg.max_positions());
    const double lo = cfg.rope_low_freq_factor(), hi = cfg.rope_high_freq_factor(),
                 factor = cfg.rope_factor();
    const double low_wavelen = original / lo, high_wavelen = original / hi;
    for (double& f : inv) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (original / wavelen - lo) / (hi - lo);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
  }
  return inv;
}

namespace {

/// A projection x·W (+ b) with W [in, out] under `scope` ("weights", "biases"; biases start at 0).
Node Linear(const model::Scope& scope, Node x, bool bias, int64_t out) {
  if (bias) scope.WithInitializer(initializers::Zeros()).VariableWithShape("biases", Shape(x.dtype(), {out}));
  return layers::Dense(scope, x, bias, out);
}

/// [batch, t, heads·dim] -> [batch, t, heads, dim] (batch and t may be dynamic).
Node SplitHeads(Node x, int64_t heads, int64_t dim) {
  return graph::DynamicReshape(
      x, {graph::DimensionSpecFor(x, 0), graph::DimensionSpecFor(x, 1), StaticDim(heads), StaticDim(dim)});
}

/// [batch, t, heads, dim] -> [batch, t, heads·dim].
Node MergeHeads(Node x) {
  const int64_t width = x.shape().Dim(2) * x.shape().Dim(3);
  return graph::DynamicReshape(
      x, {graph::DimensionSpecFor(x, 0), graph::DimensionSpecFor(x, 1), StaticDim(width)});
}

/// Attention of q [batch, t, heads, dim] over k, v [batch, t, kv_heads, dim]: causal over the t
/// tokens without a cache; with one, k and v are written to the cache at write_pos and q attends
/// every valid slot up to its own.
Node Attend(Node q, Node k, Node v, Cache* cache, int layer) {
  if (cache == nullptr) return nn::ScaledDotProductAttention(q, k, v, {}, /*causal=*/true);
  Node zero = graph::ScalarLike(cache->write_pos, 0);
  const std::vector<Node> start = {zero, cache->write_pos, zero, zero};
  Node keys = graph::DynamicUpdateSlice(cache->keys[static_cast<size_t>(layer)], k, start);
  Node values = graph::DynamicUpdateSlice(cache->values[static_cast<size_t>(layer)], v, start);
  cache->keys[static_cast<size_t>(layer)] = keys;
  cache->values[static_cast<size_t>(layer)] = values;
  // Query i sits at slot write_pos + i and sees the valid slots j <= write_pos + i.
  const DimensionSpec B = graph::DimensionSpecFor(q, 0), T = graph::DimensionSpecFor(q, 1),
                      C = graph::DimensionSpecFor(keys, 1);
  graph::Graph& g = q.graph();
  Node query_slot = graph::DynamicIota(g, DType::Int32, 2, {StaticDim(1), StaticDim(1), T, StaticDim(1)}) +
                    graph::ConvertDType(cache->write_pos, DType::Int32);
  Node key_slot = graph::DynamicIota(g, DType::Int32, 3, {StaticDim(1), StaticDim(1), StaticDim(1), C});
  Node valid = graph::DynamicReshape(cache->key_valid, {B, StaticDim(1), StaticDim(1), C});
  Node mask = graph::LogicalAnd(graph::LessOrEqual(key_slot, query_slot), valid);
  return nn::ScaledDotProductAttention(q, keys, values, mask, /*causal=*/false);
}

Node LlamaLayer(const model::Scope& layer, const Config& cfg, Node h, Node positions, Node inv_freq,
                Cache* cache, int index) {
  const int64_t heads = cfg.heads(), kv_heads = cfg.kv_heads(), dim = cfg.head_dim();
  Node x = layers::RMSNorm(layer.In("input_layernorm"), h).Epsilon(cfg.norm_epsilon()).Done();
  model::Scope attn = layer.In("self_attn");
  Node q = SplitHeads(Linear(attn.In("q_proj"), x, cfg.attention_bias(), heads * dim), heads, dim);
  Node k = SplitHeads(Linear(attn.In("k_proj"), x, cfg.attention_bias(), kv_heads * dim), kv_heads, dim);
  Node v = SplitHeads(Linear(attn.In("v_proj"), x, cfg.attention_bias(), kv_heads * dim), kv_heads, dim);
  q = nn::ApplyRoPEWithFrequencies(q, positions, inv_freq);
  k = nn::ApplyRoPEWithFrequencies(k, positions, inv_freq);
  Node o = MergeHeads(Attend(q, k, v, cache, index));
  h = h + Linear(attn.In("o_proj"), o, cfg.attention_bias(), cfg.hidden_size());
  x = layers::RMSNorm(layer.In("post_attention_layernorm"), h).Epsilon(cfg.norm_epsilon()).Done();
  model::Scope mlp = layer.In("mlp");
  Node gate = Linear(mlp.In("gate_proj"), x, cfg.mlp_bias(), cfg.intermediate_size());
  Node up = Linear(mlp.In("up_proj"), x, cfg.mlp_bias(), cfg.intermediate_size());
  return h + Linear(mlp.In("down_proj"), activations::Silu(gate) * up, cfg.mlp_bias(), cfg.hidden_size());
}

Node Gpt2Layer(const model::Scope& layer, const Config& cfg, Node h, Cache* cache, int index) {
  const int64_t heads = cfg.heads(), dim = cfg.head_dim(), width = heads * dim;
  Node x = layers::LayerNorm(layer.In("ln_1"), h).Epsilon(cfg.norm_epsilon()).Done();
  model::Scope attn = layer.In("attn");
  Node qkv = Linear(attn.In("c_attn"), x, true, 3 * width);
  std::vector<Node> parts = graph::Split(qkv, 2, 3);
  Node o = MergeHeads(Attend(SplitHeads(parts[0], heads, dim), SplitHeads(parts[1], heads, dim),
                             SplitHeads(parts[2], heads, dim), cache, index));
  h = h + Linear(attn.In("c_proj"), o, true, cfg.hidden_size());
  x = layers::LayerNorm(layer.In("ln_2"), h).Epsilon(cfg.norm_epsilon()).Done();
  model::Scope mlp = layer.In("mlp");
  Node f = activations::GeluApproximate(Linear(mlp.In("c_fc"), x, true, cfg.intermediate_size()));
  return h + Linear(mlp.In("c_proj"), f, true, cfg.hidden_size());
}

/// The scope new variables of the model are created through: N(0, 0.02) (as HuggingFace
/// initialises these models) unless the caller's scope has an initializer.
model::Scope ModelScope(const model::Scope& scope) {
  return scope.GetInitializer() ? scope : scope.WithInitializer(initializers::RandomNormal(0.0, 0.02));
}

}  // namespace

Node DecoderHidden(model::Scope scope, const Config& cfg, Node ids, Node positions, Node inv_freq,
                   Cache* cache) {
  cfg.Check();
  if (!ids.Ok() || ids.rank() != 2 || !IsInt(ids.dtype()) || IsPacked(ids.dtype()))
    kiln::detail::Throw("transformers::CausalLM: token ids {} must be integer [batch, seq]",
                        ids.Ok() ? ids.shape().ToString() : std::string("(invalid)"));
  if (cache != nullptr && (cache->keys.size() != static_cast<size_t>(cfg.layers()) ||
                           cache->values.size() != static_cast<size_t>(cfg.layers())))
    kiln::detail::Throw("transformers: the cache has {} layers, the model {}", cache->keys.size(),
                        cfg.layers());
  model::Scope root = ModelScope(scope);
  const int64_t hidden = cfg.hidden_size();
  if (cfg.architecture() == Architecture::kLlama) {
    model::Scope m = root.In("model");
    Node h = layers::Embedding(m.In("embed_tokens"), ids, cfg.vocab_size(), hidden);
    model::Scope layers_scope = m.In("layers");
    for (int i = 0; i < cfg.layers(); ++i)
      h = LlamaLayer(layers_scope.In(std::to_string(i)), cfg, h, positions, inv_freq, cache, i);
    return layers::RMSNorm(m.In("norm"), h).Epsilon(cfg.norm_epsilon()).Done();
  }
  model::Scope t = root.In("transformer");
  Node pos = layers::Embedding(t.In("wpe"), positions, cfg.max_positions(), hidden);
  if (pos.rank() == 2) pos = graph::ExpandAxes(pos, {0});  // [t, hidden] -> [1, t, hidden]
  Node h = layers::Embedding(t.In("wte"), ids, cfg.vocab_size(), hidden) + pos;
  model::Scope layers_scope = t.In("h");
  for (int i = 0; i < cfg.layers(); ++i) h = Gpt2Layer(layers_scope.In(std::to_string(i)), cfg, h, cache, i);
  return layers::LayerNorm(t.In("ln_f"), h).Epsilon(cfg.norm_epsilon()).Done();
}

Node OutputLogits(model::Scope scope, const Config& cfg, Node hidden) {
  model::Scope root = ModelScope(scope);
  if (!cfg.tie_embeddings()) return Linear(root.In("lm_head"), hidden, false, cfg.vocab_size());
  const bool llama = cfg.architecture() == Architecture::kLlama;
  model::Scope table_scope = llama ? root.At("model").At("embed_tokens") : root.At("transformer").At("wte");
  Node table =
      table_scope
          .VariableWithShape("embeddings", Shape(hidden.dtype(), {cfg.vocab_size(), cfg.hidden_size()}))
          .NodeValue(hidden.graph());
  return graph::Dot(hidden, table).General({hidden.rank() - 1}, {}, {1}, {});
}

}  // namespace kiln::transformers::internal
