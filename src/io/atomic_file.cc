#include "io/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <ostream>
#include <random>
#include <streambuf>
#include <system_error>
#include <utility>
#include <vector>

#include "core/check.h"

namespace kiln::io {
namespace {

std::string ErrnoText(int err) { return std::system_category().message(err); }

// An output streambuf over a file descriptor that remembers the errno of the first failed write
// (std::ofstream would hide it, and gives no descriptor to fsync).
class FdOutBuf : public std::streambuf {
 public:
  explicit FdOutBuf(int fd) : fd_(fd), buffer_(1 << 16) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!Flush()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n < static_cast<std::streamsize>(buffer_.size())) return std::streambuf::xsputn(s, n);
    // Large writes bypass the buffer.
    if (!Flush() || !WriteAll(s, static_cast<size_t>(n))) return 0;
    return n;
  }
  int sync() override { return Flush() ? 0 : -1; }

 private:
  bool Flush() {
    const bool ok = WriteAll(pbase(), static_cast<size_t>(pptr() - pbase()));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return ok;
  }
  bool WriteAll(const char* p, size_t n) {
    if (error_ != 0) return false;
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t{1} << 30));
      if (w < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

// While a StagedFile is written: closes the descriptor and removes the temporary file unless
// kept.
struct TempFile {
  std::string name;
  int fd = -1;
  bool keep = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!keep) ::unlink(name.c_str());
  }
};

uint64_t RandomSuffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device device;
  const uint64_t r = (static_cast<uint64_t>(device()) << 32) ^ device();
  return r ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
}

/// fsyncs the directory `dir`: 0, or the errno of the failed step (`opened` tells whether opening
/// it succeeded). EINVAL from fsync (file systems that cannot fsync directories) counts as done:
/// nothing more can be done there.
int FsyncDirectory(const std::string& dir, bool& opened) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  opened = fd >= 0;
  if (fd < 0) return errno;
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc != 0 && err != EINVAL ? err : 0;
}

/// The directory holding `path` ("." for a bare file name).
std::string DirectoryOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

StagedFile::StagedFile(std::string path, const std::function<void(std::ostream&)>& write)
    : path_(std::move(path)) {
  TempFile temp;
  for (int attempt = 0; temp.fd < 0; ++attempt) {
    temp.name = fmt::format("{}.tmp.{}.{:016x}", path_, ::getpid(), RandomSuffix());
    temp.fd = ::open(temp.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (temp.fd < 0 && (errno != EEXIST || attempt >= 10)) {
      const int err = errno;
      temp.keep = true;  // Nothing was created: nothing to remove.
      detail::Throw("cannot write '{}': creating the temporary file '{}' failed: {}", path_, temp.name,
                    ErrnoText(err));
    }
  }
  {
    FdOutBuf buffer(temp.fd);
    std::ostream out(&buffer);
    write(out);
    out.flush();
    if (!out) {
      const int err = buffer.error();
      detail::Throw("cannot write '{}': writing the temporary file '{}' failed: {}", path_, temp.name,
                    err != 0 ? ErrnoText(err) : std::string("the stream was left in a failed state"));
    }
  }
  if (::fsync(temp.fd) != 0) {
    detail::Throw("cannot write '{}': fsync of the temporary file '{}' failed: {}", path_, temp.name,
                  ErrnoText(errno));
  }
  const int rc = ::close(temp.fd);
  temp.fd = -1;
  if (rc != 0) {
    detail::Throw("cannot write '{}': closing the temporary file '{}' failed: {}", path_, temp.name,
                  ErrnoText(errno));
  }
  temp.keep = true;
  temp_ = temp.name;
}

StagedFile::~StagedFile() {
  if (!committed_) ::unlink(temp_.c_str());
}

void StagedFile::Commit() {
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    detail::Throw("cannot write '{}': renaming the temporary file '{}' over it failed: {}", path_, temp_,
                  ErrnoText(errno));
  }
  committed_ = true;
}

void SyncDirectory(const std::string& dir) {
  bool opened = false;
  const int err = FsyncDirectory(dir, opened);
  if (err == 0) return;
  if (!opened) detail::Throw("cannot fsync the directory '{}': opening it failed: {}", dir, ErrnoText(err));
  detail::Throw("cannot fsync the directory '{}': {}", dir, ErrnoText(err));
}

void WriteFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  StagedFile file(path, write);
  file.Commit();
  const std::string dir = DirectoryOf(path);
  bool opened = false;
  const int err = FsyncDirectory(dir, opened);
  if (err != 0 && !opened) {
    detail::Throw(
        "writing '{}': the file was written, but opening its directory '{}' to fsync it failed ({}), "
        "so its durability is not guaranteed",
        path, dir, ErrnoText(err));
  }
  if (err != 0) {
    detail::Throw(
        "writing '{}': the file was written, but fsync of its directory '{}' failed ({}), so its "
        "durability is not guaranteed",
        path, dir, ErrnoText(err));
  }
}

}  // namespace kiln::io
