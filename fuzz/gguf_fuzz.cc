// libFuzzer target for the GGUF reader: any bytes either read (and their tensors then map to
// quant::Quantized and dequantize, or are refused) or raise a kiln::Error; anything else (a
// crash, a sanitizer report, another exception, a huge allocation) is a finding.
//
//   cmake --preset fuzz && cmake --build --preset fuzz --target gguf_fuzz
//   build/fuzz/fuzz/gguf_fuzz -max_total_time=300 -rss_limit_mb=2048 fuzz/corpus/gguf

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "kiln/core/error.h"
#include "kiln/io/gguf.h"
#include "kiln/quant/quant.h"

namespace {

/// This process's scratch file (ReadGguf reads paths).
const std::string& ScratchPath() {
  static const std::string path = "/tmp/kiln_gguf_fuzz_" + std::to_string(getpid()) + ".gguf";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FILE* f = std::fopen(ScratchPath().c_str(), "wb");
  if (f == nullptr) return 0;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    kiln::io::GgufFile file = kiln::io::ReadGguf(ScratchPath());
    for (const kiln::io::GgufTensor& t : file.tensors) {
      try {
        kiln::quant::Dequantize(kiln::io::ToQuantized(t));
      } catch (const kiln::Error&) {
      }
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
