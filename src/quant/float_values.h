#pragma once
// The values of a float tensor (any float dtype) as float32, for the quantizers and GGUF's
// encoder: kiln's half types convert exactly through DispatchDType.

#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::quant::detail {

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

}  // namespace kiln::quant::detail
