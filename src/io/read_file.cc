// Opening and reading outside files (read_file.h).

#include "io/read_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/check.h"

namespace kiln::io {

namespace fs = std::filesystem;

int64_t CheckRegularFile(const std::string& path, std::string_view what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // Follows symlinks; a loop is an error code.
  if (ec) kiln::detail::Throw("{}: cannot read {}: {}", what, path, ec.message());
  if (st.type() == fs::file_type::directory)
    kiln::detail::Throw("{}: cannot read {}: it is a directory", what, path);
  if (st.type() != fs::file_type::regular)
    kiln::detail::Throw("{}: cannot read {}: not a regular file", what, path);
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) kiln::detail::Throw("{}: cannot read {}: {}", what, path, ec.message());
  return static_cast<int64_t>(size);
}

std::ifstream OpenForReading(const std::string& path, std::string_view what, int64_t* size) {
  const int64_t bytes = CheckRegularFile(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) kiln::detail::Throw("{}: cannot read {}: {}", what, path, std::strerror(errno));
  if (size != nullptr) *size = bytes;
  return in;
}

std::string ReadWholeFile(const std::string& path, std::string_view what) {
  int64_t size = 0;
  std::ifstream in = OpenForReading(path, what, &size);
  std::string out(static_cast<size_t>(size), '\0');
  in.read(out.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size))
    kiln::detail::Throw("{}: cannot read {}: {} of its {} bytes read", what, path, in.gcount(), size);
  return out;
}

}  // namespace kiln::io
