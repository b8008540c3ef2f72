// Algebraic simplification for the cpu compiler's Simplify pass: identities exact for every
// value, IEEE signed zeros and NaN included (x+0 is not x for x = -0.0, so only x+(-0.0) folds
// for floats), and collapsing chains of data movement. Results must match the reference
// backend bit for bit. OptimizationBarrier and GetTupleElement are opaque here: no rule matches
// them as an operand's definition.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <optional>
#include <span>

#include "backends/cpu/simplify_rules.h"
#include "backends/ref/ref_kernels.h"

namespace kiln::compute::cpu::simplify {

namespace {

/// Which sign a zero must have to count.
enum class ZeroSign { kAny, kPositive, kNegative };

/// The Constant behind `id` through BroadcastInDim and Reshape (which repeat or regroup
/// elements without changing them), or nullptr.
const Tensor* ConstantBehind(const Builder& b, int id) {
  for (int depth = 0; depth < 8; ++depth) {
    const Instruction& d = b.Def(id);
    if (d.op == OpType::Constant) return &d.attrs.literal;
    if (d.op != OpType::BroadcastInDim && d.op != OpType::Reshape) return nullptr;
    id = d.operands[0];
  }
  return nullptr;
}

/// Whether every element of constant-valued `id` equals `value` (a zero of sign `sign`); false
/// for Bool, packed, complex dtypes and values that are not constants.
bool AllElementsAre(const Builder& b, int id, double value, ZeroSign sign = ZeroSign::kAny) {
  const Tensor* t = ConstantBehind(b, id);
  if (t == nullptr || t->dtype() == DType::Bool || IsStorageOnly(t->dtype()) || IsComplex(t->dtype()))
    return false;
  bool all = true;
  DispatchDType(t->dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      t->ConstFlatData<T>([&](std::span<const T> xs) {
        for (T x : xs) {
          const double d = static_cast<double>(ref::Load(x));
          const bool sign_ok = sign == ZeroSign::kAny || std::signbit(d) == (sign == ZeroSign::kNegative);
          if (d != value || !sign_ok) {
            all = false;
            return;
          }
        }
      });
    }
  });
  return all;
}

/// Whether constant-valued `id` is the additive identity for `dtype` (any zero for integers,
/// only -0.0 for floats: -0.0 + x is x for every x, +0.0 + -0.0 is +0.0).
bool IsAdditiveIdentity(const Builder& b, int id, DType dtype) {
  return AllElementsAre(b, id, 0.0, IsFloat(dtype) ? ZeroSign::kNegative : ZeroSign::kAny);
}

/// `axes` sorted, without the axes of size at most 1 (reversing those changes nothing).
std::vector<int64_t> EffectiveAxes(const std::vector<int64_t>& axes, const Shape& shape) {
  std::vector<int64_t> out;
  for (int64_t a : axes)
    if (shape.Dimensions()[static_cast<size_t>(a)] > 1) out.push_back(a);
  std::sort(out.begin(), out.end());
  return out;
}

/// Whether permutation `p` of `dims` keeps the axes longer than 1 in their order (it only moves
/// axes of size 1: a reshape).
bool MovesOnlyUnitAxes(const std::vector<int64_t>& p, const std::vector<int64_t>& dims) {
  int64_t previous = -1;
  for (int64_t a : p) {
    if (dims[static_cast<size_t>(a)] == 1) continue;
    if (a < previous) return false;
    previous = a;
  }
  return true;
}

/// Transpose(Transpose(x, inner), outer) = Transpose(x, composed); identity permutations vanish;
/// a transpose that only moves axes of size 1 is a Reshape.
Rewrite SimplifyTranspose(const Builder& b, const Instruction& inst) {
  const int x = inst.operands[0];
  if (IsIdentityPermutation(inst.attrs.permutation)) return Rewrite::To(x);
  const Instruction& d = b.Def(x);
  if (!inst.shape.IsDynamic() && MovesOnlyUnitAxes(inst.attrs.permutation, d.shape.Dimensions())) {
    Instruction r = MakeInstruction(OpType::Reshape, {x}, inst.shape);
    r.attrs.shape = inst.shape;
    return Rewrite::With(std::move(r));
  }
  if (d.op != OpType::Transpose) return Rewrite::None();
  std::vector<int64_t> composed;
  for (int64_t p : inst.attrs.permutation) composed.push_back(d.attrs.permutation[static_cast<size_t>(p)]);
  if (IsIdentityPermutation(composed)) return Rewrite::To(d.operands[0]);
  Instruction t = inst;
  t.operands = {d.operands[0]};
  t.attrs.permutation = std::move(composed);
  return Rewrite::With(std::move(t));
}

