// Row normalisations for the cpu compiler. A softmax or a layer normalisation over the last axis,
// written out in primitives (as graph::Softmax, nn::LayerNorm and imported models write them),
// is a chain of reductions over short rows and elementwise ops that broadcast the per-row values
// back: four to seven kernels, each a pass over the tensor with per-row overheads. Recognised
// here, the chain becomes one kRowNorm node that one kernel runs row by row (row_kernels.cc):
//  - Softmax: Div(e, B(ReduceSum(e))) with e = Exp(Sub(x, B(ReduceMax(x))));
//  - LayerNorm: d = Sub(x, B(mean(x))), then Mul(d, B(Rsqrt(v + eps))) or Div(d, B(Sqrt(v + eps)))
//    with v = mean(Mul(d, d)), then optionally Mul by a gain and Add of an offset, each a vector
//    along the last axis; mean(a) is ReduceSum(a) divided by the row length (or multiplied by its
//    reciprocal);
// where B is a BroadcastInDim of a per-row value back over the row (possibly through a Reshape
// that adds the size-1 axis) and every reduction runs over the last axis alone. Each value the
// chain computes on the way must have no reader outside it and not be an output (training keeps
// those values for the backward pass: there the chain stays as it is). Float32 with static shapes.

#include <fmt/format.h>

#include <cmath>

#include "backends/cpu/match_util.h"
#include "backends/cpu/passes.h"

namespace kiln::compute::cpu {

std::string RowNorm::ToString() const {
  if (kind == Kind::kSoftmax) return "Softmax";
  return fmt::format("LayerNorm{{epsilon={}{}{}}}", epsilon, scale ? ", scale" : "", shift ? ", shift" : "");
}

namespace {

class RowNormPass {
 public:
  explicit RowNormPass(Module& m) : m_(m), uses_(m.nodes.size(), 0) {
    for (const Node& n : m.nodes)
      for (int o : n.inst.operands) ++uses_[static_cast<size_t>(o)];
    for (int o : m.outputs) uses_[static_cast<size_t>(o)] += kOutputUse;
  }

  PassReport Run() {
    // Last to first: a normalisation's outermost node (its offset's Add) is met before the inner
    // nodes that would match a smaller form.
    for (size_t i = m_.nodes.size(); i-- > 0;) {
      if (uses_[i] == 0 || !Candidate(static_cast<int>(i))) continue;  // Dead: a matched chain.
      if (!MatchSoftmax(static_cast<int>(i))) MatchLayerNorm(static_cast<int>(i));
    }
    if (log_.empty()) return {};
    return {count_, fmt::format("  row normalisations: {}\n{}", count_, log_)};
  }

 private:
  static constexpr int kOutputUse = 1 << 20;

  const Node& N(int v) const { return m_.nodes[static_cast<size_t>(v)]; }
  const Instruction& I(int v) const { return N(v).inst; }
  bool Is(int v, OpType op) const { return N(v).kind == NodeKind::kPrimitive && I(v).op == op; }

  bool Candidate(int v) const {
    const Instruction& inst = I(v);
    return N(v).kind == NodeKind::kPrimitive && !inst.IsTuple() && inst.shape.Ok() &&
           !inst.shape.IsDynamic() && inst.shape.dtype() == DType::Float32 && inst.shape.Rank() >= 1 &&
           inst.shape.Dimensions().back() >= 2;
  }

  /// Whether `v`'s readers are `count` operand slots of the chain, and it is no output.
  bool Used(int v, int count) const { return uses_[static_cast<size_t>(v)] == count; }

