// ONNX's shape and data-movement operators. The sizes they take as inputs (Reshape's shape,
// Slice's starts...) must be known when the model is imported: initializers, Constants, or
// shape computations the builder folded.

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "kiln/graph/control_flow.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops_util.h"
#include "kiln/graph/sort.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

V Constant(const Context& c) {
  if (c.HasAttr("value")) return {Const(c.graph(), c.TensorAttr("value"))};
  if (c.HasAttr("value_float")) return {Const(c.graph(), Tensor::FromScalar(c.Float("value_float", 0)))};
  if (c.HasAttr("value_int")) return {Const(c.graph(), Tensor::FromScalar(c.Int("value_int", 0)))};
  if (c.HasAttr("value_floats")) return {Const(c.graph(), Tensor::FromValue(c.FloatList("value_floats")))};
  if (c.HasAttr("value_ints")) return {Const(c.graph(), Tensor::FromValue(c.IntList("value_ints")))};
  c.Fail("no value attribute kiln reads (value, value_float(s), value_int(s))");
}

V ShapeOp(const Context& c) {
  std::vector<int64_t> dims = StaticDims(c, c.In(0), "Shape");
  const int rank = static_cast<int>(dims.size());
  int64_t start = c.Int("start", 0), end = c.Int("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  std::vector<int64_t> out(dims.begin() + start, dims.begin() + std::max(start, end));
  return {Const(c.graph(), Tensor::FromValue(out))};
}

V Size(const Context& c) {
  std::vector<int64_t> dims = StaticDims(c, c.In(0), "Size");
  return {Const(c.graph(), Tensor::FromScalar(
                               std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>())))};
}

V Reshape(const Context& c) {
  Node x = c.In(0);
  std::vector<int64_t> to = c.opset() < 5 ? c.IntList("shape") : c.Ints(1, "shape");
  std::vector<int64_t> dims = StaticDims(c, x, "Reshape");
  const bool allow_zero = c.Int("allowzero", 0) != 0;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == 0 && !allow_zero) {
      if (i >= dims.size())
        c.Fail(fmt::format("shape entry {} copies a dimension x ({}) lacks", i, x.shape()));
      to[i] = dims[i];
    }
  }
  return {graph::Reshape(x, to)};
}

V Flatten(const Context& c) {
  Node x = c.In(0);
  std::vector<int64_t> dims = StaticDims(c, x, "Flatten");
  const int rank = x.rank();
  const int64_t axis = c.Int("axis", 1);
  const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
  if (a < 0 || a > rank) c.Fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) (i < a ? outer : inner) *= dims[static_cast<size_t>(i)];
  return {graph::Reshape(x, {outer, inner})};
}

V Transpose(const Context& c) {
  Node x = c.In(0);
  std::vector<int64_t> perm = c.IntList("perm");
  std::vector<int> p;
  if (perm.empty()) {
    for (int i = x.rank() - 1; i >= 0; --i) p.push_back(i);
  } else {
    for (int64_t a : perm) p.push_back(Axis(c, a, x.rank()));
  }
  return {TransposeAllAxes(x, p)};
}

std::vector<int64_t> AxesOf(const Context& c, int input, int64_t since_opset) {
  return c.opset() < since_opset ? c.IntList("axes")
                                 : (c.Has(input) ? c.Ints(input, "axes") : std::vector<int64_t>{});
}

V Squeeze(const Context& c) {
  Node x = c.In(0);
  std::vector<int> axes;
  for (int64_t a : AxesOf(c, 1, 13)) axes.push_back(Axis(c, a, x.rank()));
  return {graph::Squeeze(x, axes)};
}

