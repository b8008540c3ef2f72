// IDX files and the Fashion-MNIST dataset.

#include "kiln/data/mnist.h"

#include <zlib.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "core/check.h"
#include "core/checked.h"
#include "io/read_file.h"

namespace kiln::data {

namespace {

/// deflate's largest compression ratio (1032:1): a gzip file of n bytes inflates to at most
/// about 1032 n, so a header claiming more is refused before anything is allocated.
constexpr int64_t kMaxInflateRatio = 1032;

/// A gzip (or plain: zlib reads it through) file, closed when it goes.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    if (f_ == nullptr) kiln::detail::Throw("ReadIdx: cannot open {}", path);
  }
  ~GzFile() { gzclose(f_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  /// Up to n bytes into out; fewer only at the end of the data. Damaged data is a kiln::Error.
  int64_t Read(uint8_t* out, int64_t n) {
    int64_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(n - got, 1 << 30));
      const int r = gzread(f_, out + got, chunk);
      if (r < 0) {
        int err = 0;
        const char* msg = gzerror(f_, &err);
        kiln::detail::Throw("ReadIdx {}: damaged compressed data ({})", path_, msg);
      }
      if (r == 0) break;
      got += r;
    }
    return got;
  }

 private:
  std::string path_;
  gzFile f_;
};

}  // namespace

Tensor ReadIdx(const std::string& path) {
  const int64_t file_size = io::CheckRegularFile(path, "ReadIdx");
  GzFile f(path);
  uint8_t p[4];
  if (f.Read(p, 4) != 4 || p[0] != 0 || p[1] != 0) kiln::detail::Throw("ReadIdx {}: not an IDX file", path);
  DType dtype = DType::Invalid;
  switch (p[2]) {
    case 0x08:
      dtype = DType::Uint8;
      break;
    case 0x09:
      dtype = DType::Int8;
      break;
    case 0x0B:
      dtype = DType::Int16;
      break;
    case 0x0C:
      dtype = DType::Int32;
      break;
    case 0x0D:
      dtype = DType::Float32;
      break;
    case 0x0E:
      dtype = DType::Float64;
      break;
    default:
      kiln::detail::Throw("ReadIdx {}: unknown IDX type 0x{:02x}", path, p[2]);
  }
  const int rank = p[3];
  std::vector<uint8_t> header(4 * static_cast<size_t>(rank));
  if (rank < 1 || f.Read(header.data(), 4 * rank) != 4 * rank)
    kiln::detail::Throw("ReadIdx {}: truncated IDX header", path);
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    const uint8_t* d = header.data() + 4 * i;
    dims.push_back((int64_t{d[0]} << 24) | (int64_t{d[1]} << 16) | (int64_t{d[2]} << 8) | int64_t{d[3]});
  }
  int64_t bytes = DTypeByteSize(dtype, 1);
  const std::string what =
      fmt::format("ReadIdx {}: the header's dimensions [{}]", path, fmt::join(dims, ", "));
  for (int64_t d : dims) bytes = kiln::detail::CheckedMul(bytes, d, what);
  const Shape shape(dtype, dims);
  // Checked against what the file can hold before the tensor is allocated.
  if (bytes / kMaxInflateRatio > file_size)
    kiln::detail::Throw("ReadIdx {}: the header's {} needs {} bytes; a {}-byte file cannot hold them", path,
                        shape, bytes, file_size);
  Tensor t = Tensor::FromShape(shape);
  const size_t item = static_cast<size_t>(DTypeBits(dtype) / 8);
  t.MutableBytes([&](std::span<uint8_t> b) {
    const int64_t got = f.Read(b.data(), static_cast<int64_t>(b.size()));
    if (got != static_cast<int64_t>(b.size()))
      kiln::detail::Throw("ReadIdx {}: {} data bytes, the header's {} needs {}", path, got, shape, b.size());
    uint8_t extra = 0;
    if (f.Read(&extra, 1) != 0)
      kiln::detail::Throw("ReadIdx {}: data continues after the {} bytes the header's {} needs", path,
                          b.size(), shape);
    // IDX is big-endian: reverse each element's bytes.
    if (item > 1)
      for (size_t i = 0; i < b.size(); i += item)
        std::reverse(b.begin() + static_cast<ptrdiff_t>(i), b.begin() + static_cast<ptrdiff_t>(i + item));
  });
  return t;
}

std::shared_ptr<InMemoryDataset> FashionMnist(compute::BackendPtr backend, const std::string& dir,
                                              Split split) {
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  auto find = [&](const std::string& base) {
    for (const std::string& name : {base + ".gz", base}) {
      const std::string path = (std::filesystem::path(dir) / name).string();
      if (std::filesystem::exists(path)) return path;
    }
    kiln::detail::Throw(
        "Fashion-MNIST: no {} or {}.gz in {} (install Debian's dataset-fashion-mnist, or pass the folder "
        "holding "
        "the IDX files)",
        base, base, dir);
  };
  Tensor images = ReadIdx(find(prefix + "-images-idx3-ubyte"));
  Tensor labels = ReadIdx(find(prefix + "-labels-idx1-ubyte"));
  if (images.rank() != 3 || labels.rank() != 1 || images.shape().Dim(0) != labels.shape().Dim(0))
    kiln::detail::Throw("Fashion-MNIST in {}: images {} and labels {} do not match", dir, images.shape(),
                        labels.shape());
  const int64_t n = images.shape().Dim(0);
  std::vector<float> px;
  px.reserve(static_cast<size_t>(images.Size()));
  for (uint8_t v : images.ToVector<uint8_t>()) px.push_back(static_cast<float>(v) / 255.0f);
  std::vector<int32_t> ids;
  for (uint8_t v : labels.ToVector<uint8_t>()) ids.push_back(v);
  Tensor x =
      Tensor::FromFlat(Shape(DType::Float32, {n, images.shape().Dim(1), images.shape().Dim(2), 1}), px);
  Tensor y = Tensor::FromFlat(Shape(DType::Int32, {n, 1}), ids);
  return InMemoryFromData(std::move(backend), "fashion-mnist " + prefix, {x}, {y});
}

}  // namespace kiln::data