  /// The per-row value that BroadcastInDim `b` spreads over the rows of `x` (shape [rows...] or
  /// [rows..., 1], through Reshapes that only add or drop that size-1 axis, each read once), or -1.
  int RowValue(int b, int x) const {
    const Shape& xs = I(x).shape;
    if (!Is(b, OpType::BroadcastInDim) || I(b).shape != xs || !Used(b, 1)) return -1;
    int s = I(b).operands[0];
    const std::vector<int64_t>& dims = xs.Dimensions();
    const std::vector<int64_t> rows(dims.begin(), dims.end() - 1);
    std::vector<int64_t> keep = rows;
    keep.push_back(1);
    std::vector<int64_t> lead(static_cast<size_t>(xs.Rank() - 1));
    for (size_t a = 0; a < lead.size(); ++a) lead[a] = static_cast<int64_t>(a);
    std::vector<int64_t> all = lead;
    all.push_back(xs.Rank() - 1);
    const std::vector<int64_t>& sd = I(s).shape.Dimensions();
    if (!((sd == rows && I(b).attrs.axes == lead) || (sd == keep && I(b).attrs.axes == all))) return -1;
    while (Is(s, OpType::Reshape) && Used(s, 1)) {
      const std::vector<int64_t>& od = I(I(s).operands[0]).shape.Dimensions();
      if (od != rows && od != keep) break;
      s = I(s).operands[0];
    }
    return s;
  }

  /// `v` through Reshapes read once (a reduction's kept size-1 axis).
  int StripReshapes(int v) const {
    while (Is(v, OpType::Reshape) && Used(v, 1)) v = I(v).operands[0];
    return v;
  }

  /// Whether `r` is a ReduceSum (or ReduceMax) of `x` over its last axis alone.
  bool ReducesRowsOf(int r, OpType op, int x) const {
    return Is(r, op) && I(r).operands[0] == x &&
           I(r).attrs.axes == std::vector<int64_t>{I(x).shape.Rank() - 1};
  }

  /// Whether `v` is the mean over the last axis of `x`: ReduceSum(x) / L or ReduceSum(x) * (1/L)
  /// (the sum possibly reshaped), the sum read once.
  bool MeanOf(int v, int x) const {
    const bool div = Is(v, OpType::Div);
    if (!Used(v, 1) || (!div && !Is(v, OpType::Mul))) return false;
    const auto row = static_cast<float>(I(x).shape.Dimensions().back());
    for (size_t k = 0; k < (div ? 1u : 2u); ++k) {  // A Div's divisor is operand 1.
      const int sum = StripReshapes(I(v).operands[k]);
      const std::optional<float> f = SplatValue(m_.nodes, I(v).operands[1 - k]);
      if (f && *f == (div ? row : 1.0f / row) && ReducesRowsOf(sum, OpType::ReduceSum, x) && Used(sum, 1))
        return true;
    }
    return false;
  }

  bool MatchSoftmax(int root) {
    if (!Is(root, OpType::Div)) return false;
    const int e = I(root).operands[0];
    const int sum = RowValue(I(root).operands[1], e);
    if (sum < 0 || !ReducesRowsOf(sum, OpType::ReduceSum, e) || !Used(sum, 1)) return false;
    if (!Is(e, OpType::Exp) || !Used(e, 2)) return false;
    const int d = I(e).operands[0];
    if (!Is(d, OpType::Sub) || !Used(d, 1)) return false;
    const int x = I(d).operands[0];
    const int max = RowValue(I(d).operands[1], x);
    if (max < 0 || !ReducesRowsOf(max, OpType::ReduceMax, x) || !Used(max, 1)) return false;
    Rewrite(root, {x}, RowNorm{RowNorm::Kind::kSoftmax});
    return true;
  }

  /// The vector `b` broadcasts along the last axis of `like` (Float32, laid out as one row), or -1.
  int RowVector(int b, int like) const {
    // The broadcast may have other readers (common subexpressions merged it): it stays for them.
    if (!Is(b, OpType::BroadcastInDim) || I(b).shape != I(like).shape) return -1;
    const int s = I(b).operands[0];
    const Shape& ss = I(s).shape;
    if (ss.dtype() != DType::Float32 || ss.IsDynamic()) return -1;
    return PerFeature(ss, I(b).attrs.axes, I(like).shape, I(like).shape.Rank() - 1) ? s : -1;
  }

  /// For a commutative binary node `v`: the operand that is a RowVector (set into `vec`) and the
  /// other one, or -1.
  int SplitVector(int v, OpType op, int* vec) const {
    if (!Is(v, op)) return -1;
    for (int k = 0; k < 2; ++k) {
      const int a = I(v).operands[static_cast<size_t>(k)], b = I(v).operands[static_cast<size_t>(1 - k)];
      const int s = RowVector(b, v);
      if (s >= 0 && a != b) {
        *vec = s;
        return a;
      }
    }
    return -1;
  }

