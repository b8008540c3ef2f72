// GGUF reading and writing, and the mapping between GGUF tensors and quant::Quantized.

#include "kiln/io/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "quant/float_values.h"

namespace kiln::io {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr int kMaxDims = 4;                  // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;

using quant::GGMLTypeInfo;

const GGMLTypeInfo& TypeOf(nn::GGMLType type, const std::string& where) {
  const GGMLTypeInfo* t = quant::FindGGMLType(static_cast<int32_t>(type));
  if (t == nullptr) detail::Throw("{}: ggml tensor type {} is unknown", where, static_cast<int32_t>(type));
  return *t;
}

bool IsBlocked(const GGMLTypeInfo& t) { return t.block_values > 1; }

/// The dtype a tensor of type `t` holds its data in: its element dtype, or Uint8 for raw blocks.
DType DataDType(const GGMLTypeInfo& t) {
  switch (t.type) {
    case 0:
      return DType::Float32;
    case 1:
      return DType::Float16;
    case 24:
      return DType::Int8;
    case 25:
      return DType::Int16;
    case 26:
      return DType::Int32;
    case 27:
      return DType::Int64;
    case 28:
      return DType::Float64;
    case 30:
      return DType::BFloat16;
    default:
      return DType::Uint8;
  }
}

/// Bytes of one scalar of a metadata type (0 for String and Array).
int64_t ScalarBytes(GgufType t) {
  switch (t) {
    case GgufType::Uint8:
    case GgufType::Int8:
    case GgufType::Bool:
      return 1;
    case GgufType::Uint16:
    case GgufType::Int16:
      return 2;
    case GgufType::Uint32:
    case GgufType::Int32:
    case GgufType::Float32:
      return 4;
    case GgufType::Uint64:
    case GgufType::Int64:
    case GgufType::Float64:
      return 8;
    case GgufType::String:
    case GgufType::Array:
      return 0;
  }
  return -1;
}

bool IsUnsigned(GgufType t) {
  return t == GgufType::Uint8 || t == GgufType::Uint16 || t == GgufType::Uint32 || t == GgufType::Uint64;
}
bool IsFloatType(GgufType t) { return t == GgufType::Float32 || t == GgufType::Float64; }

/// Reads little-endian values from a file, never past its end.
class GgufReader {
 public:
  GgufReader(std::ifstream& in, int64_t size, std::string path)
      : in_(in), size_(size), path_(std::move(path)) {}

  int64_t pos() const { return pos_; }
  int64_t left() const { return size_ - pos_; }
  const std::string& path() const { return path_; }

  void Bytes(void* out, int64_t n, const char* what) {
    if (n < 0 || n > left())
      detail::Throw("{}: truncated at byte {} reading {} ({} bytes wanted, {} left)", path_, pos_, what, n,
                    left());
    in_.read(static_cast<char*>(out), n);
    if (!in_) detail::Throw("{}: read error at byte {} reading {}", path_, pos_, what);
    pos_ += n;
  }
  template <class T>
  T Get(const char* what) {
    T v;
    Bytes(&v, sizeof(T), what);
    return v;
  }
  /// A count that the rest of the file can hold at `min_bytes` per item.
  int64_t Count(const char* what, int64_t min_bytes) {
    const auto n = Get<uint64_t>(what);
    if (n > static_cast<uint64_t>(std::max<int64_t>(left(), 0) / std::max<int64_t>(min_bytes, 1)))
      detail::Throw("{}: {} {} at byte {} is more than the file's {} remaining bytes can hold", path_, what,
                    n, pos_ - 8, left());
    return static_cast<int64_t>(n);
  }
  std::string String(const char* what) {
    const int64_t n = Count(what, 1);
    std::string s(static_cast<size_t>(n), '\0');
    Bytes(s.data(), n, what);
    return s;
  }

