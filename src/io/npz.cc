// NumPy .npz files: zip archives of .npy members, stored or deflated. Only what .npz needs of
// the zip format (APPNOTE.TXT) is here: one disk, no encryption, methods 0 and 8, Zip64.
#define ZLIB_CONST
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <initializer_list>
#include <ostream>
#include <streambuf>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "kiln/io/npy.h"

namespace kiln::io {
namespace {

using detail::Throw;

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kMax16 = 0xFFFF, kMax32 = 0xFFFFFFFF;
constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kZip64EndSize = 56, kLocatorSize = 20;
constexpr uint64_t kMadeBy = (3 << 8) | 45;             // Unix, zip 4.5.
constexpr uint64_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01.
constexpr uInt kZlibSlice = 1u << 30;  // zlib counts in 32 bits: feed it at most this much at once.

uint64_t Le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

template <int kBytes>
std::string Little(uint64_t v) {
  std::string s(kBytes, '\0');
  for (int i = 0; i < kBytes; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
constexpr auto U16 = Little<2>;
constexpr auto U32 = Little<4>;
constexpr auto U64 = Little<8>;

// ---- Reading ----------------------------------------------------------------------------------------

// The archive, read with bounds checks against the file size.
class Archive {
 public:
  explicit Archive(const std::string& path) : path_(path) {
    int64_t size = 0;
    in_ = OpenForReading(path, "ReadNpz", &size);
    size_ = static_cast<uint64_t>(size);
  }

  uint64_t size() const { return size_; }

  template <typename... Args>
  [[noreturn]] void Fail(fmt::format_string<Args...> format, Args&&... args) const {
    Throw("ReadNpz: {}: {}", path_, fmt::format(format, std::forward<Args>(args)...));
  }

  // Reads `n` bytes at `offset`, which must lie within `limit` (the file size by default).
  std::vector<uint8_t> Read(uint64_t offset, uint64_t n, std::string_view what,
                            uint64_t limit = ~uint64_t{0}) {
    limit = std::min(limit, size_);
    if (offset > limit || n > limit - offset) {
      Fail("{} ({} bytes at byte {}) lies beyond byte {}", what, n, offset, limit);
    }
    std::vector<uint8_t> data(n);
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in_.gcount()) != n) Fail("reading {} at byte {} failed", what, offset);
    return data;
  }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0;
};

struct Entry {
  std::string name;
  uint64_t flags = 0, method = 0, crc = 0, csize = 0, usize = 0, offset = 0;
};

// Applies the Zip64 extra field (id 0x0001): each of `values` that is saturated (0xFFFFFFFF) is
// replaced, in order, by the next 64-bit value of that field.
void ApplyZip64(const Archive& a, std::span<const uint8_t> extra, std::initializer_list<uint64_t*> values,
                std::string_view where) {
  size_t pos = 0;
  std::span<const uint8_t> field;
  while (pos + 4 <= extra.size()) {
    const uint64_t id = Le(&extra[pos], 2), size = Le(&extra[pos + 2], 2);
    if (pos + 4 + size > extra.size()) a.Fail("{}: an extra field runs past its end", where);
    if (id == 1) field = extra.subspan(pos + 4, size);
    pos += 4 + size;
  }
  size_t used = 0;
  for (uint64_t* v : values) {
    if (*v != kMax32) continue;
    if (used + 8 > field.size())
      a.Fail("{}: a size or offset is 0xFFFFFFFF but the Zip64 field lacks it", where);
    *v = Le(&field[used], 8);
    used += 8;
  }
}

std::vector<Entry> ReadCentralDirectory(Archive& a) {
  // The end record is the last 22+ bytes (it may be followed by a comment of up to 65535 bytes).
  const uint64_t tail_size = std::min<uint64_t>(a.size(), kMax16 + kEndSize);
  const std::vector<uint8_t> tail = a.Read(a.size() - tail_size, tail_size, "the end of the archive");
  size_t end = tail.size();
  for (size_t i = tail.size() >= kEndSize ? tail.size() - kEndSize + 1 : 0; i-- > 0;) {
    if (Le(&tail[i], 4) == kEndSig && i + kEndSize + Le(&tail[i + 20], 2) <= tail.size()) {
      end = i;
      break;
    }
  }
  if (end == tail.size()) a.Fail("not a zip archive: no end of central directory record");
  const uint8_t* e = &tail[end];
  uint64_t end_offset = a.size() - tail_size + end;
  if (Le(e + 4, 2) != 0 || Le(e + 6, 2) != 0) a.Fail("multi-disk archives are not supported");
  uint64_t count = Le(e + 10, 2), cd_size = Le(e + 12, 4), cd_offset = Le(e + 16, 4);
  if (Le(e + 8, 2) != count) a.Fail("the end record's entry counts disagree");
  // A Zip64 locator just before the end record points to the Zip64 end record, whose 64-bit
  // fields replace the saturated ones.
  if (end_offset >= kLocatorSize) {
    const std::vector<uint8_t> loc = a.Read(end_offset - kLocatorSize, kLocatorSize, "the Zip64 locator");
    if (Le(loc.data(), 4) == kZip64LocatorSig) {
      const uint64_t z = Le(&loc[8], 8);
      const std::vector<uint8_t> r =
          a.Read(z, kZip64EndSize, "the Zip64 end record", end_offset - kLocatorSize);
      if (Le(r.data(), 4) != kZip64EndSig) a.Fail("bad Zip64 end record signature at byte {}", z);
      if (Le(&r[16], 4) != 0 || Le(&r[20], 4) != 0) a.Fail("multi-disk archives are not supported");
      count = Le(&r[32], 8);
      cd_size = Le(&r[40], 8);
      cd_offset = Le(&r[48], 8);
      end_offset = z;
    }
  }
  const std::vector<uint8_t> cd = a.Read(cd_offset, cd_size, "the central directory", end_offset);
  if (count > cd.size() / kCentralSize)
    a.Fail("{} entries cannot fit in a central directory of {} bytes", count, cd.size());
  std::vector<Entry> entries;
  size_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = cd_offset + pos;
    if (pos + kCentralSize > cd.size()) a.Fail("central directory entry {} at byte {} is truncated", i, at);
    const uint8_t* c = &cd[pos];
    if (Le(c, 4) != kCentralSig) a.Fail("bad central directory signature at byte {}", at);
    const size_t name_len = Le(c + 28, 2), extra_len = Le(c + 30, 2), comment_len = Le(c + 32, 2);
    if (pos + kCentralSize + name_len + extra_len + comment_len > cd.size()) {
      a.Fail("central directory entry {} at byte {} is truncated", i, at);
    }
    Entry entry;
    entry.name.assign(reinterpret_cast<const char*>(c + kCentralSize), name_len);
    entry.flags = Le(c + 8, 2);
    entry.method = Le(c + 10, 2);
    entry.crc = Le(c + 16, 4);
    entry.csize = Le(c + 20, 4);
    entry.usize = Le(c + 24, 4);
    entry.offset = Le(c + 42, 4);
    ApplyZip64(a, std::span(c + kCentralSize + name_len, extra_len),
               {&entry.usize, &entry.csize, &entry.offset},
               fmt::format("central directory entry '{}'", entry.name));
    entries.push_back(std::move(entry));
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
  return entries;
}

// Inflates raw deflate `in` into exactly `usize` bytes. The output grows only as data actually
// comes out, so a false declared size costs no more memory than the real content.
std::vector<uint8_t> Inflate(const Archive& a, std::span<const uint8_t> in, uint64_t usize,
                             const std::string& name) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) a.Fail("member '{}': inflateInit2 failed", name);
  struct End {
    z_stream* zs;
    ~End() { inflateEnd(zs); }
  } end{&zs};
  std::vector<uint8_t> out;
  uint64_t in_pos = 0, out_pos = 0;
  uint8_t spare;  // Where output past the declared size goes: to detect it.
  for (;;) {
    if (out_pos == out.size() && out.size() < usize)
      out.resize(std::min<uint64_t>(usize, std::max<uint64_t>(out.size() * 2, 1 << 20)));
    const bool full = out_pos == out.size();
    zs.next_in = in.data() + in_pos;
    zs.avail_in = static_cast<uInt>(std::min<uint64_t>(in.size() - in_pos, kZlibSlice));
    zs.next_out = full ? &spare : out.data() + out_pos;
    zs.avail_out = full ? 1 : static_cast<uInt>(std::min<uint64_t>(out.size() - out_pos, kZlibSlice));
    const uInt avail_in = zs.avail_in, avail_out = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const uint64_t consumed = avail_in - zs.avail_in, produced = avail_out - zs.avail_out;
    in_pos += consumed;
    if (full && produced > 0) a.Fail("member '{}' inflates to more than its declared {} bytes", name, usize);
    if (!full) out_pos += produced;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_OK || (rc == Z_BUF_ERROR && consumed + produced > 0)) continue;
    if (rc == Z_BUF_ERROR) a.Fail("member '{}': the deflate stream is truncated", name);
    a.Fail("member '{}': corrupt deflate data ({})", name, zs.msg != nullptr ? zs.msg : "zlib error");
  }
  if (out_pos != usize) a.Fail("member '{}' inflates to {} bytes, but {} are declared", name, out_pos, usize);
  if (in_pos != in.size())
    a.Fail("member '{}': its deflate stream ends before its {} compressed bytes", name, in.size());
  return out;
}

