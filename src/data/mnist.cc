// IDX files and the Fashion-MNIST dataset.

#include "kiln/data/mnist.h"

#include <zlib.h>

#include <filesystem>

#include "core/check.h"

namespace kiln::data {

namespace {

/// The whole (decompressed) content of `path`.
std::string ReadAll(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) kiln::detail::Throw("cannot open {}", path);
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const char* msg = gzerror(f, &err);
  const std::string text = err != Z_OK && err != Z_STREAM_END ? msg : "";
  gzclose(f);
  if (n < 0 || !text.empty()) kiln::detail::Throw("{}: damaged compressed data ({})", path, text);
  return out;
}

}  // namespace

Tensor ReadIdx(const std::string& path) {
  const std::string data = ReadAll(path);
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  if (data.size() < 4 || p[0] != 0 || p[1] != 0) kiln::detail::Throw("{}: not an IDX file", path);
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
      kiln::detail::Throw("{}: unknown IDX type 0x{:02x}", path, p[2]);
  }
  const int rank = p[3];
  if (rank < 1 || data.size() < 4 + 4 * static_cast<size_t>(rank))
    kiln::detail::Throw("{}: truncated IDX header", path);
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    const uint8_t* d = p + 4 + 4 * i;
    dims.push_back((int64_t{d[0]} << 24) | (int64_t{d[1]} << 16) | (int64_t{d[2]} << 8) | int64_t{d[3]});
  }
  const Shape shape(dtype, dims);
  const size_t offset = 4 + 4 * static_cast<size_t>(rank);
  if (data.size() - offset != static_cast<size_t>(shape.ByteSize()))
    kiln::detail::Throw("{}: {} data bytes, the header's {} needs {}", path, data.size() - offset, shape,
                        shape.ByteSize());
  Tensor t = Tensor::FromShape(shape);
  const size_t item = static_cast<size_t>(DTypeBits(dtype) / 8);
  t.MutableBytes([&](std::span<uint8_t> b) {
    // IDX is big-endian: reverse each element's bytes.
    for (size_t i = 0; i < b.size(); i += item)
      for (size_t k = 0; k < item; ++k) b[i + k] = p[offset + i + item - 1 - k];
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
