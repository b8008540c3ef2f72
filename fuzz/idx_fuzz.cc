// libFuzzer target for the IDX reader (plain or gzip'd, as the input's first bytes say).

#include "fuzz_util.h"
#include "kiln/data/mnist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteScratch(data, size, ".idx");
  kiln::fuzz::Refused([&] { kiln::data::ReadIdx(path); });
  return 0;
}
