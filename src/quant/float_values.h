#pragma once
// The values of a float tensor (any float dtype) as float32, for the quantizers, GGUF's encoder
// and the HuggingFace checkpoint readers: kiln's half types convert exactly through DispatchDType.

#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::quant::float_values {

/// t's values in row-major order as float32 (Float64 rounded); t must have a float dtype.
inline std::vector<float> FloatValues(const Tensor& t) {
  return DispatchDType(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<float> out;
    out.reserve(static_cast<size_t>(t.Size()));
    for (T v : t.ToVector<T>()) out.push_back(static_cast<float>(v));
    return out;
  });
}

/// t (any float dtype, as float32) as a tensor of its dimensions.
inline Tensor Float32Of(const Tensor& t) {
  return t.dtype() == DType::Float32
             ? t
             : Tensor::FromFlat(Shape(DType::Float32, t.shape().Dimensions()), FloatValues(t));
}

/// The float matrix t [R, C] (any float dtype) as float32 [C, R].
inline Tensor TransposedF32(const Tensor& t) {
  const int64_t r = t.shape().Dim(0), c = t.shape().Dim(1);
  const std::vector<float> v = FloatValues(t);
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(j * r + i)] = v[static_cast<size_t>(i * c + j)];
  return Tensor::FromFlat(Shape(DType::Float32, {c, r}), out);
}

}  // namespace kiln::quant::float_values
