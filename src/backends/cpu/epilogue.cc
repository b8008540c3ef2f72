// Contraction epilogues for the cpu compiler. Work that follows a matmul or a convolution and
// touches each result element once is moved into the contraction's kernel, so it runs while the
// result is still in registers (oneDNN's bias and post-ops) or in cache (the relu loop) instead
// of as another kernel over memory:
//  - Transpose(DotGeneral(a, b)) that only swaps the free axes of the two sides is
//    DotGeneral(b, a) (autodiff writes weight gradients this way);
//  - Add(contraction, BroadcastInDim(bias)) with the bias along the result's feature axis (the
//    last axis of a DotGeneral whose right side has one free axis, the output feature axis of a
//    ConvGeneral) becomes the contraction with a bias operand; the bias is a vector, or of the
//    result's rank with size 1 on every other axis (as imported models write [1, C, 1, 1]); so
//    does Add(contraction, v) where v has the result's shape and that is 1 on every other axis
//    (a batch of one, whose [1, N] bias needs no broadcast);
//  - Max(that, +0) or Logistic(that) becomes its activation (not Tanh: oneDNN's gives +0 for -0,
//    the reference -0), and so does HardSwish written out, x * Min(Max(x + 3, 0), 6) / 6 (as
//    exported CNNs write it) or x * Min(Max(x * (1/6) + 0.5, 0), 1) (ONNX's HardSwish): every
//    value, NaN and infinities included, maps as the written form maps it, within rounding.
// Each step needs the value it absorbs to have no other reader (and not to be an output), so no
// intermediate has to be materialised anyway. Float32 contractions carry epilogues (oneDNN runs
// them; the kernel applies them in a loop when oneDNN declines); BFloat16 ones a bias alone, where
// oneDNN's bfloat16 kernel takes it.

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <span>

#include "backends/cpu/dnnl_kernels.h"
#include "backends/cpu/match_util.h"
#include "backends/cpu/passes.h"

namespace kiln::compute::cpu {

std::string Epilogue::ToString() const {
  std::string s;
  if (bias) s = fmt::format("bias(axis {})", axis);
  const char* act = activation == Activation::kRelu        ? "Relu"
                    : activation == Activation::kLogistic  ? "Logistic"
                    : activation == Activation::kHardSwish ? "HardSwish"
                                                           : nullptr;
  if (act != nullptr) s += fmt::format("{}{}", s.empty() ? "" : ", ", act);
  return s;
}

namespace {

bool IsContraction(const Node& n) {
  return n.kind == NodeKind::kPrimitive &&
         (n.inst.op == OpType::DotGeneral || n.inst.op == OpType::ConvGeneral);
}

/// The axis of a contraction's result along which a per-feature bias varies, or nullopt.
std::optional<int64_t> FeatureAxis(const Module& m, const Instruction& inst) {
  if (inst.op == OpType::ConvGeneral) return inst.attrs.conv.output_feature;
  const Shape& rhs = m.nodes[static_cast<size_t>(inst.operands[1])].inst.shape;
  const int64_t rhs_free = rhs.Rank() - static_cast<int64_t>(inst.attrs.rhs_batch.size()) -
                           static_cast<int64_t>(inst.attrs.rhs_contracting.size());
  if (rhs_free != 1) return std::nullopt;
  return inst.shape.Rank() - 1;
}

/// Whether value `v` is a Float32 +0 Constant, possibly broadcast (Max(x, -0) keeps -0 where a
/// relu gives +0).
bool IsZero(const std::vector<Node>& nodes, int v) {
  const std::optional<float> x = SplatValue(nodes, v);
  return x && *x == 0.0f && !std::signbit(*x);
}

/// Whether `v` is a Float32 Constant of one element equal to `value`, possibly broadcast.
bool IsSplatOf(const std::vector<Node>& nodes, int v, float value) {
  const std::optional<float> x = SplatValue(nodes, v);
  return x && *x == value;
}

class EpiloguePass {
 public:
  explicit EpiloguePass(Module& m) : m_(m), uses_(m.nodes.size(), 0), is_output_(m.nodes.size(), false) {
    for (const Node& n : m.nodes)
      for (int o : n.inst.operands) ++uses_[static_cast<size_t>(o)];
    for (int o : m.outputs) is_output_[static_cast<size_t>(o)] = true;
  }

