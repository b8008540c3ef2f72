// Gradient rules of the window ops.
//  - ReduceWindow Sum: another windowed sum, over the adjoint dilated by the strides (the same
//    transposition as a convolution's input gradient, with a kernel of ones).
//  - ReduceWindow Max/Min without dilations and with non-negative padding: SelectAndScatter of the
//    adjoint (the first extreme element of each window, in row-major window order, gets it).
//  - ReduceWindow with dilations or negative padding (Max/Min), and Product: the window is taken
//    apart into its taps, each a strided Slice of the operand padded (and dilated) with the
//    reduction's identity. Max/Min route each window's adjoint to the first valid tap equal to the
//    result (the same convention as SelectAndScatter); Product multiplies the adjoint by the
//    product of the other taps (running products from both ends, exact with zeros).
//  - SelectAndScatter: the source's gradient gathers the adjoint at each window's selected
//    element (the same tap decomposition); the operand gets none (the selection is piecewise
//    constant).

#include <cstdint>
#include <limits>
#include <vector>

#include "core/check.h"
#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using compute::ReduceKind;
using V = std::vector<Node>;

namespace {

/// One axis of a window op: sizes and attributes (defaults filled in).
struct WinAxis {
  int64_t in = 0, window = 0, out = 0, stride = 1, base_dilation = 1, window_dilation = 1, low = 0, high = 0;
  /// Size of the operand after dilation and padding.
  int64_t Spread() const { return (in - 1) * base_dilation + 1 + low + high; }
};

/// The axes of the window op `c` describes; `windows` is the shape of its windows.
std::vector<WinAxis> Axes(const VJPContext& c, const Shape& windows) {
  const compute::OpAttributes& at = c.attrs();
  const Shape& x = c.OperandShape(0);
  std::vector<WinAxis> axes(static_cast<size_t>(x.Rank()));
  for (size_t i = 0; i < axes.size(); ++i) {
    WinAxis& a = axes[i];
    a.in = x.Dimensions()[i];
    a.window = at.window[i];
    a.out = windows.Dimensions()[i];
    if (!at.strides.empty()) a.stride = at.strides[i];
    if (!at.input_dilations.empty()) a.base_dilation = at.input_dilations[i];
    if (!at.kernel_dilations.empty()) a.window_dilation = at.kernel_dilations[i];
    if (!at.padding.empty()) {
      a.low = at.padding[i].low;
      a.high = at.padding[i].high;
    }
    // A dynamic axis (a batch) must be one the windows leave alone: the sizes below then cancel.
    const bool dynamic = a.in == Shape::kDynamic || a.out == Shape::kDynamic;
    if (dynamic && (a.window != 1 || a.stride != 1 || a.low != 0 || a.high != 0 || a.base_dilation != 1 ||
                    a.window_dilation != 1)) {
      kiln::detail::Throw(
          "{}: the gradient needs axis {} of {} static: windows, strides, padding or dilations act on it",
          compute::OpName(c.inst().op), i, x);
    }
  }
  return axes;
}

/// Whether any axis pads or dilates (some taps then read padding or holes).
bool HasHoles(const std::vector<WinAxis>& axes) {
  for (const WinAxis& a : axes) {
    if (a.low > 0 || a.high > 0 || a.base_dilation > 1) return true;
  }
  return false;
}

/// `x` padded by the windows' padding and dilated by their base dilation, holes holding `fill`.
Node Spread(Node x, Node fill, const std::vector<WinAxis>& axes) {
  compute::OpAttributes at;
  for (const WinAxis& a : axes) at.padding.push_back({a.low, a.high, a.base_dilation - 1});
  return Prim(OpType::Pad, {x, fill}, std::move(at));
}

/// The value of tap `k` (one index per axis) in every window: a strided Slice of the spread operand.
Node Tap(Node spread, const std::vector<int64_t>& k, const std::vector<WinAxis>& axes) {
  compute::OpAttributes at;
  for (size_t i = 0; i < axes.size(); ++i) {
    const WinAxis& a = axes[i];
    const int64_t start = k[i] * a.window_dilation;
    at.starts.push_back(start);
    at.limits.push_back(start + (a.out - 1) * a.stride + 1);
    at.strides.push_back(a.stride);
  }
  return Prim(OpType::Slice, {spread}, std::move(at));
}

/// Tap's transpose: `v` (windows-shaped) placed at tap k's positions of the spread operand, zeros
/// elsewhere.
Node Untap(Node v, const std::vector<int64_t>& k, const std::vector<WinAxis>& axes) {
  compute::OpAttributes at;
  for (size_t i = 0; i < axes.size(); ++i) {
    const WinAxis& a = axes[i];
    const int64_t start = k[i] * a.window_dilation, last = start + (a.out - 1) * a.stride;
    at.padding.push_back({start, a.Spread() - 1 - last, a.stride - 1});
  }
  return Prim(OpType::Pad, {v, ScalarLike(v, 0)}, std::move(at));
}

/// Spread's transpose: the operand's share of a gradient of the spread operand (padding cropped,
/// cropped edges back as zeros, dilation holes dropped).
Node Unspread(Node g, const std::vector<WinAxis>& axes) {
  compute::OpAttributes unpad;
  for (const WinAxis& a : axes) unpad.padding.push_back({-a.low, -a.high, 0});
  Node dilated = Prim(OpType::Pad, {g, ScalarLike(g, 0)}, std::move(unpad));
  compute::OpAttributes at;
  for (const WinAxis& a : axes) {
    at.starts.push_back(0);
    at.limits.push_back((a.in - 1) * a.base_dilation + 1);
    at.strides.push_back(a.base_dilation);
  }
  return Prim(OpType::Slice, {dilated}, std::move(at));
}

/// Every tap of the window, row-major (the order in which windows are reduced and selected).
std::vector<std::vector<int64_t>> AllTaps(const std::vector<WinAxis>& axes) {
  std::vector<std::vector<int64_t>> taps;
  std::vector<int64_t> k(axes.size(), 0);
  while (true) {
    taps.push_back(k);
    size_t i = axes.size();
    while (i-- > 0) {
      if (++k[i] < axes[i].window) break;
      k[i] = 0;
    }
    if (i == static_cast<size_t>(-1)) return taps;
  }
}

/// The reduction's identity (what padding and dilation holes hold).
double Identity(ReduceKind kind) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (kind) {
    case ReduceKind::Product:
      return 1;
    case ReduceKind::Max:
      return -kInf;
    case ReduceKind::Min:
      return kInf;
    default:
      return 0;
  }
}

