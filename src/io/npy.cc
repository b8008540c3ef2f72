// NumPy .npy files: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <streambuf>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "kiln/io/npy.h"

namespace kiln::io {
namespace {

using detail::Throw;

constexpr std::string_view kNpyMagic("\x93NUMPY", 6);
constexpr int64_t kChunkBytes = int64_t{16} << 20;  // Bounded reads from streams of unknown size.
constexpr int64_t kMaxHeaderBytes = int64_t{64} << 20;
constexpr size_t kMaxRank = 1 << 16;
// The dtypes NumPy and kiln share: NumPy's kind and size, kiln's dtype.
constexpr std::pair<std::string_view, DType> kTypes[] = {
    {"b1", DType::Bool},      {"i1", DType::Int8},       {"i2", DType::Int16},   {"i4", DType::Int32},
    {"i8", DType::Int64},     {"u1", DType::Uint8},      {"u2", DType::Uint16},  {"u4", DType::Uint32},
    {"u8", DType::Uint64},    {"f2", DType::Float16},    {"f4", DType::Float32}, {"f8", DType::Float64},
    {"c8", DType::Complex64}, {"c16", DType::Complex128}};
// Files are little-endian ('<'; '|', '=' and no order mean native): so is every machine kiln runs on.
static_assert(std::endian::native == std::endian::little, "kiln's .npy I/O assumes a little-endian host");

// ---- The header: a Python dict literal ----------------------------------------------------------

struct Header {
  DType dtype = DType::Invalid;
  int element_size = 0;
  bool swap = false;  // Big-endian data, to swap (kiln runs on little-endian machines only).
  int swap_size = 1;  // The bytes swapped as one number: a complex number's parts swap separately.
  bool fortran = false;
  std::vector<int64_t> dims;
  int64_t data_bytes = 0;
};

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// with its keys in any order, any spacing, optional trailing commas and either quote.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, int64_t base, const std::string& name)
      : text_(text), base_(base), name_(name) {}

  Header Parse() {
    Header h;
    bool seen[3] = {false, false, false};
    if (!Consume('{')) Fail("the header is not a dict");
    while (!Consume('}')) {
      SkipSpace();
      const size_t key_at = pos_;
      const std::string key = String();
      const int index = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
      if (index < 0) FailAt(fmt::format("unexpected key '{}'", key), key_at);
      if (seen[index]) FailAt(fmt::format("duplicate key '{}'", key), key_at);
      seen[index] = true;
      if (!Consume(':')) Fail("expected ':' after a dict key");
      if (index == 0) {
        Descr(h, name_);
      } else if (index == 1) {
        SkipSpace();
        h.fortran = Word("True");
        if (!h.fortran && !Word("False")) Fail("'fortran_order' is not True or False");
      } else {
        Dims(h);
      }
      if (Consume('}')) break;
      if (!Consume(',')) Fail("expected ',' or '}'");
    }
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected text after the header dict");
    if (!seen[0] || !seen[1] || !seen[2]) {
      const char* key = !seen[0] ? "descr" : !seen[1] ? "fortran_order" : "shape";
      FailAt(fmt::format("missing key '{}'", key), 0);
    }
    return h;
  }

 private:
  [[noreturn]] void Fail(std::string_view what) const { FailAt(what, pos_); }
  [[noreturn]] void FailAt(std::string_view what, size_t pos) const {
    if (pos >= text_.size()) what = "unexpected end (unterminated header)";
    const auto c = pos < text_.size() ? static_cast<unsigned char>(text_[pos]) : 0;
    const std::string seen =
        c < 0x20 || c >= 0x7f ? fmt::format("byte 0x{:02x}", c) : fmt::format("'{}'", char(c));
    Throw("ReadNpy: {}: malformed header: {} at byte {}{}", name_, what, base_ + static_cast<int64_t>(pos),
          pos < text_.size() ? " (" + seen + ")" : "");
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos)
      ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool Word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  std::string String() {
    const size_t start = pos_;
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) Fail("expected a string");
    const char quote = text_[pos_++];
    std::string s;
    for (; pos_ < text_.size() && text_[pos_] != quote; ++pos_) s += text_[pos_];
    if (pos_ >= text_.size()) FailAt("unterminated string", start);
    ++pos_;
    return s;
  }

