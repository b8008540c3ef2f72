// libFuzzer target for tokenizers::FromVocabAndMerges (GPT-2's vocab.json and merges.txt): the
// input up to its first NUL byte is the vocabulary, the rest the merges; a tokenizer that reads
// encodes and decodes text, or a kiln::Error.

#include <string>

#include "fuzz_util.h"
#include "kiln/tokenizers/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string vocab = input.substr(0, nul);
  const std::string merges = nul == std::string::npos ? "" : input.substr(nul + 1);
  const std::string vocab_path =
      kiln::fuzz::WriteScratch(reinterpret_cast<const uint8_t*>(vocab.data()), vocab.size(), ".vocab.json");
  const std::string merges_path =
      kiln::fuzz::WriteScratch(reinterpret_cast<const uint8_t*>(merges.data()), merges.size(), ".merges.txt");
  kiln::fuzz::Refused([&] {
    const kiln::tokenizers::Tokenizer tok = kiln::tokenizers::FromVocabAndMerges(vocab_path, merges_path);
    for (const char* t : {"Hello, world! It's 2024.", "  héllo\twörld 😀 中文 "}) tok.Decode(tok.Encode(t));
  });
  return 0;
}
