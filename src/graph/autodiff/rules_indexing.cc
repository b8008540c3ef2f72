// Gradient rules of the indexing ops. Gather sends its adjoint back with a summing Scatter at the
// start indices clamped as the forward clamped them; Scatter passes the adjoint to the operand
// (except where it was overwritten: Set) and gathers it for the updates (zero for updates whose
// window was dropped); Max/Min give each result element's adjoint to the value that produced it
// (ties: the operand, else the first update in index order). DynamicSlice and
// DynamicUpdateSlice use each other at the same (clamped) starts. Integer index operands never
// get gradients.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/check.h"
#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using V = std::vector<Node>;

namespace {

/// Whether `v` holds `x`.
bool Has(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

/// The Scatter dimension numbers that write back what a Gather with `g` read.
compute::ScatterDims ScatterDimsOf(const compute::GatherDims& g) {
  compute::ScatterDims s;
  s.update_window_dims = g.offset_dims;
  s.inserted_window_dims = g.collapsed_slice_dims;
  s.scatter_dims_to_operand_dims = g.start_index_map;
  s.index_vector_dim = g.index_vector_dim;
  return s;
}

/// The Gather dimension numbers that read the windows a Scatter with `s` wrote (updates of
/// dimensions `updates` into an operand of rank `rank`).
compute::GatherDims GatherDimsOf(const compute::ScatterDims& s, const std::vector<int64_t>& updates,
                                 int rank) {
  compute::GatherDims g;
  g.offset_dims = s.update_window_dims;
  g.collapsed_slice_dims = s.inserted_window_dims;
  g.start_index_map = s.scatter_dims_to_operand_dims;
  g.index_vector_dim = s.index_vector_dim;
  size_t next = 0;
  for (int64_t a = 0; a < rank; ++a) {
    if (Has(s.inserted_window_dims, a)) {
      g.slice_sizes.push_back(1);
    } else {
      g.slice_sizes.push_back(updates[static_cast<size_t>(s.update_window_dims[next++])]);
    }
  }
  return g;
}

/// Gather of `x` at `indices` with dimension numbers `g`.
Node GatherPrim(Node x, Node indices, const compute::GatherDims& g) {
  compute::OpAttributes at;
  at.gather = g;
  return Prim(OpType::Gather, {x, indices}, std::move(at));
}

/// Scatter of `updates` onto `x` at `indices` with dimension numbers `s`, combining by `kind`.
Node ScatterPrim(Node x, Node indices, Node updates, const compute::ScatterDims& s,
                 compute::ReduceKind kind) {
  compute::OpAttributes at;
  at.scatter = s;
  at.reduce_kind = kind;
  return Prim(OpType::Scatter, {x, indices, updates}, std::move(at));
}

/// `indices` as Int64 with each index vector entry k clamped to [0, limits[k]] (entries along
/// `vector_dim`; one entry when vector_dim is the rank). Uint64 values beyond INT64_MAX
/// saturate first, as the kernels read them.
Node ClampedIndices(Node indices, int64_t vector_dim, const std::vector<int64_t>& limits) {
  Graph& g = indices.graph();
  Node idx = indices;
  if (idx.dtype() == DType::Uint64)
    idx = Min(idx, Scalar(g, DType::Uint64, std::numeric_limits<int64_t>::max()));
  if (idx.dtype() != DType::Int64) idx = ConvertDType(idx, DType::Int64);
  std::vector<int64_t> dims(static_cast<size_t>(idx.rank()), 1);
  if (vector_dim < idx.rank()) dims[static_cast<size_t>(vector_dim)] = static_cast<int64_t>(limits.size());
  Node hi = Const(g, Tensor::FromFlat(Shape(DType::Int64, dims), limits));
  if (vector_dim == idx.rank()) hi = Reshape(hi, {});
  return Clamp(Scalar(g, DType::Int64, 0), idx, hi);
}

/// The largest start of each index vector entry: operand dim minus window size on its axis.
std::vector<int64_t> StartLimits(const Shape& operand, const std::vector<int64_t>& axes,
                                 const std::vector<int64_t>& window) {
  std::vector<int64_t> limits;
  for (int64_t a : axes)
    limits.push_back(operand.Dimensions()[static_cast<size_t>(a)] - window[static_cast<size_t>(a)]);
  return limits;
}

// Gather: the adjoint summed back into zeros at the clamped starts (repeated starts add up).
V GatherRule(const VJPContext& c) {
  if (!c.Needs(0)) return {Node(), Node()};
  const compute::GatherDims& gd = c.attrs().gather;
  const Shape& operand = c.OperandShape(0);
  Node starts =
      ClampedIndices(c.X(1), gd.index_vector_dim, StartLimits(operand, gd.start_index_map, gd.slice_sizes));
  Node zeros = Zeros(c.graph(), operand);
  return {ScatterPrim(zeros, starts, c.Adjoint(), ScatterDimsOf(gd), compute::ReduceKind::Sum), Node()};
}

/// Whether each update window of a Scatter fits (is not dropped), broadcast over the updates'
/// dimensions.
Node UpdateFits(const VJPContext& c, const std::vector<int64_t>& window) {
  const compute::ScatterDims& s = c.attrs().scatter;
  Node idx = c.X(1);
  Node clamped = ClampedIndices(idx, s.index_vector_dim,
                                StartLimits(c.OperandShape(0), s.scatter_dims_to_operand_dims, window));
  if (idx.dtype() != DType::Int64) idx = ConvertDType(idx, DType::Int64);
  Node fits = Equal(clamped, idx);
  if (s.index_vector_dim < idx.rank()) fits = ReduceLogicalAnd(fits, {static_cast<int>(s.index_vector_dim)});
  const Shape& updates = c.OperandShape(2);
  compute::OpAttributes at;
  at.shape = updates.WithDType(DType::Bool);
  for (int64_t r = 0; r < updates.Rank(); ++r)
    if (!Has(s.update_window_dims, r)) at.axes.push_back(r);
  return Prim(OpType::BroadcastInDim, {fits}, std::move(at));
}

/// Position of each update element's index vector in the walk over the indices (row-major over
/// the updates' non-window axes), in `it`.
Node UpdateIds(const VJPContext& c, DType it) {
  const compute::ScatterDims& s = c.attrs().scatter;
  const Shape ids = c.OperandShape(2).WithDType(it);
  Node id = Zeros(c.graph(), ids);
  int64_t stride = 1;
  for (int64_t r = ids.Rank(); r-- > 0;) {
    if (Has(s.update_window_dims, r)) continue;
    id = id + Iota(c.graph(), ids, static_cast<int>(r)) * stride;
    stride *= ids.Dimensions()[static_cast<size_t>(r)];
  }
  return id;
}

/// Number of index vectors of a Scatter (the updates' non-window elements).
int64_t UpdateCount(const VJPContext& c) {
  const Shape& updates = c.OperandShape(2);
  int64_t n = 1;
  for (int64_t r = 0; r < updates.Rank(); ++r)
    if (!Has(c.attrs().scatter.update_window_dims, r)) n *= updates.Dimensions()[static_cast<size_t>(r)];
  return n;
}

/// x == y, NaN matching NaN.
Node SameValue(Node x, Node y) { return LogicalOr(Equal(x, y), LogicalAnd(IsNaN(x), IsNaN(y))); }

// Scatter: Sum passes the adjoint to the operand and gathers it for the updates that landed.
// Set and Max/Min find, per operand element, which value the result came from by scattering the
// updates' ids the same way (Set: the last update wins; Max/Min: the operand on ties, else the
// first update in index order), then send the adjoint only there.
V ScatterRule(const VJPContext& c) {
  const compute::ScatterDims& s = c.attrs().scatter;
  const compute::ReduceKind kind = c.attrs().reduce_kind;
  const Shape& operand = c.OperandShape(0);
  const Shape& updates = c.OperandShape(2);
  Node a = c.Adjoint();
  if (KnownEmpty(updates) || KnownEmpty(operand)) return {a, Node(), Zeros(c.graph(), updates)};
  const compute::GatherDims gd = GatherDimsOf(s, updates.Dimensions(), operand.Rank());
  Node idx = c.X(1);
  if (kind == compute::ReduceKind::Sum) {
    Node gu;
    if (c.Needs(2)) gu = Where(UpdateFits(c, gd.slice_sizes), GatherPrim(a, idx, gd), ScalarLike(a, 0));
    return {a, Node(), gu};
  }
  if (kind != compute::ReduceKind::Set && kind != compute::ReduceKind::Max &&
      kind != compute::ReduceKind::Min)
    kiln::detail::Throw("Scatter: no gradient for this reduce_kind");
  const int64_t count = UpdateCount(c);
  const DType it = count < std::numeric_limits<int32_t>::max() ? DType::Int32 : DType::Int64;
  Graph& g = c.graph();
  Node ids = UpdateIds(c, it);
  const Shape id_shape(it, operand.Dimensions());
  Node owner, operand_wins;
  if (kind == compute::ReduceKind::Set) {
    owner = ScatterPrim(BroadcastToShape(Scalar(g, it, -1), id_shape), idx, ids, s, compute::ReduceKind::Set);
    operand_wins = Equal(owner, ScalarLike(owner, -1));
  } else {
    Node y = c.Y();
    operand_wins = SameValue(c.X(0), y);
    Node none = ScalarLike(ids, count);
    Node init = Where(operand_wins, Scalar(g, it, -1), none);
    Node candidate = Where(SameValue(c.X(2), GatherPrim(y, idx, gd)), ids, none);
    owner = ScatterPrim(init, idx, candidate, s, compute::ReduceKind::Min);
  }
  Node gx = c.Needs(0) ? Where(operand_wins, a, ScalarLike(a, 0)) : Node();
  Node gu;
  if (c.Needs(2))
    gu = Where(Equal(GatherPrim(owner, idx, gd), ids), GatherPrim(a, idx, gd), ScalarLike(a, 0));
  return {gx, Node(), gu};
}

/// The start index operands of a DynamicSlice (first = 1) or DynamicUpdateSlice (first = 2).
V Starts(const VJPContext& c, int first) {
  V starts;
  for (int i = first; i < c.NumOperands(); ++i) starts.push_back(c.X(i));
  return starts;
}

// DynamicSlice: the adjoint written into zeros at the same starts (clamped the same way).
V DynamicSliceRule(const VJPContext& c) {
  V grads(static_cast<size_t>(c.NumOperands()));
  if (!c.Needs(0)) return grads;
  V operands = {Zeros(c.graph(), c.OperandShape(0)), c.Adjoint()};
  for (Node s : Starts(c, 1)) operands.push_back(s);
  grads[0] = Prim(OpType::DynamicUpdateSlice, operands);
  return grads;
}

// DynamicUpdateSlice: the operand gets the adjoint with the window zeroed, the update the window.
V DynamicUpdateSliceRule(const VJPContext& c) {
  V grads(static_cast<size_t>(c.NumOperands()));
  const V starts = Starts(c, 2);
  const Shape& update = c.OperandShape(1);
  Node a = c.Adjoint();
  if (c.Needs(0)) {
    V operands = {a, Zeros(c.graph(), update)};
    operands.insert(operands.end(), starts.begin(), starts.end());
    grads[0] = Prim(OpType::DynamicUpdateSlice, operands);
  }
  if (c.Needs(1)) {
    V operands = {a};
    operands.insert(operands.end(), starts.begin(), starts.end());
    compute::OpAttributes at;
    at.sizes = update.Dimensions();
    grads[1] = Prim(OpType::DynamicSlice, operands, std::move(at));
  }
  return grads;
}

}  // namespace

void RegisterIndexingRules(RuleTable& t) {
  t.Set(OpType::Gather, GatherRule);
  t.Set(OpType::Scatter, ScatterRule);
  t.Set(OpType::DynamicSlice, DynamicSliceRule);
  t.Set(OpType::DynamicUpdateSlice, DynamicUpdateSliceRule);
}

}  // namespace kiln::graph::autodiff