  // Maps the descr ("<f4", "|b1", ...) to a kiln dtype.
  void Descr(Header& h, const std::string& name) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '[') {  // A list of fields: a structured dtype.
      const std::string_view list = text_.substr(pos_, text_.rfind(']') + 1 - pos_);
      Throw("ReadNpy: {}: unsupported dtype descr {} (structured dtypes are not supported)", name, list);
    }
    const std::string descr = String();
    std::string_view type = descr;
    if (!type.empty() && std::string_view("<>|=").find(type[0]) != std::string_view::npos)
      type.remove_prefix(1);
    for (const auto& [code, dtype] : kTypes) {
      if (type != code) continue;
      h.dtype = dtype;
      h.element_size = static_cast<int>(DTypeByteSize(dtype, 1));
      h.swap_size = IsComplex(dtype) ? h.element_size / 2 : h.element_size;
      h.swap = h.element_size > 1 && descr[0] == '>';
      return;
    }
    Throw(
        "ReadNpy: {}: unsupported dtype descr '{}' (kiln reads bool, int8..int64, uint8..uint64, float16, "
        "float32, float64, complex64 and complex128 in either byte order)",
        name, descr);
  }

  // The shape: a tuple of non-negative integers ("()", "(5,)", "(2, 3)").
  void Dims(Header& h) {
    if (!Consume('(')) Fail("'shape' is not a tuple");
    bool comma = false;  // "(5)" is 5 in Python; "(5,)" is a tuple.
    while (!Consume(')')) {
      if (!h.dims.empty() && !comma) Fail("expected ',' or ')'");
      if (h.dims.size() >= kMaxRank) Fail(fmt::format("rank exceeds the limit of {}", kMaxRank));
      h.dims.push_back(Int());
      comma = Consume(',');
    }
    if (h.dims.size() == 1 && !comma) Fail("'shape' is not a tuple");
  }

  int64_t Int() {
    SkipSpace();
    const size_t start = pos_;
    const bool negative = pos_ < text_.size() && text_[pos_] == '-';
    if (negative) ++pos_;
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
      Fail("expected a dimension (an integer)");
    int64_t value = 0;
    for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; ++pos_) {
      if (__builtin_mul_overflow(value, 10, &value) ||
          __builtin_add_overflow(value, text_[pos_] - '0', &value)) {
        FailAt("integer out of the int64 range", start);
      }
    }
    if (negative) FailAt(fmt::format("negative dimension -{}", value), start);
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;  // Python 2 longs.
    return value;
  }

  std::string_view text_;
  int64_t base_;  // File offset of the header text, for messages.
  const std::string& name_;
  size_t pos_ = 0;
};

Header ParseHeader(std::string_view text, int64_t base, const std::string& name) {
  Header h = HeaderParser(text, base, name).Parse();
  int64_t count = 1;
  for (int64_t d : h.dims) {
    if (__builtin_mul_overflow(count, d, &count)) {
      Throw("ReadNpy: {}: shape ({}) has more elements than int64 can count", name, fmt::join(h.dims, ", "));
    }
  }
  if (__builtin_mul_overflow(count, int64_t{h.element_size}, &h.data_bytes)) {
    Throw("ReadNpy: {}: shape ({}) of {} takes more bytes than int64 can count", name,
          fmt::join(h.dims, ", "), h.dtype);
  }
  return h;
}

// ---- Reading ----------------------------------------------------------------------------------------

// Reads from a stream, tracking the offset for messages. `remaining` is the number of bytes the
// stream holds past its start when it can tell (seekable); else reads grow in bounded chunks so
// that a header lying about the size fails before a large allocation.
class NpyReader {
 public:
  NpyReader(std::istream& in, const std::string& name) : in_(in), name_(name) {
    const std::istream::pos_type here = in.tellg();
    if (here != std::istream::pos_type(-1) && in.seekg(0, std::ios::end)) {
      const std::istream::pos_type end = in.tellg();
      if (end != std::istream::pos_type(-1) && in.seekg(here)) remaining_ = static_cast<int64_t>(end - here);
    }
    if (!remaining_) {
      in.clear();
      in.seekg(here);  // In case seeking to the end half-worked; harmless when not seekable.
      in.clear();
    }
  }

  int64_t offset() const { return offset_; }
  bool knows_size() const { return remaining_.has_value(); }

  // Throws unless `n` more bytes exist (when the size is known).
  void Require(int64_t n, std::string_view what) const {
    if (remaining_ && n > *remaining_ - offset_) {
      Throw("ReadNpy: {}: {} needs {} bytes at byte {}, but the file ends at byte {}", name_, what, n,
            offset_, *remaining_);
    }
  }

