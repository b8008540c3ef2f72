// TensorProto <-> Tensor, dtypes and ValueInfo shapes.

#include <fmt/format.h>

#include <complex>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/check.h"
#include "core/checked.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "kiln/onnx/onnx.h"
#include "onnx/proto.h"

namespace kiln::onnx {

namespace internal {

namespace {

using P = ::onnx::TensorProto;

struct TypeName {
  int onnx;
  DType dtype;
};
// TensorProto.DataType: 17 and 19 are FLOAT8E4M3FN and FLOAT8E5M2 (onnx 1.14's numbering).
constexpr TypeName kTypes[] = {
    {P::FLOAT, DType::Float32},       {P::UINT8, DType::Uint8},
    {P::INT8, DType::Int8},           {P::UINT16, DType::Uint16},
    {P::INT16, DType::Int16},         {P::INT32, DType::Int32},
    {P::INT64, DType::Int64},         {P::BOOL, DType::Bool},
    {P::FLOAT16, DType::Float16},     {P::DOUBLE, DType::Float64},
    {P::UINT32, DType::Uint32},       {P::UINT64, DType::Uint64},
    {P::COMPLEX64, DType::Complex64}, {P::COMPLEX128, DType::Complex128},
    {P::BFLOAT16, DType::BFloat16},   {17, DType::Float8E4M3FN},
    {19, DType::Float8E5M2},
};

/// Copies `values` (one per element, of the typed field's C++ type) into t's storage as T.
template <typename T, typename Field>
void FillFrom(Tensor& t, const Field& values) {
  t.MutableBytes([&](std::span<uint8_t> bytes) {
    T* out = reinterpret_cast<T*>(bytes.data());
    for (int i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values.Get(i));
  });
}

/// The elements held by the typed field of `proto` for its dtype (how many, or -1: none there).
int64_t TypedCount(const P& proto, DType d) {
  switch (d) {
    case DType::Float32:
      return proto.float_data_size();
    case DType::Complex64:  // Two floats per number: an odd count holds no whole tensor.
      return proto.float_data_size() % 2 == 0 ? proto.float_data_size() / 2 : -1;
    case DType::Float64:
      return proto.double_data_size();
    case DType::Complex128:
      return proto.double_data_size() % 2 == 0 ? proto.double_data_size() / 2 : -1;
    case DType::Int64:
      return proto.int64_data_size();
    case DType::Uint32:
    case DType::Uint64:
      return proto.uint64_data_size();
    default:
      return proto.int32_data_size();
  }
}

/// The external data of `proto`: the bytes at `offset` (length `length`) of file `location`
/// beside the model.
std::string ExternalBytes(const P& proto, const std::string& dir, int64_t want, const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = detail::ParseInt64(kv.value(), where + " external data offset");
    if (kv.key() == "length") length = detail::ParseInt64(kv.value(), where + " external data length");
  }
  if (location.empty()) detail::Throw("{}: external data without a location", where);
  if (dir.empty())
    detail::Throw("{}: external data in \"{}\", but the model was not read from a file", where, location);
  const std::filesystem::path rel(location);
  if (rel.is_absolute() || location.find("..") != std::string::npos)
    detail::Throw("{}: external data location \"{}\" must be a relative path inside the model's folder",
                  where, location);
  if (length < 0) length = want;
  if (length != want || offset < 0)
    detail::Throw("{}: external data of {} bytes at offset {}, but the tensor needs {} bytes", where, length,
                  offset, want);
  const std::string path = (std::filesystem::path(dir) / rel).string();
  int64_t size = 0;
  std::ifstream in = io::OpenForReading(path, where + " external data", &size);
  if (offset > size || size - offset < length)
    detail::Throw("{}: external data file {} has {} bytes, too few for {} at offset {}", where, path, size,
                  length, offset);
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), static_cast<std::streamsize>(length));
  if (!in) detail::Throw("{}: cannot read the external data from {}", where, path);
  return bytes;
}

}  // namespace

DType DTypeFromOnnx(int onnx_type, const std::string& where) {
  for (const TypeName& t : kTypes)
    if (t.onnx == onnx_type) return t.dtype;
  if (onnx_type == P::STRING) detail::Throw("{}: string tensors are not supported", where);
  detail::Throw("{}: ONNX data type {} is not supported", where, onnx_type);
}

int OnnxFromDType(DType dtype) {
  for (const TypeName& t : kTypes)
    if (t.dtype == dtype) return t.onnx;
  detail::Throw("ONNX has no data type for {}", dtype);
}

