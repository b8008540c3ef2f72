#pragma once
// Internal: a model's vocabulary (token <-> id), and reading one from tokenizer.json.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/json.h"
#include "tokenizers/json_fields.h"

namespace kiln::tokenizers {

/// Tokens and their ids: token -> id, and id -> token over a dense table in which some ids may be
/// absent (a tokenizer.json vocabulary need not number its tokens without gaps).
class Vocabulary {
 public:
  Vocabulary() = default;
  /// The (token, id) pairs of `model` ("model BPE"): a repeated id, ids that leave most of the table
  /// empty (see TokensById) or a repeated token are an error through `f`.
  Vocabulary(const std::vector<std::pair<std::string, int32_t>>& vocab, const Fields& f,
             std::string_view model);

  /// Gives `token` the next id (Size()); false, adding nothing, when `token` already has one.
  bool Append(const std::string& token);

  /// The id of `token`, or -1.
  int32_t Find(const std::string& token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? -1 : it->second;
  }
  std::optional<int32_t> TokenToId(std::string_view token) const;
  /// The token of `id`, or nullptr when `id` is outside the table or absent from it.
  const std::string* IdToToken(int32_t id) const;
  /// One past the largest id.
  int32_t Size() const { return static_cast<int32_t>(tokens_.size()); }
  /// The JSON object token -> id, in the order of the ids.
  std::string ToJson() const;
  /// The ids of the byte tokens <0x00> .. <0xFF> (byte fallback), -1 for those absent.
  std::array<int32_t, 256> ByteIds() const;

 private:
  std::vector<std::string> tokens_;
  std::vector<bool> present_;
  std::unordered_map<std::string, int32_t> ids_;
};

/// Reads a vocabulary object (token -> id) into (token, id) pairs; ids must be distinct and in
/// [0, 2^31).
std::vector<std::pair<std::string, int32_t>> VocabFromJson(const io::Json& vocab, const Fields& f,
                                                           std::string_view where);
/// A dense id -> token table of `vocab` (ids past the largest are absent); repeated ids are an
/// error through `f`.
std::vector<std::string> TokensById(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                    const Fields& f, std::string_view where);

}  // namespace kiln::tokenizers
