// The fused register machine's ops from fused_ops.def: which graph op each computes, and the
// scalar pass over a piece (the `simd=scalar` path).

#include "backends/cpu/fused_ops.h"

#include "core/check.h"

namespace kiln::compute::cpu {

namespace {

/// The graph op columns of fused_ops.def: an OpType, or None.
namespace columns {
using enum OpType;
inline constexpr std::optional<OpType> None = std::nullopt;
}  // namespace columns

/// y[i] = op(a[i], b[i], c[i]) with the op's scalar form; unused operands are not read.
template <FOp kOp, int kArity>
void Each(const float* a, const float* b, const float* c, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float x = a[i];
    const float y = kArity >= 2 ? b[i] : 0.0f;
    const float z = kArity >= 3 ? c[i] : 0.0f;
    out[i] = ScalarOp<kOp>(x, y, z);
  }
}

}  // namespace

std::optional<FOp> FusedOpOf(OpType op, bool bool_operands) {
  using namespace columns;
#define KILN_FUSED_OP(Name, Arity, FloatOp, BoolOp, ...) \
  if (std::optional<OpType> from = bool_operands ? BoolOp : FloatOp; from == op) return FOp::k##Name;
#include "backends/cpu/fused_ops.def"
  return std::nullopt;
}

void RunFusedOpScalar(FOp op, const float* a, const float* b, const float* c, float* out, size_t n) {
  switch (op) {
#define KILN_FUSED_OP(Name, Arity, ...) \
  case FOp::k##Name:                    \
    return Each<FOp::k##Name, Arity>(a, b, c, out, n);
#include "backends/cpu/fused_ops.def"
    case FOp::kInput:
    case FOp::kImm:
      break;
  }
  detail::Throw("fused kernel: {} is not a compute op", FOpName(op));
}

}  // namespace kiln::compute::cpu
