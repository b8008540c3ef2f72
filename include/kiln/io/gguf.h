#pragma once
/// @file
/// GGUF files (llama.cpp's model format, version 3): typed metadata key/values, then tensors in
/// float or ggml's quantized block types, each at an aligned offset.
///
///   io::GgufFile f = io::ReadGguf("model.gguf");
///   std::string arch = f.Find("general.architecture")->AsString();
///   quant::Quantized w = io::ToQuantized(*f.FindTensor("blk.0.ffn_up.weight"));
///   io::WriteGguf("copy.gguf", f);
///
/// Dimensions are kiln's, row-major: a GGUF tensor whose ggml sizes are ne = [4096, 11008]
/// (ne[0] varies fastest) is [11008, 4096] here. Quantized tensors hold their raw blocks as
/// Uint8 [rows..., bytes per row]; F32, F16, BF16, F64 and the integer types hold a tensor of
/// that dtype.

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/ml/quantized.h"
#include "kiln/quant/quant.h"

namespace kiln::io {

/// GGUF's metadata value types (their numbers in the file).
enum class GgufType : uint32_t {
  Uint8 = 0,
  Int8 = 1,
  Uint16 = 2,
  Int16 = 3,
  Uint32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  Uint64 = 10,
  Int64 = 11,
  Float64 = 12,
};

/// One metadata value: a scalar, a string, or an array of one element type.
class GgufValue {
 public:
  GgufValue() = default;
  /// A scalar of `type` (any type but String and Array) holding `v` (converted).
  static GgufValue Scalar(GgufType type, double v);
  static GgufValue Uint32(uint32_t v) { return Scalar(GgufType::Uint32, v); }  ///< A Uint32 value.
  static GgufValue Int32(int32_t v) { return Scalar(GgufType::Int32, v); }     ///< An Int32 value.
  static GgufValue Uint64(uint64_t v);                                         ///< A Uint64 value (exact).
  static GgufValue Int64(int64_t v);                                           ///< An Int64 value (exact).
  static GgufValue Float32(float v) { return Scalar(GgufType::Float32, v); }   ///< A Float32 value.
  static GgufValue Bool(bool v) { return Scalar(GgufType::Bool, v ? 1 : 0); }  ///< A Bool value.
  static GgufValue String(std::string s);                                      ///< A String value.
  /// An array of `element` values (all of type `element_type`; arrays of arrays are allowed).
  static GgufValue Array(GgufType element_type, std::vector<GgufValue> elements);

  /// The value's type.
  GgufType type() const { return type_; }
  /// The element type of an array.
  GgufType element_type() const { return element_type_; }
  /// The value as an integer (integer and Bool types); kiln::Error otherwise.
  int64_t AsInt() const;
  /// The value as a double (numeric types); kiln::Error otherwise.
  double AsDouble() const;
  /// The string (String type); kiln::Error otherwise.
  const std::string& AsString() const;
  /// The elements (Array type); kiln::Error otherwise.
  const std::vector<GgufValue>& AsArray() const;

  friend bool operator==(const GgufValue& a, const GgufValue& b);

 private:
  GgufType type_ = GgufType::Uint8;
  GgufType element_type_ = GgufType::Uint8;
  std::variant<int64_t, uint64_t, double, std::string, std::vector<GgufValue>> value_;
};

/// One tensor of a GGUF file.
struct GgufTensor {
  /// The tensor's name ("blk.0.attn_q.weight").
  std::string name;
  /// ggml's type number (nn::GGMLType names the ones kiln decodes; others are kept as bytes).
  nn::GGMLType type = nn::GGMLType::F32;
  /// Logical dimensions, kiln's order (the reverse of ggml's ne).
  std::vector<int64_t> dims;
  /// The data: a tensor of dims (float and integer types) or Uint8 [dims..., bytes per row]
  /// without the last logical axis (quantized types: the raw blocks).
  Tensor data;
};

/// A GGUF file's content.
struct GgufFile {
  /// The format version read (2 or 3); WriteGguf always writes 3.
  uint32_t version = 3;
  /// Key/values in file order (general.alignment among them when the file sets it).
  std::vector<std::pair<std::string, GgufValue>> metadata;
  /// The tensors in file order.
  std::vector<GgufTensor> tensors;
  /// The value of `key`, or nullptr.
  const GgufValue* Find(const std::string& key) const;
  /// The tensor `name`, or nullptr.
  const GgufTensor* FindTensor(const std::string& name) const;
  /// general.alignment, 32 when absent.
  int64_t Alignment() const;
};

/// Reads a GGUF file (versions 2 and 3). A file that is not GGUF, truncated, or whose counts,
/// strings, dimensions, types or offsets are out of range is a kiln::Error naming the file and
/// what was wrong; nothing is allocated beyond what the file's size allows.
GgufFile ReadGguf(const std::string& path);
/// Writes `file` as GGUF version 3, atomically (a temporary file renamed over `path`); each
/// tensor's data must match its type and dims. Returns the file's size in bytes.
int64_t WriteGguf(const std::string& path, const GgufFile& file);

/// A tensor of `dims` (float32 data, any float dtype) as GGUF tensor `name` of `type`: F32,
/// F16, BF16, or a quantized block type (the last axis a multiple of its block).
GgufTensor ToGgufTensor(const std::string& name, const Tensor& value, nn::GGMLType type);
/// A 2-D quantized GGUF tensor [N, K] (a weight matrix as ggml stores it: one row per output
/// feature) as the quant::Quantized of the matrix [K, N] that nn::QuantizedDense multiplies by.
quant::Quantized ToQuantized(const GgufTensor& tensor);
/// The GGUF tensor of a GGML-scheme quant::Quantized (the inverse of ToQuantized).
GgufTensor FromQuantized(const std::string& name, const quant::Quantized& q);
/// The tensor's values as float32 of its dims (float types and decodable quantized types).
Tensor DequantizeGguf(const GgufTensor& tensor);

}  // namespace kiln::io
