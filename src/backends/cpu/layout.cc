// Channels-last layout for channels-first convolutions (ONNX models are NCHW). oneDNN's direct
// convolution kernels read and write NHWC (or blocked layouts); on NCHW data each convolution
// would reorder its input in and its result out on every call, which costs as much as the
// convolutions themselves in a small CNN. This pass rebuilds the module with every value of rank
// 4 held in one of two layouts: as written (NCHW) or transposed to NHWC. A channels-first
// convolution takes and gives NHWC; elementwise ops, reductions, windowed reductions, pads,
// slices and concatenations follow their operands' layout (a majority vote for several); every
// other op, and the program's outputs, get NCHW. A Transpose is emitted only where a value is
// needed in the layout it does not have, once per value and layout, so between consecutive
// convolutions there is none. Results are unchanged: only where values live moves.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "backends/cpu/passes.h"
#include "backends/cpu/simplify_rules.h"

namespace kiln::compute::cpu {

namespace {

constexpr int64_t kRank = 4;
/// Transpose permutations NCHW -> NHWC and back.
const std::vector<int64_t> kToLast = {0, 2, 3, 1};
const std::vector<int64_t> kToFirst = {0, 3, 1, 2};
/// The NHWC position of each NCHW axis.
constexpr std::array<int64_t, 4> kPosition = {0, 3, 1, 2};

/// `v` (one entry per NCHW axis) in NHWC order; other sizes (empty: defaults) unchanged.
template <typename T>
std::vector<T> InLastOrder(const std::vector<T>& v) {
  if (v.size() != static_cast<size_t>(kRank)) return v;
  return {v[0], v[2], v[3], v[1]};
}

Shape LastShape(const Shape& s) { return Shape(s.dtype(), InLastOrder(s.Dimensions())); }

bool IsIdentity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

/// A Float32 convolution with NCHW input and result (any kernel layout), which oneDNN runs on
/// NHWC directly.
bool IsChannelsFirstConv(const Node& n) {
  const Instruction& inst = n.inst;
  if (n.kind != NodeKind::kPrimitive || inst.op != OpType::ConvGeneral || n.epilogue ||
      inst.shape.Rank() != kRank || inst.shape.dtype() != DType::Float32 || inst.shape.IsDynamic() ||
      inst.attrs.batch_groups != 1)
    return false;
  const ConvDims& c = inst.attrs.conv;
  const std::vector<int64_t> spatial = {2, 3};
  return c.input_batch == 0 && c.input_feature == 1 && c.input_spatial == spatial && c.output_batch == 0 &&
         c.output_feature == 1 && c.output_spatial == spatial;
}

class LayoutPass {
 public:
  explicit LayoutPass(Module& m) : m_(m), first_(m.nodes.size(), -1), last_(m.nodes.size(), -1) {}

  PassReport Run() {
    if (std::none_of(m_.nodes.begin(), m_.nodes.end(), IsChannelsFirstConv)) return {};
    nodes_.reserve(m_.nodes.size() * 2);
    for (size_t i = 0; i < m_.nodes.size(); ++i) Rebuild(static_cast<int>(i));
    for (int& o : m_.outputs) o = First(o);
    m_.nodes = std::move(nodes_);
    return {convs_, fmt::format("  layout: {} convolutions on NHWC, {} transposes\n", convs_, transposes_)};
  }

 private:
  const Instruction& Old(int id) const { return m_.nodes[static_cast<size_t>(id)].inst; }
  bool LastOnly(int id) const {
    return last_[static_cast<size_t>(id)] >= 0 && first_[static_cast<size_t>(id)] < 0;
  }
  bool FirstOnly(int id) const {
    return first_[static_cast<size_t>(id)] >= 0 && last_[static_cast<size_t>(id)] < 0;
  }

  int Emit(Instruction inst) { return AppendNode(nodes_, std::move(inst)); }

  int EmitTranspose(int x, const std::vector<int64_t>& perm, const Shape& shape) {
    Instruction t = simplify::MakeInstruction(OpType::Transpose, {x}, shape);
    t.attrs.permutation = perm;
    ++transposes_;
    return Emit(std::move(t));
  }

