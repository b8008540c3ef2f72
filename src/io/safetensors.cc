// safetensors reading and writing, and CRC-32C.

#include "kiln/io/safetensors.h"

#include <algorithm>
#include <array>
#include <fstream>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/read_file.h"

namespace kiln::io {

namespace {

constexpr int64_t kMaxHeader = int64_t{100} << 20;  // 100 MiB of JSON at most.

struct StName {
  DType dtype;
  const char* name;
};

constexpr StName kNames[] = {
    {DType::Bool, "BOOL"},          {DType::Int8, "I8"},
    {DType::Int16, "I16"},          {DType::Int32, "I32"},
    {DType::Int64, "I64"},          {DType::Uint8, "U8"},
    {DType::Uint16, "U16"},         {DType::Uint32, "U32"},
    {DType::Uint64, "U64"},         {DType::Float16, "F16"},
    {DType::BFloat16, "BF16"},      {DType::Float32, "F32"},
    {DType::Float64, "F64"},        {DType::Float8E4M3FN, "F8_E4M3"},
    {DType::Float8E5M2, "F8_E5M2"},
};

DType FromName(const std::string& name, const std::string& path, const std::string& tensor) {
  for (const StName& d : kNames)
    if (name == d.name) return d.dtype;
  detail::Throw("{}: tensor \"{}\" has dtype \"{}\", which kiln does not read", path, tensor, name);
}

std::array<uint32_t, 256> Crc32cTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

std::vector<int64_t> ParseDims(const std::string& text, const std::string& path, const std::string& tensor) {
  Json j = Json::Parse(text, path + " metadata of \"" + tensor + "\"");
  std::vector<int64_t> dims;
  for (const Json& d : j.AsArray("shape")) dims.push_back(d.AsInt("shape"));
  return dims;
}

}  // namespace

uint32_t Crc32c(std::span<const uint8_t> bytes, uint32_t crc) {
  static const std::array<uint32_t, 256> table = Crc32cTable();
  crc = ~crc;
  for (uint8_t b : bytes) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string SafetensorsDType(DType dtype) {
  if (IsPacked(dtype)) return "U8";
  if (IsComplex(dtype)) return SafetensorsDType(ComplexPartDType(dtype));
  for (const StName& d : kNames)
    if (d.dtype == dtype) return d.name;
  detail::Throw("safetensors: no dtype for {}", DTypeName(dtype));
}

Tensor SafetensorsFile::Find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  return Tensor();
}

int64_t WriteSafetensors(std::ostream& out, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  Json header = Json::Object();
  Json meta = Json::Object();
  for (const auto& [k, v] : metadata) meta.Set(k, Json::String(v));
  int64_t offset = 0;
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__")
      detail::Throw("WriteSafetensors: invalid tensor name \"{}\"", name);
    if (std::find(names.begin(), names.end(), name) != names.end())
      detail::Throw("WriteSafetensors: tensor name \"{}\" repeated", name);
    names.push_back(name);
    if (!t.Ok()) detail::Throw("WriteSafetensors: tensor \"{}\" is not Ok", name);
    const int64_t bytes = t.shape().ByteSize();
    Json e = Json::Object();
    e.Set("dtype", Json::String(SafetensorsDType(t.dtype())));
    Json shape = Json::Array();
    if (IsPacked(t.dtype())) {
      shape.Push(Json::Int(bytes));
      Json real = Json::Array();
      for (int64_t d : t.shape().Dimensions()) real.Push(Json::Int(d));
      meta.Set("kiln.dtype." + name, Json::String(std::string(DTypeName(t.dtype()))));
      meta.Set("kiln.shape." + name, Json::String(real.Dump()));
    } else if (IsComplex(t.dtype())) {
      // Safetensors has no complex dtype: the parts as floats along a last axis of 2 (PyTorch's
      // view_as_real), and the dtype in the metadata for kiln to read them back as complex.
      for (int64_t d : t.shape().Dimensions()) shape.Push(Json::Int(d));
      shape.Push(Json::Int(2));
      meta.Set("kiln.dtype." + name, Json::String(std::string(DTypeName(t.dtype()))));
    } else {
      for (int64_t d : t.shape().Dimensions()) shape.Push(Json::Int(d));
    }
    e.Set("shape", std::move(shape));
    e.Set("data_offsets", Json::Array({Json::Int(offset), Json::Int(offset + bytes)}));
    header.Set(name, std::move(e));
    offset += bytes;
  }
  if (!meta.Members("metadata").empty()) header.Set("__metadata__", std::move(meta));
  std::string text = header.Dump();
  while (text.size() % 8 != 0) text += ' ';
  const uint64_t n = text.size();
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, t] : tensors) {
    t.ConstBytes([&](std::span<const uint8_t> b) {
      out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    });
  }
  return 8 + static_cast<int64_t>(n) + offset;
}

int64_t WriteSafetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  int64_t size = 0;
  try {
    WriteFileAtomically(path, [&](std::ostream& out) { size = WriteSafetensors(out, tensors, metadata); });
  } catch (const Error& e) {
    detail::Throw("{}: {}", path, e.message());
  }
  return size;
}

