// libFuzzer target for kiln's JSON parser (safetensors headers, checkpoint records): parsed and
// written back, or a kiln::Error.

#include "fuzz_util.h"
#include "io/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kiln::fuzz::Refused([&] {
    const kiln::io::Json j = kiln::io::Json::Parse(text, "fuzz");
    // What kiln writes, it reads back.
    const std::string again = kiln::io::Json::Parse(j.Dump(), "fuzz-dump").Dump();
    if (again != j.Dump()) __builtin_trap();
  });
  return 0;
}
