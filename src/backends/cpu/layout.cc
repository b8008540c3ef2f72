// Channels-last layout for channels-first convolutions (ONNX models are NCHW). oneDNN's direct
// convolution kernels read and write NHWC (or blocked layouts); on NCHW data each convolution
// would reorder its input in and its result out on every call, which costs as much as the
// convolutions themselves in a small CNN.
//
// The pass rebuilds the module with each value held in its written layout or in one permuted
// layout: `perm` lists, for each axis of the stored array, the written axis it holds (NHWC is
// [0, 2, 3, 1] of an NCHW value). A channels-first convolution takes and gives NHWC. Ops whose
// operand is held permuted follow it where that costs no copy: elementwise ops (a majority vote
// among their operands' layouts; broadcast operands are re-broadcast), reductions, windowed
// reductions, pads, slices and concatenations (their per-axis attributes permuted), Transpose
// (which then moves nothing: only the layout changes), BroadcastInDim (new axes placed beside
// their written neighbours) and Reshape (when the axes it merges or splits lie together in the
// held order), so a nearest-neighbour upsampling between convolutions stays NHWC. Every other op,
// and the program's outputs, read the written layout; a Transpose is made where a value is needed
// in a layout it does not have, once per value and layout. Results are unchanged: only where
// values live moves.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "backends/cpu/passes.h"
#include "backends/cpu/simplify_rules.h"

namespace kiln::compute::cpu {

namespace {

using Perm = std::vector<int64_t>;  ///< Stored axis i holds written axis perm[i].

const Perm kNhwc = {0, 2, 3, 1};

Perm Inverse(const Perm& p) {
  Perm inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  return inv;
}

/// `v` (one entry per written axis) in stored order; other sizes (empty: defaults) unchanged.
template <typename T>
std::vector<T> Stored(const std::vector<T>& v, const Perm& p) {
  if (v.size() != p.size()) return v;
  std::vector<T> out;
  for (int64_t a : p) out.push_back(v[static_cast<size_t>(a)]);
  return out;
}

Shape StoredShape(const Shape& s, const Perm& p) { return Shape(s.dtype(), Stored(s.Dimensions(), p)); }

/// A Float32 convolution with NCHW input and result (any kernel layout), which oneDNN runs on
/// NHWC directly.
bool IsChannelsFirstConv(const Node& n) {
  const Instruction& inst = n.inst;
  if (n.kind != NodeKind::kPrimitive || inst.op != OpType::ConvGeneral || n.epilogue ||
      inst.shape.Rank() != 4 || inst.shape.dtype() != DType::Float32 || inst.shape.IsDynamic() ||
      inst.attrs.batch_groups != 1)
    return false;
  const ConvDims& c = inst.attrs.conv;
  const std::vector<int64_t> spatial = {2, 3};
  return c.input_batch == 0 && c.input_feature == 1 && c.input_spatial == spatial && c.output_batch == 0 &&
         c.output_feature == 1 && c.output_spatial == spatial;
}

/// Reshape from `from` to `to` as groups of consecutive axes with equal sizes: (input axes,
/// output axes) pairs in order; either list may be empty for axes of size 1.
using Groups = std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>;
Groups ReshapeGroups(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  Groups groups;
  size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    std::vector<int64_t> gi, gj;
    int64_t pi = 1, pj = 1;
    if (i < from.size()) pi *= from[i], gi.push_back(static_cast<int64_t>(i++));
    if (j < to.size()) pj *= to[j], gj.push_back(static_cast<int64_t>(j++));
    while (pi != pj) {
      if (pi < pj) {
        if (i >= from.size()) return {};
        pi *= from[i];
        gi.push_back(static_cast<int64_t>(i++));
      } else {
        if (j >= to.size()) return {};
        pj *= to[j];
        gj.push_back(static_cast<int64_t>(j++));
      }
    }
    groups.emplace_back(std::move(gi), std::move(gj));
  }
  return groups;
}

class LayoutPass {
 public:
  explicit LayoutPass(Module& m) : m_(m), forms_(m.nodes.size()) {}

  PassReport Run() {
    if (std::none_of(m_.nodes.begin(), m_.nodes.end(), IsChannelsFirstConv)) return {};
    nodes_.reserve(m_.nodes.size() * 2);
    for (size_t i = 0; i < m_.nodes.size(); ++i) Rebuild(static_cast<int>(i));
    for (int& o : m_.outputs) o = Written(o);
    m_.nodes = std::move(nodes_);
    return {convs_, fmt::format("  layout: {} convolutions on NHWC, {} transposes\n", convs_, transposes_)};
  }

