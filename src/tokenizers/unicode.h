#pragma once
// Internal: UTF-8 handling and the Unicode properties the tokenizers need. Properties, case
// mapping and normalisation come from ICU; nothing here is a hand-written Unicode table.

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::tokenizers {

/// The byte offset of the first byte that does not start or continue a valid UTF-8 sequence
/// (overlong forms, surrogates and code points past U+10FFFF are invalid), or npos.
size_t FirstInvalidUtf8(std::string_view s);
/// kiln::Error "<what>: invalid UTF-8 at byte N" unless `s` is valid UTF-8.
void CheckUtf8(std::string_view s, std::string_view what);
/// `bytes` with every maximal invalid subsequence replaced by U+FFFD (as Rust's from_utf8_lossy).
std::string Utf8Lossy(std::string_view bytes);

/// Bytes in the UTF-8 sequence that starts with `lead` (1 for a stray byte).
inline size_t Utf8SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}
/// The code point at byte `i` of valid UTF-8 `s`; advances `i` past it.
char32_t NextCodePoint(std::string_view s, size_t& i);
/// Appends `c` as UTF-8.
void AppendUtf8(std::string& out, char32_t c);

/// Unicode's White_Space property.
bool IsWhitespace(char32_t c);
/// General category P* (connector, dash, open, close, initial, final, other punctuation).
bool IsPunctuation(char32_t c);
/// General categories Nd, Nl and No.
bool IsNumeric(char32_t c);
/// Nonspacing mark (Mn).
bool IsNonspacingMark(char32_t c);
/// Any mark (Mn, Mc, Me).
bool IsMark(char32_t c);
/// BERT's control characters: categories Cc and Cf, except tab, newline and carriage return.
bool IsBertControl(char32_t c);
/// The CJK ideograph blocks BERT pads with spaces.
bool IsCjkIdeograph(char32_t c);
/// Letters, numbers, marks and connector punctuation (a regex \w).
bool IsWordChar(char32_t c);

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };
/// `s` (valid UTF-8) in the normal form `form` (ICU's Normalizer2).
std::string Normalize(std::string_view s, NormalForm form);
/// `s` lower-cased with Unicode's full case mapping (ICU, root locale).
std::string Lowercase(std::string_view s);

}  // namespace kiln::tokenizers
