#pragma once
// Small pattern-matching helpers the cpu compiler's rewriting passes share (epilogue.cc,
// row_norms.cc).

#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/ir.h"

namespace kiln::compute::cpu {

/// The value of `v` when it is a Float32 Constant of one element, possibly broadcast.
std::optional<float> SplatValue(const std::vector<Node>& nodes, int v);

/// Whether `bias`, broadcast by BroadcastInDim `axes` to `result`, holds one value per element of
/// result axis `axis` laid out contiguously: a vector along that axis, or (as imported models add
/// biases) the result's rank with every size 1 but that axis's. A size-1 bias broadcast along the
/// axis is a scalar, not one value per feature.
bool PerFeature(const Shape& bias, const std::vector<int64_t>& axes, const Shape& result, int64_t axis);

}  // namespace kiln::compute::cpu