  PassReport Run() {
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      if (m_.nodes[i].kind != NodeKind::kPrimitive) continue;  // A row normalisation, say.
      if (FoldTranspose(static_cast<int>(i))) continue;
      if (FoldBias(static_cast<int>(i))) continue;
      if (FoldHardSwish(static_cast<int>(i))) continue;
      FoldActivation(static_cast<int>(i));
    }
    if (log_.empty()) return {};
    return {count_, fmt::format("  epilogues: {} rewrites\n{}", count_, log_)};
  }

 private:
  /// Whether `v` is read once, by the node being rewritten, and is no output.
  bool SoleUse(int v) const {
    return uses_[static_cast<size_t>(v)] == 1 && !is_output_[static_cast<size_t>(v)];
  }

  /// Replaces node `i` by `node` (whose operands are defined before `i`); `absorbed` (node i's
  /// operand that `node` stands in for) loses its only reader and its operands lose one each.
  void Replace(int i, int absorbed, Node node, const std::string& what) {
    for (int o : m_.nodes[static_cast<size_t>(i)].inst.operands) --uses_[static_cast<size_t>(o)];
    for (int o : m_.nodes[static_cast<size_t>(absorbed)].inst.operands) --uses_[static_cast<size_t>(o)];
    for (int o : node.inst.operands) ++uses_[static_cast<size_t>(o)];
    m_.nodes[static_cast<size_t>(i)] = std::move(node);
    ++count_;
    log_ += fmt::format("  epilogue %{}: {}\n", i, what);
  }

  bool FoldTranspose(int i) {
    const Instruction& t = m_.nodes[static_cast<size_t>(i)].inst;
    if (t.op != OpType::Transpose) return false;
    const int d = t.operands[0];
    const Node& dot = m_.nodes[static_cast<size_t>(d)];
    if (dot.inst.op != OpType::DotGeneral || dot.kind != NodeKind::kPrimitive || dot.epilogue || !SoleUse(d))
      return false;
    const OpAttributes& at = dot.inst.attrs;
    const int64_t nb = static_cast<int64_t>(at.lhs_batch.size());
    const int64_t nl = m_.nodes[static_cast<size_t>(dot.inst.operands[0])].inst.shape.Rank() - nb -
                       static_cast<int64_t>(at.lhs_contracting.size());
    const int64_t nr = dot.inst.shape.Rank() - nb - nl;
    // The permutation must keep the batch axes and put the right side's free axes first.
    std::vector<int64_t> swap;
    for (int64_t a = 0; a < nb; ++a) swap.push_back(a);
    for (int64_t a = 0; a < nr; ++a) swap.push_back(nb + nl + a);
    for (int64_t a = 0; a < nl; ++a) swap.push_back(nb + a);
    if (t.attrs.permutation != swap) return false;
    Node swapped{dot.inst, nullptr};
    Instruction& s = swapped.inst;
    std::swap(s.operands[0], s.operands[1]);
    s.attrs.lhs_contracting = at.rhs_contracting;
    s.attrs.rhs_contracting = at.lhs_contracting;
    s.attrs.lhs_batch = at.rhs_batch;
    s.attrs.rhs_batch = at.lhs_batch;
    s.shape = t.shape;
    Replace(i, d, std::move(swapped),
            fmt::format("Transpose of DotGeneral %{} -> DotGeneral, operands swapped", d));
    return true;
  }

