#pragma once
// The ONNX protobuf schema (Debian's libonnx, onnx-ml.proto) and the conversions between its
// messages and kiln's values, shared by the reader, the graph builder and the writer.

#include <onnx/onnx_pb.h>  // onnx-ml.pb.h with ONNX_API defined

#include <string>

#include "kiln/core/dtype.h"
#include "kiln/core/shape.h"
#include "kiln/core/tensor.h"

namespace kiln::onnx::internal {

/// kiln's dtype of an ONNX TensorProto.DataType (kiln::Error, naming `where`, for strings and
/// types kiln lacks).
DType DTypeFromOnnx(int onnx_type, const std::string& where);
/// The ONNX TensorProto.DataType of a kiln dtype (kiln::Error for packed ones).
int OnnxFromDType(DType dtype);

/// The tensor a TensorProto holds (raw_data, the typed fields, or external data read from files
/// under `dir`); `where` names it in errors. Sizes are checked before anything is allocated.
Tensor TensorFromProto(const ::onnx::TensorProto& proto, const std::string& dir, const std::string& where);
/// `tensor` as a TensorProto named `name` (raw_data).
::onnx::TensorProto TensorToProto(const Tensor& tensor, const std::string& name);
/// Writes a protobuf message (a model or a tensor) to `path` atomically; kiln::Error naming `who`
/// and the path when it is over protobuf's 2 GiB limit (a file nothing could read back).
void WriteMessage(const google::protobuf::MessageLite& message, const std::string& path,
                  const std::string& who);

/// The shape of a ValueInfoProto's tensor type: symbolic dimensions become dynamic axes of that
/// name, missing ones dynamic axes named "<value>.<axis>". kiln::Error for non-tensor types.
Shape ShapeFromValueInfo(const ::onnx::ValueInfoProto& info, const std::string& where);

}  // namespace kiln::onnx::internal