V Unsqueeze(const Context& c) {
  Node x = c.In(0);
  std::vector<int64_t> axes = AxesOf(c, 1, 13);
  const int rank = x.rank() + static_cast<int>(axes.size());
  std::vector<int> norm;
  for (int64_t a : axes) norm.push_back(Axis(c, a, rank));
  std::sort(norm.begin(), norm.end());
  std::vector<int64_t> dims = x.shape().Dimensions(), out;
  size_t next = 0;
  for (int i = 0; i < rank; ++i) {
    if (std::find(norm.begin(), norm.end(), i) != norm.end()) {
      out.push_back(1);
    } else {
      out.push_back(dims.at(next++));
    }
  }
  if (x.shape().IsDynamic()) {
    // Insert the axes one by one: InsertAxes keeps dynamic axes.
    for (int a : norm) x = InsertAxes(x, {a});
    return {x};
  }
  return {graph::Reshape(x, out)};
}

V Concat(const Context& c) {
  std::vector<Node> xs;
  for (int i = 0; i < c.NumInputs(); ++i)
    if (c.Has(i)) xs.push_back(c.In(i));
  if (xs.empty()) c.Fail("no inputs");
  return {Concatenate(xs, Axis(c, c.Int("axis", 0), xs[0].rank()))};
}

}  // namespace

Node GatherAlongAxis(Node x, Node idx, int axis) {
  // Move the axis first, gather rows, and move the gathered axes back into place.
  std::vector<int> perm = {axis};
  for (int i = 0; i < x.rank(); ++i)
    if (i != axis) perm.push_back(i);
  Node front = axis == 0 ? x : TransposeAllAxes(x, perm);
  Node rows = graph::Gather(front, InsertAxes(idx, {-1}));  // [idx..., rest...]
  if (axis == 0) return rows;
  // rows: [idx dims..., x axes but `axis`...] -> x axes before `axis`, idx dims, the rest.
  const int ni = idx.rank();
  std::vector<int> back;
  for (int i = 0; i < axis; ++i) back.push_back(ni + i);
  for (int i = 0; i < ni; ++i) back.push_back(i);
  for (int i = axis; i < x.rank() - 1; ++i) back.push_back(ni + i);
  return TransposeAllAxes(rows, back);
}

Node MoveLastAxisTo(Node x, int axis) {
  const int rank = x.rank();
  if (axis == rank - 1) return x;
  std::vector<int> perm;
  for (int i = 0; i < rank - 1; ++i) {
    if (i == axis) perm.push_back(rank - 1);
    perm.push_back(i);
  }
  return TransposeAllAxes(x, perm);
}