Tensor TensorFromProto(const P& proto, const std::string& dir, const std::string& where) {
  const DType dtype = DTypeFromOnnx(proto.data_type(), where);
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) detail::Throw("{}: negative dimension {}", where, d);
    count = detail::CheckedMul(count, d, where);
    dims.push_back(d);
  }
  const Shape shape(dtype, dims);
  const int64_t bytes = DTypeByteSize(dtype, count);
  detail::CheckAllocationSize(bytes, where);
  if (proto.data_location() == P::EXTERNAL) {
    const std::string data = ExternalBytes(proto, dir, bytes, where);
    return Tensor::FromBytes(
        shape, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  }
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (static_cast<int64_t>(raw.size()) != bytes)
      detail::Throw("{}: raw_data has {} bytes, but {} needs {}", where, raw.size(), shape, bytes);
    Tensor t = Tensor::FromBytes(
        shape, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()));
    if (dtype == DType::Bool)
      t.MutableBytes([](std::span<uint8_t> b) {
        for (uint8_t& x : b) x = x != 0;
      });
    return t;
  }
  const int64_t have = TypedCount(proto, dtype);
  if (have != count) detail::Throw("{}: holds {} values, but {} has {}", where, have, shape, count);
  Tensor t = Tensor::FromShape(shape);
  switch (dtype) {
    case DType::Float32:
      FillFrom<float>(t, proto.float_data());
      break;
    case DType::Complex64:
      FillFrom<float>(t, proto.float_data());  // Real and imaginary parts interleaved.
      break;
    case DType::Float64:
    case DType::Complex128:
      FillFrom<double>(t, proto.double_data());
      break;
    case DType::Int64:
      FillFrom<int64_t>(t, proto.int64_data());
      break;
    case DType::Uint32:
      FillFrom<uint32_t>(t, proto.uint64_data());
      break;
    case DType::Uint64:
      FillFrom<uint64_t>(t, proto.uint64_data());
      break;
    case DType::Int32:
      FillFrom<int32_t>(t, proto.int32_data());
      break;
    case DType::Int16:
      FillFrom<int16_t>(t, proto.int32_data());
      break;
    case DType::Int8:
      FillFrom<int8_t>(t, proto.int32_data());
      break;
    case DType::Uint16:
    case DType::Float16:
    case DType::BFloat16:  // The 16 bits of each value.
      FillFrom<uint16_t>(t, proto.int32_data());
      break;
    case DType::Uint8:
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
      FillFrom<uint8_t>(t, proto.int32_data());
      break;
    case DType::Bool:
      t.MutableBytes([&](std::span<uint8_t> b) {
        for (int i = 0; i < proto.int32_data_size(); ++i)
          b[static_cast<size_t>(i)] = proto.int32_data(i) != 0;
      });
      break;
    default:
      detail::Throw("{}: {} values in typed fields are not supported", where, dtype);
  }
  return t;
}

P TensorToProto(const Tensor& tensor, const std::string& name) {
  P proto;
  proto.set_name(name);
  proto.set_data_type(OnnxFromDType(tensor.dtype()));
  for (int64_t d : tensor.shape().Dimensions()) proto.add_dims(d);
  tensor.ConstBytes([&](std::span<const uint8_t> b) {
    proto.set_raw_data(std::string(reinterpret_cast<const char*>(b.data()), b.size()));
  });
  return proto;
}

Shape ShapeFromValueInfo(const ::onnx::ValueInfoProto& info, const std::string& where) {
  if (!info.has_type() || !info.type().has_tensor_type())
    detail::Throw("{}: value \"{}\" is not a tensor (sequences, maps and optionals are not supported)", where,
                  info.name());
  const auto& tt = info.type().tensor_type();
  const DType dtype = DTypeFromOnnx(tt.elem_type(), fmt::format("{} value \"{}\"", where, info.name()));
  if (!tt.has_shape())
    detail::Throw("{}: value \"{}\" has no shape (its rank must be known)", where, info.name());
  std::vector<int64_t> dims;
  std::vector<std::string> names;
  bool dynamic = false;
  for (int a = 0; a < tt.shape().dim_size(); ++a) {
    const auto& d = tt.shape().dim(a);
    if (d.has_dim_value() && d.dim_value() >= 0) {
      dims.push_back(d.dim_value());
      names.emplace_back();
    } else {
      dynamic = true;
      dims.push_back(Shape::kDynamic);
      names.push_back(d.has_dim_param() && !d.dim_param().empty() ? d.dim_param()
                                                                  : fmt::format("{}.{}", info.name(), a));
    }
  }
  return dynamic ? Shape::MakeDynamic(dtype, dims, names) : Shape(dtype, dims);
}

}  // namespace internal

Tensor ReadTensorProto(const std::string& path) {
  const std::string bytes = io::ReadWholeFile(path, "onnx::ReadTensorProto");
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes))
    detail::Throw("onnx::ReadTensorProto: {} is not a serialized TensorProto", path);
  return internal::TensorFromProto(proto, std::filesystem::path(path).parent_path().string(),
                                   fmt::format("onnx::ReadTensorProto: {}", path));
}

void WriteTensorProto(const std::string& path, const Tensor& tensor, const std::string& name) {
  if (!tensor.Ok()) detail::Throw("onnx::WriteTensorProto: {}: the tensor has no data", path);
  internal::WriteMessage(internal::TensorToProto(tensor, name), path, "onnx::WriteTensorProto");
}

namespace internal {

void WriteMessage(const google::protobuf::MessageLite& message, const std::string& path,
                  const std::string& who) {
  if (message.ByteSizeLong() > static_cast<size_t>(std::numeric_limits<int>::max()))
    detail::Throw("{}: {}: over protobuf's 2 GiB limit", who, path);
  const std::string bytes = message.SerializeAsString();
  io::WriteFileAtomically(
      path, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

}  // namespace internal

}  // namespace kiln::onnx
