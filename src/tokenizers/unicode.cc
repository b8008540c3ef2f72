#include "tokenizers/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/ucasemap.h>
#include <unicode/uchar.h>

#include <memory>

#include "core/check.h"

namespace kiln::tokenizers {

namespace {

/// Length of the valid UTF-8 sequence at `i`, or 0 (and in `bad` the length of its maximal
/// invalid prefix, at least 1).
size_t ValidSequenceAt(std::string_view s, size_t i, size_t* bad) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  *bad = 1;
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    const unsigned char t = b(i + k);
    if (t < (k == 1 ? lo : 0x80) || t > (k == 1 ? hi : 0xBF)) return 0;
    *bad = k + 1;
  }
  return n;
}

}  // namespace

size_t FirstInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t bad;
    const size_t n = ValidSequenceAt(s, i, &bad);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

void CheckUtf8(std::string_view s, std::string_view what) {
  const size_t at = FirstInvalidUtf8(s);
  if (at != std::string_view::npos)
    detail::Throw("{}: invalid UTF-8 at byte {} (0x{:02X})", what, at, static_cast<unsigned char>(s[at]));
}

std::string Utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    size_t bad;
    const size_t n = ValidSequenceAt(bytes, i, &bad);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;  // the maximal subpart: a lead byte and the continuation bytes that fit it
    }
  }
  return out;
}

char32_t NextCodePoint(std::string_view s, size_t& i) {
  const auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[k])); };
  const size_t n = Utf8SequenceLength(static_cast<unsigned char>(s[i]));
  char32_t c;
  if (n == 1 || i + n > s.size()) {
    c = b(i);
    i += 1;
    return c;
  }
  if (n == 2)
    c = ((b(i) & 0x1F) << 6) | (b(i + 1) & 0x3F);
  else if (n == 3)
    c = ((b(i) & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
  else
    c = ((b(i) & 0x07) << 18) | ((b(i + 1) & 0x3F) << 12) | ((b(i + 2) & 0x3F) << 6) | (b(i + 3) & 0x3F);
  i += n;
  return c;
}

void AppendUtf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool IsWhitespace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

bool IsPunctuation(char32_t c) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_P_MASK) != 0; }

bool IsNumeric(char32_t c) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0; }

bool IsNonspacingMark(char32_t c) { return u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK; }

bool IsMark(char32_t c) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_M_MASK) != 0; }

bool IsBertControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const int8_t t = u_charType(static_cast<UChar32>(c));
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR;
}

bool IsCjkIdeograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool IsWordChar(char32_t c) {
  const uint32_t mask = U_GET_GC_MASK(static_cast<UChar32>(c));
  return (mask & (U_GC_L_MASK | U_GC_N_MASK | U_GC_M_MASK | U_GC_PC_MASK)) != 0;
}

std::string Normalize(std::string_view s, NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      n = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNfd:
      n = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNfkc:
      n = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNfkd:
      n = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  if (U_FAILURE(status))
    detail::Throw("tokenizer normalizer: ICU has no normaliser: {}", u_errorName(status));
  std::string out;
  icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(s.size()));
  n->normalizeUTF8(0, icu::StringPiece(s.data(), static_cast<int32_t>(s.size())), sink, nullptr, status);
  if (U_FAILURE(status))
    detail::Throw("tokenizer normalizer: ICU could not normalise: {}", u_errorName(status));
  return out;
}

std::string Lowercase(std::string_view s) {
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<UCaseMap, void (*)(UCaseMap*)> map(ucasemap_open("", 0, &status), ucasemap_close);
  if (U_FAILURE(status)) detail::Throw("tokenizer normalizer: ICU case map: {}", u_errorName(status));
  std::string out(s.size() + 16, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    status = U_ZERO_ERROR;
    const int32_t n = ucasemap_utf8ToLower(map.get(), out.data(), static_cast<int32_t>(out.size()), s.data(),
                                           static_cast<int32_t>(s.size()), &status);
    if (status == U_BUFFER_OVERFLOW_ERROR) {
      out.assign(static_cast<size_t>(n), '\0');
      continue;
    }
    if (U_FAILURE(status))
      detail::Throw("tokenizer normalizer: ICU could not lower-case: {}", u_errorName(status));
    out.resize(static_cast<size_t>(n));
    return out;
  }
  detail::Throw("tokenizer normalizer: ICU could not lower-case");
}

}  // namespace kiln::tokenizers
