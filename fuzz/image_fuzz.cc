// libFuzzer target for the image reader (PNG and JPEG, told apart by content).

#include "fuzz_util.h"
#include "kiln/io/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteScratch(data, size, ".img");
  kiln::fuzz::Refused([&] { kiln::io::ReadImage(path); });
  return 0;
}