namespace {

V Gather(const Context& c) {
  Node x = c.In(0), idx = c.In(1);
  const int axis = Axis(c, c.Int("axis", 0), x.rank());
  return {GatherAlongAxis(x, NormalizeIndices(x, idx, axis), axis)};  // Negative ones from the end.
}

V Slice(const Context& c) {
  Node x = c.In(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.IntList("starts");
    ends = c.IntList("ends");
    axes = c.IntList("axes");
  } else {
    starts = c.Ints(1, "starts");
    ends = c.Ints(2, "ends");
    if (c.Has(3)) axes = c.Ints(3, "axes");
    if (c.Has(4)) steps = c.Ints(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.Fail("starts, ends, axes and steps must have the same length");
  std::vector<int64_t> dims = StaticDims(c, x, "Slice");
  std::vector<AxisRangeSpec> ranges(static_cast<size_t>(x.rank()), AxisRange());
  std::vector<int> reversed;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = Axis(c, axes[i], x.rank());
    const int64_t d = dims[static_cast<size_t>(a)], step = steps[i];
    if (step == 0) c.Fail("a step is 0");
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += d;
      return std::clamp(v, lo, hi);
    };
    if (step > 0) {
      const int64_t s = clamp(starts[i], 0, d), e = clamp(ends[i], 0, d);
      ranges[static_cast<size_t>(a)] = AxisRange(s, std::max(s, e)).Stride(step);
    } else {
      // Backwards from start (inclusive) to end (exclusive): reverse the axis and walk forwards.
      const int64_t s = clamp(starts[i], -1, d - 1), e = clamp(ends[i], -1, d - 1);
      const int64_t rs = d - 1 - s, re = d - 1 - e;
      reversed.push_back(a);
      ranges[static_cast<size_t>(a)] = AxisRange(rs, std::max(rs, re)).Stride(-step);
    }
  }
  if (!reversed.empty()) x = Reverse(x, reversed);
  return {graph::Slice(x, ranges)};
}

V Expand(const Context& c) {
  Node x = c.In(0);
  std::vector<int64_t> to = c.Ints(1, "shape");
  const int rank = std::max(x.rank(), static_cast<int>(to.size()));
  x = ExpandLeftToRank(x, rank);
  while (static_cast<int>(to.size()) < rank) to.insert(to.begin(), 1);
  std::vector<int64_t> dims = StaticDims(c, x, "Expand");
  for (int i = 0; i < rank; ++i) {
    const auto k = static_cast<size_t>(i);
    if (to[k] == 1)
      to[k] = dims[k];
    else if (dims[k] != 1 && dims[k] != to[k])
      c.Fail(fmt::format("cannot expand {} to [{}]", x.shape(), fmt::join(to, ", ")));
  }
  return {BroadcastToDims(x, to)};
}

V ConstantOfShape(const Context& c) {
  std::vector<int64_t> dims = c.Ints(0, "shape");
  Tensor value = c.HasAttr("value") ? c.TensorAttr("value") : Tensor::FromScalar(0.0f);
  return {BroadcastToDims(graph::Reshape(Const(c.graph(), value), {}), dims)};
}

V Range(const Context& c) {
  const std::optional<Tensor>& s = c.Constant(0);
  const std::optional<Tensor>& l = c.Constant(1);
  const std::optional<Tensor>& d = c.Constant(2);
  if (!s || !l || !d) c.Fail("start, limit and delta must be known when the model is imported");
  const double start = s->ToDoubles()[0], limit = l->ToDoubles()[0], delta = d->ToDoubles()[0];
  if (delta == 0) c.Fail("delta is 0");
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
  Node iota = Iota(c.graph(), Shape(c.In(0).dtype(), {n}), 0);
  return {iota * c.In(2) + c.In(0)};
}

V Tile(const Context& c) {
  Node x = c.In(0);
  std::vector<int64_t> reps = c.Ints(1, "repeats");
  if (static_cast<int>(reps.size()) != x.rank()) c.Fail("repeats must have one entry per axis");
  std::vector<int64_t> dims = StaticDims(c, x, "Tile");
  // [d0, d1] -> [1, d0, 1, d1] broadcast to [r0, d0, r1, d1] -> [r0*d0, r1*d1].
  std::vector<int64_t> inter, big, out;
  for (size_t i = 0; i < dims.size(); ++i) {
    inter.insert(inter.end(), {1, dims[i]});
    big.insert(big.end(), {reps[i], dims[i]});
    out.push_back(reps[i] * dims[i]);
  }
  return {graph::Reshape(BroadcastToDims(graph::Reshape(x, inter), big), out)};
}

V Split(const Context& c) {
  Node x = c.In(0);
  const int axis = Axis(c, c.Int("axis", 0), x.rank());
  std::vector<int64_t> dims = StaticDims(c, x, "Split");
  std::vector<int64_t> sizes =
      c.opset() < 13 ? c.IntList("split") : (c.Has(1) ? c.Ints(1, "split") : std::vector<int64_t>{});
  const int n = c.node().output_size();
  const int64_t d = dims[static_cast<size_t>(axis)];
  if (sizes.empty()) {
    const int64_t parts = c.HasAttr("num_outputs") ? c.Int("num_outputs", n) : n;
    const int64_t each = (d + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, d - i * each));
  }
  V out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    std::vector<AxisRangeSpec> r(static_cast<size_t>(x.rank()), AxisRange());
    r[static_cast<size_t>(axis)] = AxisRange(start, start + s);
    out.push_back(graph::Slice(x, r));
    start += s;
  }
  if (start != d) c.Fail(fmt::format("split sizes [{}] do not add up to {}", fmt::join(sizes, ", "), d));
  return out;
}

