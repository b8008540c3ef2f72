#pragma once
/// @file
/// kiln::tokenizers: text to token ids and back. Reads HuggingFace tokenizer.json files (BPE,
/// WordPiece and Unigram models with their normalizers, pre-tokenizers, post-processors and
/// decoders), GPT-2's vocab.json + merges.txt and SentencePiece .model files, and trains
/// byte-level BPE tokenizers.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::tokenizers {

/// A tokenizer: a pipeline of added (special) tokens, normalizer, pre-tokenizer, model,
/// post-processor and decoder, as HuggingFace's tokenizers library defines them. Immutable once
/// built except for the special-token roles; copies are cheap (they share the vocabulary) and
/// a tokenizer may be used from several threads at once.
class Tokenizer {
 public:
  /// Internal: the pipeline (src/tokenizers/pipeline.h). Tokenizers are made by FromFile,
  /// FromVocabAndMerges, FromSentencePiece and TrainBpe.
  struct Impl;
  /// Internal: a tokenizer over `impl` (use the readers and TrainBpe).
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  /// A copy sharing the vocabulary (cheap).
  Tokenizer(const Tokenizer&);
  /// Moves; the moved-from tokenizer may only be assigned to or destroyed.
  Tokenizer(Tokenizer&&) noexcept;
  /// Copies, sharing the vocabulary.
  Tokenizer& operator=(const Tokenizer&);
  /// Moves.
  Tokenizer& operator=(Tokenizer&&) noexcept;
  /// Releases this handle (the vocabulary goes with its last handle).
  ~Tokenizer();

  /// The ids of `text` (UTF-8; invalid UTF-8 is a kiln::Error naming the byte offset). With
  /// `add_special_tokens`, the post-processor adds what the model expects around a sequence
  /// (BERT's `[CLS] ... [SEP]`, Llama's `<s>`); special tokens written in the text are always
  /// recognised as such.
  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens = true) const;
  /// The text of `ids` through the decoder; an id outside the vocabulary is a kiln::Error.
  /// Byte sequences that are not valid UTF-8 (a partial character) become U+FFFD.
  std::string Decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  /// Number of ids: the model's vocabulary and the added tokens (one more than the largest id).
  int32_t VocabSize() const;
  /// The id of the token `token` (vocabulary or added token), if there is one.
  std::optional<int32_t> TokenToId(std::string_view token) const;
  /// The token of `id` as the vocabulary spells it (byte-level tokens in GPT-2's byte alphabet);
  /// kiln::Error for an id outside [0, VocabSize()).
  std::string IdToToken(int32_t id) const;
  /// Whether `id` is an added token marked special (skipped by Decode(ids, true)).
  bool IsSpecial(int32_t id) const;

  /// The beginning-of-sequence token, if the tokenizer has one.
  std::optional<int32_t> Bos() const;
  /// The end-of-sequence token, if any.
  std::optional<int32_t> Eos() const;
  /// The padding token, if any.
  std::optional<int32_t> Pad() const;
  /// The unknown token, if any.
  std::optional<int32_t> Unk() const;
  /// Sets the beginning-of-sequence token to `token` (kiln::Error if the tokenizer has no such
  /// token), or clears it with std::nullopt. The other setters likewise.
  Tokenizer& SetBos(std::optional<std::string_view> token);
  /// Sets or clears the end-of-sequence token.
  Tokenizer& SetEos(std::optional<std::string_view> token);
  /// Sets or clears the padding token.
  Tokenizer& SetPad(std::optional<std::string_view> token);
  /// Sets or clears the unknown token (the role only; the model's own unknown token is fixed).
  Tokenizer& SetUnk(std::optional<std::string_view> token);
  /// Adds `token` as a special token (matched in text before the model sees it, skipped by
  /// Decode(ids, true)) with the next free id, and returns its id; a token already in the
  /// vocabulary keeps its id and becomes special.
  int32_t AddSpecialToken(std::string_view token);

  /// Writes HuggingFace's tokenizer.json at `path`, atomically (a temporary file renamed into
  /// place). FromFile reads it back to the same ids. A tokenizer read from a SentencePiece
  /// .model file has no tokenizer.json form: Save is then a kiln::Error.
  void Save(const std::string& path) const;

 private:
  std::shared_ptr<const Impl> impl_;
};

/// Reads HuggingFace's tokenizer.json. Models BPE (byte-level as GPT-2 and Llama 3, with byte
/// fallback as Llama 2), WordPiece (BERT) and Unigram. The special-token roles come from a
/// tokenizer_config.json beside the file if there is one, else from the usual token names
/// (`<s>`, `</s>`, `<|endoftext|>`, `[CLS]`, `[SEP]`, `[PAD]`, `<pad>`, the model's unk token...). A
/// malformed file or a component kiln does not support is a kiln::Error naming the file and what was wrong.
Tokenizer FromFile(const std::string& path);

/// Reads GPT-2's own files: `vocab_json_path` (token -> id) and `merges_txt_path` (one merge per
/// line, an optional "#version" first line), as a byte-level BPE with GPT-2's pre-tokenizer.
Tokenizer FromVocabAndMerges(const std::string& vocab_json_path, const std::string& merges_txt_path);

/// Reads a SentencePiece .model file through the SentencePiece library (its
/// SentencePieceProcessor encodes and decodes). kiln::Error for a file the library refuses.
Tokenizer FromSentencePiece(const std::string& model_path);

/// Trains a byte-level BPE on `texts` (GPT-2's pre-tokenizer): the 256 byte tokens first, then
/// merges, most frequent pair first (ties broken by the pair's token ids, so training is
/// deterministic), until the vocabulary has `vocab_size` tokens including the special token
/// `<|endoftext|>` (the last id; Bos and Eos), or no adjacent pair is left to merge. `vocab_size`
/// must be at least 257.
Tokenizer TrainBpe(const std::vector<std::string>& texts, int vocab_size);

}  // namespace kiln::tokenizers
