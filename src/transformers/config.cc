// transformers::Config: presets, checks, and HuggingFace's config.json.

#include "kiln/transformers/config.h"

#include <ostream>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/read_file.h"

namespace kiln::transformers {

using io::Json;

Config Config::Llama() { return Config(); }

Config Config::Gpt2() {
  Config c;
  c.arch_ = Architecture::kGpt2;
  c.model_type_ = "gpt2";
  c.vocab_ = 50257;
  c.hidden_ = 768;
  c.layers_ = 12;
  c.heads_ = 12;
  c.intermediate_ = 3072;
  c.max_positions_ = 1024;
  c.norm_eps_ = 1e-5;
  c.tie_ = true;
  c.attention_bias_ = true;
  c.mlp_bias_ = true;
  return c;
}

Config& Config::VocabSize(int64_t n) {
  vocab_ = n;
  return *this;
}
Config& Config::HiddenSize(int64_t n) {
  hidden_ = n;
  return *this;
}
Config& Config::Layers(int64_t n) {
  layers_ = n;
  return *this;
}
Config& Config::Heads(int64_t n) {
  heads_ = n;
  return *this;
}
Config& Config::KVHeads(int64_t n) {
  kv_heads_ = n;
  return *this;
}
Config& Config::HeadDim(int64_t n) {
  head_dim_ = n;
  return *this;
}
Config& Config::IntermediateSize(int64_t n) {
  intermediate_ = n;
  return *this;
}
Config& Config::MaxPositions(int64_t n) {
  max_positions_ = n;
  return *this;
}
Config& Config::NormEpsilon(double eps) {
  norm_eps_ = eps;
  return *this;
}
Config& Config::RopeTheta(double theta) {
  rope_theta_ = theta;
  return *this;
}
Config& Config::Rope(RopeScaling scaling, double factor, int64_t original_max_positions,
                     double low_freq_factor, double high_freq_factor) {
  rope_scaling_ = scaling;
  rope_factor_ = factor;
  rope_original_max_ = original_max_positions;
  rope_low_freq_ = low_freq_factor;
  rope_high_freq_ = high_freq_factor;
  return *this;
}
Config& Config::TieEmbeddings(bool tie) {
  tie_ = tie;
  return *this;
}
Config& Config::AttentionBias(bool bias) {
  attention_bias_ = bias;
  return *this;
}
Config& Config::MlpBias(bool bias) {
  mlp_bias_ = bias;
  return *this;
}
Config& Config::BosTokenId(std::optional<int32_t> id) {
  bos_ = id;
  return *this;
}
Config& Config::EosTokenId(std::optional<int32_t> id) {
  eos_ = id;
  return *this;
}

void Config::Check() const {
  const char* fn = "transformers::Config";
  auto positive = [&](const char* field, int64_t v) {
    if (v <= 0) kiln::detail::Throw("{}: {} must be positive, got {}", fn, field, v);
  };
  positive("vocab_size", vocab_);
  positive("hidden_size", hidden_);
  positive("layers", layers_);
  positive("heads", heads_);
  positive("intermediate_size", intermediate_);
  positive("max_positions", max_positions_);
  if (kv_heads_ < 0) kiln::detail::Throw("{}: kv_heads must be positive, got {}", fn, kv_heads_);
  if (head_dim_ < 0) kiln::detail::Throw("{}: head_dim must be positive, got {}", fn, head_dim_);
  if (head_dim_ == 0 && hidden_ % heads_ != 0)
    kiln::detail::Throw("{}: heads {} do not divide hidden_size {} (set HeadDim)", fn, heads_, hidden_);
  if (heads_ % kv_heads() != 0)
    kiln::detail::Throw("{}: kv_heads {} do not divide heads {}", fn, kv_heads(), heads_);
  if (arch_ == Architecture::kGpt2 && kv_heads() != heads_)
    kiln::detail::Throw("{}: GPT-2 has no grouped-query attention (kv_heads {} != heads {})", fn, kv_heads(),
                        heads_);
  if (arch_ == Architecture::kLlama && head_dim() % 2 != 0)
    kiln::detail::Throw("{}: head_dim {} must be even for rotary embeddings", fn, head_dim());
  if (!(norm_eps_ >= 0)) kiln::detail::Throw("{}: norm epsilon {} must be >= 0", fn, norm_eps_);
  if (!(rope_theta_ > 0)) kiln::detail::Throw("{}: rope_theta {} must be positive", fn, rope_theta_);
  if (rope_scaling_ != RopeScaling::kNone && !(rope_factor_ > 0))
    kiln::detail::Throw("{}: rope_scaling factor {} must be positive", fn, rope_factor_);
  if (rope_scaling_ == RopeScaling::kLlama3 && !(rope_high_freq_ > rope_low_freq_ && rope_low_freq_ > 0))
    kiln::detail::Throw("{}: llama3 rope_scaling needs 0 < low_freq_factor {} < high_freq_factor {}", fn,
                        rope_low_freq_, rope_high_freq_);
  auto token = [&](const char* field, std::optional<int32_t> id) {
    if (id && (*id < 0 || *id >= vocab_))
      kiln::detail::Throw("{}: {} {} is outside the vocabulary [0, {})", fn, field, *id, vocab_);
  };
  token("bos_token_id", bos_);
  token("eos_token_id", eos_);
}

int64_t Config::NumParameters() const {
  const int64_t h = hidden_, hd = head_dim(), q = heads_ * hd, kv = kv_heads() * hd, ff = intermediate_;
  int64_t per_layer = 0, total = vocab_ * h;
  if (arch_ == Architecture::kLlama) {
    per_layer = 2 * h + h * q + 2 * h * kv + q * h + 3 * h * ff;
    if (attention_bias_) per_layer += q + 2 * kv;
    if (mlp_bias_) per_layer += 2 * ff + h;
    total += h;
  } else {
    per_layer = 4 * h + h * (q + 2 * kv) + (q + 2 * kv) + q * h + h + 2 * h * ff + ff + h;
    total += max_positions_ * h + 2 * h;
  }
  total += layers_ * per_layer;
  if (!tie_) total += vocab_ * h;
  return total;
}

namespace {

const char* RopeTypeName(RopeScaling s) {
  switch (s) {
    case RopeScaling::kLinear:
      return "linear";
    case RopeScaling::kDynamic:
      return "dynamic";
    case RopeScaling::kLlama3:
      return "llama3";
    case RopeScaling::kNone:
      break;
  }
  return "default";
}

Json OptionalId(std::optional<int32_t> id) { return id ? Json::Int(*id) : Json(); }

/// Reads the members of a parsed config.json, naming `source` and the field in errors.
class Fields {
 public:
  Fields(const Json& root, std::string source) : root_(root), source_(std::move(source)) {}