 private:
  /// Where old value `id` lives: its written form and at most one permuted form.
  struct Forms {
    int written = -1;
    int held = -1;  ///< The permuted form.
    Perm perm;      ///< Its layout.
  };

  const Instruction& Old(int id) const { return m_.nodes[static_cast<size_t>(id)].inst; }
  Forms& F(int id) { return forms_[static_cast<size_t>(id)]; }
  /// The layout of `id` when it exists only permuted, else nothing.
  const Perm* HeldOnly(int id) const {
    const Forms& f = forms_[static_cast<size_t>(id)];
    return f.held >= 0 && f.written < 0 ? &f.perm : nullptr;
  }

  int Emit(Instruction inst) { return AppendNode(nodes_, std::move(inst)); }

  int EmitTranspose(int x, const Perm& perm, const Shape& shape) {
    Instruction t = simplify::MakeInstruction(OpType::Transpose, {x}, shape);
    t.attrs.permutation = perm;
    ++transposes_;
    return Emit(std::move(t));
  }

  /// Records `id` (a new node) as the form of old `old` in layout `p`.
  void Set(int old, int id, const Perm& p) {
    Forms& f = F(old);
    if (simplify::IsIdentityPermutation(p)) {
      f.written = id;
    } else {
      f.held = id;
      f.perm = p;
    }
  }

  /// Old value `id` in its written layout.
  int Written(int id) {
    Forms& f = F(id);
    if (f.written < 0) f.written = EmitTranspose(f.held, Inverse(f.perm), Old(id).shape);
    return f.written;
  }

  /// Old value `id` in layout `q`.
  int InLayout(int id, const Perm& q) {
    if (simplify::IsIdentityPermutation(q)) return Written(id);
    Forms& f = F(id);
    if (f.held >= 0 && f.perm == q) return f.held;
    auto it = extra_.find({id, q});
    if (it != extra_.end()) return it->second;
    int t;
    if (f.written >= 0) {
      t = EmitTranspose(f.written, q, StoredShape(Old(id).shape, q));
    } else {
      const Perm inv = Inverse(f.perm);
      Perm r;
      for (int64_t a : q) r.push_back(inv[static_cast<size_t>(a)]);
      t = EmitTranspose(f.held, r, StoredShape(Old(id).shape, q));
    }
    if (f.held < 0) {
      f.held = t;
      f.perm = q;
    } else {
      extra_[{id, q}] = t;
    }
    return t;
  }

  /// The layout the operands `ops` of an elementwise op (or concatenation) are best read in: that
  /// of the first operand held only permuted, when more operands are held only in it than
  /// only in other layouts. Broadcasts do not vote (they are re-broadcast at no cost).
  std::optional<Perm> Vote(const std::vector<int>& ops) const {
    const Perm* lead = nullptr;
    for (int o : ops)
      if (Old(o).op != OpType::BroadcastInDim && HeldOnly(o) != nullptr) {
        lead = HeldOnly(o);
        break;
      }
    if (lead == nullptr) return std::nullopt;
    int with = 0, against = 0;
    for (int o : ops) {
      if (Old(o).op == OpType::BroadcastInDim) continue;
      const Perm* p = HeldOnly(o);
      if (p != nullptr && *p == *lead) {
        ++with;
      } else if (p != nullptr || forms_[static_cast<size_t>(o)].held < 0) {
        ++against;
      }
    }
    if (with <= against) return std::nullopt;
    return *lead;
  }

  /// Old BroadcastInDim `id` made directly in layout `q`: its operand re-broadcast.
  int BroadcastInLayout(int id, const Perm& q) {
    const Instruction& b = Old(id);
    const int src = b.operands[0];
    Instruction out = b;
    out.shape = StoredShape(b.shape, q);
    out.attrs.shape = out.shape;
    if (Old(src).shape.Rank() == b.shape.Rank() && simplify::IsIdentityPermutation(b.attrs.axes)) {
      out.operands = {InLayout(src, q)};
      return Emit(std::move(out));
    }
    // The operand's axes land at new positions: sort them, transposing the operand to match.
    const Perm inv = Inverse(q);
    std::vector<int64_t> pos;
    for (int64_t a : b.attrs.axes) pos.push_back(inv[static_cast<size_t>(a)]);
    Perm order(pos.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      return pos[static_cast<size_t>(x)] < pos[static_cast<size_t>(y)];
    });
    int s = Written(src);
    if (!simplify::IsIdentityPermutation(order))
      s = EmitTranspose(s, order, StoredShape(Old(src).shape, order));
    std::sort(pos.begin(), pos.end());
    out.operands = {s};
    out.attrs.axes = pos;
    return Emit(std::move(out));
  }