SafetensorsFile ReadSafetensors(const std::string& path) {
  int64_t size = 0;
  std::ifstream in = OpenForReading(path, "ReadSafetensors", &size);
  if (size < 8) detail::Throw("{}: truncated: {} bytes, not even the header size", path, size);
  uint8_t len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len[i]) << (8 * i);
  if (n > static_cast<uint64_t>(std::min<int64_t>(kMaxHeader, size - 8)))
    detail::Throw("{}: header size {} exceeds the file ({} bytes) or the 100 MiB limit", path, n, size);
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in) detail::Throw("{}: truncated header", path);
  Json header = Json::Parse(text, path + " header");
  const int64_t data_start = 8 + static_cast<int64_t>(n);
  const int64_t data_size = size - data_start;
  SafetensorsFile file;
  if (const Json* meta = header.Find("__metadata__")) {
    for (const auto& [k, v] : meta->Members(path + " __metadata__"))
      file.metadata[k] = v.AsString(path + " metadata " + k);
  }
  struct Range {
    int64_t begin, end;
    std::string name;
  };
  std::vector<Range> ranges;
  for (const auto& [name, e] : header.Members(path + " header")) {
    if (name == "__metadata__") continue;
    const std::string what = fmt::format("{}: tensor \"{}\"", path, name);
    const Json* dt = e.Find("dtype");
    const Json* sh = e.Find("shape");
    const Json* off = e.Find("data_offsets");
    if (dt == nullptr || sh == nullptr || off == nullptr)
      detail::Throw("{}: missing dtype, shape or data_offsets", what);
    DType dtype = FromName(dt->AsString(what + " dtype"), path, name);
    std::vector<int64_t> dims;
    int64_t count = 1;
    for (const Json& d : sh->AsArray(what + " shape")) {
      const int64_t v = d.AsInt(what + " shape");
      if (v < 0 || (v > 0 && count > (int64_t{1} << 50) / v))
        detail::Throw("{}: absurd dimension {}", what, v);
      count *= v;
      dims.push_back(v);
    }
    const std::vector<Json>& o = off->AsArray(what + " data_offsets");
    if (o.size() != 2) detail::Throw("{}: data_offsets must have two entries", what);
    const int64_t begin = o[0].AsInt(what + " data_offsets"), end = o[1].AsInt(what + " data_offsets");
    if (begin < 0 || end < begin || end > data_size)
      detail::Throw("{}: data_offsets [{}, {}] out of the data section ({} bytes)", what, begin, end,
                    data_size);
    const int64_t bytes = Shape(dtype, dims).ByteSize();
    if (bytes != end - begin)
      detail::Throw("{}: {} {} needs {} bytes, data_offsets give {}", what, DTypeName(dtype),
                    fmt::join(dims, "x"), bytes, end - begin);
    // Packed and complex dtypes come back from the metadata.
    auto kd = file.metadata.find("kiln.dtype." + name);
    Shape shape(dtype, dims);
    if (kd != file.metadata.end()) {
      DType real = DType::Invalid;
      for (DType d : kAllDTypes)
        if (DTypeName(d) == kd->second) real = d;
      if (IsComplex(real)) {
        if (dtype != ComplexPartDType(real) || dims.empty() || dims.back() != 2)
          detail::Throw("{}: kiln.dtype {} needs {} values with a last axis of 2, got {} {}", what,
                        kd->second, DTypeName(ComplexPartDType(real)), DTypeName(dtype),
                        fmt::join(dims, "x"));
        dims.pop_back();
        shape = Shape(real, dims);
      } else {
        auto ks = file.metadata.find("kiln.shape." + name);
        if (real == DType::Invalid || ks == file.metadata.end() || dtype != DType::Uint8)
          detail::Throw("{}: bad kiln.dtype/kiln.shape metadata", what);
        shape = Shape(real, ParseDims(ks->second, path, name));
        if (shape.ByteSize() != bytes)
          detail::Throw("{}: metadata shape {} does not fit {} bytes", what, shape, bytes);
      }
    }
    Tensor t = Tensor::FromShape(shape);
    in.seekg(data_start + begin);
    t.MutableBytes([&](std::span<uint8_t> b) {
      in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size()));
    });
    if (!in) detail::Throw("{}: truncated data", what);
    file.tensors.emplace_back(name, std::move(t));
    ranges.push_back({begin, end, name});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  int64_t covered = 0;
  for (const Range& r : ranges) {
    if (r.begin < covered)
      detail::Throw("{}: tensor \"{}\" overlaps the previous tensor's bytes", path, r.name);
    if (r.begin > covered)
      detail::Throw("{}: bytes [{}, {}) before tensor \"{}\" belong to no tensor", path, covered, r.begin,
                    r.name);
    covered = r.end;
  }
  if (covered != data_size)
    detail::Throw("{}: the data section has {} bytes, the tensors cover {}", path, data_size, covered);
  return file;
}

}  // namespace kiln::io
