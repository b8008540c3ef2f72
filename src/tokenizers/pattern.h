#pragma once
// Internal: tokenizer.json's patterns ({"String": "..."} or {"Regex": "..."}), as the Replace
// normalizer and decoder and the Split pre-tokenizer use them.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/json.h"
#include "tokenizers/json_fields.h"
#include "tokenizers/regex.h"

namespace kiln::tokenizers {

class Pattern {
 public:
  Pattern(const io::Json& j, const Fields& f, std::string_view where);
  /// The [begin, end) byte ranges of the successive non-empty matches.
  std::vector<std::pair<size_t, size_t>> FindAll(std::string_view text) const;
  /// `text` with every match replaced by `content`.
  std::string ReplaceAll(std::string_view text, std::string_view content) const;

 private:
  std::string literal_;
  std::optional<Regex> regex_;
};

}  // namespace kiln::tokenizers
