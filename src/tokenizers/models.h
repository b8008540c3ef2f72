#pragma once
// Internal: the models (BPE, WordPiece, Unigram), built from tokenizer.json or directly.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/json.h"
#include "tokenizers/json_fields.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/vocabulary.h"

namespace kiln::tokenizers {

/// A BPE model's vocabulary, merges (in priority order) and options, as tokenizer.json has them.
struct BpeSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

/// A BPE model; a merge of tokens outside the vocabulary, a repeated id or token, or an unk
/// token outside the vocabulary is an error through `f`.
std::shared_ptr<const Model> MakeBpe(const BpeSpec& spec, const Fields& f);
/// The BPE spec of a tokenizer.json "model" object of type BPE.
BpeSpec BpeSpecFromJson(const io::Json& j, const Fields& f);
std::shared_ptr<const Model> WordPieceFromJson(const io::Json& j, const Fields& f);
std::shared_ptr<const Model> UnigramFromJson(const io::Json& j, const Fields& f);

/// JSON text of a string.
std::string JsonString(std::string_view s);

}  // namespace kiln::tokenizers
