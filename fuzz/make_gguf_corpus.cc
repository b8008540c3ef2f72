// Writes the seed corpus of gguf_fuzz: small valid GGUF files kiln writes (metadata of every
// value type, float and ggml-quantized tensors), one per argument path.

#include <cstdio>
#include <string>
#include <vector>

#include "kiln/io/gguf.h"
#include "kiln/kiln.h"

int main(int argc, char** argv) {
  using namespace kiln;
  std::vector<float> v(2 * 256);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 23) - 11) / 7.0f;
  const Tensor w = Tensor::FromFlat(Shape(DType::Float32, {2, 256}), v);
  const nn::GGMLType types[] = {nn::GGMLType::F32,  nn::GGMLType::F16,  nn::GGMLType::Q8_0,
                                nn::GGMLType::Q4_0, nn::GGMLType::Q4_K, nn::GGMLType::Q6_K};
  for (int a = 1; a < argc; ++a) {
    io::GgufFile f;
    f.metadata.emplace_back("general.architecture", io::GgufValue::String("llama"));
    f.metadata.emplace_back("n", io::GgufValue::Uint32(static_cast<uint32_t>(a)));
    f.metadata.emplace_back("list", io::GgufValue::Array(io::GgufType::Int32, {io::GgufValue::Int32(a)}));
    const nn::GGMLType t = types[(a - 1) % 6];
    f.tensors.push_back(io::ToGgufTensor("w", w, t));
    io::WriteGguf(argv[a], f);
    std::printf("%s: %s\n", argv[a], nn::GGMLTypeName(t));
  }
  return 0;
}