  const Json* Find(const char* key) const {
    const Json* v = root_.Find(key);
    return v != nullptr && v->kind() != Json::Kind::kNull ? v : nullptr;
  }
  int64_t Int(const char* key) const {
    const Json* v = Find(key);
    if (v == nullptr) kiln::detail::Throw("{}: missing field \"{}\"", source_, key);
    return IntOf(*v, key);
  }
  int64_t IntOr(const char* key, int64_t def) const {
    const Json* v = Find(key);
    return v == nullptr ? def : IntOf(*v, key);
  }
  double NumberOr(const char* key, double def) const {
    const Json* v = Find(key);
    if (v == nullptr) return def;
    if (v->kind() != Json::Kind::kNumber)
      kiln::detail::Throw("{}: field \"{}\" must be a number", source_, key);
    return v->AsNumber();
  }
  bool BoolOr(const char* key, bool def) const {
    const Json* v = Find(key);
    if (v == nullptr) return def;
    if (v->kind() != Json::Kind::kBool)
      kiln::detail::Throw("{}: field \"{}\" must be true or false", source_, key);
    return v->AsBool();
  }
  std::string StringOr(const char* key, const std::string& def) const {
    const Json* v = Find(key);
    if (v == nullptr) return def;
    if (v->kind() != Json::Kind::kString)
      kiln::detail::Throw("{}: field \"{}\" must be a string", source_, key);
    return v->AsString(key);
  }
  /// A token id, or the first of a list of them (Llama 3 lists several end tokens).
  std::optional<int32_t> TokenOr(const char* key, std::optional<int32_t> def) const {
    const Json* v = Find(key);
    if (v == nullptr) return def;
    if (v->kind() == Json::Kind::kArray) {
      const auto& items = v->AsArray(key);
      if (items.empty()) return std::nullopt;
      return static_cast<int32_t>(IntOf(items[0], key));
    }
    return static_cast<int32_t>(IntOf(*v, key));
  }
  int64_t IntOf(const Json& v, const char* key) const {
    if (v.kind() != Json::Kind::kNumber)
      kiln::detail::Throw("{}: field \"{}\" must be an integer", source_, key);
    const double d = v.AsNumber();
    if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != static_cast<double>(static_cast<int64_t>(d)))
      kiln::detail::Throw("{}: field \"{}\" must be an integer in the int32 range, got {}", source_, key, d);
    return static_cast<int64_t>(d);
  }
  const std::string& source() const { return source_; }