 private:
  std::ifstream& in_;
  int64_t size_;
  int64_t pos_ = 0;
  std::string path_;
};

GgufType CheckType(uint32_t t, GgufReader& r, const std::string& key) {
  if (t > static_cast<uint32_t>(GgufType::Float64))
    detail::Throw("{}: metadata \"{}\" has an unknown value type {} (byte {})", r.path(), key, t,
                  r.pos() - 4);
  return static_cast<GgufType>(t);
}

GgufValue ReadScalar(GgufReader& r, GgufType t, const std::string& key) {
  switch (t) {
    case GgufType::Uint8:
      return GgufValue::Scalar(t, r.Get<uint8_t>(key.c_str()));
    case GgufType::Int8:
      return GgufValue::Scalar(t, r.Get<int8_t>(key.c_str()));
    case GgufType::Uint16:
      return GgufValue::Scalar(t, r.Get<uint16_t>(key.c_str()));
    case GgufType::Int16:
      return GgufValue::Scalar(t, r.Get<int16_t>(key.c_str()));
    case GgufType::Uint32:
      return GgufValue::Scalar(t, r.Get<uint32_t>(key.c_str()));
    case GgufType::Int32:
      return GgufValue::Scalar(t, r.Get<int32_t>(key.c_str()));
    case GgufType::Float32:
      return GgufValue::Scalar(t, r.Get<float>(key.c_str()));
    case GgufType::Bool: {
      const auto b = r.Get<uint8_t>(key.c_str());
      if (b > 1)
        detail::Throw("{}: metadata \"{}\" has a Bool of value {} (byte {})", r.path(), key, b, r.pos() - 1);
      return GgufValue::Bool(b != 0);
    }
    case GgufType::Uint64:
      return GgufValue::Uint64(r.Get<uint64_t>(key.c_str()));
    case GgufType::Int64:
      return GgufValue::Int64(r.Get<int64_t>(key.c_str()));
    case GgufType::Float64:
      return GgufValue::Scalar(t, r.Get<double>(key.c_str()));
    case GgufType::String:
      return GgufValue::String(r.String(key.c_str()));
    case GgufType::Array:
      break;
  }
  detail::Throw("{}: metadata \"{}\": bad scalar type", r.path(), key);
}

GgufValue ReadValue(GgufReader& r, GgufType t, const std::string& key, int depth) {
  if (t != GgufType::Array) return ReadScalar(r, t, key);
  if (depth >= kMaxArrayDepth)
    detail::Throw("{}: metadata \"{}\" nests arrays deeper than {}", r.path(), key, kMaxArrayDepth);
  const GgufType element = CheckType(r.Get<uint32_t>(key.c_str()), r, key);
  const int64_t min_bytes =
      element == GgufType::String || element == GgufType::Array ? 8 : ScalarBytes(element);
  const int64_t n = r.Count(key.c_str(), min_bytes);
  std::vector<GgufValue> items;
  items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) items.push_back(ReadValue(r, element, key, depth + 1));
  return GgufValue::Array(element, std::move(items));
}

// ---- writing ----------------------------------------------------------------------------------

/// Writes to a stream, counting the bytes.
struct Sink {
  std::ostream& out;
  int64_t n = 0;
  void Write(const void* p, int64_t size) {
    out.write(static_cast<const char*>(p), static_cast<std::streamsize>(size));
    n += size;
  }
};

template <class T>
void Put(Sink& out, T v) {
  out.Write(&v, sizeof(T));
}

void PutString(Sink& out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  out.Write(s.data(), static_cast<int64_t>(s.size()));
}

void PutValue(Sink& out, const GgufValue& v) {
  switch (v.type()) {
    case GgufType::Uint8:
      return Put(out, static_cast<uint8_t>(v.AsInt()));
    case GgufType::Int8:
      return Put(out, static_cast<int8_t>(v.AsInt()));
    case GgufType::Uint16:
      return Put(out, static_cast<uint16_t>(v.AsInt()));
    case GgufType::Int16:
      return Put(out, static_cast<int16_t>(v.AsInt()));
    case GgufType::Uint32:
      return Put(out, static_cast<uint32_t>(v.AsInt()));
    case GgufType::Int32:
      return Put(out, static_cast<int32_t>(v.AsInt()));
    case GgufType::Float32:
      return Put(out, static_cast<float>(v.AsDouble()));
    case GgufType::Bool:
      return Put(out, static_cast<uint8_t>(v.AsInt() != 0));
    case GgufType::Uint64:
      return Put(out, static_cast<uint64_t>(v.AsInt()));
    case GgufType::Int64:
      return Put(out, static_cast<int64_t>(v.AsInt()));
    case GgufType::Float64:
      return Put(out, v.AsDouble());
    case GgufType::String:
      return PutString(out, v.AsString());
    case GgufType::Array:
      Put(out, static_cast<uint32_t>(v.element_type()));
      Put<uint64_t>(out, v.AsArray().size());
      for (const GgufValue& e : v.AsArray()) PutValue(out, e);
      return;
  }
}

