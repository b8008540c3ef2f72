// transformers::SaveHF / LoadHF: a CausalLM's variables as HuggingFace's config.json +
// model.safetensors (sharded checkpoints read through model.safetensors.index.json).

#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "core/check.h"
#include "io/json.h"
#include "io/read_file.h"
#include "kiln/io/safetensors.h"
#include "kiln/transformers/hf.h"
#include "quant/float_values.h"

namespace kiln::transformers {

namespace {

/// One tensor of the checkpoint: the kiln variable, HuggingFace's name, whether the 2-D weight is
/// stored transposed ([out, in] for torch.nn.Linear), and its shape in kiln.
struct Entry {
  std::string path, name;
  bool transpose = false;
  std::vector<int64_t> dims;
};

std::vector<Entry> Entries(const Config& cfg) {
  cfg.Check();
  std::vector<Entry> e;
  const int64_t h = cfg.hidden_size(), v = cfg.vocab_size(), ff = cfg.intermediate_size();
  const int64_t q = cfg.heads() * cfg.head_dim(), kv = cfg.kv_heads() * cfg.head_dim();
  auto linear = [&](const std::string& path, const std::string& name, int64_t in, int64_t out, bool bias,
                    bool t) {
    e.push_back({path + "/weights", name + ".weight", t, {in, out}});
    if (bias) e.push_back({path + "/biases", name + ".bias", false, {out}});
  };
  if (cfg.architecture() == Architecture::kLlama) {
    e.push_back({"/model/embed_tokens/embeddings", "model.embed_tokens.weight", false, {v, h}});
    for (int64_t i = 0; i < cfg.layers(); ++i) {
      const std::string p = "/model/layers/" + std::to_string(i), n = "model.layers." + std::to_string(i);
      e.push_back({p + "/input_layernorm/gain", n + ".input_layernorm.weight", false, {h}});
      linear(p + "/self_attn/q_proj", n + ".self_attn.q_proj", h, q, cfg.attention_bias(), true);
      linear(p + "/self_attn/k_proj", n + ".self_attn.k_proj", h, kv, cfg.attention_bias(), true);
      linear(p + "/self_attn/v_proj", n + ".self_attn.v_proj", h, kv, cfg.attention_bias(), true);
      linear(p + "/self_attn/o_proj", n + ".self_attn.o_proj", q, h, cfg.attention_bias(), true);
      e.push_back({p + "/post_attention_layernorm/gain", n + ".post_attention_layernorm.weight", false, {h}});
      linear(p + "/mlp/gate_proj", n + ".mlp.gate_proj", h, ff, cfg.mlp_bias(), true);
      linear(p + "/mlp/up_proj", n + ".mlp.up_proj", h, ff, cfg.mlp_bias(), true);
      linear(p + "/mlp/down_proj", n + ".mlp.down_proj", ff, h, cfg.mlp_bias(), true);
    }
    e.push_back({"/model/norm/gain", "model.norm.weight", false, {h}});
  } else {
    e.push_back({"/transformer/wte/embeddings", "transformer.wte.weight", false, {v, h}});
    e.push_back({"/transformer/wpe/embeddings", "transformer.wpe.weight", false, {cfg.max_positions(), h}});
    auto norm = [&](const std::string& path, const std::string& name) {
      e.push_back({path + "/gain", name + ".weight", false, {h}});
      e.push_back({path + "/offset", name + ".bias", false, {h}});
    };
    for (int64_t i = 0; i < cfg.layers(); ++i) {
      const std::string p = "/transformer/h/" + std::to_string(i), n = "transformer.h." + std::to_string(i);
      // GPT-2's Conv1D layers keep their weights [in, out], as kiln does.
      norm(p + "/ln_1", n + ".ln_1");
      linear(p + "/attn/c_attn", n + ".attn.c_attn", h, 3 * q, true, false);
      linear(p + "/attn/c_proj", n + ".attn.c_proj", q, h, true, false);
      norm(p + "/ln_2", n + ".ln_2");
      linear(p + "/mlp/c_fc", n + ".mlp.c_fc", h, ff, true, false);
      linear(p + "/mlp/c_proj", n + ".mlp.c_proj", ff, h, true, false);
    }
    norm("/transformer/ln_f", "transformer.ln_f");
  }
  if (!cfg.tie_embeddings()) e.push_back({"/lm_head/weights", "lm_head.weight", true, {h, v}});
  return e;
}

std::string DimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

/// Tensors HuggingFace keeps in some checkpoints that are not parameters (causal-mask buffers,
/// rotary caches).
bool IsBuffer(const std::string& name) {
  auto ends = [&](const char* suffix) {
    const size_t n = std::strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
  };
  return ends(".attn.bias") || ends(".attn.masked_bias") || ends("rotary_emb.inv_freq");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> HFTensorNames(const Config& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Entry& e : Entries(cfg)) out.emplace_back(e.path, e.name);
  return out;
}

void SaveHF(const model::Store& store, const Config& cfg, const std::string& dir) {
  const char* fn = "transformers::SaveHF";
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const Entry& e : Entries(cfg)) {
    model::Variable v = store.FindVariable(e.path);
    if (!v.Ok())
      kiln::detail::Throw("{}: the store has no variable {} (for {}); was the model built with this config?",
                          fn, e.path, e.name);
    if (v.shape().Dimensions() != e.dims)
      kiln::detail::Throw("{}: variable {} is {}, the config wants {}", fn, e.path, v.shape(),
                          DimsText(e.dims));
    const Tensor t = v.Value();
    tensors.emplace_back(
        e.name, e.transpose ? quant::float_values::TransposedF32(t) : quant::float_values::Float32Of(t));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) kiln::detail::Throw("{}: cannot create directory {}: {}", fn, dir, ec.message());
  io::WriteSafetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
  cfg.Save(dir + "/config.json");
}

Config LoadHF(const std::string& dir, model::Store& store) {
  const char* fn = "transformers::LoadHF";
  Config cfg = Config::Load(dir + "/config.json");
  // The tensors, from one file or from the shards an index lists.
  std::vector<std::string> files;
  const std::string index = dir + "/model.safetensors.index.json";
  if (std::filesystem::exists(index)) {
    io::Json root = io::Json::Parse(io::ReadWholeFile(index, "safetensors index"), index);
    const io::Json* map = root.IsObject() ? root.Find("weight_map") : nullptr;
    if (map == nullptr || !map->IsObject())
      kiln::detail::Throw("{}: {} has no \"weight_map\" object", fn, index);
    std::set<std::string> seen;
    for (const auto& [name, file] : map->Members("weight_map")) {
      const std::string& f = file.AsString("weight_map." + name);
      if (f.empty() || f.find('/') != std::string::npos || f.find("..") != std::string::npos)
        kiln::detail::Throw("{}: {} names shard \"{}\" for {}: not a file name in the directory", fn, index,
                            f, name);
      if (seen.insert(f).second) files.push_back(dir + "/" + f);
    }
  } else {
    files.push_back(dir + "/model.safetensors");
  }
  std::map<std::string, std::pair<Tensor, std::string>> found;  // name -> (tensor, file)
  for (const std::string& f : files) {
    io::SafetensorsFile sf = io::ReadSafetensors(f);
    for (auto& [name, t] : sf.tensors) found[name] = {t, f};
  }
  const bool gpt2 = cfg.architecture() == Architecture::kGpt2;
  auto lookup = [&](const std::string& name) -> std::pair<Tensor, std::string>* {
    auto it = found.find(name);
    // GPT-2 checkpoints saved from GPT2Model lack the "transformer." prefix.
    if (it == found.end() && gpt2 && name.rfind("transformer.", 0) == 0) it = found.find(name.substr(12));
    return it == found.end() ? nullptr : &it->second;
  };
  std::set<std::string> used;
  const std::string where = files.size() == 1 ? files[0] : index;
  for (const Entry& e : Entries(cfg)) {
    auto* hit = lookup(e.name);
    if (hit == nullptr) kiln::detail::Throw("{}: {} has no tensor {}", fn, where, e.name);
    Tensor t = hit->first;
    std::vector<int64_t> want = e.dims;
    if (e.transpose) std::swap(want[0], want[1]);
    if (t.shape().Dimensions() != want)
      kiln::detail::Throw("{}: {}: tensor {} is {}, the config wants {}", fn, hit->second, e.name, t.shape(),
                          DimsText(want));
    if (!IsFloat(t.dtype()))
      kiln::detail::Throw("{}: {}: tensor {} is {}, not a float tensor", fn, hit->second, e.name, t.shape());
    t = e.transpose ? quant::float_values::TransposedF32(t) : quant::float_values::Float32Of(t);
    used.insert(e.name);
    if (gpt2 && e.name.rfind("transformer.", 0) == 0) used.insert(e.name.substr(12));
    const size_t slash = e.path.rfind('/');
    model::Variable v = store.FindVariable(e.path);
    if (v.Ok()) {
      v.SetValue(t);
    } else {
      model::Scope(store, e.path.substr(0, slash)).VariableWithValue(e.path.substr(slash + 1), t);
    }
  }
  for (const auto& [name, hit] : found) {
    if (used.count(name) || IsBuffer(name)) continue;
    if (name == "lm_head.weight" && cfg.tie_embeddings()) continue;  // a tied copy
    kiln::detail::Throw("{}: {}: tensor {} is not part of a {} model with this config", fn, hit.second, name,
                        cfg.model_type());
  }
  return cfg;
}

}  // namespace kiln::transformers