/// For each tap, whether it is the window's selected element: the first valid tap (not padding
/// or a hole) equal to the window's extreme `y` (a NaN `y`: the first NaN).
std::vector<Node> Selections(Node x, Node y, ReduceKind kind, const std::vector<WinAxis>& axes,
                             const std::vector<std::vector<int64_t>>& taps) {
  Graph& g = x.graph();
  Node spread = Spread(x, ScalarLike(x, Identity(kind)), axes);
  Node valid;
  if (HasHoles(axes))
    valid = Spread(Ones(g, x.shape().WithDType(DType::Bool)), Zeros(g, Shape(DType::Bool, {})), axes);
  Node y_nan = IsNaN(y), taken;
  std::vector<Node> chosen;
  for (const auto& k : taps) {
    Node t = Tap(spread, k, axes);
    Node hit = LogicalOr(Equal(t, y), LogicalAnd(IsNaN(t), y_nan));
    if (valid.Ok()) hit = LogicalAnd(hit, Tap(valid, k, axes));
    chosen.push_back(taken.Ok() ? LogicalAnd(hit, LogicalNot(taken)) : hit);
    taken = taken.Ok() ? LogicalOr(taken, hit) : hit;
  }
  return chosen;
}

/// a + b, or b when a is invalid (nothing accumulated yet).
Node SumNodes(Node a, Node b) { return a.Ok() ? a + b : b; }

/// ReduceWindow Sum: a windowed sum of the adjoint dilated by the strides, with the window's
/// dilation, stepping by the base dilation.
Node SumGradient(const VJPContext& c, const std::vector<WinAxis>& axes) {
  compute::OpAttributes at;
  at.reduce_kind = ReduceKind::Sum;
  for (const WinAxis& a : axes) {
    const int64_t dilated = (a.in - 1) * a.base_dilation + 1;
    at.window.push_back(a.window);
    at.strides.push_back(a.base_dilation);
    at.input_dilations.push_back(a.stride);
    at.kernel_dilations.push_back(a.window_dilation);
    at.padding.push_back(
        {(a.window - 1) * a.window_dilation - a.low, dilated - 1 - (a.out - 1) * a.stride + a.low, 0});
  }
  return Prim(OpType::ReduceWindow, {c.Adjoint()}, std::move(at));
}

/// Whether SelectAndScatter can route the gradient: no dilations, no negative padding.
bool SelectAndScatterFits(const std::vector<WinAxis>& axes) {
  for (const WinAxis& a : axes) {
    if (a.base_dilation != 1 || a.window_dilation != 1 || a.low < 0 || a.high < 0) return false;
  }
  return true;
}