V Trilu(const Context& c) {
  Node x = c.In(0);
  if (x.rank() < 2) c.Fail("needs rank 2 or more");
  int64_t k = 0;
  if (c.Has(1)) k = c.Ints(1, "k").at(0);
  const std::vector<int64_t> dims = StaticDims(c, x, "Trilu");
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  Node i = Iota(c.graph(), Shape(DType::Int64, {rows, cols}), 0),
       j = Iota(c.graph(), Shape(DType::Int64, {rows, cols}), 1);
  Node diff = j - i;  // The diagonal index of each element.
  Node keep = c.Int("upper", 1) != 0 ? GreaterOrEqual(diff, ScalarLike(diff, k))
                                     : LessOrEqual(diff, ScalarLike(diff, k));
  keep = BroadcastToDims(ExpandLeftToRank(keep, x.rank()), dims);
  return {graph::Where(keep, x, ZerosLike(x))};
}

V GatherElements(const Context& c) {
  Node x = c.In(0), idx = c.In(1);
  const int axis = Axis(c, c.Int("axis", 0), x.rank());
  return {TakeAlongAxis(x, NormalizeIndices(x, idx, axis), axis)};
}

/// Pads `axis` of x by `low` and `high` elements copying its border ("edge") or mirroring it
/// without repeating the border ("reflect"); negative amounts crop.
Node PadBorder(const Context& c, Node x, int axis, int64_t low, int64_t high, bool reflect) {
  const int64_t d = x.shape().Dimensions()[static_cast<size_t>(axis)];
  auto range = [&](int64_t from, int64_t to) {
    std::vector<AxisRangeSpec> r(static_cast<size_t>(x.rank()), AxisRange());
    r[static_cast<size_t>(axis)] = AxisRange(from, to);
    return graph::Slice(x, r);
  };
  if (low < 0 || high < 0) {
    x = range(std::max<int64_t>(-low, 0), d - std::max<int64_t>(-high, 0));
    return PadBorder(c, x, axis, std::max<int64_t>(low, 0), std::max<int64_t>(high, 0), reflect);
  }
  if (low == 0 && high == 0) return x;
  if (reflect && (low >= d || high >= d))
    c.Fail(fmt::format("reflect padding of {} needs more than {} elements", std::max(low, high), d));
  std::vector<Node> parts;
  auto border = [&](int64_t at, int64_t n) {
    std::vector<int64_t> dims = x.shape().Dimensions();
    dims[static_cast<size_t>(axis)] = n;
    return BroadcastToDims(range(at, at + 1), dims);
  };
  if (low > 0) parts.push_back(reflect ? Reverse(range(1, low + 1), {axis}) : border(0, low));
  parts.push_back(x);
  if (high > 0) parts.push_back(reflect ? Reverse(range(d - 1 - high, d - 1), {axis}) : border(d - 1, high));
  return Concatenate(parts, axis);
}

