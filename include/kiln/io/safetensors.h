#pragma once
/// @file
/// safetensors files (the ecosystem's weights format): an 8-byte little-endian header size, a
/// JSON header naming each tensor's dtype, shape and byte range, then the raw little-endian data.
///
///   io::WriteSafetensors("model.safetensors", {{"dense/weights", w}, {"dense/biases", b}});
///   io::SafetensorsFile f = io::ReadSafetensors("model.safetensors");
///
/// Packed dtypes (Int4, Uint4, Int2, Uint2) have no safetensors dtype: they are stored as U8
/// bytes, with their real dtype and shape in the metadata ("kiln.dtype.<name>",
/// "kiln.shape.<name>") from which ReadSafetensors restores them.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::io {

/// Named tensors, in file order, and the string metadata ("__metadata__").
struct SafetensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;  ///< (name, tensor), in the file's order.
  std::map<std::string, std::string> metadata;          ///< The "__metadata__" entries (may be empty).
  /// The tensor `name`, or an empty handle.
  Tensor Find(const std::string& name) const;
};

/// Writes the tensors (unique, non-empty names) and metadata to `path` atomically (a temporary
/// file renamed over it). Returns the file's size in bytes.
int64_t WriteSafetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});
/// Writes the same bytes to a stream; returns their count.
int64_t WriteSafetensors(std::ostream& out, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});
/// Reads a safetensors file. A truncated file, a malformed or hostile header (sizes, offsets out
/// of range, overlapping or missing bytes, unknown dtypes) is a kiln::Error naming the file and
/// the tensor.
SafetensorsFile ReadSafetensors(const std::string& path);

/// The safetensors dtype name of `dtype` ("F32", "BF16", "BOOL"...; U8 for packed dtypes).
std::string SafetensorsDType(DType dtype);

/// CRC-32C (Castagnoli) of `bytes`, continuing from `crc` (0 to start).
uint32_t Crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

}  // namespace kiln::io
