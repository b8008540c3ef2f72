// libFuzzer target for the safetensors reader (JSON header, offsets, packed dtypes' metadata).

#include "fuzz_util.h"
#include "kiln/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteScratch(data, size, ".safetensors");
  kiln::fuzz::Refused([&] { kiln::io::ReadSafetensors(path); });
  return 0;
}
