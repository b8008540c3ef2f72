#pragma once
// Internal: the stages of a tokenizer (HuggingFace's pipeline) and Tokenizer::Impl, which holds
// them. Each stage is built from its tokenizer.json object and keeps that object to write back.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/json.h"
#include "kiln/tokenizers/tokenizer.h"
#include "tokenizers/json_fields.h"

namespace kiln::tokenizers {

/// Rewrites a segment of text (between added tokens) before pre-tokenisation.
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void Normalize(std::string& text) const = 0;
};

/// A piece of text on its way to the model; `at_start` says that it begins the whole input
/// (Metaspace's prepend_scheme "first").
struct Piece {
  std::string text;
  bool at_start = false;
};

/// Splits pieces into smaller pieces (words) and may rewrite them.
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void Split(std::vector<Piece>& pieces) const = 0;
};

/// The vocabulary and the algorithm that turns one word into ids.
class Model {
 public:
  virtual ~Model() = default;
  /// Appends the ids of `word`.
  virtual void Tokenize(std::string_view word, std::vector<int32_t>& ids) const = 0;
  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;
  /// The token of `id`, or nullptr outside the vocabulary.
  virtual const std::string* IdToToken(int32_t id) const = 0;
  virtual int32_t Size() const = 0;
  /// The unknown token's text, if the model has one.
  virtual std::optional<std::string> UnkToken() const = 0;
  /// The tokenizer.json "model" object.
  virtual std::string ToJson() const = 0;
};

/// Adds the special tokens around a sequence (add_special_tokens).
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void Process(std::vector<int32_t>& ids) const = 0;
  /// Every id it may add (checked against the vocabulary when a file is read).
  virtual std::vector<int32_t> Ids() const = 0;
};

/// Turns tokens back into text, one step of HuggingFace's decode chain.
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void Decode(std::vector<std::string>& tokens) const = 0;
};

/// A stage and the tokenizer.json object it was built from (null when absent).
template <typename T>
struct Stage {
  std::shared_ptr<const T> stage;
  io::Json json;
};

// Builders from tokenizer.json objects (kiln::Error naming `f`'s file for unknown types and
// malformed fields); defined in the file of each stage family.
std::shared_ptr<const Normalizer> NormalizerFromJson(const io::Json& j, const Fields& f);
std::shared_ptr<const PreTokenizer> PreTokenizerFromJson(const io::Json& j, const Fields& f);
std::shared_ptr<const PostProcessor> PostProcessorFromJson(const io::Json& j, const Fields& f);
std::shared_ptr<const Decoder> DecoderFromJson(const io::Json& j, const Fields& f);

/// An added token of tokenizer.json's "added_tokens".
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = true;
};

/// A stretch of the input: an added token, or text for the normalizer and model.
struct Segment {
  int32_t added_id = -1;  // -1 for text
  std::string_view text;
  bool at_start = false;
};

/// Finds the added tokens in text: at each position the longest token that matches (lstrip,
/// rstrip and single_word as HuggingFace defines them).
class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);
  std::vector<Segment> Split(std::string_view text) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::vector<size_t>> by_first_byte_;  // indices into tokens_, longest first
};

class SentencePieceModel;

}  // namespace kiln::tokenizers

namespace kiln::tokenizers {

struct Tokenizer::Impl {
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> added_ids;  // content -> id
  std::unordered_map<int32_t, size_t> added_index;     // id -> index into `added`
  std::shared_ptr<const AddedTokenMatcher> matcher;
  Stage<Normalizer> normalizer;
  Stage<PreTokenizer> pre_tokenizer;
  std::shared_ptr<const Model> model;
  Stage<PostProcessor> post_processor;
  Stage<Decoder> decoder;
  /// Set for a tokenizer read from a SentencePiece .model file: it encodes and decodes instead of
  /// the stages above.
  std::shared_ptr<const SentencePieceModel> sentencepiece;
  std::optional<int32_t> bos, eos, pad, unk;

  /// Rebuilds the lookup tables and the matcher after `added` changed.
  void IndexAddedTokens();
  /// The id of `token` (added tokens first), if any.
  std::optional<int32_t> Find(std::string_view token) const;
  /// Guesses the special-token roles from the usual token names.
  void GuessSpecialTokens();
};

}  // namespace kiln::tokenizers
