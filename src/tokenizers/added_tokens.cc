// Added tokens (special tokens above all) are found in the raw text before the normalizer and
// the model see it: at each position the longest added token that matches.

#include <algorithm>

#include "tokenizers/pipeline.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

/// The code point that ends at byte `end` of valid UTF-8 `text` (end > 0).
char32_t CodePointBefore(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return NextCodePoint(text, start);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens)
    : tokens_(tokens), by_first_byte_(256) {
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (!tokens_[i].content.empty())
      by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  for (auto& bucket : by_first_byte_)
    std::stable_sort(bucket.begin(), bucket.end(), [&](size_t a, size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
}

std::vector<Segment> AddedTokenMatcher::Split(std::string_view text) const {
  std::vector<Segment> out;
  size_t last = 0;  // end of the previous segment
  size_t p = 0;
  while (p < text.size()) {
    const AddedToken* hit = nullptr;
    for (const size_t i : by_first_byte_[static_cast<unsigned char>(text[p])]) {
      const AddedToken& t = tokens_[i];
      if (text.compare(p, t.content.size(), t.content) != 0) continue;
      if (t.single_word) {
        const size_t e = p + t.content.size();
        if (p > 0 && IsWordChar(CodePointBefore(text, p))) continue;
        size_t k = e;
        if (e < text.size() && IsWordChar(NextCodePoint(text, k))) continue;
      }
      hit = &t;
      break;
    }
    if (hit == nullptr) {
      p += Utf8SequenceLength(static_cast<unsigned char>(text[p]));
      continue;
    }
    size_t b = p, e = p + hit->content.size();
    if (hit->lstrip) {
      while (b > last && IsWhitespace(CodePointBefore(text, b))) {
        --b;
        while (b > last && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
      }
    }
    if (hit->rstrip) {
      while (e < text.size()) {
        size_t k = e;
        if (!IsWhitespace(NextCodePoint(text, k))) break;
        e = k;
      }
    }
    if (b > last) out.push_back({-1, text.substr(last, b - last), last == 0});
    out.push_back({hit->id, text.substr(b, e - b), b == 0});
    last = p = e;
  }
  if (last < text.size()) out.push_back({-1, text.substr(last), last == 0});
  return out;
}

}  // namespace kiln::tokenizers