/// Reshape to the operand's dimensions vanishes; Reshape(Reshape(x)) reshapes x once.
Rewrite SimplifyReshape(const Builder& b, const Instruction& inst) {
  const int x = inst.operands[0];
  if (b.Def(x).shape == inst.shape) return Rewrite::To(x);
  const Instruction& d = b.Def(x);
  if (d.op != OpType::Reshape) return Rewrite::None();
  if (b.Def(d.operands[0]).shape == inst.shape) return Rewrite::To(d.operands[0]);
  Instruction r = inst;
  r.operands = {d.operands[0]};
  return Rewrite::With(std::move(r));
}

/// For a Reshape from `from` to `to` that only inserts axes of size 1: for each axis of `from`,
/// the axis of `to` it becomes. Empty when the Reshape does anything else.
std::optional<std::vector<int64_t>> UnitAxesMap(const std::vector<int64_t>& from,
                                                const std::vector<int64_t>& to) {
  std::vector<int64_t> map;
  size_t j = 0;
  for (int64_t d : from) {
    while (j < to.size() && to[j] != d && to[j] == 1) ++j;
    if (j == to.size() || to[j] != d) return std::nullopt;
    map.push_back(static_cast<int64_t>(j++));
  }
  for (; j < to.size(); ++j)
    if (to[j] != 1) return std::nullopt;
  return map;
}

/// BroadcastInDim to the same shape vanishes; BroadcastInDim(BroadcastInDim(x)) broadcasts once,
/// and so does BroadcastInDim(Reshape(x)) when the Reshape only inserts axes of size 1
/// (the keep-dims form of a reduction's result): the broadcast reads x directly.
Rewrite SimplifyBroadcast(const Builder& b, const Instruction& inst) {
  const int x = inst.operands[0];
  const Instruction& d = b.Def(x);
  if (d.shape == inst.shape && IsIdentityPermutation(inst.attrs.axes)) return Rewrite::To(x);
  std::optional<std::vector<int64_t>> map;
  if (d.op == OpType::BroadcastInDim) {
    map = d.attrs.axes;
  } else if (d.op == OpType::Reshape) {
    map = UnitAxesMap(b.Def(d.operands[0]).shape.Dimensions(), d.shape.Dimensions());
  }
  if (!map) return Rewrite::None();
  Instruction r = inst;
  r.operands = {d.operands[0]};
  r.attrs.axes.clear();
  for (int64_t a : *map) r.attrs.axes.push_back(inst.attrs.axes[static_cast<size_t>(a)]);
  return Rewrite::With(std::move(r));
}

/// Reverse over no axis of size > 1 vanishes; Reverse(Reverse(x)) reverses the axes once.
Rewrite SimplifyReverse(const Builder& b, const Instruction& inst) {
  const int x = inst.operands[0];
  const std::vector<int64_t> axes = EffectiveAxes(inst.attrs.axes, inst.shape);
  if (axes.empty()) return Rewrite::To(x);
  const Instruction& d = b.Def(x);
  if (d.op != OpType::Reverse) return Rewrite::None();
  const std::vector<int64_t> inner = EffectiveAxes(d.attrs.axes, d.shape);
  std::vector<int64_t> both;
  std::set_symmetric_difference(axes.begin(), axes.end(), inner.begin(), inner.end(),
                                std::back_inserter(both));
  if (both.empty()) return Rewrite::To(d.operands[0]);
  Instruction r = inst;
  r.operands = {d.operands[0]};
  r.attrs.axes = std::move(both);
  return Rewrite::With(std::move(r));
}

/// A reduction over no axes is its operand, except a float ReduceSum: the reference sums from
/// +0.0, so it maps -0.0 to +0.0, as x + (+0.0) does (which fuses).
Rewrite SimplifyReduce(Builder& b, const Instruction& inst) {
  if (!inst.attrs.axes.empty()) return Rewrite::None();
  const int x = inst.operands[0];
  if (inst.op != OpType::ReduceSum || !IsFloat(inst.shape.dtype())) return Rewrite::To(x);
  Instruction zero = MakeInstruction(OpType::Constant, {}, Shape(inst.shape.dtype()));
  DispatchDType(inst.shape.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (ref::kIsFloat<T>) zero.attrs.literal = Tensor::FromScalar(T(0.0f));
  });
  int plus_zero = b.Emit(std::move(zero));
  if (!inst.shape.IsScalar()) {
    Rewrite splat = SplatTo(plus_zero, inst.shape);
    plus_zero = b.Emit(std::move(splat.inst));
  }
  return Rewrite::With(MakeInstruction(OpType::Add, {x, plus_zero}, inst.shape));
}