int64_t AlignUp(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

/// The Shape a tensor of ggml type `t` and logical dims holds its data in.
Shape DataShape(const GGMLTypeInfo& t, const std::vector<int64_t>& dims) {
  if (!IsBlocked(t)) return Shape(DataDType(t), dims);
  std::vector<int64_t> d = dims;
  d.back() = d.back() / t.block_values * t.block_bytes;
  return Shape(DType::Uint8, d);
}

void CheckTensor(const GgufTensor& t, const std::string& where) {
  const GGMLTypeInfo& ts = TypeOf(t.type, where + " tensor \"" + t.name + "\"");
  if (t.dims.empty() || static_cast<int>(t.dims.size()) > kMaxDims)
    detail::Throw("{}: tensor \"{}\" has {} dimensions; GGUF holds 1 to {}", where, t.name, t.dims.size(),
                  kMaxDims);
  for (int64_t d : t.dims)
    if (d < 0) detail::Throw("{}: tensor \"{}\" has a negative dimension", where, t.name);
  if (t.dims.back() % ts.block_values != 0)
    detail::Throw("{}: tensor \"{}\" of type {} needs its last dimension ({}) a multiple of {}", where,
                  t.name, ts.name, t.dims.back(), ts.block_values);
  const Shape want = DataShape(ts, t.dims);
  if (!t.data.Ok() || t.data.shape() != want)
    detail::Throw("{}: tensor \"{}\" of type {} and dims [{}] needs data {}, got {}", where, t.name, ts.name,
                  fmt::join(t.dims, ", "), want, t.data.Ok() ? t.data.shape().ToString() : "none");
}

}  // namespace

// ---- GgufValue --------------------------------------------------------------------------------

GgufValue GgufValue::Scalar(GgufType type, double v) {
  GgufValue out;
  out.type_ = type;
  if (type == GgufType::String || type == GgufType::Array)
    detail::Throw("GgufValue::Scalar: {} is not a scalar type", static_cast<uint32_t>(type));
  if (IsFloatType(type)) {
    out.value_ = v;
  } else if (IsUnsigned(type)) {
    out.value_ = static_cast<uint64_t>(v);
  } else {
    out.value_ = static_cast<int64_t>(v);
  }
  return out;
}

GgufValue GgufValue::Uint64(uint64_t v) {
  GgufValue out;
  out.type_ = GgufType::Uint64;
  out.value_ = v;
  return out;
}

GgufValue GgufValue::Int64(int64_t v) {
  GgufValue out;
  out.type_ = GgufType::Int64;
  out.value_ = v;
  return out;
}

GgufValue GgufValue::String(std::string s) {
  GgufValue out;
  out.type_ = GgufType::String;
  out.value_ = std::move(s);
  return out;
}

GgufValue GgufValue::Array(GgufType element_type, std::vector<GgufValue> elements) {
  for (const GgufValue& e : elements) {
    if (e.type_ != element_type)
      detail::Throw("GgufValue::Array: an element of type {} in an array of type {}",
                    static_cast<uint32_t>(e.type_), static_cast<uint32_t>(element_type));
  }
  GgufValue out;
  out.type_ = GgufType::Array;
  out.element_type_ = element_type;
  out.value_ = std::move(elements);
  return out;
}