V PadOp(const Context& c) {
  Node x = c.In(0);
  const std::string mode = c.String("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    c.Fail(fmt::format("mode {} is not constant, reflect or edge", mode));
  std::vector<int64_t> pads =
      c.opset() < 11 ? c.IntList(c.opset() < 2 ? "paddings" : "pads") : c.Ints(1, "pads");
  const int rank = x.rank();
  std::vector<int> axes;
  if (c.opset() >= 18 && c.Has(3)) {
    for (int64_t a : c.Ints(3, "axes")) axes.push_back(Axis(c, a, rank));
  } else {
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size())
    c.Fail(fmt::format("pads has {} entries, expected {}", pads.size(), 2 * axes.size()));
  if (mode != "constant") {
    StaticDims(c, x, "Pad");
    for (size_t i = 0; i < axes.size(); ++i)
      x = PadBorder(c, x, axes[i], pads[i], pads[i + axes.size()], mode == "reflect");
    return {x};
  }
  std::vector<compute::PadAxis> p(static_cast<size_t>(rank));
  for (size_t i = 0; i < axes.size(); ++i)
    p[static_cast<size_t>(axes[i])] = compute::PadAxis{pads[i], pads[i + axes.size()], 0};
  Node fill = c.opset() < 11 ? ScalarLike(x, c.Float("value", 0))
                             : (c.Has(2) ? graph::Reshape(c.In(2), {}) : ScalarLike(x, 0));
  return {graph::Pad(x, fill, p)};
}

V OneHotOp(const Context& c) {
  Node idx = c.In(0);
  const std::optional<Tensor>& depth_t = c.Constant(1);
  if (!depth_t) c.Fail("depth must be known when the model is imported");
  const auto depth = static_cast<int64_t>(depth_t->ToDoubles().at(0));
  Node values = c.In(2);
  const int rank = idx.rank() + 1;
  const int axis = Axis(c, c.Int("axis", -1), rank);
  if (!IsInt(idx.dtype())) idx = ConvertDType(idx, DType::Int64);
  idx = graph::Where(Less(idx, ZerosLike(idx)), idx + ScalarLike(idx, depth), idx);
  Node hot = OneHot(idx, depth, DType::Bool);  // [..., depth]
  hot = MoveLastAxisTo(hot, axis);
  Node off = graph::Reshape(Slice(values, {AxisRange(0, 1)}), {}),
       on = graph::Reshape(Slice(values, {AxisRange(1, 2)}), {});
  return {graph::Where(hot, BroadcastToDims(on, hot.shape().Dimensions()),
                       BroadcastToDims(off, hot.shape().Dimensions()))};
}

V DepthToSpace(const Context& c) {
  Node x = c.In(0);
  const std::vector<int64_t> d = StaticDims(c, x, "DepthToSpace");
  if (d.size() != 4) c.Fail("needs rank 4");
  const int64_t b = c.Int("blocksize", 0), n = d[0], ch = d[1], h = d[2], w = d[3];
  if (b < 1 || ch % (b * b) != 0) c.Fail(fmt::format("blocksize {} does not divide {} channels", b, ch));
  const bool crd = c.String("mode", "DCR") == "CRD";
  Node y = crd ? graph::Reshape(x, {n, ch / (b * b), b, b, h, w})
               : graph::Reshape(x, {n, b, b, ch / (b * b), h, w});
  y = crd ? TransposeAllAxes(y, {0, 1, 4, 2, 5, 3}) : TransposeAllAxes(y, {0, 3, 4, 1, 5, 2});
  return {graph::Reshape(y, {n, ch / (b * b), h * b, w * b})};
}

V SpaceToDepth(const Context& c) {
  Node x = c.In(0);
  const std::vector<int64_t> d = StaticDims(c, x, "SpaceToDepth");
  if (d.size() != 4) c.Fail("needs rank 4");
  const int64_t b = c.Int("blocksize", 0), n = d[0], ch = d[1], h = d[2], w = d[3];
  if (b < 1 || h % b != 0 || w % b != 0) c.Fail(fmt::format("blocksize {} does not divide {}x{}", b, h, w));
  Node y = graph::Reshape(x, {n, ch, h / b, b, w / b, b});
  y = TransposeAllAxes(y, {0, 3, 5, 1, 2, 4});
  return {graph::Reshape(y, {n, ch * b * b, h / b, w / b})};
}

/// Index vectors [..., k] with negative entries counted from the end of x's axes
/// [batch, batch + k).
Node WrapIndices(const Context& c, Node x, Node idx, int batch = 0) {
  if (idx.rank() < 1) c.Fail(fmt::format("the indices must have rank 1 or more, got {}", idx.shape()));
  idx = ConvertDType(idx, DType::Int64);
  const int64_t k = idx.shape().Dimensions().back();
  if (k == Shape::kDynamic || k < 0 || batch + k > x.rank())
    c.Fail(fmt::format("index vectors {} do not fit {}", idx.shape(), x.shape()));
  std::vector<int64_t> dims = StaticDims(c, x, c.node().op_type().c_str());
  dims = std::vector<int64_t>(dims.begin() + batch, dims.begin() + batch + k);
  Node limits = ExpandLeftToRank(Const(c.graph(), Tensor::FromValue(dims)), idx.rank());
  return graph::Where(Less(idx, ZerosLike(idx)), idx + limits, idx);
}

/// x with each element at index vectors idx [..., k] multiplied by the updates [..., rest] there,
/// in order: a loop over the index vectors, each a gather, a product and a scatter (so repeated
/// index vectors multiply up).
Node ScatterMul(const Context& c, Node x, Node idx, Node updates) {
  const char* op = c.node().op_type().c_str();
  const std::vector<int64_t> id = StaticDims(c, idx, op), ud = StaticDims(c, updates, op);
  const int lead = idx.rank() - 1;
  const int64_t k = id.back();
  if (updates.rank() < lead || !std::equal(id.begin(), id.end() - 1, ud.begin()))
    c.Fail(fmt::format("updates {} do not match indices {}", updates.shape(), idx.shape()));
  int64_t m = 1;
  for (int i = 0; i < lead; ++i) m *= id[static_cast<size_t>(i)];
  if (m == 0) return x;
  std::vector<int64_t> one(ud.begin() + lead, ud.end()), flat = {m};
  one.insert(one.begin(), 1);
  flat.insert(flat.end(), ud.begin() + lead, ud.end());
  Node all_idx = graph::Reshape(idx, {m, k}), all_up = graph::Reshape(updates, flat);
  const std::vector<Node> r =
      ForLoop(m,
              [&](Node i, const std::vector<Node>& s) {
                Node zero = ScalarLike(i, 0);
                Node at = DynamicSlice(s[1], {i, zero}, {1, k});  // [1, k]
                std::vector<Node> start(one.size(), zero);
                start[0] = i;
                Node u = DynamicSlice(s[2], start, one);  // [1, rest...]
                return std::vector<Node>{ScatterUpdate(s[0], at, graph::Gather(s[0], at) * u), s[1], s[2]};
              },
              {x, all_idx, all_up});
  return r[0];
}

/// Combines `updates` into x at index vectors `idx` [..., k] as `reduction` says.
Node ScatterAt(const Context& c, Node x, Node idx, Node updates) {
  const std::string r = c.String("reduction", "none");
  if (r == "none") return ScatterUpdate(x, idx, updates);
  if (r == "add") return ScatterAdd(x, idx, updates);
  if (r == "max") return ScatterMax(x, idx, updates);
  if (r == "min") return ScatterMin(x, idx, updates);
  if (r == "mul") return ScatterMul(c, x, idx, updates);
  c.Fail(fmt::format("reduction {} is not supported", r));
}

/// GatherND: the slices of x at index vectors [..., k]; with batch_dims b, x and the indices
/// share their first b axes and each index vector addresses its own batch entry (the batch
/// coordinates are prepended to the index vectors).
V GatherND(const Context& c) {
  Node x = c.In(0), idx = c.In(1);
  const int64_t b = c.Int("batch_dims", 0);
  if (b < 0 || b >= std::min(x.rank(), idx.rank()))
    c.Fail(fmt::format("batch_dims {} must be in [0, {})", b, std::min(x.rank(), idx.rank())));
  const int batch = static_cast<int>(b);
  idx = WrapIndices(c, x, idx, batch);
  if (batch > 0) {
    const std::vector<int64_t> xd = StaticDims(c, x, "GatherND"), id = StaticDims(c, idx, "GatherND");
    if (!std::equal(xd.begin(), xd.begin() + batch, id.begin()))
      c.Fail(fmt::format("the first {} axes of {} and the indices {} differ", batch, x.shape(), idx.shape()));
    std::vector<int64_t> at = id;
    at.back() = 1;
    std::vector<Node> parts;
    for (int a = 0; a < batch; ++a) parts.push_back(Iota(c.graph(), Shape(DType::Int64, at), a));
    parts.push_back(idx);
    idx = Concatenate(parts, -1);
  }
  return {graph::Gather(x, idx)};
}

V ScatterND(const Context& c) {
  Node x = c.In(0);
  return {ScatterAt(c, x, WrapIndices(c, x, c.In(1)), c.In(2))};
}

V ScatterElements(const Context& c) {
  Node x = c.In(0), idx = ConvertDType(c.In(1), DType::Int64), updates = c.In(2);
  const int axis = Axis(c, c.Int("axis", 0), x.rank());
  const std::vector<int64_t> xd = StaticDims(c, x, "ScatterElements");
  const std::vector<int64_t> id = StaticDims(c, idx, "ScatterElements");
  idx = NormalizeIndices(x, idx, axis);
  // The full coordinates of each update: its own position, with `axis` replaced by the index.
  std::vector<Node> coords;
  for (int a = 0; a < x.rank(); ++a)
    coords.push_back(a == axis ? idx : Iota(c.graph(), Shape(DType::Int64, id), a));
  return {ScatterAt(c, x, Stack(coords, -1), updates)};
}

/// ReverseSequence: along `time_axis`, the first sequence_lens[b] elements of each batch entry b
/// reversed, the rest kept.
V ReverseSequence(const Context& c) {
  Node x = c.In(0);
  const std::vector<int64_t> dims = StaticDims(c, x, "ReverseSequence");
  const int batch = Axis(c, c.Int("batch_axis", 1), x.rank()),
            time = Axis(c, c.Int("time_axis", 0), x.rank());
  if (batch == time) c.Fail("batch_axis and time_axis must differ");
  Node t = Iota(c.graph(), Shape(DType::Int64, dims), time);
  // The lengths along the batch axis, broadcast to x's shape.
  std::vector<int64_t> len_dims(dims.size(), 1);
  len_dims[static_cast<size_t>(batch)] = dims[static_cast<size_t>(batch)];
  Node len = BroadcastToDims(graph::Reshape(ConvertDType(c.In(1), DType::Int64), len_dims), dims);
  Node idx = graph::Where(Less(t, len), len - t - ScalarLike(t, 1), t);
  return {TakeAlongAxis(x, idx, time)};
}

V EyeLike(const Context& c) {
  Node x = c.In(0);
  const std::vector<int64_t> d = StaticDims(c, x, "EyeLike");
  if (d.size() != 2) c.Fail("needs rank 2");
  const DType dtype =
      c.HasAttr("dtype") ? DTypeFromOnnx(static_cast<int>(c.Int("dtype", 1)), "EyeLike") : x.dtype();
  Node i = Iota(c.graph(), Shape(DType::Int64, d), 0), j = Iota(c.graph(), Shape(DType::Int64, d), 1);
  return {ConvertDType(Equal(j - i, ScalarLike(i, c.Int("k", 0))), dtype)};
}

}  // namespace