  /// Old value `id` in NCHW (its own layout for other ranks).
  int First(int id) {
    int& f = first_[static_cast<size_t>(id)];
    if (f < 0) f = EmitTranspose(last_[static_cast<size_t>(id)], kToFirst, Old(id).shape);
    return f;
  }
  /// Old rank-4 value `id` in NHWC.
  int Last(int id) {
    int& l = last_[static_cast<size_t>(id)];
    if (l < 0) l = EmitTranspose(First(id), kToLast, LastShape(Old(id).shape));
    return l;
  }

  /// Whether operands `ops` (all of the result's rank-4 shape, or broadcasts) are best read in
  /// NHWC: more of the arrays among them exist only in NHWC than only in NCHW.
  bool VoteLast(const std::vector<int>& ops) const {
    int last = 0, first = 0;
    for (int o : ops) {
      if (Old(o).op == OpType::BroadcastInDim) continue;
      last += LastOnly(o) ? 1 : 0;
      first += FirstOnly(o) ? 1 : 0;
    }
    return last > first;
  }

  /// The NHWC form of old BroadcastInDim `id` (to a rank-4 shape).
  int BroadcastLast(int id) {
    const Instruction& b = Old(id);
    const int src = b.operands[0];
    Instruction out = b;
    out.shape = LastShape(b.shape);
    out.attrs.shape = out.shape;
    if (Old(src).shape.Rank() == kRank && IsIdentity(b.attrs.axes)) {
      out.operands = {Last(src)};
      return Emit(std::move(out));
    }
    // The source's axes land at new positions: sort them, transposing the source to match.
    std::vector<int64_t> pos;
    for (int64_t a : b.attrs.axes) pos.push_back(kPosition[static_cast<size_t>(a)]);
    std::vector<int64_t> order(pos.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      return pos[static_cast<size_t>(x)] < pos[static_cast<size_t>(y)];
    });
    int s = First(src);
    if (!IsIdentity(order)) {
      std::vector<int64_t> dims;
      for (int64_t o : order) dims.push_back(Old(src).shape.Dimensions()[static_cast<size_t>(o)]);
      s = EmitTranspose(s, order, Shape(Old(src).shape.dtype(), dims));
    }
    std::sort(pos.begin(), pos.end());
    out.operands = {s};
    out.attrs.axes = pos;
    return Emit(std::move(out));
  }

  /// An operand of an op computed in NHWC.
  int OperandLast(int o) { return Old(o).op == OpType::BroadcastInDim ? BroadcastLast(o) : Last(o); }

