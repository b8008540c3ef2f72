#pragma once
// Internal: the one way kiln's readers open outside files. A path that is missing, a directory,
// a symlink loop or otherwise not a readable regular file is a kiln::Error naming the reader and
// the path, never a stream exception or a filesystem_error.

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace kiln::io {

/// Checks that `path` names a regular file (symlinks followed) and returns its size in bytes;
/// otherwise a kiln::Error "<what>: cannot read <path>: <reason>".
int64_t CheckRegularFile(const std::string& path, std::string_view what);

/// Opens `path` for binary reading after CheckRegularFile; `size` (if given) receives its size.
std::ifstream OpenForReading(const std::string& path, std::string_view what, int64_t* size = nullptr);

/// The whole content of `path` (OpenForReading, then read; a failed read is a kiln::Error).
std::string ReadWholeFile(const std::string& path, std::string_view what);

}  // namespace kiln::io
