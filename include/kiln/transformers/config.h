#pragma once
/// @file
/// transformers::Config: the hyperparameters of a decoder-only transformer language model, with
/// presets for the two families kiln builds (Llama: RMSNorm, rotary positions, grouped-query
/// attention, SwiGLU; GPT-2: LayerNorm, learned positions, GELU), read from and written to
/// HuggingFace's config.json.
///
///   transformers::Config cfg = transformers::Config::Llama().VocabSize(32000).HiddenSize(512)
///                                  .Layers(8).Heads(8).KVHeads(2).IntermediateSize(1376);

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::transformers {

/// The architecture family: it fixes the layer layout and the checkpoint's tensor names.
enum class Architecture {
  kLlama,  ///< Llama, Mistral and Qwen2 layouts (HuggingFace model_type "llama", "mistral", "qwen2").
  kGpt2,   ///< GPT-2 (model_type "gpt2").
};

/// How rotary embeddings stretch to longer contexts (HuggingFace's rope_scaling.rope_type).
enum class RopeScaling {
  kNone,     ///< inv_freq[i] = theta^(-2i/head_dim).
  kLinear,   ///< Positions divided by `factor`.
  kDynamic,  ///< NTK-aware: theta grows with the sequence once it passes the trained length.
  kLlama3,   ///< Llama 3.1's: low frequencies divided by `factor`, high ones kept, a smooth band.
};

/// The hyperparameters of a causal language model. Setters return *this; getters are lower-case.
/// Check() (called by the model, the generator and the checkpoint readers) rejects inconsistent
/// values with a kiln::Error naming the field.
class Config {
 public:
  /// A Llama-style model: RMSNorm (eps 1e-6), rotary embeddings (theta 10000), grouped-query
  /// attention without biases, a SwiGLU MLP, untied output embeddings. Sizes default to a small
  /// model (vocab 32000, hidden 256, 4 layers, 4 heads, 4 KV heads, intermediate 688, 512 positions).
  static Config Llama();
  /// A GPT-2-style model: LayerNorm (eps 1e-5) with biases, learned positions, attention and MLP
  /// with biases, tanh-approximated GELU, tied output embeddings. Sizes default to GPT-2 small
  /// (vocab 50257, hidden 768, 12 layers, 12 heads, intermediate 3072, 1024 positions). No
  /// BOS/EOS ids are set (GPT-2's own are 50256; its config.json sets them).
  static Config Gpt2();

  /// Number of token ids.
  Config& VocabSize(int64_t n);
  /// Width of the residual stream (the embeddings).
  Config& HiddenSize(int64_t n);
  /// Number of decoder layers.
  Config& Layers(int64_t n);
  /// Number of query heads.
  Config& Heads(int64_t n);
  /// Key/value heads for grouped-query attention (must divide Heads); Llama only.
  Config& KVHeads(int64_t n);
  /// Per-head dimension (default: hidden / heads).
  Config& HeadDim(int64_t n);
  /// Width of the MLP's hidden layer.
  Config& IntermediateSize(int64_t n);
  /// The longest sequence (GPT-2: the learned positions; Llama: the trained context).
  Config& MaxPositions(int64_t n);
  /// Epsilon of the RMSNorm or LayerNorm layers.
  Config& NormEpsilon(double eps);
  /// The rotary embeddings' base (theta).
  Config& RopeTheta(double theta);
  /// Rotary scaling; `original_max_positions` is the trained context of kLlama3 (kDynamic
  /// stretches past max_positions),
  /// `low_freq_factor` and `high_freq_factor` are kLlama3's band (1 and 4 in Llama 3.1).
  Config& Rope(RopeScaling scaling, double factor, int64_t original_max_positions = 0,
               double low_freq_factor = 1, double high_freq_factor = 4);
  /// Whether the output projection shares the token embeddings.
  Config& TieEmbeddings(bool tie);
  /// Biases on the query, key and value projections (Qwen2 has them; Llama does not).
  Config& AttentionBias(bool bias);
  /// Biases on the MLP's projections.
  Config& MlpBias(bool bias);
  /// The beginning-of-sequence token (written to config.json; not added to prompts).
  Config& BosTokenId(std::optional<int32_t> id);
  /// The end-of-sequence token; transformers::Generator stops on it.
  Config& EosTokenId(std::optional<int32_t> id);

  /// The layout family.
  Architecture architecture() const { return arch_; }
  /// HuggingFace's model_type ("llama", "mistral", "qwen2", "gpt2").
  const std::string& model_type() const { return model_type_; }
  /// VocabSize.
  int64_t vocab_size() const { return vocab_; }
  /// HiddenSize.
  int64_t hidden_size() const { return hidden_; }
  /// Layers.
  int64_t layers() const { return layers_; }
  /// Heads.
  int64_t heads() const { return heads_; }
  /// KVHeads (Heads when unset).
  int64_t kv_heads() const { return kv_heads_ > 0 ? kv_heads_ : heads_; }
  /// HeadDim (hidden / heads when unset).
  int64_t head_dim() const { return head_dim_ > 0 ? head_dim_ : (heads_ > 0 ? hidden_ / heads_ : 0); }
  /// IntermediateSize.
  int64_t intermediate_size() const { return intermediate_; }
  /// MaxPositions.
  int64_t max_positions() const { return max_positions_; }
  /// The longest sequence the model takes: max_positions, times the factor with dynamic NTK
  /// rotary scaling (which stretches the frequencies once a sequence passes max_positions).
  int64_t position_limit() const {
    return rope_scaling_ == RopeScaling::kDynamic
               ? static_cast<int64_t>(static_cast<double>(max_positions_) * rope_factor_)
               : max_positions_;
  }
  /// NormEpsilon.
  double norm_epsilon() const { return norm_eps_; }
  /// RopeTheta.
  double rope_theta() const { return rope_theta_; }
  /// The rotary scaling kind.
  RopeScaling rope_scaling() const { return rope_scaling_; }
  /// The rotary scaling factor.
  double rope_factor() const { return rope_factor_; }
  /// The trained context of the rotary scaling (0: unset).
  int64_t rope_original_max_positions() const { return rope_original_max_; }
  /// Llama 3 scaling's low-frequency factor.
  double rope_low_freq_factor() const { return rope_low_freq_; }
  /// Llama 3 scaling's high-frequency factor.
  double rope_high_freq_factor() const { return rope_high_freq_; }
  /// TieEmbeddings.
  bool tie_embeddings() const { return tie_; }
  /// AttentionBias.
  bool attention_bias() const { return attention_bias_; }
  /// MlpBias.
  bool mlp_bias() const { return mlp_bias_; }
  /// BosTokenId.
  std::optional<int32_t> bos_token_id() const { return bos_; }
  /// EosTokenId.
  std::optional<int32_t> eos_token_id() const { return eos_; }

  /// kiln::Error naming the field when a size is not positive, heads do not divide the hidden
  /// size (without an explicit HeadDim), KV heads do not divide heads, the head dimension is odd
  /// with rotary embeddings, or the rope factor is not positive.
  void Check() const;
  /// The number of parameters the model has with these sizes.
  int64_t NumParameters() const;

  /// HuggingFace config.json text for these hyperparameters.
  std::string ToJson() const;
  /// Parses config.json text; `source` names it in errors. Unknown model types and malformed or
  /// missing fields are a kiln::Error naming the source and the field.
  static Config FromJson(const std::string& text, const std::string& source = "config.json");
  /// Writes config.json at `path` atomically.
  void Save(const std::string& path) const;
  /// Reads config.json from `path`.
  static Config Load(const std::string& path);

 private:
  Architecture arch_ = Architecture::kLlama;
  std::string model_type_ = "llama";
  int64_t vocab_ = 32000, hidden_ = 256, layers_ = 4, heads_ = 4, kv_heads_ = 0, head_dim_ = 0;
  int64_t intermediate_ = 688, max_positions_ = 512;
  double norm_eps_ = 1e-6, rope_theta_ = 10000;
  RopeScaling rope_scaling_ = RopeScaling::kNone;
  double rope_factor_ = 1, rope_low_freq_ = 1, rope_high_freq_ = 4;
  int64_t rope_original_max_ = 0;
  bool tie_ = false, attention_bias_ = false, mlp_bias_ = false;
  std::optional<int32_t> bos_, eos_;
};

}  // namespace kiln::transformers