  void Rebuild(int i) {
    const Node& node = m_.nodes[static_cast<size_t>(i)];
    const Instruction& inst = node.inst;
    const size_t at = static_cast<size_t>(i);
    const bool rank4 =
        inst.shape.Rank() == kRank && !inst.shape.IsDynamic() && node.kind == NodeKind::kPrimitive;
    if (IsChannelsFirstConv(node)) {
      Instruction conv = inst;
      conv.operands = {Last(inst.operands[0]), First(inst.operands[1])};
      ConvDims& c = conv.attrs.conv;
      c.input_batch = c.output_batch = 0;
      c.input_feature = c.output_feature = 3;
      c.input_spatial = c.output_spatial = {1, 2};
      conv.shape = LastShape(inst.shape);
      last_[at] = Emit(std::move(conv));
      ++convs_;
      return;
    }
    const bool same_shapes = rank4 && std::all_of(inst.operands.begin(), inst.operands.end(), [&](int o) {
                               return Old(o).shape.Dimensions() == inst.shape.Dimensions();
                             });
    if (same_shapes && simplify::IsElementwise(inst.op) && VoteLast(inst.operands)) {
      Instruction e = inst;
      for (int& o : e.operands) o = OperandLast(o);
      e.shape = LastShape(inst.shape);
      last_[at] = Emit(std::move(e));
      return;
    }
    if (rank4 && inst.op == OpType::Concatenate && !inst.operands.empty() && VoteLast(inst.operands)) {
      Instruction e = inst;
      for (int& o : e.operands) o = OperandLast(o);
      e.attrs.axis = kPosition[static_cast<size_t>(inst.attrs.axis)];
      e.shape = LastShape(inst.shape);
      last_[at] = Emit(std::move(e));
      return;
    }
    const int x = inst.operands.empty() ? -1 : inst.operands[0];
    if (x >= 0 && node.kind == NodeKind::kPrimitive && Old(x).shape.Rank() == kRank && LastOnly(x)) {
      if (GetOpCategory(inst.op) == OpCategory::Reduce && inst.operands.size() == 1) {
        RebuildReduce(i);
        return;
      }
      if (rank4 && (inst.op == OpType::ReduceWindow || inst.op == OpType::Pad || inst.op == OpType::Slice)) {
        Instruction w = inst;
        w.operands[0] = Last(x);
        for (size_t k = 1; k < w.operands.size(); ++k) w.operands[k] = First(inst.operands[k]);
        OpAttributes& a = w.attrs;
        a.window = InLastOrder(a.window);
        a.strides = InLastOrder(a.strides);
        a.padding = InLastOrder(a.padding);
        a.input_dilations = InLastOrder(a.input_dilations);
        a.kernel_dilations = InLastOrder(a.kernel_dilations);
        a.starts = InLastOrder(a.starts);
        a.limits = InLastOrder(a.limits);
        w.shape = LastShape(inst.shape);
        last_[at] = Emit(std::move(w));
        return;
      }
    }
    Node copy = node;
    for (int& o : copy.inst.operands) o = First(o);
    nodes_.push_back(std::move(copy));
    first_[at] = static_cast<int>(nodes_.size()) - 1;
  }

  /// A reduction of an NHWC value: reduced there, its result (the kept axes, in NHWC order)
  /// transposed back when that order is not NCHW's.
  void RebuildReduce(int i) {
    const Instruction& inst = Old(i);
    std::vector<bool> reduced(kRank, false);
    for (int64_t a : inst.attrs.axes) reduced[static_cast<size_t>(a)] = true;
    Instruction r = inst;
    r.operands = {Last(inst.operands[0])};
    r.attrs.axes.clear();
    for (int64_t a : inst.attrs.axes) r.attrs.axes.push_back(kPosition[static_cast<size_t>(a)]);
    std::sort(r.attrs.axes.begin(), r.attrs.axes.end());
    // The kept NCHW axes, in the order NHWC keeps them.
    std::vector<int64_t> kept;
    for (int64_t a : kToLast)
      if (!reduced[static_cast<size_t>(a)]) kept.push_back(a);
    std::vector<int64_t> sorted = kept;
    std::sort(sorted.begin(), sorted.end());
    if (kept == sorted) {
      first_[static_cast<size_t>(i)] = Emit(std::move(r));
      return;
    }
    std::vector<int64_t> dims, perm;
    for (int64_t a : kept) dims.push_back(Old(inst.operands[0]).shape.Dimensions()[static_cast<size_t>(a)]);
    r.shape = Shape(inst.shape.dtype(), dims);
    // Result axis j (the j-th kept NCHW axis) is axis perm[j] of the NHWC-ordered result.
    for (int64_t a : sorted)
      perm.push_back(static_cast<int64_t>(std::find(kept.begin(), kept.end(), a) - kept.begin()));
    const int reduced_id = Emit(std::move(r));
    first_[static_cast<size_t>(i)] = EmitTranspose(reduced_id, perm, inst.shape);
  }

  Module& m_;
  std::vector<Node> nodes_;
  std::vector<int> first_, last_;  // Old id -> new id of its NCHW and NHWC forms, -1 until made.
  int convs_ = 0, transposes_ = 0;
};

}  // namespace

PassReport ConvolutionsChannelsLast(Module& m) { return LayoutPass(m).Run(); }

}  // namespace kiln::compute::cpu