 private:
  const Json& root_;
  std::string source_;
};

}  // namespace

std::string Config::ToJson() const {
  Check();
  Json j = Json::Object();
  const bool llama = arch_ == Architecture::kLlama;
  std::string arch_name = model_type_ == "gpt2"      ? "GPT2LMHeadModel"
                          : model_type_ == "mistral" ? "MistralForCausalLM"
                          : model_type_ == "qwen2"   ? "Qwen2ForCausalLM"
                                                     : "LlamaForCausalLM";
  Json archs = Json::Array();
  archs.Push(Json::String(arch_name));
  j.Set("architectures", archs);
  j.Set("model_type", Json::String(model_type_));
  j.Set("vocab_size", Json::Int(vocab_));
  if (llama) {
    j.Set("hidden_size", Json::Int(hidden_));
    j.Set("intermediate_size", Json::Int(intermediate_));
    j.Set("num_hidden_layers", Json::Int(layers_));
    j.Set("num_attention_heads", Json::Int(heads_));
    j.Set("num_key_value_heads", Json::Int(kv_heads()));
    j.Set("head_dim", Json::Int(head_dim()));
    j.Set("max_position_embeddings", Json::Int(max_positions_));
    j.Set("rms_norm_eps", Json::Number(norm_eps_));
    j.Set("rope_theta", Json::Number(rope_theta_));
    if (rope_scaling_ == RopeScaling::kNone) {
      j.Set("rope_scaling", Json());
    } else {
      Json r = Json::Object();
      r.Set("rope_type", Json::String(RopeTypeName(rope_scaling_)));
      r.Set("factor", Json::Number(rope_factor_));
      if (rope_original_max_ > 0) r.Set("original_max_position_embeddings", Json::Int(rope_original_max_));
      if (rope_scaling_ == RopeScaling::kLlama3) {
        r.Set("low_freq_factor", Json::Number(rope_low_freq_));
        r.Set("high_freq_factor", Json::Number(rope_high_freq_));
      }
      j.Set("rope_scaling", r);
    }
    j.Set("hidden_act", Json::String("silu"));
    j.Set("attention_bias", Json::Bool(attention_bias_));
    j.Set("mlp_bias", Json::Bool(mlp_bias_));
  } else {
    j.Set("n_embd", Json::Int(hidden_));
    j.Set("n_inner", Json::Int(intermediate_));
    j.Set("n_layer", Json::Int(layers_));
    j.Set("n_head", Json::Int(heads_));
    j.Set("n_positions", Json::Int(max_positions_));
    j.Set("n_ctx", Json::Int(max_positions_));
    j.Set("layer_norm_epsilon", Json::Number(norm_eps_));
    j.Set("activation_function", Json::String("gelu_new"));
  }
  j.Set("tie_word_embeddings", Json::Bool(tie_));
  j.Set("bos_token_id", OptionalId(bos_));
  j.Set("eos_token_id", OptionalId(eos_));
  j.Set("torch_dtype", Json::String("float32"));
  return j.Dump();
}

