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

/// Reads a vocabulary object (token -> id) into (token, id) pairs; ids must be distinct and in
/// [0, 2^31).
std::vector<std::pair<std::string, int32_t>> VocabFromJson(const io::Json& vocab, const Fields& f,
                                                           std::string_view where);
/// A dense id -> token table of `vocab` (ids past the largest are absent); repeated ids are an
/// error through `f`.
std::vector<std::string> TokensById(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                    const Fields& f, std::string_view where);
/// JSON text of a string.
std::string JsonString(std::string_view s);

}  // namespace kiln::tokenizers