void AddShapeConverters(std::map<std::string, Converter>& m) {
  m["Constant"] = Constant;
  m["Shape"] = ShapeOp;
  m["Size"] = Size;
  m["Reshape"] = Reshape;
  m["Flatten"] = Flatten;
  m["Transpose"] = Transpose;
  m["Squeeze"] = Squeeze;
  m["Unsqueeze"] = Unsqueeze;
  m["Concat"] = Concat;
  m["Gather"] = Gather;
  m["Slice"] = Slice;
  m["Expand"] = Expand;
  m["ConstantOfShape"] = ConstantOfShape;
  m["Range"] = Range;
  m["Tile"] = Tile;
  m["Split"] = Split;
  m["Trilu"] = Trilu;
  m["GatherND"] = GatherND;
  m["ScatterND"] = ScatterND;
  m["ScatterElements"] = ScatterElements;
  m["Scatter"] = ScatterElements;  // Opset 9-10's name for ScatterElements.
  m["EyeLike"] = EyeLike;
  m["ReverseSequence"] = ReverseSequence;
  m["GatherElements"] = GatherElements;
  m["Pad"] = PadOp;
  m["OneHot"] = OneHotOp;
  m["DepthToSpace"] = DepthToSpace;
  m["SpaceToDepth"] = SpaceToDepth;
}

}  // namespace kiln::onnx::internal