/// Slice of the whole array (same dimensions from index 0) vanishes.
Rewrite SimplifySlice(const Builder& b, const Instruction& inst) {
  const int x = inst.operands[0];
  if (b.Def(x).shape != inst.shape) return Rewrite::None();
  for (int64_t s : inst.attrs.starts)
    if (s != 0) return Rewrite::None();
  return Rewrite::To(x);
}

/// Pad with no padding vanishes.
Rewrite SimplifyPad(const Instruction& inst) {
  for (const PadAxis& p : inst.attrs.padding)
    if (p.low != 0 || p.high != 0 || p.interior != 0) return Rewrite::None();
  return Rewrite::To(inst.operands[0]);
}

/// DotGeneral(Transpose(a, p), b) (or with b transposed) is the DotGeneral of a itself with that
/// side's batch and contracting axes renumbered through p, when its free axes keep their order
/// (the result's axes then stay where they were): the contraction reads the transposed view
/// instead of a transposed copy (attention's Q·Kᵀ).
Rewrite AbsorbTransposeIntoDot(const Builder& b, const Instruction& inst) {
  for (size_t side = 0; side < 2; ++side) {
    const Instruction& t = b.Def(inst.operands[side]);
    if (t.op != OpType::Transpose) continue;
    const std::vector<int64_t>& p = t.attrs.permutation;
    const std::vector<int64_t>& batch = side == 0 ? inst.attrs.lhs_batch : inst.attrs.rhs_batch;
    const std::vector<int64_t>& contracting =
        side == 0 ? inst.attrs.lhs_contracting : inst.attrs.rhs_contracting;
    std::vector<bool> bound(p.size(), false);
    for (int64_t a : batch) bound[static_cast<size_t>(a)] = true;
    for (int64_t a : contracting) bound[static_cast<size_t>(a)] = true;
    int64_t previous = -1;
    bool ordered = true;
    for (size_t a = 0; a < p.size() && ordered; ++a) {
      if (bound[a]) continue;
      ordered = p[a] > previous;
      previous = p[a];
    }
    if (!ordered) continue;
    auto renumber = [&](const std::vector<int64_t>& axes) {
      std::vector<int64_t> out;
      for (int64_t a : axes) out.push_back(p[static_cast<size_t>(a)]);
      return out;
    };
    Instruction d = inst;
    d.operands[side] = t.operands[0];
    if (side == 0) {
      d.attrs.lhs_batch = renumber(batch);
      d.attrs.lhs_contracting = renumber(contracting);
    } else {
      d.attrs.rhs_batch = renumber(batch);
      d.attrs.rhs_contracting = renumber(contracting);
    }
    return Rewrite::With(std::move(d));
  }
  return Rewrite::None();
}