  bool FoldBias(int i) {
    const Instruction& add = m_.nodes[static_cast<size_t>(i)].inst;
    const DType type = add.shape.dtype();
    if (add.op != OpType::Add || (type != DType::Float32 && type != DType::BFloat16)) return false;
    for (int side = 0; side < 2; ++side) {
      const int c = add.operands[static_cast<size_t>(side)];
      const int b = add.operands[static_cast<size_t>(1 - side)];
      const Node& con = m_.nodes[static_cast<size_t>(c)];
      if (!IsContraction(con) || con.epilogue || !SoleUse(c) || c == b) continue;
      const Instruction& bcast = m_.nodes[static_cast<size_t>(b)].inst;
      // The bias is broadcast to the result's shape, or already has it: a batch of one row adds a
      // [1, N] value, whose identity broadcast the cleanups removed.
      const bool broadcast = bcast.op == OpType::BroadcastInDim;
      const int bias = broadcast ? bcast.operands[0] : b;
      const Shape& bias_shape = m_.nodes[static_cast<size_t>(bias)].inst.shape;
      std::vector<int64_t> axes = broadcast ? bcast.attrs.axes : std::vector<int64_t>{};
      if (!broadcast)
        for (int64_t a = 0; a < bias_shape.Rank(); ++a) axes.push_back(a);
      const std::optional<int64_t> axis = FeatureAxis(m_, con.inst);
      if (!axis || bias_shape.dtype() != type || con.inst.shape.dtype() != type ||
          (!broadcast && bias_shape != con.inst.shape) ||
          !PerFeature(bias_shape, axes, con.inst.shape, *axis))
        continue;
      Node fused{con.inst, nullptr};
      fused.inst.operands.push_back(bias);
      Epilogue e;
      e.bias = true;
      e.axis = *axis;
      // A BFloat16 contraction takes a bias only where oneDNN's bfloat16 kernel does (it then sums
      // products and bias in float32 and rounds once); no loop applies one to BFloat16 values.
      if (type == DType::BFloat16 && !DnnlRunsBFloat16(fused.inst, m_.nodes, &e)) continue;
      fused.epilogue = std::make_shared<const Epilogue>(e);
      Replace(i, c, std::move(fused),
              fmt::format("Add of bias %{} into {} %{}", bias, OpName(con.inst.op), c));
      return true;
    }
    return false;
  }

  /// The node defining `v` when it is `op` and read only here (by the pattern being matched).
  const Instruction* Inner(int v, OpType op) const {
    const Node& n = m_.nodes[static_cast<size_t>(v)];
    return n.kind == NodeKind::kPrimitive && n.inst.op == op && SoleUse(v) ? &n.inst : nullptr;
  }

  /// For binary `inst`, the operand that is not a splat of `value` (-1 when neither is one).
  int OtherThanSplat(const Instruction& inst, float value) const {
    for (int side = 0; side < 2; ++side)
      if (IsSplatOf(m_.nodes, inst.operands[static_cast<size_t>(1 - side)], value))
        return inst.operands[static_cast<size_t>(side)];
    return -1;
  }

  /// Min(Max(y, 0), hi) read only here: y, else -1.
  int ClampedFromZeroTo(int v, float hi) const {
    const Instruction* min = Inner(v, OpType::Min);
    const int max_v = min != nullptr ? OtherThanSplat(*min, hi) : -1;
    const Instruction* max = max_v >= 0 ? Inner(max_v, OpType::Max) : nullptr;
    return max != nullptr ? OtherThanSplat(*max, 0.0f) : -1;
  }