uint32_t Crc32(std::span<const uint8_t> data) {
  return static_cast<uint32_t>(crc32_z(crc32_z(0, nullptr, 0), data.data(), data.size()));
}

// ---- Writing ----------------------------------------------------------------------------------------

// What WriteNpy writes passes through here: counted and (optionally) CRC'd, then forwarded to
// `next`, or deflated (raw deflate, as zip wants) into a string, or dropped.
class MemberBuf : public std::streambuf {
 public:
  MemberBuf(std::streambuf* next, bool crc, bool deflate) : next_(next), crc_on_(crc), deflate_(deflate) {
    if (deflate &&
        deflateInit2(&zs_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      Throw("WriteNpz: deflateInit2 failed");
    }
  }
  ~MemberBuf() override {
    if (deflate_) deflateEnd(&zs_);
  }
  MemberBuf(const MemberBuf&) = delete;
  MemberBuf& operator=(const MemberBuf&) = delete;

  uint64_t count() const { return count_; }
  uint32_t crc() const { return static_cast<uint32_t>(crc_); }
  std::string Finish() {
    if (!Deflate(nullptr, 0, Z_FINISH)) Throw("WriteNpz: deflate failed");
    return std::move(deflated_);
  }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize done = n;
    if (next_ != nullptr) done = next_->sputn(s, n);
    if (deflate_ && !Deflate(reinterpret_cast<const Bytef*>(s), static_cast<uint64_t>(n), Z_NO_FLUSH))
      done = 0;
    if (crc_on_) crc_ = crc32_z(crc_, reinterpret_cast<const Bytef*>(s), static_cast<size_t>(done));
    count_ += static_cast<uint64_t>(done);
    return done;
  }
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    const char c = traits_type::to_char_type(ch);
    return xsputn(&c, 1) == 1 ? ch : traits_type::eof();
  }
  int sync() override { return next_ != nullptr ? next_->pubsync() : 0; }

 private:
  bool Deflate(const Bytef* data, uint64_t n, int flush) {
    Bytef chunk[1 << 16];
    do {
      const uInt slice = static_cast<uInt>(std::min<uint64_t>(n, kZlibSlice));
      zs_.next_in = data;
      zs_.avail_in = slice;
      do {  // Until deflate leaves room in the output: then it has taken all the input.
        zs_.next_out = chunk;
        zs_.avail_out = sizeof chunk;
        if (deflate(&zs_, n > slice ? Z_NO_FLUSH : flush) == Z_STREAM_ERROR) return false;
        deflated_.append(reinterpret_cast<const char*>(chunk), sizeof chunk - zs_.avail_out);
      } while (zs_.avail_out == 0);
      data += slice;
      n -= slice;
    } while (n > 0);
    return true;
  }

  std::streambuf* next_;
  bool crc_on_, deflate_;
  z_stream zs_{};
  std::string deflated_;
  uLong crc_ = crc32_z(0, nullptr, 0);
  uint64_t count_ = 0;
};

