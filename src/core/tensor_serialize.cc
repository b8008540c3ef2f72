// Tensor serialization: kiln's versioned binary format.
//
//   offset  size       field
//   0       8          magic "KILNTNSR"
//   8       4          format version (uint32, currently 1)
//   12      1          dtype (DType's stable numeric value)
//   13      3          reserved, zero
//   16      4          rank (uint32, at most kMaxRank)
//   20      8 * rank   dimensions (int64 each)
//   ...     8          data size in bytes (uint64; must equal the shape's ByteSize)
//   ...     n          data (row-major, little-endian, packed types as stored)
//   ...     4          CRC-32 (zlib) of everything before it
// Integers are little-endian.

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <istream>
#include <ostream>

#include "core/check.h"
#include "kiln/compute/backend.h"
#include "kiln/core/tensor.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little,
              "kiln's serialization assumes a little-endian host");

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'T', 'N', 'S', 'R'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxRank = 64;
constexpr int64_t kChunk =
    16 << 20;  // Data is read in chunks so a lying header cannot force a huge allocation.

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}
  void Bytes(const void* data, size_t n) {
    crc_ = crc32_z(crc_, static_cast<const Bytef*>(data), n);
    out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  }
  template <typename T>
  void Int(T value) {
    Bytes(&value, sizeof(T));
  }
  uint32_t crc() const { return static_cast<uint32_t>(crc_); }

 private:
  std::ostream& out_;
  uLong crc_ = crc32_z(0, nullptr, 0);
};

class Reader {
 public:
  explicit Reader(std::istream& in) : in_(in) {}
  void Bytes(void* data, size_t n, const char* what) {
    in_.read(static_cast<char*>(data), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in_.gcount()) != n) {
      detail::Throw("Tensor::Deserialize: stream ends inside the {} (at byte {}, {} of {} bytes read)", what,
                    offset_ + in_.gcount(), in_.gcount(), n);
    }
    crc_ = crc32_z(crc_, static_cast<const Bytef*>(data), n);
    offset_ += static_cast<int64_t>(n);
  }
  template <typename T>
  T Int(const char* what) {
    T value;
    Bytes(&value, sizeof(T), what);
    return value;
  }
  int64_t offset() const { return offset_; }
  uint32_t crc() const { return static_cast<uint32_t>(crc_); }

 private:
  std::istream& in_;
  int64_t offset_ = 0;
  uLong crc_ = crc32_z(0, nullptr, 0);
};

struct Decoded {
  Shape shape;
  std::vector<uint8_t> data;
};

Decoded Decode(std::istream& in) {
  Reader r(in);
  char magic[8];
  r.Bytes(magic, sizeof(magic), "magic");
  if (std::memcmp(magic, kMagic, sizeof(magic)) != 0) {
    detail::Throw("Tensor::Deserialize: not a serialized kiln tensor (bad magic at byte 0)");
  }
  const auto version = r.Int<uint32_t>("version");
  if (version != kVersion) {
    detail::Throw("Tensor::Deserialize: format version {} is not supported (this kiln reads version {})",
                  version, kVersion);
  }
  const auto dtype = static_cast<DType>(r.Int<uint8_t>("dtype"));
  if (!IsValid(dtype))
    detail::Throw("Tensor::Deserialize: invalid dtype code {} at byte 12", static_cast<int>(dtype));
  uint8_t reserved[3];
  r.Bytes(reserved, sizeof(reserved), "header");
  const auto rank = r.Int<uint32_t>("rank");
  if (rank > kMaxRank)
    detail::Throw("Tensor::Deserialize: rank {} at byte 16 exceeds the limit {}", rank, kMaxRank);
  std::vector<int64_t> dims(rank);
  int64_t count = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    const int64_t at = r.offset();
    dims[i] = r.Int<int64_t>("dimensions");
    if (dims[i] < 0) detail::Throw("Tensor::Deserialize: negative dimension {} at byte {}", dims[i], at);
    if (__builtin_mul_overflow(count, dims[i], &count) || count > (int64_t{1} << 60)) {
      detail::Throw("Tensor::Deserialize: dimensions overflow (absurd size) at byte {}", at);
    }
  }
  Shape shape(dtype, std::move(dims));
  const int64_t size_at = r.offset();
  const auto data_bytes = r.Int<uint64_t>("data size");
  if (data_bytes != static_cast<uint64_t>(shape.ByteSize())) {
    detail::Throw("Tensor::Deserialize: data size {} at byte {} does not match shape {} ({} bytes)",
                  data_bytes, size_at, shape, shape.ByteSize());
  }
  Decoded result{std::move(shape), {}};
  const auto total = static_cast<int64_t>(data_bytes);
  for (int64_t done = 0; done < total;) {
    const int64_t n = std::min(kChunk, total - done);
    result.data.resize(static_cast<size_t>(done + n));
    r.Bytes(result.data.data() + done, static_cast<size_t>(n), "data");
    done += n;
  }
  const uint32_t computed = r.crc();
  const auto stored = r.Int<uint32_t>("checksum");
  if (stored != computed) {
    detail::Throw(
        "Tensor::Deserialize: checksum mismatch (stored {:08x}, computed {:08x}): the data is corrupt",
        stored, computed);
  }
  return result;
}

}  // namespace

void Tensor::Serialize(std::ostream& out) const {
  if (!Ok()) detail::Throw("Tensor::Serialize: the tensor is not Ok (empty, finalized or donated)");
  Writer w(out);
  w.Bytes(kMagic, sizeof(kMagic));
  w.Int<uint32_t>(kVersion);
  w.Int<uint8_t>(static_cast<uint8_t>(shape_.dtype()));
  const uint8_t reserved[3] = {0, 0, 0};
  w.Bytes(reserved, sizeof(reserved));
  w.Int<uint32_t>(static_cast<uint32_t>(shape_.Rank()));
  for (int64_t d : shape_.Dimensions()) w.Int<int64_t>(d);
  w.Int<uint64_t>(static_cast<uint64_t>(shape_.ByteSize()));
  ConstBytes([&](std::span<const uint8_t> bytes) { w.Bytes(bytes.data(), bytes.size()); });
  w.Int<uint32_t>(w.crc());
  if (!out) detail::Throw("Tensor::Serialize: writing to the stream failed");
}

Tensor Tensor::Deserialize(std::istream& in) {
  Decoded d = Decode(in);
  return FromBytes(d.shape, d.data);
}

Tensor Tensor::Deserialize(std::istream& in, const compute::BackendPtr& backend, int device) {
  if (!backend) detail::Throw("Tensor::Deserialize: null backend");
  backend->CheckDevice(device);
  Decoded d = Decode(in);
  if (backend->HasSharedBuffers()) {
    Tensor t = FromShapeForBackend(backend, device, d.shape);
    t.MutableBytes([&](std::span<uint8_t> bytes) { std::copy(d.data.begin(), d.data.end(), bytes.begin()); });
    return t;
  }
  Tensor t = FromBytes(d.shape, d.data);
  t.MoveToDevice(backend, device);
  return t;
}

}  // namespace kiln
