#pragma once
// Internal: the decoder stack shared by CausalLM (training, whole sequences) and Generator
// (cached decoding), and the rotary frequencies of a Config.

#include <vector>

#include "kiln/graph/ops.h"
#include "kiln/model/store.h"
#include "kiln/transformers/config.h"

namespace kiln::transformers::internal {

using graph::Node;

/// The rotary inverse frequencies of `cfg` ([head_dim / 2]) for a sequence whose largest position
/// is `max_position` (only NTK-dynamic scaling depends on it).
std::vector<double> RopeInverseFrequencies(const Config& cfg, int64_t max_position);

/// A key/value cache for cached decoding: per layer, keys and values [batch, capacity, kv_heads,
/// head_dim]. The new tokens go to slots write_pos .. write_pos + t - 1; `key_valid` [batch,
/// capacity] (Bool) marks the slots that hold real tokens (padding of shorter prompts and unused
/// slots are false). The decoder replaces `keys` and `values` with the updated caches.
struct Cache {
  Node write_pos;  // Int32 scalar.
  Node key_valid;  // Bool [batch, capacity].
  std::vector<Node> keys, values;
};

/// The final hidden states [batch, t, hidden] of the decoder for token ids [batch, t] at
/// `positions` ([t] or [batch, t], integer), with rotary frequencies `inv_freq` (Llama; ignored
/// for GPT-2). Without a cache, attention is causal over the t tokens; with one, over the cache.
Node DecoderHidden(model::Scope scope, const Config& cfg, Node ids, Node positions, Node inv_freq,
                   Cache* cache);

/// The logits [..., vocab] of hidden states [..., hidden] (the output projection or the tied
/// token embeddings).
Node OutputLogits(model::Scope scope, const Config& cfg, Node hidden);

}  // namespace kiln::transformers::internal
