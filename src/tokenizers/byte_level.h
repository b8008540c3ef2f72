#pragma once
// Internal: GPT-2's byte alphabet. Byte-level tokenizers spell each byte as one printable
// character: the printable bytes of Latin-1 as themselves, the other 68 as U+0100 onwards in
// byte order (so a space is "Ġ", U+0120).

#include <array>
#include <string>
#include <string_view>

namespace kiln::tokenizers {

/// The UTF-8 spelling of each byte in GPT-2's alphabet.
const std::array<std::string, 256>& ByteToChar();
/// `bytes` spelled in GPT-2's alphabet.
std::string BytesToChars(std::string_view bytes);
/// The bytes that the GPT-2 alphabet's characters of `chars` spell; a character outside the
/// alphabet stands for its own UTF-8 bytes.
std::string CharsToBytes(std::string_view chars);

}  // namespace kiln::tokenizers