  void MatchLayerNorm(int root) {
    RowNorm norm{RowNorm::Kind::kLayerNorm};
    int gamma = -1, beta = -1, core = root;
    if (const int inner = SplitVector(core, OpType::Add, &beta); inner >= 0 && Used(inner, 1)) {
      core = inner;
      norm.shift = true;
    } else {
      beta = -1;
    }
    if (const int inner = SplitVector(core, OpType::Mul, &gamma); inner >= 0 && Used(inner, 1)) {
      core = inner;
      norm.scale = true;
    } else {
      gamma = -1;
    }
    // core = d * B(rsqrt(v + eps)) or d / B(sqrt(v + eps)).
    int d = -1, denom = -1;
    if (Is(core, OpType::Div)) {
      d = I(core).operands[0];
      denom = I(core).operands[1];
    } else if (Is(core, OpType::Mul)) {
      for (int k = 0; k < 2 && d < 0; ++k) {
        const int a = I(core).operands[static_cast<size_t>(k)],
                  b = I(core).operands[static_cast<size_t>(1 - k)];
        if (Is(a, OpType::Sub)) {
          d = a;
          denom = b;
        }
      }
    }
    if (d < 0 || !Is(d, OpType::Sub) || !Used(d, 3)) return;
    const int x = I(d).operands[0];
    const int root_of = RowValue(denom, d);
    if (root_of < 0 || !Used(root_of, 1)) return;
    if (!(Is(core, OpType::Div) ? Is(root_of, OpType::Sqrt) : Is(root_of, OpType::Rsqrt))) return;
    int ve = I(root_of).operands[0];
    if (!Is(ve, OpType::Add) || !Used(ve, 1)) return;
    int var = -1;
    std::optional<float> eps;
    for (int k = 0; k < 2 && var < 0; ++k) {
      eps = SplatValue(m_.nodes, I(ve).operands[static_cast<size_t>(1 - k)]);
      if (eps && std::isfinite(*eps) && *eps >= 0) var = I(ve).operands[static_cast<size_t>(k)];
    }
    if (var < 0) return;
    var = StripReshapes(var);
    // var = mean(d * d); d = x - B(mean(x)).
    if (!Is(var, OpType::Div) && !Is(var, OpType::Mul)) return;
    int sq = -1;
    for (int o : I(var).operands)
      if (Is(StripReshapes(o), OpType::ReduceSum)) sq = I(StripReshapes(o)).operands[0];
    if (sq < 0 || !Is(sq, OpType::Mul) || I(sq).operands[0] != d || I(sq).operands[1] != d || !Used(sq, 1) ||
        !MeanOf(var, sq))
      return;
    const int mean = RowValue(I(d).operands[1], x);
    if (mean < 0 || !MeanOf(mean, x)) return;
    norm.epsilon = *eps;
    std::vector<int> operands = {x};
    if (gamma >= 0) operands.push_back(gamma);
    if (beta >= 0) operands.push_back(beta);
    Rewrite(root, std::move(operands), norm);
  }

  /// Node `root` becomes the kRowNorm node over `operands`; the chain it stood for is left to dead
  /// code elimination (its nodes have no other readers).
  void Rewrite(int root, std::vector<int> operands, const RowNorm& norm) {
    Node& n = m_.nodes[static_cast<size_t>(root)];
    for (int o : n.inst.operands) --uses_[static_cast<size_t>(o)];
    for (int o : operands) ++uses_[static_cast<size_t>(o)];
    n.inst.operands = std::move(operands);
    n.kind = NodeKind::kRowNorm;
    n.row_norm = std::make_shared<const RowNorm>(norm);
    ++count_;
    log_ += fmt::format("  row norm %{}: {} over rows of {}\n", root, norm.ToString(),
                        n.inst.shape.Dimensions().back());
  }

  Module& m_;
  std::vector<int> uses_;  ///< Operand slots reading each node (outputs count kOutputUse).
  int count_ = 0;
  std::string log_;
};

}  // namespace

PassReport FuseRowNorms(Module& m) { return RowNormPass(m).Run(); }

}  // namespace kiln::compute::cpu
