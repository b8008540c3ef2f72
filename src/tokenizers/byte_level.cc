#include "tokenizers/byte_level.h"

#include <unordered_map>

#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

struct Alphabet {
  std::array<std::string, 256> to_char;
  std::unordered_map<char32_t, unsigned char> to_byte;
  Alphabet() {
    const auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = printable(b) ? static_cast<char32_t>(b) : next++;
      AppendUtf8(to_char[b], c);
      to_byte[c] = static_cast<unsigned char>(b);
    }
  }
};

const Alphabet& TheAlphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

const std::array<std::string, 256>& ByteToChar() { return TheAlphabet().to_char; }

std::string BytesToChars(std::string_view bytes) {
  const auto& table = TheAlphabet().to_char;
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char b : bytes) out += table[static_cast<unsigned char>(b)];
  return out;
}

std::string CharsToBytes(std::string_view chars) {
  const auto& to_byte = TheAlphabet().to_byte;
  std::string out;
  out.reserve(chars.size());
  size_t i = 0;
  while (i < chars.size()) {
    const size_t start = i;
    const char32_t c = NextCodePoint(chars, i);
    const auto it = to_byte.find(c);
    if (it != to_byte.end())
      out += static_cast<char>(it->second);
    else
      out.append(chars.substr(start, i - start));
  }
  return out;
}

}  // namespace kiln::tokenizers
