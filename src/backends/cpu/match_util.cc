#include "backends/cpu/match_util.h"

#include <cstring>
#include <span>

namespace kiln::compute::cpu {

std::optional<float> SplatValue(const std::vector<Node>& nodes, int v) {
  const Instruction* inst = &nodes[static_cast<size_t>(v)].inst;
  if (inst->op == OpType::BroadcastInDim) inst = &nodes[static_cast<size_t>(inst->operands[0])].inst;
  if (inst->op != OpType::Constant || inst->shape.Size() != 1 || inst->shape.dtype() != DType::Float32)
    return std::nullopt;
  std::optional<float> value;
  inst->attrs.literal.ConstBytes([&](std::span<const uint8_t> b) {
    float x = 0;
    if (b.size() < sizeof(float)) return;
    std::memcpy(&x, b.data(), sizeof(float));
    value = x;
  });
  return value;
}

bool PerFeature(const Shape& bias, const std::vector<int64_t>& axes, const Shape& result, int64_t axis) {
  const int64_t features = result.Dimensions()[static_cast<size_t>(axis)];
  if (bias.Rank() == 1) return axes == std::vector<int64_t>{axis} && bias.Dimensions()[0] == features;
  if (bias.Rank() != result.Rank()) return false;
  for (int64_t a = 0; a < bias.Rank(); ++a) {
    if (axes[static_cast<size_t>(a)] != a) return false;
    if (bias.Dimensions()[static_cast<size_t>(a)] != (a == axis ? features : 1)) return false;
  }
  return true;
}

}  // namespace kiln::compute::cpu
