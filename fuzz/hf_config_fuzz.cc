// libFuzzer target for transformers::Config::FromJson (HuggingFace's config.json): a config, or
// a kiln::Error; a config kiln accepts is written and read back to the same text.

#include "fuzz_util.h"
#include "kiln/transformers/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kiln::fuzz::Refused([&] {
    const kiln::transformers::Config c = kiln::transformers::Config::FromJson(text, "fuzz");
    const std::string json = c.ToJson();
    if (kiln::transformers::Config::FromJson(json, "fuzz-dump").ToJson() != json) __builtin_trap();
    (void)c.NumParameters();
  });
  return 0;
}