  /// HardSwish of a contraction t, in either written form (see the file comment), becomes its
  /// activation when t is read only by the pattern.
  bool FoldHardSwish(int i) {
    const Instruction& root = m_.nodes[static_cast<size_t>(i)].inst;
    if (root.shape.dtype() != DType::Float32) return false;
    int t = -1, gate = -1;  // root = t * gate (/ 6), gate = clamp of an affine map of t.
    if (root.op == OpType::Div && IsSplatOf(m_.nodes, root.operands[1], 6.0f)) {
      // x * Min(Max(x + 3, 0), 6) / 6.
      const Instruction* mul = Inner(root.operands[0], OpType::Mul);
      if (mul == nullptr) return false;
      for (int side = 0; side < 2 && t < 0; ++side) {
        const int g = mul->operands[static_cast<size_t>(1 - side)];
        const int y = ClampedFromZeroTo(g, 6.0f);
        const Instruction* add = y >= 0 ? Inner(y, OpType::Add) : nullptr;
        if (add != nullptr && OtherThanSplat(*add, 3.0f) == mul->operands[static_cast<size_t>(side)]) {
          t = mul->operands[static_cast<size_t>(side)];
          gate = g;
        }
      }
    } else if (root.op == OpType::Mul) {
      // x * Min(Max(x * (1/6) + 0.5, 0), 1).
      for (int side = 0; side < 2 && t < 0; ++side) {
        const int g = root.operands[static_cast<size_t>(1 - side)];
        const int y = ClampedFromZeroTo(g, 1.0f);
        const Instruction* add = y >= 0 ? Inner(y, OpType::Add) : nullptr;
        const int scaled = add != nullptr ? OtherThanSplat(*add, 0.5f) : -1;
        const Instruction* scale = scaled >= 0 ? Inner(scaled, OpType::Mul) : nullptr;
        if (scale != nullptr &&
            OtherThanSplat(*scale, static_cast<float>(1.0 / 6)) == root.operands[static_cast<size_t>(side)]) {
          t = root.operands[static_cast<size_t>(side)];
          gate = g;
        }
      }
    }
    if (t < 0 || gate < 0) return false;
    const Node& con = m_.nodes[static_cast<size_t>(t)];
    // t is read twice, both times by the pattern: by the product and by the gate's first op.
    if (!IsContraction(con) || con.inst.shape.dtype() != DType::Float32 ||
        uses_[static_cast<size_t>(t)] != 2 || is_output_[static_cast<size_t>(t)])
      return false;
    if (con.epilogue && con.epilogue->activation != Activation::kNone) return false;
    Epilogue e = con.epilogue ? *con.epilogue : Epilogue();
    e.activation = Activation::kHardSwish;
    Node fused{con.inst, nullptr};
    fused.epilogue = std::make_shared<const Epilogue>(e);
    // The contraction moves to the root; the pattern's other nodes are left without readers.
    for (int o : root.operands) --uses_[static_cast<size_t>(o)];
    for (int o : fused.inst.operands) ++uses_[static_cast<size_t>(o)];
    m_.nodes[static_cast<size_t>(i)] = std::move(fused);
    ++count_;
    log_ += fmt::format("  epilogue %{}: HardSwish into {} %{}\n", i, OpName(con.inst.op), t);
    return true;
  }

  void FoldActivation(int i) {
    const Instruction& inst = m_.nodes[static_cast<size_t>(i)].inst;
    if (inst.shape.dtype() != DType::Float32) return;
    Activation act = Activation::kNone;
    int c = -1;
    if (inst.op == OpType::Max) {
      for (int side = 0; side < 2 && c < 0; ++side) {
        if (IsZero(m_.nodes, inst.operands[static_cast<size_t>(1 - side)]))
          c = inst.operands[static_cast<size_t>(side)];
      }
      act = Activation::kRelu;
    } else if (inst.op == OpType::Logistic) {
      c = inst.operands[0];
      act = Activation::kLogistic;
    }
    if (c < 0) return;
    const Node& con = m_.nodes[static_cast<size_t>(c)];
    if (!IsContraction(con) || !SoleUse(c) || con.inst.shape.dtype() != DType::Float32) return;
    if (con.epilogue && con.epilogue->activation != Activation::kNone) return;
    Epilogue e = con.epilogue ? *con.epilogue : Epilogue();
    e.activation = act;
    Node fused{con.inst, nullptr};
    fused.epilogue = std::make_shared<const Epilogue>(e);
    Replace(i, c, std::move(fused), fmt::format("{} into {} %{}", OpName(inst.op), OpName(con.inst.op), c));
  }