  void Exact(void* dst, int64_t n, std::string_view what) {
    Require(n, what);
    const int64_t got = ReadSome(static_cast<char*>(dst), n);
    if (got != n) Truncated(n, got, what);
  }

  std::vector<uint8_t> Bounded(int64_t n, std::string_view what) {
    Require(n, what);
    std::vector<uint8_t> data;
    if (remaining_) data.resize(static_cast<size_t>(n));
    for (int64_t done = 0; done < n;) {
      const int64_t want = remaining_ ? n - done : std::min(n - done, kChunkBytes);
      if (!remaining_) data.resize(static_cast<size_t>(done + want));
      const int64_t got = ReadSome(reinterpret_cast<char*>(data.data() + done), want);
      if (got != want) Truncated(n, done + got, what);
      done += got;
    }
    return data;
  }

 private:
  int64_t ReadSome(char* dst, int64_t n) {
    in_.read(dst, static_cast<std::streamsize>(n));
    const int64_t got = in_.gcount();
    offset_ += got;
    return got;
  }
  [[noreturn]] void Truncated(int64_t n, int64_t got, std::string_view what) const {
    Throw("ReadNpy: {}: truncated: {} needs {} bytes at byte {}, but only {} could be read", name_, what, n,
          offset_ - got, got);
  }

  std::istream& in_;
  const std::string& name_;
  std::optional<int64_t> remaining_;
  int64_t offset_ = 0;
};

// Puts the data in kiln's form, in place: native byte order, bools as 0/1.
void FixElements(std::span<uint8_t> data, const Header& h) {
  if (h.swap) {
    const auto n = static_cast<size_t>(h.swap_size);
    for (size_t i = 0; i + n <= data.size(); i += n) {
      std::reverse(data.begin() + i, data.begin() + i + n);
    }
  }
  if (h.dtype == DType::Bool) {
    for (uint8_t& b : data) b = b != 0;
  }
}

// Copies Fortran-order (first axis fastest) `in` into C-order `out`.
void FortranToC(std::span<const uint8_t> in, std::span<uint8_t> out, const Header& h) {
  const size_t rank = h.dims.size(), size = static_cast<size_t>(h.element_size);
  std::vector<int64_t> stride(rank), index(rank, 0);  // Fortran strides, in elements.
  for (size_t k = 0, s = 1; k < rank; s *= static_cast<size_t>(h.dims[k]), ++k)
    stride[k] = static_cast<int64_t>(s);
  int64_t from = 0;
  for (size_t to = 0; to < out.size(); to += size) {
    std::memcpy(out.data() + to, in.data() + from * h.element_size, size);
    for (size_t k = rank; k-- > 0;) {  // Next C-order index: the last axis moves fastest.
      from += stride[k];
      if (++index[k] < h.dims[k]) break;
      from -= stride[k] * h.dims[k];
      index[k] = 0;
    }
  }
}

Tensor Read(std::istream& in, const std::string& name) {
  NpyReader reader(in, name);
  uint8_t prefix[12];
  reader.Exact(prefix, 8, "the magic string and version");
  if (std::string_view(reinterpret_cast<const char*>(prefix), 6) != kNpyMagic) {
    Throw("ReadNpy: {}: not a .npy file: wrong magic string at byte 0", name);
  }
  const int major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0) {
    Throw("ReadNpy: {}: unsupported .npy format version {}.{} at byte 6 (kiln reads 1.0, 2.0 and 3.0)", name,
          major, minor);
  }
  const int length_bytes = major == 1 ? 2 : 4;
  reader.Exact(prefix + 8, length_bytes, "the header length");
  int64_t header_length = prefix[8] | prefix[9] << 8;
  if (major > 1) header_length |= int64_t{prefix[10]} << 16 | int64_t{prefix[11]} << 24;
  if (header_length > kMaxHeaderBytes) {
    Throw("ReadNpy: {}: header length {} at byte 8 exceeds the limit of {}", name, header_length,
          kMaxHeaderBytes);
  }
  const int64_t header_start = reader.offset();
  const std::vector<uint8_t> text =
      reader.Bounded(header_length, "the header (its length is given at byte 8)");
  const Header h = ParseHeader(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()),
                               header_start, name);
  const Shape shape(h.dtype, h.dims);
  const std::string what = fmt::format("the data of shape ({}) of {}", fmt::join(h.dims, ", "), h.dtype);
  if (reader.knows_size() && !h.fortran) {
    // The common case: checked against the file size, then read straight into the tensor.
    reader.Require(h.data_bytes, what);
    Tensor tensor = Tensor::FromShape(shape);
    tensor.MutableBytes([&](std::span<uint8_t> out) {
      reader.Exact(out.data(), h.data_bytes, what);
      FixElements(out, h);
    });
    return tensor;
  }
  std::vector<uint8_t> data = reader.Bounded(h.data_bytes, what);
  FixElements(data, h);
  if (!h.fortran || h.dims.size() < 2) return Tensor::FromBytes(shape, data);
  Tensor tensor = Tensor::FromShape(shape);
  tensor.MutableBytes([&](std::span<uint8_t> out) { FortranToC(data, out, h); });
  return tensor;
}

