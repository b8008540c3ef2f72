// libFuzzer target for Tensor::Deserialize (kiln's binary tensor format, CRC-checked).

#include <sstream>

#include "fuzz_util.h"
#include "kiln/core/tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  kiln::fuzz::Refused([&] { kiln::Tensor::Deserialize(in); });
  return 0;
}
