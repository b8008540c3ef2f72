#pragma once
// Internal: PCRE2 regular expressions over UTF-8 (Unicode classes, \p{L} and friends), compiled
// once and JIT-compiled where PCRE2 supports it, matched from any number of threads.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::tokenizers {

/// GPT-2's pre-tokenisation pattern (contractions, letters, numbers, other symbols, spaces).
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Regex {
 public:
  /// Compiles `pattern` (UTF-8 and Unicode properties on); a pattern PCRE2 refuses is a
  /// kiln::Error "<what>: regex <pattern>: <PCRE2's message> at offset N".
  Regex(std::string_view pattern, std::string_view what);
  /// The [begin, end) byte ranges of the successive non-empty matches in valid UTF-8 `text`.
  std::vector<std::pair<size_t, size_t>> FindAll(std::string_view text) const;

 private:
  struct Code;
  std::shared_ptr<Code> code_;
};

}  // namespace kiln::tokenizers