struct Written {
  std::string name;
  uint64_t method, flags, crc, csize, usize, offset;
};

void WriteArchive(std::ostream& file, const std::string& path, const std::map<std::string, Tensor>& arrays,
                  bool compress) {
  MemberBuf counted(file.rdbuf(), false, false);  // Counts bytes written: the offsets.
  std::ostream out(&counted);
  std::vector<Written> members;
  for (const auto& [key, tensor] : arrays) {
    Written m{key + ".npy", compress ? 8u : 0u, 0, 0, 0, 0, counted.count()};
    if (m.name.size() > kMax16) Throw("WriteNpz: {}: member name '{}' is too long", path, key);
    // Bit 11: the name is UTF-8 (set only when it is not plain ASCII, as Python's zipfile does).
    if (std::any_of(m.name.begin(), m.name.end(),
                    [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      m.flags = 1 << 11;
    }
    // The local header needs the CRC and sizes before the data: a first pass computes them (and
    // the deflated data). Stored data is then written by a second pass, straight to the file.
    MemberBuf first(nullptr, true, compress);
    std::ostream first_out(&first);
    try {
      WriteNpy(first_out, tensor);
    } catch (const Error& e) {
      Throw("WriteNpz: {}: array '{}': {}", path, key, e.message());
    }
    const std::string deflated = compress ? first.Finish() : std::string();
    m.crc = first.crc();
    m.usize = first.count();
    m.csize = compress ? deflated.size() : m.usize;
    const bool zip64 = m.usize >= kMax32 || m.csize >= kMax32;
    // Local header. Version needed: 2.0, or 4.5 for Zip64. Time and date: fixed at 1980-01-01
    // 00:00 so that archives are reproducible.
    std::string h = U32(kLocalSig) + U16(zip64 ? 45 : 20) + U16(m.flags) + U16(m.method) + U16(0) +
                    U16(kDosDate) + U32(m.crc) + U32(zip64 ? kMax32 : m.csize) +
                    U32(zip64 ? kMax32 : m.usize) + U16(m.name.size()) + U16(zip64 ? 20 : 0) + m.name;
    if (zip64) h += U16(1) + U16(16) + U64(m.usize) + U64(m.csize);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    if (compress) {
      out.write(deflated.data(), static_cast<std::streamsize>(deflated.size()));
    } else {
      MemberBuf second(&counted, true, false);
      std::ostream second_out(&second);
      try {
        WriteNpy(second_out, tensor);
      } catch (const Error& e) {
        Throw("WriteNpz: {}: writing array '{}' failed: {}", path, key, e.message());
      }
      if (second.count() != m.usize || second.crc() != m.crc) {
        Throw("WriteNpz: {}: array '{}' changed while it was being written", path, key);
      }
    }
    if (!out) Throw("WriteNpz: {}: writing array '{}' failed", path, key);
    members.push_back(std::move(m));
  }
  const uint64_t cd_offset = counted.count();
  for (const Written& m : members) {
    const bool big = m.usize >= kMax32 || m.csize >= kMax32, far = m.offset >= kMax32;
    std::string h = U32(kCentralSig) + U16(kMadeBy) + U16(big || far ? 45 : 20) + U16(m.flags) +
                    U16(m.method) + U16(0) + U16(kDosDate) + U32(m.crc) + U32(big ? kMax32 : m.csize) +
                    U32(big ? kMax32 : m.usize) + U16(m.name.size()) +
                    U16((big ? 16 : 0) + (far ? 8 : 0) + (big || far ? 4 : 0)) + U16(0) + U16(0) +
                    U16(0) +               // Comment length, disk, internal attributes.
                    U32(0100644u << 16) +  // External attributes: a regular file, rw-r--r--.
                    U32(far ? kMax32 : m.offset) + m.name;
    if (big || far) {  // Zip64 field: the saturated values, in the order usize, csize, offset.
      h += U16(1) + U16((big ? 16 : 0) + (far ? 8 : 0));
      if (big) h += U64(m.usize) + U64(m.csize);
      if (far) h += U64(m.offset);
    }
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
  }
  const uint64_t cd_size = counted.count() - cd_offset, count = members.size();
  std::string h;
  if (count >= kMax16 || cd_size >= kMax32 || cd_offset >= kMax32) {  // Zip64 end record and locator.
    h = U32(kZip64EndSig) + U64(kZip64EndSize - 12) + U16(kMadeBy) + U16(45) + U32(0) + U32(0) + U64(count) +
        U64(count) + U64(cd_size) + U64(cd_offset) + U32(kZip64LocatorSig) + U32(0) + U64(counted.count()) +
        U32(1);
  }
  h += U32(kEndSig) + U32(0) + U16(std::min(count, kMax16)) + U16(std::min(count, kMax16)) +
       U32(std::min(cd_size, kMax32)) + U32(std::min(cd_offset, kMax32)) + U16(0);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  out.flush();
  if (!out) Throw("WriteNpz: {}: writing the central directory failed", path);
}

}  // namespace

std::map<std::string, Tensor> ReadNpz(const std::string& path) {
  Archive a(path);
  const std::vector<Entry> entries = ReadCentralDirectory(a);
  std::map<std::string, Tensor> result;
  for (const Entry& e : entries) {
    const std::string& n = e.name;
    if (e.flags & 0x41) a.Fail("member '{}' is encrypted", n);
    if (e.method != 0 && e.method != 8) {
      a.Fail("member '{}' uses compression method {} (kiln reads 0, stored, and 8, deflate)", n, e.method);
    }
    // The local header repeats the name and has its own extra field; the data follows.
    const std::vector<uint8_t> local =
        a.Read(e.offset, kLocalSize, fmt::format("the local header of '{}'", n));
    if (Le(local.data(), 4) != kLocalSig)
      a.Fail("bad local header signature for '{}' at byte {}", n, e.offset);
    const uint64_t name_len = Le(&local[26], 2), extra_len = Le(&local[28], 2);
    const std::vector<uint8_t> name_extra =
        a.Read(e.offset + kLocalSize, name_len + extra_len, fmt::format("the local header of '{}'", n));
    if (std::string_view(reinterpret_cast<const char*>(name_extra.data()), name_len) != n) {
      a.Fail("the local header at byte {} names '{}' differently", e.offset, n);
    }
    if ((Le(&local[6], 2) & 8) == 0) {  // Without a data descriptor, the local sizes must agree.
      uint64_t usize = Le(&local[22], 4), csize = Le(&local[18], 4);
      ApplyZip64(a, std::span(name_extra).subspan(name_len), {&usize, &csize},
                 fmt::format("local header of '{}'", n));
      if (usize != e.usize || csize != e.csize || Le(&local[14], 4) != e.crc ||
          Le(&local[8], 2) != e.method) {
        a.Fail("the local header of '{}' disagrees with its central directory entry", n);
      }
    }
    if (e.method == 0 && e.csize != e.usize) {
      a.Fail("stored member '{}' has compressed size {} but size {}", n, e.csize, e.usize);
    }
    const uint64_t data_at = e.offset + kLocalSize + name_len + extra_len;
    std::vector<uint8_t> data = a.Read(data_at, e.csize, fmt::format("the data of '{}'", n));
    // Deflate expands at most 1032:1 (2 bits per 258-byte match): a larger declared size is a lie.
    if (e.method == 8 && e.usize > e.csize * 1032 + 1024) {
      a.Fail("member '{}' declares {} bytes from only {} compressed bytes", n, e.usize, e.csize);
    }
    if (e.method == 8) data = Inflate(a, data, e.usize, n);
    if (Crc32(data) != e.crc) a.Fail("CRC-32 mismatch in member '{}'", n);
    const std::string key = n.ends_with(".npy") ? n.substr(0, n.size() - 4) : n;
    if (result.count(key) != 0) a.Fail("duplicate member '{}'", n);
    result.emplace(key, ReadNpy(std::span<const uint8_t>(data), fmt::format("{}:{}", path, n)));
  }
  return result;
}

void WriteNpz(const std::string& path, const std::map<std::string, Tensor>& arrays, bool compress) {
  WriteFileAtomically(path, [&](std::ostream& out) { WriteArchive(out, path, arrays, compress); });
}

}  // namespace kiln::io