/// ReduceWindow Max/Min: the adjoint scattered to each window's first extreme element.
Node ExtremeGradient(const VJPContext& c, const std::vector<WinAxis>& axes) {
  const compute::OpAttributes& at = c.attrs();
  if (SelectAndScatterFits(axes)) {
    compute::OpAttributes sas;
    sas.reduce_kind = at.reduce_kind;
    sas.window = at.window;
    sas.strides = at.strides;
    sas.padding = at.padding;
    return Prim(OpType::SelectAndScatter, {c.X(0), c.Adjoint()}, std::move(sas));
  }
  const std::vector<std::vector<int64_t>> taps = AllTaps(axes);
  const std::vector<Node> chosen = Selections(c.X(0), c.Y(), at.reduce_kind, axes, taps);
  Node a = c.Adjoint(), g;
  for (size_t j = 0; j < taps.size(); ++j)
    g = SumNodes(g, Untap(Where(chosen[j], a, ScalarLike(a, 0)), taps[j], axes));
  return Unspread(g, axes);
}

/// ReduceWindow Product: each tap gets the adjoint times the product of the window's other taps.
Node ProductGradient(const VJPContext& c, const std::vector<WinAxis>& axes) {
  const std::vector<std::vector<int64_t>> taps = AllTaps(axes);
  Node x = c.X(0);
  Node spread = Spread(x, ScalarLike(x, 1), axes);
  std::vector<Node> t;
  for (const auto& k : taps) t.push_back(Tap(spread, k, axes));
  // before[j] = t[0] * ... * t[j-1], after[j] = t[j+1] * ... (invalid: empty product).
  std::vector<Node> before(taps.size()), after(taps.size());
  for (size_t j = 1; j < taps.size(); ++j)
    before[j] = before[j - 1].Ok() ? before[j - 1] * t[j - 1] : t[j - 1];
  for (size_t j = taps.size() - 1; j-- > 0;)
    after[j] = after[j + 1].Ok() ? after[j + 1] * t[j + 1] : t[j + 1];
  Node g;
  for (size_t j = 0; j < taps.size(); ++j) {
    Node d = c.Adjoint();
    if (before[j].Ok()) d = d * before[j];
    if (after[j].Ok()) d = d * after[j];
    g = SumNodes(g, Untap(d, taps[j], axes));
  }
  return Unspread(g, axes);
}

// The operand's gradient by reduction kind; zeros when the operand or the result is empty.
V ReduceWindowRule(const VJPContext& c) {
  const Shape& xs = c.OperandShape(0);
  if (KnownEmpty(xs) || KnownEmpty(c.node().shape())) return {ZerosOf(c.graph(), xs)};
  const std::vector<WinAxis> axes = Axes(c, c.node().shape());
  switch (c.attrs().reduce_kind) {
    case ReduceKind::Sum:
      return {SumGradient(c, axes)};
    case ReduceKind::Product:
      return {ProductGradient(c, axes)};
    case ReduceKind::Max:
    case ReduceKind::Min:
      return {ExtremeGradient(c, axes)};
    default:
      kiln::detail::Throw("ReduceWindow: no gradient for this reduce_kind");
  }
}

// Source: the adjoint at each window's selected element; operand: nothing.
V SelectAndScatterRule(const VJPContext& c) {
  if (!c.Needs(1)) return {Node(), Node()};
  const Shape &xs = c.OperandShape(0), &ss = c.OperandShape(1);
  if (KnownEmpty(xs) || KnownEmpty(ss)) return {Node(), ZerosOf(c.graph(), ss)};
  const compute::OpAttributes& at = c.attrs();
  const std::vector<WinAxis> axes = Axes(c, ss);
  Node x = c.X(0);
  compute::OpAttributes rw;
  rw.reduce_kind = at.reduce_kind;
  rw.window = at.window;
  rw.strides = at.strides;
  rw.padding = at.padding;
  Node extreme = Prim(OpType::ReduceWindow, {x}, std::move(rw));
  const std::vector<std::vector<int64_t>> taps = AllTaps(axes);
  const std::vector<Node> chosen = Selections(x, extreme, at.reduce_kind, axes, taps);
  Node a = Spread(c.Adjoint(), ScalarLike(c.Adjoint(), 0), axes), g;
  for (size_t j = 0; j < taps.size(); ++j) {
    Node t = Tap(a, taps[j], axes);
    g = SumNodes(g, Where(chosen[j], t, ScalarLike(t, 0)));
  }
  return {Node(), g};
}

}  // namespace

void RegisterWindowRules(RuleTable& t) {
  t.Set(OpType::ReduceWindow, ReduceWindowRule);
  t.Set(OpType::SelectAndScatter, SelectAndScatterRule);
}

}  // namespace kiln::graph::autodiff
