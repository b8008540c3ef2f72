#pragma once
/// @file
/// transformers::CausalLM: a decoder-only language model (Llama or GPT-2 layout, from a Config)
/// as a train::ModelFn, and CausalLMDataset, next-token windows of a token stream to train it on.
///
///   auto ds = transformers::CausalLMDataset(backend, tok.Encode(corpus), /*window=*/128);
///   ds->BatchSize(16, true).Shuffle().Infinite(true);
///   train::Trainer trainer(backend, store, transformers::CausalLM(cfg),
///                          losses::SparseCategoricalCrossEntropyLogits, optimizers::FromStore(store), {},
///                          {});
///
/// Variables are named after HuggingFace's tensors, with kiln's layer names for the leaves:
/// "/model/layers/0/self_attn/q_proj/weights" is model.layers.0.self_attn.q_proj.weight
/// (transposed: kiln's Dense weights are [in, out]); transformers::SaveHF and LoadHF map them.

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/compute/backend.h"
#include "kiln/data/dataset.h"
#include "kiln/graph/ops.h"
#include "kiln/model/store.h"
#include "kiln/train/trainer.h"
#include "kiln/transformers/config.h"

namespace kiln::transformers {

/// The logits [batch, seq, vocab] for token ids [batch, seq] (any integer dtype; seq at most
/// MaxPositions), each position attending itself and the positions before it. Variables are
/// created under `scope` (N(0, 0.02) weights unless the scope has an initializer; norms' gains 1).
graph::Node CausalLMLogits(model::Scope scope, const Config& cfg, graph::Node ids);

/// CausalLMLogits as a train::ModelFn: inputs[0] holds the token ids; returns {logits}.
train::ModelFn CausalLM(const Config& cfg);

/// Next-token examples from a token stream: example k has inputs ids[k·stride .. k·stride +
/// window) and labels the same window shifted by one token (Int32 [examples, window] each).
/// `stride` defaults to `window` (windows that do not overlap). kiln::Error when the stream holds
/// fewer than window + 1 tokens or window / stride are not positive.
std::shared_ptr<data::InMemoryDataset> CausalLMDataset(compute::BackendPtr backend,
                                                       const std::vector<int32_t>& ids, int64_t window,
                                                       int64_t stride = 0);

}  // namespace kiln::transformers
