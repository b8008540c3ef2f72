// libFuzzer target for the .npz reader (zip archives of .npy members, stored or deflated).

#include "fuzz_util.h"
#include "kiln/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteScratch(data, size, ".npz");
  kiln::fuzz::Refused([&] { kiln::io::ReadNpz(path); });
  return 0;
}