/// An elementwise op whose operands are all broadcasts of values of one shape along the same
/// axes (or splats) is the broadcast of the op on those values: Add(BroadcastInDim(a),
/// BroadcastInDim(b)) = BroadcastInDim(Add(a, b)). The op then runs (or folds, for constants) at
/// the operands' size, and the broadcast stays one a fused loop or a bias epilogue reads.
Rewrite SinkBroadcasts(Builder& b, const Instruction& inst) {
  if (!IsElementwise(inst.op) || inst.shape.IsDynamic()) return Rewrite::None();
  const Instruction* lead = nullptr;  // The first operand that is a broadcast of more than one element.
  for (int o : inst.operands) {
    if (SplatSource(b, o) >= 0) continue;
    const Instruction& d = b.Def(o);
    if (d.op != OpType::BroadcastInDim) return Rewrite::None();
    const Instruction& src = b.Def(d.operands[0]);
    if (lead == nullptr) {
      lead = &d;
      if (src.shape.IsDynamic() || src.shape.Size() >= d.shape.Size()) return Rewrite::None();
    } else if (d.attrs.axes != lead->attrs.axes ||
               src.shape.Dimensions() != b.Def(lead->operands[0]).shape.Dimensions()) {
      return Rewrite::None();
    }
  }
  if (lead == nullptr) return Rewrite::None();
  const std::vector<int64_t> small = b.Def(lead->operands[0]).shape.Dimensions();
  std::vector<int64_t> axes = lead->attrs.axes;
  std::vector<int> operands;
  for (int o : inst.operands) {
    const int splat = SplatSource(b, o);
    if (splat < 0) {
      operands.push_back(b.Def(o).operands[0]);
      continue;
    }
    const Shape s(b.Def(splat).shape.dtype(), small);
    Rewrite r = SplatTo(ScalarConstant(b, splat), s);
    operands.push_back(r.kind == Rewrite::Kind::kRedirect ? r.target : b.Emit(std::move(r.inst)));
  }
  Instruction op = inst;
  op.operands = std::move(operands);
  op.shape = Shape(inst.shape.dtype(), small);
  // Folded here when the values are constants, so a chain of such ops folds in one pass.
  Rewrite folded = FoldConstants(b, op);
  const int inner = folded.kind == Rewrite::Kind::kRedirect  ? folded.target
                    : folded.kind == Rewrite::Kind::kReplace ? b.Emit(std::move(folded.inst))
                                                             : b.Emit(std::move(op));
  Instruction bc = MakeInstruction(OpType::BroadcastInDim, {inner}, inst.shape);
  bc.attrs.shape = inst.shape;
  bc.attrs.axes = std::move(axes);
  return Rewrite::With(std::move(bc));
}

}  // namespace

bool IsIdentityPermutation(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

Rewrite SimplifyAlgebra(Builder& b, const Instruction& inst) {
  const std::vector<int>& ops = inst.operands;
  const DType dtype = inst.shape.dtype();
  const OpType op = inst.op;
  if (Rewrite r = SinkBroadcasts(b, inst); r.kind != Rewrite::Kind::kNone) return r;
  if (op == OpType::Add) {
    if (IsAdditiveIdentity(b, ops[1], dtype)) return Rewrite::To(ops[0]);
    if (IsAdditiveIdentity(b, ops[0], dtype)) return Rewrite::To(ops[1]);
    return Rewrite::None();
  }
  if (op == OpType::Sub) {
    // x - (+0.0) is x for every x (-0.0 - +0.0 = -0.0); x - (-0.0) is not.
    if (AllElementsAre(b, ops[1], 0.0, IsFloat(dtype) ? ZeroSign::kPositive : ZeroSign::kAny))
      return Rewrite::To(ops[0]);
    return Rewrite::None();
  }
  if (op == OpType::Mul) {
    if (AllElementsAre(b, ops[1], 1.0)) return Rewrite::To(ops[0]);
    if (AllElementsAre(b, ops[0], 1.0)) return Rewrite::To(ops[1]);
    return Rewrite::None();
  }
  if (op == OpType::Div) return AllElementsAre(b, ops[1], 1.0) ? Rewrite::To(ops[0]) : Rewrite::None();
  if (op == OpType::Neg)
    return b.Def(ops[0]).op == OpType::Neg ? Rewrite::To(b.Def(ops[0]).operands[0]) : Rewrite::None();
  if (op == OpType::StopGradient) return Rewrite::To(ops[0]);  // No gradients here: the identity at run time.
  if (op == OpType::Transpose) return SimplifyTranspose(b, inst);
  if (op == OpType::DotGeneral) return AbsorbTransposeIntoDot(b, inst);
  if (op == OpType::Reshape) return SimplifyReshape(b, inst);
  if (op == OpType::BroadcastInDim) return SimplifyBroadcast(b, inst);
  if (op == OpType::ConvertDType)
    return b.Def(ops[0]).shape.dtype() == dtype ? Rewrite::To(ops[0]) : Rewrite::None();
  if (op == OpType::Slice) return SimplifySlice(b, inst);
  if (op == OpType::Reverse) return SimplifyReverse(b, inst);
  if (op == OpType::Pad) return SimplifyPad(inst);
  if (op == OpType::Concatenate) return ops.size() == 1 ? Rewrite::To(ops[0]) : Rewrite::None();
  if (GetOpCategory(inst.op) == OpCategory::Reduce) return SimplifyReduce(b, inst);
  return Rewrite::None();
}

}  // namespace kiln::compute::cpu::simplify
