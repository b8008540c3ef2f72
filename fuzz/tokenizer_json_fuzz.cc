// libFuzzer target for tokenizers::FromFile (HuggingFace tokenizer.json): a tokenizer that reads
// encodes and decodes text, and what Save writes reads back to the same ids; or a kiln::Error.

#include <string>
#include <vector>

#include "fuzz_util.h"
#include "kiln/tokenizers/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteScratch(data, size, ".json");
  kiln::fuzz::Refused([&] {
    const kiln::tokenizers::Tokenizer tok = kiln::tokenizers::FromFile(path);
    const std::vector<std::string> texts = {"Hello, world! It's 2024.", "  héllo\twörld 😀 中文 ", ""};
    std::vector<std::vector<int32_t>> ids;
    for (const std::string& t : texts) {
      ids.push_back(tok.Encode(t));
      tok.Decode(ids.back());
      tok.Decode(ids.back(), true);
    }
    const std::string saved = path + ".saved.json";
    tok.Save(saved);
    const kiln::tokenizers::Tokenizer again = kiln::tokenizers::FromFile(saved);
    for (size_t i = 0; i < texts.size(); ++i)
      if (again.Encode(texts[i]) != ids[i]) __builtin_trap();
  });
  return 0;
}
