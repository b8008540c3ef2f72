// Constant folding for the cpu compiler's Simplify pass: an instruction whose operands are all
// constants is computed at compile time with the reference kernels and becomes a Constant,
// unless its result is over 64 KiB. Broadcasts of constants are never materialised: elementwise
// ops and data movement over splats (broadcasts of one element) fold to a splat of the folded
// scalar, and elementwise ops over broadcasts of larger constants move after the broadcast
// (simplify_algebra.cc) and fold at the constants' size.

#include <cstring>
#include <optional>
#include <span>

#include "backends/cpu/simplify_rules.h"
#include "backends/ref/ref_kernels.h"
#include "kiln/core/error.h"

namespace kiln::compute::cpu::simplify {

namespace {

/// Operands a single fold may materialise on the host (broadcasts of constants), in bytes.
constexpr int64_t kMaxScratchBytes = int64_t{1} << 20;
/// Contractions and convolutions fold only from operands this small (their work grows faster
/// than their result).
constexpr int64_t kMaxHeavyOperandBytes = int64_t{256} << 10;

/// Whether `inst` may ever be computed at compile time.
bool Foldable(const Instruction& inst) { return !Opaque(inst) && inst.shape.Ok() && !inst.shape.IsDynamic(); }

/// Data movement that turns a splat into a splat of another shape.
bool IsSplatMovement(OpType op) {
  return op == OpType::Reshape || op == OpType::Transpose || op == OpType::Slice || op == OpType::Reverse ||
         op == OpType::BroadcastInDim;
}

/// A copy of a host tensor's bytes.
std::vector<uint8_t> BytesOf(const Tensor& t) {
  std::vector<uint8_t> out;
  t.ConstBytes([&](std::span<const uint8_t> bytes) { out.assign(bytes.begin(), bytes.end()); });
  return out;
}

/// `inst` computed by the reference kernel on the operands' host bytes (of `shapes`); empty when
/// the reference has no kernel for it.
std::optional<Tensor> Evaluate(const Instruction& inst, const std::vector<Shape>& shapes,
                               const std::vector<std::vector<uint8_t>>& operands) {
  ref::Kernel kernel;
  try {
    kernel = ref::MakeKernel(inst, shapes);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!kernel) return std::nullopt;
  const int64_t bytes = inst.shape.ByteSize();
  std::vector<uint8_t> result(static_cast<size_t>(std::max<int64_t>(bytes, 1)), 0);
  std::vector<const uint8_t*> data;
  for (const std::vector<uint8_t>& o : operands) data.push_back(o.data());
  try {
    kernel(data, result.data());
  } catch (const Error&) {
    return std::nullopt;
  }
  return Tensor::FromBytes(inst.shape, std::span<const uint8_t>(result.data(), static_cast<size_t>(bytes)));
}

/// A Constant instruction holding `value`.
Instruction ConstantOf(Tensor value) {
  Instruction c = MakeInstruction(OpType::Constant, {}, value.shape());
  c.attrs.literal = std::move(value);
  return c;
}

/// The host bytes of constant-valued `id` (a Constant, or a BroadcastInDim of one, evaluated
/// here); empty when it is neither or would take more than `budget` bytes (which it reduces).
std::optional<std::vector<uint8_t>> ConstantBytes(const Builder& b, int id, int64_t& budget) {
  const Instruction& d = b.Def(id);
  if (d.op == OpType::Constant) return BytesOf(d.attrs.literal);
  if (d.op != OpType::BroadcastInDim) return std::nullopt;
  const Instruction& src = b.Def(d.operands[0]);
  if (src.op != OpType::Constant || d.shape.ByteSize() > budget) return std::nullopt;
  budget -= d.shape.ByteSize();
  std::optional<Tensor> t = Evaluate(d, {src.shape}, {BytesOf(src.attrs.literal)});
  if (!t) return std::nullopt;
  return BytesOf(*t);
}

/// Folds `inst` whose operands are all splats: to a splat of the op computed on the scalars.
Rewrite FoldSplats(Builder& b, const Instruction& inst) {
  if (IsSplatMovement(inst.op))
    return SplatTo(ScalarConstant(b, SplatSource(b, inst.operands[0])), inst.shape);
  Instruction scalar = inst;
  scalar.shape = Shape(inst.shape.dtype());
  std::vector<Shape> shapes;
  std::vector<std::vector<uint8_t>> bytes;
  for (int o : inst.operands) {
    const Instruction& src = b.Def(SplatSource(b, o));
    shapes.push_back(Shape(src.shape.dtype()));
    bytes.push_back(BytesOf(src.attrs.literal));
  }
  std::optional<Tensor> value = Evaluate(scalar, shapes, bytes);
  if (!value) return Rewrite::None();
  return SplatTo(b.Emit(ConstantOf(std::move(*value))), inst.shape);
}

}  // namespace

bool IsElementwise(OpType op) {
  switch (GetOpCategory(op)) {
    case OpCategory::Unary:
    case OpCategory::UnaryPredicate:
    case OpCategory::Binary:
    case OpCategory::Compare:
    case OpCategory::Select:
      return true;
    default:
      return op == OpType::ConvertDType;
  }
}

int SplatSource(const Builder& b, int id) {
  const Instruction& d = b.Def(id);
  if (d.op == OpType::BroadcastInDim) id = d.operands[0];
  const Instruction& c = b.Def(id);
  if (c.op != OpType::Constant || IsStorageOnly(c.shape.dtype()) || c.shape.Size() != 1) return -1;
  return id;
}

int ScalarConstant(Builder& b, int source) {
  const Instruction& c = b.Def(source);
  if (c.shape.IsScalar()) return source;
  const Shape scalar(c.shape.dtype());
  return b.Emit(ConstantOf(Tensor::FromBytes(scalar, BytesOf(c.attrs.literal))));
}

Rewrite SplatTo(int scalar, const Shape& shape) {
  if (shape.IsScalar()) return Rewrite::To(scalar);
  Instruction bc = MakeInstruction(OpType::BroadcastInDim, {scalar}, shape);
  bc.attrs.shape = shape;
  return Rewrite::With(std::move(bc));
}

Rewrite FoldConstants(Builder& b, const Instruction& inst) {
  if (!Foldable(inst)) return Rewrite::None();
  const int64_t bytes = inst.shape.ByteSize();
  if (inst.op == OpType::Iota) {
    if (bytes > kMaxFoldBytes) return Rewrite::None();
    std::optional<Tensor> value = Evaluate(inst, {}, {});
    return value ? Rewrite::With(ConstantOf(std::move(*value))) : Rewrite::None();
  }
  if (inst.operands.empty()) return Rewrite::None();
  bool all_constant = true, all_splat = true;
  int64_t operand_bytes = 0;
  for (int o : inst.operands) {
    all_constant = all_constant && b.Def(o).op == OpType::Constant;
    all_splat = all_splat && SplatSource(b, o) >= 0;
    operand_bytes += b.Def(o).shape.ByteSize();
  }
  if (inst.op == OpType::BroadcastInDim && all_constant) {
    const Instruction& src = b.Def(inst.operands[0]);
    if (src.shape.Size() == 1 && !IsStorageOnly(src.shape.dtype())) {
      // A splat stays symbolic; only its constant is made rank 0 (the form fusion reads).
      return src.shape.IsScalar() ? Rewrite::None()
                                  : SplatTo(ScalarConstant(b, inst.operands[0]), inst.shape);
    }
    // A broadcast that repeats values stays symbolic: the kernels that read it (fused loops,
    // a contraction's bias) take the small constant, not a copy the size of the result.
    if (bytes > src.shape.ByteSize()) return Rewrite::None();
  }
  // Splats of packed dtypes do not exist: no kernel broadcasts them.
  if (!all_constant && all_splat && !inst.shape.IsScalar() && !IsStorageOnly(inst.shape.dtype()) &&
      (IsElementwise(inst.op) || IsSplatMovement(inst.op))) {
    return FoldSplats(b, inst);
  }
  if (bytes > kMaxFoldBytes) return Rewrite::None();
  // Elementwise ops whose operands are all broadcasts (one at least of an array) fold after the
  // broadcast moves past them, at the arrays' size (SimplifyAlgebra); with a full-size constant
  // operand they fold here.
  if (IsElementwise(inst.op)) {
    bool array_broadcast = false, all_broadcasts = true;
    for (int o : inst.operands) {
      const bool splat = SplatSource(b, o) >= 0;
      array_broadcast = array_broadcast || (b.Def(o).op == OpType::BroadcastInDim && !splat);
      all_broadcasts = all_broadcasts && (splat || b.Def(o).op == OpType::BroadcastInDim);
    }
    if (array_broadcast && all_broadcasts) return Rewrite::None();
  }
  if ((inst.op == OpType::DotGeneral || inst.op == OpType::ConvGeneral) &&
      operand_bytes > kMaxHeavyOperandBytes)
    return Rewrite::None();
  std::vector<Shape> shapes;
  std::vector<std::vector<uint8_t>> data;
  int64_t budget = kMaxScratchBytes;
  for (int o : inst.operands) {
    std::optional<std::vector<uint8_t>> d = ConstantBytes(b, o, budget);
    if (!d) return Rewrite::None();
    shapes.push_back(b.Def(o).shape);
    data.push_back(std::move(*d));
  }
  std::optional<Tensor> value = Evaluate(inst, shapes, data);
  return value ? Rewrite::With(ConstantOf(std::move(*value))) : Rewrite::None();
}

}  // namespace kiln::compute::cpu::simplify
