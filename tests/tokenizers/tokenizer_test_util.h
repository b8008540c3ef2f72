#pragma once
// What the tokenizer tests share: tokenizers from tokenizer.json text written to a temporary
// folder, and a varied set of texts for round trips.

#include <fstream>
#include <string>
#include <vector>

#include "kiln/tokenizers/tokenizer.h"
#include "test_util.h"

namespace kiln::test {

/// Writes `content` to `path`.
inline void WriteText(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary);
  f << content;
}

/// The tokenizer of the tokenizer.json text `json`.
inline tokenizers::Tokenizer FromJsonText(const std::string& json) {
  TempDir dir;
  WriteText(dir / "tokenizer.json", json);
  return tokenizers::FromFile(dir / "tokenizer.json");
}

/// Texts of many kinds: Unicode scripts, emoji, CJK, whitespace runs, digits, contractions, code.
inline const std::vector<std::string>& VariedTexts() {
  static const std::vector<std::string> texts = {
      "Hello, world!",
      "the quick brown fox jumps over the lazy dog",
      "I'm sure they'll say it's what we've done, and you'd agree we're right.",
      "Numbers: 0 1 12 123 1234 12345 3.14159 -42 1e10 2024-06-01",
      "  leading and trailing spaces  ",
      "tabs\tand\nnewlines\r\nand   runs      of    spaces\n\n\n",
      "Ünïcödé: naïve café, façade, Øresund, Straße, ĳ ﬁ",
      "Ελληνικά και Русский текст, עברית, العربية",
      "中文文本，日本語のテキスト、한국어 텍스트。",
      "emoji 😀👍🏽🎉 family 👨‍👩‍👧‍👦 flags 🇺🇸🇯🇵",
      "int main() { return x->y[0] + 0x1F; } // comment\n    if (a && b || !c) { printf(\"%d\\n\", a); }",
      "def f(x):\n    return [i**2 for i in range(x) if i % 2 == 0]\n",
      "URL https://example.com/path?q=1&r=2#frag, e-mail someone@example.org",
      "Mixed CASE Words, ALLCAPS, camelCase and snake_case_names",
      "",
      " ",
      "a",
      "\u00e9\u0301 combining marks and \u200b zero width",
  };
  return texts;
}

}  // namespace kiln::test
