// libFuzzer target for the GGUF reader: any bytes either read (and their tensors then map to
// quant::Quantized and dequantize, or are refused) or raise a kiln::Error.

#include "fuzz_util.h"
#include "kiln/io/gguf.h"
#include "kiln/quant/quant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteScratch(data, size, ".gguf");
  kiln::fuzz::Refused([&] {
    const kiln::io::GgufFile file = kiln::io::ReadGguf(path);
    for (const kiln::io::GgufTensor& t : file.tensors)
      kiln::fuzz::Refused([&] { kiln::quant::Dequantize(kiln::io::ToQuantized(t)); });
  });
  return 0;
}