int64_t GgufValue::AsInt() const {
  if (const auto* i = std::get_if<int64_t>(&value_)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&value_)) return static_cast<int64_t>(*u);
  detail::Throw("GgufValue: a value of type {} is not an integer", static_cast<uint32_t>(type_));
}

double GgufValue::AsDouble() const {
  if (const auto* d = std::get_if<double>(&value_)) return *d;
  if (const auto* i = std::get_if<int64_t>(&value_)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<uint64_t>(&value_)) return static_cast<double>(*u);
  detail::Throw("GgufValue: a value of type {} is not a number", static_cast<uint32_t>(type_));
}

const std::string& GgufValue::AsString() const {
  if (const auto* s = std::get_if<std::string>(&value_)) return *s;
  detail::Throw("GgufValue: a value of type {} is not a string", static_cast<uint32_t>(type_));
}

const std::vector<GgufValue>& GgufValue::AsArray() const {
  if (const auto* a = std::get_if<std::vector<GgufValue>>(&value_)) return *a;
  detail::Throw("GgufValue: a value of type {} is not an array", static_cast<uint32_t>(type_));
}

bool operator==(const GgufValue& a, const GgufValue& b) {
  return a.type_ == b.type_ && a.element_type_ == b.element_type_ && a.value_ == b.value_;
}

// ---- GgufFile ---------------------------------------------------------------------------------