  /// An operand of an op computed in layout `q`.
  int Operand(int o, const Perm& q) {
    const Forms& f = F(o);
    if (Old(o).op != OpType::BroadcastInDim || (f.held >= 0 && f.perm == q)) return InLayout(o, q);
    return BroadcastInLayout(o, q);
  }

  void Rebuild(int i) {
    const Node& node = m_.nodes[static_cast<size_t>(i)];
    const Instruction& inst = node.inst;
    if (IsChannelsFirstConv(node)) {
      Instruction conv = inst;
      conv.operands = {InLayout(inst.operands[0], kNhwc), Written(inst.operands[1])};
      ConvDims& c = conv.attrs.conv;
      c.input_batch = c.output_batch = 0;
      c.input_feature = c.output_feature = 3;
      c.input_spatial = c.output_spatial = {1, 2};
      conv.shape = StoredShape(inst.shape, kNhwc);
      Set(i, Emit(std::move(conv)), kNhwc);
      ++convs_;
      return;
    }
    if (node.kind == NodeKind::kPrimitive && !inst.shape.IsDynamic() && !inst.IsTuple() && Follow(i)) return;
    Node copy = node;
    for (int& o : copy.inst.operands) o = Written(o);
    nodes_.push_back(std::move(copy));
    F(i).written = static_cast<int>(nodes_.size()) - 1;
  }

  /// Builds node `i` in the layout of its operands when it can follow them; false otherwise.
  bool Follow(int i) {
    const Instruction& inst = Old(i);
    const OpType op = inst.op;
    const auto same_dims = [&](int o) { return Old(o).shape.Dimensions() == inst.shape.Dimensions(); };
    if ((simplify::IsElementwise(op) || op == OpType::Concatenate) && !inst.operands.empty() &&
        (op == OpType::Concatenate || std::all_of(inst.operands.begin(), inst.operands.end(), same_dims))) {
      const std::optional<Perm> q = Vote(inst.operands);
      if (!q || q->size() != static_cast<size_t>(inst.shape.Rank())) return false;
      Instruction e = inst;
      for (int& o : e.operands) o = Operand(o, *q);
      if (op == OpType::Concatenate) e.attrs.axis = Inverse(*q)[static_cast<size_t>(inst.attrs.axis)];
      e.shape = StoredShape(inst.shape, *q);
      Set(i, Emit(std::move(e)), *q);
      return true;
    }
    if (inst.operands.empty()) return false;
    const Perm* held = HeldOnly(inst.operands[0]);
    if (held == nullptr) return false;
    const Perm p = *held;
    const int x = F(inst.operands[0]).held;
    switch (op) {
      case OpType::Transpose: {
        // The stored array stays; its layout is now read against the transposed axes.
        const Perm inv = Inverse(inst.attrs.permutation);
        Perm q;
        for (int64_t a : p) q.push_back(inv[static_cast<size_t>(a)]);
        Set(i, x, q);
        return true;
      }
      case OpType::ReduceWindow:
      case OpType::Pad:
      case OpType::Slice: {
        Instruction w = inst;
        w.operands[0] = x;
        for (size_t k = 1; k < w.operands.size(); ++k) w.operands[k] = Written(inst.operands[k]);
        OpAttributes& a = w.attrs;
        a.window = Stored(a.window, p);
        a.strides = Stored(a.strides, p);
        a.padding = Stored(a.padding, p);
        a.input_dilations = Stored(a.input_dilations, p);
        a.kernel_dilations = Stored(a.kernel_dilations, p);
        a.starts = Stored(a.starts, p);
        a.limits = Stored(a.limits, p);
        w.shape = StoredShape(inst.shape, p);
        Set(i, Emit(std::move(w)), p);
        return true;
      }
      case OpType::BroadcastInDim:
        return FollowBroadcast(i, x, p);
      case OpType::Reshape:
        return FollowReshape(i, x, p);
      default:
        break;
    }
    if (GetOpCategory(op) == OpCategory::Reduce && inst.operands.size() == 1) {
      FollowReduce(i, x, p);
      return true;
    }
    return false;
  }

