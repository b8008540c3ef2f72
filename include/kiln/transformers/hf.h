#pragma once
/// @file
/// A CausalLM's variables in HuggingFace's layout: a directory with config.json and
/// model.safetensors (or model.safetensors.index.json and its shards), tensors named as
/// transformers' LlamaForCausalLM / GPT2LMHeadModel name them (linear weights [out, in]).
///
///   transformers::SaveHF(store, cfg, "my-model");
///   model::Store store2;
///   transformers::Config cfg2 = transformers::LoadHF("my-model", store2);

#include <string>
#include <utility>
#include <vector>

#include "kiln/model/store.h"
#include "kiln/transformers/config.h"

namespace kiln::transformers {

/// Writes `dir`/config.json and `dir`/model.safetensors (float32, atomically; `dir` is created).
/// kiln::Error naming the variable when the store lacks one the config needs or its shape differs.
void SaveHF(const model::Store& store, const Config& cfg, const std::string& dir);

/// Reads `dir`/config.json and the weights (model.safetensors, or the shards listed by
/// model.safetensors.index.json) into `store` (creating the variables, or replacing the values
/// of existing ones; float16/bfloat16 tensors are converted to float32), and returns the config.
/// kiln::Error naming the file and tensor for a missing tensor, a shape that does not match the
/// config, or a tensor the architecture does not have.
Config LoadHF(const std::string& dir, model::Store& store);

/// The (kiln variable path, HuggingFace tensor name) pairs of a model with config `cfg`, in
/// checkpoint order.
std::vector<std::pair<std::string, std::string>> HFTensorNames(const Config& cfg);

}  // namespace kiln::transformers
