#pragma once
// What the GGUF tests share: random float tensors and a file with every kind of metadata value
// and every tensor type kiln encodes.

#include <random>
#include <string>
#include <vector>

#include "kiln/io/gguf.h"
#include "test_util.h"

namespace kiln::test {

/// A float32 tensor of `dims` with standard normal values from `seed`.
inline Tensor RandomMatrix(const std::vector<int64_t>& dims, uint32_t seed) {
  return NormalTensor(dims, seed);
}

/// Metadata of every GGUF value type (nested arrays too, alignment 64) and a [4, 256] matrix as
/// F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K, plus an I32 vector.
inline io::GgufFile EveryKind() {
  io::GgufFile f;
  f.metadata.emplace_back("general.architecture", io::GgufValue::String("llama"));
  f.metadata.emplace_back("general.alignment", io::GgufValue::Uint32(64));
  f.metadata.emplace_back("u8", io::GgufValue::Scalar(io::GgufType::Uint8, 200));
  f.metadata.emplace_back("i8", io::GgufValue::Scalar(io::GgufType::Int8, -100));
  f.metadata.emplace_back("u16", io::GgufValue::Scalar(io::GgufType::Uint16, 60000));
  f.metadata.emplace_back("i16", io::GgufValue::Scalar(io::GgufType::Int16, -30000));
  f.metadata.emplace_back("i32", io::GgufValue::Int32(-7));
  f.metadata.emplace_back("f32", io::GgufValue::Float32(0.5f));
  f.metadata.emplace_back("bool", io::GgufValue::Bool(true));
  f.metadata.emplace_back("u64", io::GgufValue::Uint64(uint64_t{1} << 63));
  f.metadata.emplace_back("i64", io::GgufValue::Int64(-(int64_t{1} << 40)));
  f.metadata.emplace_back("f64", io::GgufValue::Scalar(io::GgufType::Float64, 1e-300));
  f.metadata.emplace_back(
      "tokens",
      io::GgufValue::Array(io::GgufType::String, {io::GgufValue::String("<s>"), io::GgufValue::String(""),
                                                  io::GgufValue::String("héllo")}));
  f.metadata.emplace_back(
      "nested",
      io::GgufValue::Array(
          io::GgufType::Array,
          {io::GgufValue::Array(io::GgufType::Int32, {io::GgufValue::Int32(1), io::GgufValue::Int32(2)}),
           io::GgufValue::Array(io::GgufType::Int32, {})}));
  const Tensor w = RandomMatrix({4, 256}, 1);
  for (auto type : {nn::GGMLType::F32, nn::GGMLType::F16, nn::GGMLType::BF16, nn::GGMLType::Q8_0,
                    nn::GGMLType::Q4_0, nn::GGMLType::Q4_K, nn::GGMLType::Q6_K})
    f.tensors.push_back(io::ToGgufTensor(std::string("w.") + nn::GGMLTypeName(type), w, type));
  io::GgufTensor ids;
  ids.name = "ids";
  ids.type = nn::GGMLType::I32;
  ids.dims = {5};
  ids.data = Tensor::FromFlat(Shape(DType::Int32, {5}), std::vector<int32_t>{3, 1, 4, 1, 5});
  f.tensors.push_back(ids);
  return f;
}

}  // namespace kiln::test