Config Config::FromJson(const std::string& text, const std::string& source) {
  Json root = Json::Parse(text, source);
  if (!root.IsObject()) kiln::detail::Throw("{}: config.json must hold an object", source);
  Fields f(root, source);
  const std::string type = f.StringOr("model_type", "");
  Config c;
  if (type == "llama" || type == "mistral" || type == "qwen2") {
    c = Llama();
    c.model_type_ = type;
    c.vocab_ = f.Int("vocab_size");
    c.hidden_ = f.Int("hidden_size");
    c.intermediate_ = f.Int("intermediate_size");
    c.layers_ = f.Int("num_hidden_layers");
    c.heads_ = f.Int("num_attention_heads");
    c.kv_heads_ = f.IntOr("num_key_value_heads", c.heads_);
    c.head_dim_ = f.IntOr("head_dim", 0);
    c.max_positions_ = f.IntOr("max_position_embeddings", 2048);
    c.norm_eps_ = f.NumberOr("rms_norm_eps", 1e-6);
    c.rope_theta_ = f.NumberOr("rope_theta", 10000);
    c.attention_bias_ = f.BoolOr("attention_bias", type == "qwen2");
    c.mlp_bias_ = f.BoolOr("mlp_bias", false);
    c.tie_ = f.BoolOr("tie_word_embeddings", false);
    const std::string act = f.StringOr("hidden_act", "silu");
    if (act != "silu" && act != "swish")
      kiln::detail::Throw("{}: hidden_act \"{}\" is not supported for {} (silu)", source, act, type);
    if (const Json* r = f.Find("rope_scaling")) {
      if (!r->IsObject()) kiln::detail::Throw("{}: rope_scaling must be an object or null", source);
      Fields rf(*r, source + " rope_scaling");
      std::string rt = rf.StringOr("rope_type", rf.StringOr("type", "default"));
      if (rt == "linear") {
        c.rope_scaling_ = RopeScaling::kLinear;
      } else if (rt == "dynamic") {
        c.rope_scaling_ = RopeScaling::kDynamic;
      } else if (rt == "llama3") {
        c.rope_scaling_ = RopeScaling::kLlama3;
      } else if (rt != "default") {
        kiln::detail::Throw("{}: rope_scaling type \"{}\" is not supported (linear, dynamic, llama3)", source,
                            rt);
      }
      c.rope_factor_ = rf.NumberOr("factor", 1);
      c.rope_original_max_ = rf.IntOr("original_max_position_embeddings", c.max_positions_);
      c.rope_low_freq_ = rf.NumberOr("low_freq_factor", 1);
      c.rope_high_freq_ = rf.NumberOr("high_freq_factor", 4);
    }
  } else if (type == "gpt2") {
    c = Gpt2();
    c.vocab_ = f.Int("vocab_size");
    c.hidden_ = f.Int("n_embd");
    c.layers_ = f.Int("n_layer");
    c.heads_ = f.Int("n_head");
    c.intermediate_ = f.IntOr("n_inner", 4 * c.hidden_);
    c.max_positions_ = f.IntOr("n_positions", 1024);
    c.norm_eps_ = f.NumberOr("layer_norm_epsilon", 1e-5);
    c.tie_ = f.BoolOr("tie_word_embeddings", true);
    const std::string act = f.StringOr("activation_function", "gelu_new");
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
      kiln::detail::Throw("{}: activation_function \"{}\" is not supported for gpt2 (gelu_new)", source, act);
  } else if (type.empty()) {
    kiln::detail::Throw("{}: missing field \"model_type\"", source);
  } else {
    kiln::detail::Throw("{}: model_type \"{}\" is not supported (llama, mistral, qwen2, gpt2)", source, type);
  }
  c.bos_ = f.TokenOr("bos_token_id", std::nullopt);
  c.eos_ = f.TokenOr("eos_token_id", std::nullopt);
  try {
    c.Check();
  } catch (const Error& e) {
    kiln::detail::Throw("{}: {}", source, e.message());
  }
  return c;
}

void Config::Save(const std::string& path) const {
  const std::string text = ToJson();
  io::WriteFileAtomically(path, [&](std::ostream& out) { out << text << "\n"; });
}

Config Config::Load(const std::string& path) {
  return FromJson(io::ReadWholeFile(path, "config.json"), path);
}

}  // namespace kiln::transformers
