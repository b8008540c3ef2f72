// libFuzzer target for the .npy reader (from memory): read or a kiln::Error.

#include <span>

#include "fuzz_util.h"
#include "kiln/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::Refused([&] { kiln::io::ReadNpy(std::span<const uint8_t>(data, size), "fuzz.npy"); });
  return 0;
}