// A read-only, seekable streambuf over memory.
class MemoryBuf : public std::streambuf {
 public:
  explicit MemoryBuf(std::span<const uint8_t> bytes) {
    char* begin = const_cast<char*>(reinterpret_cast<const char*>(bytes.data()));  // Never written.
    setg(begin, begin, begin + bytes.size());
  }

 protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override {
    if (!(which & std::ios_base::in)) return pos_type(off_type(-1));
    const off_type base = dir == std::ios_base::beg   ? 0
                          : dir == std::ios_base::cur ? gptr() - eback()
                                                      : egptr() - eback();
    if (off < -base || off > (egptr() - eback()) - base) return pos_type(off_type(-1));
    setg(eback(), eback() + base + off, egptr());
    return pos_type(base + off);
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    return seekoff(off_type(pos), std::ios_base::beg, which);
  }
};

// ---- Writing ----------------------------------------------------------------------------------------

// NumPy's descr of `dtype`, as numpy writes it ('|' for one-byte types).
std::string NumpyDescr(DType dtype) {
  for (const auto& [code, d] : kTypes) {
    if (d == dtype) return (code == "b1" || code == "i1" || code == "u1" ? "|" : "<") + std::string(code);
  }
  Throw(
      "WriteNpy: dtype {} has no NumPy equivalent (NumPy lacks bfloat16, the 8-bit floats and the packed "
      "int4, "
      "uint4, int2 and uint2); convert the tensor first",
      dtype);
}

void Write(std::ostream& out, const Tensor& tensor, const std::string& name) {
  if (!tensor.Ok()) Throw("WriteNpy: {}: the tensor has no data", name);
  const std::string descr = NumpyDescr(tensor.dtype());
  const std::vector<int64_t>& dims = tensor.shape().Dimensions();
  const std::string shape =
      dims.size() == 1 ? fmt::format("({},)", dims[0]) : fmt::format("({})", fmt::join(dims, ", "));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  // Pad with spaces and end with '\n' so that the data starts at a multiple of 64 bytes, as
  // numpy does (aligned data can be memory-mapped and read in place).
  const auto padded = [&](size_t prefix) {
    return header.size() + 1 + (64 - (prefix + header.size() + 1) % 64) % 64;
  };
  int version = 1;
  size_t length = padded(10);
  if (length > 0xFFFF) {
    version = 2;
    length = padded(12);
    if (length > 0xFFFFFFFFu) Throw("WriteNpy: {}: the header of shape {} is too long", name, tensor.shape());
  }
  header.resize(length - 1, ' ');
  header += '\n';
  std::string prefix(kNpyMagic);
  prefix += static_cast<char>(version);
  prefix += '\0';
  for (int i = 0; i < (version == 1 ? 2 : 4); ++i) prefix += static_cast<char>((length >> (8 * i)) & 0xFF);
  out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  tensor.ConstBytes([&](std::span<const uint8_t> bytes) {
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  });
  if (!out) Throw("WriteNpy: {}: writing failed", name);
}

}  // namespace

Tensor ReadNpy(const std::string& path) {
  std::ifstream in = OpenForReading(path, "ReadNpy");
  return Read(in, path);
}

Tensor ReadNpy(std::istream& in, const std::string& name) { return Read(in, name); }

Tensor ReadNpy(std::span<const uint8_t> bytes, const std::string& name) {
  MemoryBuf buffer(bytes);
  std::istream in(&buffer);
  return Read(in, name);
}

void WriteNpy(const std::string& path, const Tensor& tensor) {
  (void)NumpyDescr(tensor.dtype());  // Unsupported dtypes fail before any file is created.
  WriteFileAtomically(path, [&](std::ostream& out) { Write(out, tensor, path); });
}

void WriteNpy(std::ostream& out, const Tensor& tensor) { Write(out, tensor, "<stream>"); }

}  // namespace kiln::io