const GgufValue* GgufFile::Find(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensor* GgufFile::FindTensor(const std::string& name) const {
  for (const GgufTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

int64_t GgufFile::Alignment() const {
  const GgufValue* a = Find("general.alignment");
  return a == nullptr ? 32 : a->AsInt();
}

GgufFile ReadGguf(const std::string& path) {
  int64_t size = 0;
  std::ifstream in = OpenForReading(path, "ReadGguf", &size);
  GgufReader r(in, size, path);
  if (size < 24) detail::Throw("{}: {} bytes is too short for a GGUF header", path, size);
  if (r.Get<uint32_t>("the magic") != kGgufMagic)
    detail::Throw("{}: not a GGUF file (the first bytes are not \"GGUF\")", path);
  GgufFile file;
  file.version = r.Get<uint32_t>("the version");
  if (file.version != 2 && file.version != 3)
    detail::Throw("{}: GGUF version {} is not supported (2 and 3 are)", path, file.version);
  const int64_t n_tensors = r.Count("the tensor count", 8 + 4 + 4 + 8);
  const int64_t n_kv = r.Count("the metadata count", 8 + 4);
  for (int64_t i = 0; i < n_kv; ++i) {
    std::string key = r.String("a metadata key");
    const GgufType t = CheckType(r.Get<uint32_t>(key.c_str()), r, key);
    file.metadata.emplace_back(key, ReadValue(r, t, key, 0));
  }
  const GgufValue* align = file.Find("general.alignment");
  if (align != nullptr) {
    if (align->type() == GgufType::String || align->type() == GgufType::Array || IsFloatType(align->type()))
      detail::Throw("{}: general.alignment is not an integer", path);
    const int64_t a = align->AsInt();
    if (a <= 0 || (a & (a - 1)) != 0 || a > (1 << 20))
      detail::Throw("{}: general.alignment {} is not a power of two up to 1 MiB", path, a);
  }
  const int64_t alignment = file.Alignment();
  struct Info {
    int64_t offset;
  };
  std::vector<Info> infos;
  for (int64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = r.String("a tensor name");
    const auto n_dims = r.Get<uint32_t>(t.name.c_str());
    if (n_dims == 0 || n_dims > kMaxDims)
      detail::Throw("{}: tensor \"{}\" has {} dimensions; GGUF holds 1 to {}", path, t.name, n_dims,
                    kMaxDims);
    std::vector<int64_t> ne(n_dims);
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto v = r.Get<uint64_t>(t.name.c_str());
      if (v > static_cast<uint64_t>(size) * 8 || (v != 0 && elements > size * 8 / static_cast<int64_t>(v)))
        detail::Throw("{}: tensor \"{}\" dimension {} ({}) is larger than the file can hold", path, t.name, d,
                      v);
      ne[d] = static_cast<int64_t>(v);
      elements *= ne[d];
    }
    t.dims.assign(ne.rbegin(), ne.rend());
    const auto type = r.Get<int32_t>(t.name.c_str());
    const GGMLTypeInfo* ts = quant::FindGGMLType(type);
    if (ts == nullptr)
      detail::Throw("{}: tensor \"{}\" has ggml type {}, which kiln does not know", path, t.name, type);
    t.type = static_cast<nn::GGMLType>(type);
    if (ne[0] % ts->block_values != 0)
      detail::Throw("{}: tensor \"{}\" of type {} has a row of {} values, not whole blocks of {}", path,
                    t.name, ts->name, ne[0], ts->block_values);
    const auto offset = r.Get<uint64_t>(t.name.c_str());
    if (offset > static_cast<uint64_t>(size) || offset % static_cast<uint64_t>(alignment) != 0)
      detail::Throw("{}: tensor \"{}\" has offset {}, beyond the file or not a multiple of the alignment {}",
                    path, t.name, offset, alignment);
    for (const GgufTensor& prev : file.tensors)
      if (prev.name == t.name) detail::Throw("{}: tensor \"{}\" appears twice", path, t.name);
    infos.push_back({static_cast<int64_t>(offset)});
    file.tensors.push_back(std::move(t));
  }
  const int64_t data_start = AlignUp(r.pos(), alignment);
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    GgufTensor& t = file.tensors[i];
    const GGMLTypeInfo& ts = *quant::FindGGMLType(static_cast<int32_t>(t.type));
    const Shape shape = DataShape(ts, t.dims);
    const int64_t bytes = shape.ByteSize();
    const int64_t at = data_start + infos[i].offset;
    if (at > size || bytes > size - at)
      detail::Throw(
          "{}: tensor \"{}\" ({} bytes at byte {}) runs past the end of the file ({} bytes): truncated?",
          path, t.name, bytes, at, size);
    // Straight into the tensor's memory (no second copy of a large weight).
    t.data = Tensor::FromShape(shape);
    in.seekg(at);
    t.data.MutableBytes([&](std::span<uint8_t> b) { in.read(reinterpret_cast<char*>(b.data()), bytes); });
    if (!in) detail::Throw("{}: read error in tensor \"{}\"", path, t.name);
  }
  return file;
}

int64_t WriteGguf(const std::string& path, const GgufFile& file) {
  const int64_t alignment = file.Alignment();
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    detail::Throw("WriteGguf {}: general.alignment {} is not a power of two", path, alignment);
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    CheckTensor(file.tensors[i], "WriteGguf " + path);
    for (size_t j = 0; j < i; ++j)
      if (file.tensors[j].name == file.tensors[i].name)
        detail::Throw("WriteGguf {}: tensor \"{}\" appears twice", path, file.tensors[i].name);
  }
  int64_t written = 0;
  WriteFileAtomically(path, [&](std::ostream& stream) {
    Sink out{stream};
    Put(out, kGgufMagic);
    Put<uint32_t>(out, 3);
    Put<uint64_t>(out, file.tensors.size());
    Put<uint64_t>(out, file.metadata.size());
    for (const auto& [key, value] : file.metadata) {
      PutString(out, key);
      Put(out, static_cast<uint32_t>(value.type()));
      PutValue(out, value);
    }
    int64_t offset = 0;
    for (const GgufTensor& t : file.tensors) {
      PutString(out, t.name);
      Put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
      for (auto d = t.dims.rbegin(); d != t.dims.rend(); ++d) Put<uint64_t>(out, static_cast<uint64_t>(*d));
      Put<int32_t>(out, static_cast<int32_t>(t.type));
      Put<uint64_t>(out, static_cast<uint64_t>(offset));
      offset = AlignUp(offset + t.data.shape().ByteSize(), alignment);
    }
    auto pad = [&] {
      const std::vector<char> zeros(static_cast<size_t>(AlignUp(out.n, alignment) - out.n), 0);
      out.Write(zeros.data(), static_cast<int64_t>(zeros.size()));
    };
    pad();
    for (const GgufTensor& t : file.tensors) {
      t.data.ConstBytes(
          [&](std::span<const uint8_t> b) { out.Write(b.data(), static_cast<int64_t>(b.size())); });
      pad();
    }
    written = out.n;
  });
  return written;
}