  Module& m_;
  std::vector<int> uses_;
  std::vector<bool> is_output_;
  int count_ = 0;
  std::string log_;
};

/// Whether every window of `rw` (a ReduceWindow) covers at least one operand element: no base
/// dilation, no window dilation, no interior padding and, per axis, padding short of the window.
bool WindowsTouchTheOperand(const Instruction& rw) {
  for (int64_t d : rw.attrs.input_dilations)
    if (d != 1) return false;
  for (int64_t d : rw.attrs.kernel_dilations)
    if (d != 1) return false;
  for (size_t a = 0; a < rw.attrs.padding.size(); ++a) {
    const PadAxis& p = rw.attrs.padding[a];
    const int64_t w = a < rw.attrs.window.size() ? rw.attrs.window[a] : 1;
    if (p.interior != 0 || p.low >= w || p.high >= w || p.low < 0 || p.high < 0) return false;
  }
  return true;
}

}  // namespace

PassReport CommuteReluWithMaxPool(Module& m) {
  std::vector<int> uses(m.nodes.size(), 0);  // by old id
  std::vector<bool> is_output(m.nodes.size(), false);
  for (const Node& n : m.nodes)
    for (int o : n.inst.operands) ++uses[static_cast<size_t>(o)];
  for (int o : m.outputs) is_output[static_cast<size_t>(o)] = true;
  PassReport report;
  RebuildModule(m, [&](Node& node, const std::vector<int>& old_operands, std::vector<Node>& nodes) {
    const Instruction& rw = node.inst;
    if (node.kind != NodeKind::kPrimitive || rw.op != OpType::ReduceWindow ||
        rw.attrs.reduce_kind != ReduceKind::Max || rw.shape.dtype() != DType::Float32 ||
        !WindowsTouchTheOperand(rw))
      return -1;
    const int relu = old_operands[0];
    const Node& max = nodes[static_cast<size_t>(rw.operands[0])];
    if (max.kind != NodeKind::kPrimitive || max.inst.op != OpType::Max ||
        uses[static_cast<size_t>(relu)] != 1 || is_output[static_cast<size_t>(relu)])
      return -1;
    int x = -1, zero = -1;  // Max's other operand and the scalar +0 (rebuilt ids)
    for (int side = 0; side < 2 && x < 0; ++side) {
      const int z = max.inst.operands[static_cast<size_t>(1 - side)];
      if (!IsZero(nodes, z)) continue;
      x = max.inst.operands[static_cast<size_t>(side)];
      zero = nodes[static_cast<size_t>(z)].inst.op == OpType::BroadcastInDim
                 ? nodes[static_cast<size_t>(z)].inst.operands[0]
                 : z;
    }
    if (x < 0) return -1;
    // Max(ReduceWindow-max(x), +0): the pool of x, then the relu on the (smaller) pooled values.
    const Shape pooled = rw.shape;
    Instruction pool = rw;
    pool.operands = {x};
    const int pool_id = AppendNode(nodes, std::move(pool));
    Instruction bcast;
    bcast.op = OpType::BroadcastInDim;
    bcast.operands = {zero};
    bcast.shape = pooled;
    const int zeros = AppendNode(nodes, std::move(bcast));
    Instruction relu_inst;
    relu_inst.op = OpType::Max;
    relu_inst.operands = {pool_id, zeros};
    relu_inst.shape = pooled;
    report.log += fmt::format("  commute: ReduceWindow-max of relu %{} -> relu of ReduceWindow-max\n", relu);
    ++report.count;
    return AppendNode(nodes, std::move(relu_inst));
  });
  return report;
}

PassReport FuseEpilogues(Module& m) { return EpiloguePass(m).Run(); }

}  // namespace kiln::compute::cpu
