#pragma once
/// @file
/// NumPy's .npy and .npz files.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <span>
#include <string>

#include "kiln/core/tensor.h"

namespace kiln::io {

/// Reads a .npy file (format versions 1 to 3; C or Fortran order; either byte order; dtypes
/// bool, int8..int64, uint8..uint64, float16, float32, float64). Malformed, truncated or
/// hostile files are a kiln::Error saying what was wrong and where.
Tensor ReadNpy(const std::string& path);
/// Reads .npy content from a stream; `name` is used in error messages.
Tensor ReadNpy(std::istream& in, const std::string& name = "<stream>");
/// Reads .npy content held in memory (e.g. a member of an archive); `name` is used in errors.
Tensor ReadNpy(std::span<const uint8_t> bytes, const std::string& name = "<memory>");

/// Writes `tensor` as a .npy file (version 1.0, or 2.0 for a header over 64 KiB; little-endian,
/// C order). BFloat16 and packed dtypes, which NumPy lacks, are a kiln::Error. The file is
/// written to a temporary name and renamed, so an interrupted write leaves no partial file.
void WriteNpy(const std::string& path, const Tensor& tensor);
/// Writes .npy content to a stream.
void WriteNpy(std::ostream& out, const Tensor& tensor);

/// Reads every array of a .npz file (a zip of .npy files, stored or deflated, Zip64 included),
/// keyed by member name without the ".npy" suffix; every member must be a .npy array. Sizes,
/// offsets and CRC-32s are checked: a corrupt or hostile archive is a kiln::Error.
std::map<std::string, Tensor> ReadNpz(const std::string& path);

/// Writes `arrays` as a .npz file; `compress` deflates each member (as numpy.savez_compressed).
/// Atomic like WriteNpy. Zip64 records are added only where needed (members or offsets of 4 GiB
/// or more, or more than 65534 members). Memory used beyond the tensors: the compressed bytes of
/// one member when compressing, nothing otherwise.
void WriteNpz(const std::string& path, const std::map<std::string, Tensor>& arrays, bool compress = false);

}  // namespace kiln::io