GgufTensor ToGgufTensor(const std::string& name, const Tensor& value, nn::GGMLType type) {
  const std::string where = "ToGgufTensor \"" + name + "\"";
  const GGMLTypeInfo& ts = TypeOf(type, where);
  if (!value.Ok() || !IsFloat(value.dtype()) || value.rank() < 1 || value.rank() > kMaxDims)
    detail::Throw("{}: want a float tensor of 1 to {} dimensions", where, kMaxDims);
  GgufTensor t;
  t.name = name;
  t.type = type;
  t.dims = value.shape().Dimensions();
  if (t.dims.back() % ts.block_values != 0)
    detail::Throw("{}: type {} needs the last dimension ({}) a multiple of {}", where, ts.name, t.dims.back(),
                  ts.block_values);
  const std::vector<float> v = quant::float_values::FloatValues(value);
  const Shape shape = DataShape(ts, t.dims);
  std::vector<uint8_t> bytes(static_cast<size_t>(shape.ByteSize()));
  if (type == nn::GGMLType::F64) {
    for (size_t i = 0; i < v.size(); ++i) {
      const double d = v[i];
      std::memcpy(bytes.data() + 8 * i, &d, 8);
    }
  } else if (DataDType(ts) == DType::Uint8 || type == nn::GGMLType::F32 || type == nn::GGMLType::F16 ||
             type == nn::GGMLType::BF16) {
    quant::EncodeGGML(type, v.data(), static_cast<int64_t>(v.size()), bytes.data());
  } else {
    detail::Throw("{}: type {} is not a float or quantized type", where, ts.name);
  }
  t.data = Tensor::FromBytes(shape, bytes);
  return t;
}

quant::Quantized ToQuantized(const GgufTensor& tensor) {
  const std::string where = "ToQuantized \"" + tensor.name + "\"";
  CheckTensor(tensor, where);
  if (tensor.dims.size() != 2)
    detail::Throw("{}: want a 2-D weight matrix, got dims [{}]", where, fmt::join(tensor.dims, ", "));
  quant::Quantized q;
  q.scheme = quant::SchemeOf(tensor.type);  // kiln::Error for types kiln does not decode.
  q.dims = {tensor.dims[1], tensor.dims[0]};
  q.weights = tensor.data;
  q.block_axis = 0;
  q.block_size = quant::GGMLBlockValues(tensor.type);
  return q;
}

GgufTensor FromQuantized(const std::string& name, const quant::Quantized& q) {
  quant::Validate(q);
  if (!quant::IsGGML(q.scheme))
    detail::Throw("FromQuantized \"{}\": scheme {} has no GGUF type (the ggml block schemes do)", name,
                  quant::SchemeName(q.scheme));
  GgufTensor t;
  t.name = name;
  t.type = quant::GGMLTypeOf(q.scheme);
  t.dims = {q.dims[1], q.dims[0]};
  t.data = q.weights;
  return t;
}

Tensor DequantizeGguf(const GgufTensor& tensor) {
  const std::string where = "DequantizeGguf \"" + tensor.name + "\"";
  CheckTensor(tensor, where);
  const GGMLTypeInfo& ts = TypeOf(tensor.type, where);
  int64_t n = 1;
  for (int64_t d : tensor.dims) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  if (tensor.type == nn::GGMLType::F64) {
    const std::vector<double> d = tensor.data.ToVector<double>();
    out.assign(d.begin(), d.end());
  } else if (ts.decodable) {
    tensor.data.ConstBytes(
        [&](std::span<const uint8_t> b) { quant::DecodeGGML(tensor.type, b.data(), n, out.data()); });
  } else {
    detail::Throw("{}: kiln does not decode ggml type {}", where, ts.name);
  }
  return Tensor::FromFlat(Shape(DType::Float32, tensor.dims), out);
}

}  // namespace kiln::io