  /// A reduction of a value held in layout `p`: reduced there; its kept axes stay in held order.
  void FollowReduce(int i, int x, const Perm& p) {
    const Instruction& inst = Old(i);
    const Perm inv = Inverse(p);
    std::vector<bool> reduced(p.size(), false);
    for (int64_t a : inst.attrs.axes) reduced[static_cast<size_t>(a)] = true;
    Instruction r = inst;
    r.operands = {x};
    r.attrs.axes.clear();
    for (int64_t a : inst.attrs.axes) r.attrs.axes.push_back(inv[static_cast<size_t>(a)]);
    std::sort(r.attrs.axes.begin(), r.attrs.axes.end());
    // Written result axis of operand axis a: how many kept axes come before it.
    std::vector<int64_t> result_axis(p.size(), -1);
    int64_t n = 0;
    for (size_t a = 0; a < p.size(); ++a)
      if (!reduced[a]) result_axis[a] = n++;
    Perm q;
    for (int64_t a : p)
      if (!reduced[static_cast<size_t>(a)]) q.push_back(result_axis[static_cast<size_t>(a)]);
    r.shape = StoredShape(inst.shape, q);
    Set(i, Emit(std::move(r)), q);
  }

  /// A BroadcastInDim of a value held in layout `p`: the new axes go beside their written
  /// predecessors in the held order, so the stored operand's axes keep their order.
  bool FollowBroadcast(int i, int x, const Perm& p) {
    const Instruction& inst = Old(i);
    const std::vector<int64_t>& axes = inst.attrs.axes;
    Perm q;  // Result axes in stored order.
    for (int64_t a : p) q.push_back(axes[static_cast<size_t>(a)]);
    std::vector<bool> present(static_cast<size_t>(inst.shape.Rank()), false);
    for (int64_t a : axes) present[static_cast<size_t>(a)] = true;
    for (int64_t n = 0; n < inst.shape.Rank(); ++n) {
      if (present[static_cast<size_t>(n)]) continue;
      auto after = n == 0 ? q.end() : std::find(q.begin(), q.end(), n - 1);
      q.insert(after == q.end() ? q.begin() : after + 1, n);
      present[static_cast<size_t>(n)] = true;
    }
    const Perm inv = Inverse(q);
    Instruction b = inst;
    b.operands = {x};
    b.attrs.axes.clear();
    for (int64_t a : p) b.attrs.axes.push_back(inv[static_cast<size_t>(axes[static_cast<size_t>(a)])]);
    b.shape = StoredShape(inst.shape, q);
    b.attrs.shape = b.shape;
    Set(i, Emit(std::move(b)), q);
    return true;
  }

  /// A Reshape of a value held in layout `p`, when each group of axes it merges or splits lies
  /// together, in order, in the held layout: the stored array is reshaped, the groups in held order.
  bool FollowReshape(int i, int x, const Perm& p) {
    const Instruction& inst = Old(i);
    const Groups groups = ReshapeGroups(Old(inst.operands[0]).shape.Dimensions(), inst.shape.Dimensions());
    if (groups.empty()) return false;
    const Perm inv = Inverse(p);
    // Each group's place in the held order: its first input axis's (groups of no input axis, size
    // 1, follow the group before them).
    std::vector<std::pair<double, size_t>> order;
    double last = -1;
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int64_t>& in = groups[g].first;
      for (size_t k = 1; k < in.size(); ++k)
        if (inv[static_cast<size_t>(in[k])] != inv[static_cast<size_t>(in[k - 1])] + 1) return false;
      const double at = in.empty() ? last + 1e-3 : static_cast<double>(inv[static_cast<size_t>(in[0])]);
      order.emplace_back(at, g);
      last = at;
    }
    std::stable_sort(order.begin(), order.end());
    Perm q;
    for (const auto& [at, g] : order)
      for (int64_t a : groups[g].second) q.push_back(a);
    Instruction r = inst;
    r.operands = {x};
    r.shape = StoredShape(inst.shape, q);
    r.attrs.shape = r.shape;
    Set(i, Emit(std::move(r)), q);
    return true;
  }

  Module& m_;
  std::vector<Node> nodes_;
  std::vector<Forms> forms_;                   // By old id.
  std::map<std::pair<int, Perm>, int> extra_;  // Further layouts made of one value.
  int convs_ = 0, transposes_ = 0;
};

}  // namespace

PassReport ConvolutionsChannelsLast(Module& m) { return LayoutPass(m).Run(); }

}  // namespace kiln::compute::cpu
