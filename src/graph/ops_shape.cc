// Graph frontend: shape ops (reshape, transpose, axes, broadcast, concatenate, slice, pad...)
// and the axis helpers the other ops_*.cc files share.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "compute/shape_dims.h"
#include "graph/ops_internal.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using compute::OpType;

namespace ops_internal {

int NormalizeAxis(const char* op, int axis, int rank, const Shape& shape) {
  const int normalised = axis < 0 ? axis + rank : axis;
  if (normalised < 0 || normalised >= rank) {
    if (rank == 0)
      kiln::detail::Throw("{}: axis {} is out of range for the scalar {} (it has no axes)", op, axis, shape);
    kiln::detail::Throw("{}: axis {} is out of range for {} (valid axes: {} to {})", op, axis, shape, -rank,
                        rank - 1);
  }
  return normalised;
}

std::vector<int64_t> NormalizeAxes(const char* op, const std::vector<int>& axes, const Shape& shape,
                                   bool empty_is_all) {
  std::vector<int64_t> result;
  if (axes.empty() && empty_is_all) {
    for (int a = 0; a < shape.Rank(); ++a) result.push_back(a);
    return result;
  }
  for (int a : axes) {
    const int n = NormalizeAxis(op, a, shape.Rank(), shape);
    if (std::find(result.begin(), result.end(), n) != result.end())
      kiln::detail::Throw("{}: axis {} is given twice in [{}] for {}", op, n, fmt::join(axes, ", "), shape);
    result.push_back(n);
  }
  return result;
}

Node ReshapeTo(const char* op, Node x, const std::vector<int64_t>& dims) {
  CheckNodes(op, {x});
  for (int64_t d : dims) {
    if (d < 0) kiln::detail::Throw("{}: invalid dimensions {} for {}", op, DimsString(dims), x.shape());
  }
  return ReshapeTo(op, x, Shape(x.dtype(), dims));
}

Node ReshapeTo(const char* op, Node x, const Shape& target) {
  CheckNodes(op, {x});
  if (x.shape().Dimensions() == target.Dimensions() && x.shape().AxisNames() == target.AxisNames()) return x;
  compute::OpAttributes attrs;
  attrs.shape = Shape::MakeDynamic(x.dtype(), target.Dimensions(), target.AxisNames());
  return Emit(op, OpType::Reshape, {x}, std::move(attrs));
}

Shape KeepDims(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<compute::Axis> dims = compute::AxesOf(shape);
  for (int64_t a : axes) dims[static_cast<size_t>(a)] = compute::Axis{1, ""};
  return compute::ShapeOf(shape.dtype(), dims);
}

}  // namespace ops_internal

using ops_internal::CheckNodes;
using ops_internal::DimsString;
using ops_internal::Emit;
using ops_internal::NormalizeAxis;

Node ReshapeWithShape(Node x, const Shape& shape) {
  CheckNodes("ReshapeWithShape", {x});
  if (shape.dtype() != x.dtype())
    kiln::detail::Throw("ReshapeWithShape: cannot change the dtype of {} to {} (use ConvertDType)", x.shape(),
                        shape);
  return ops_internal::ReshapeTo("ReshapeWithShape", x, shape);
}

Node Reshape(Node x, const std::vector<int64_t>& dims) {
  CheckNodes("Reshape", {x});
  const Shape s = x.shape();
  if (s.IsDynamic()) {
    // GoMLX's rule: a dynamic operand reshapes through DynamicReshape (-1 inferred).
    std::vector<DimensionSpec> specs;
    for (int64_t d : dims) {
      if (d < -1) kiln::detail::Throw("Reshape: invalid dimension {} in {} for {}", d, DimsString(dims), s);
      specs.push_back(d == -1 ? InferredDim() : StaticDim(d));
    }
    return DynamicReshape(x, specs);
  }
  std::vector<int64_t> out = dims;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (inferred >= 0)
        kiln::detail::Throw("Reshape: only one -1 can be inferred, got {} for {}", DimsString(dims), s);
      inferred = static_cast<int>(i);
    } else if (dims[i] < 0) {
      kiln::detail::Throw("Reshape: invalid dimension {} in {} for {}", dims[i], DimsString(dims), s);
    } else if (__builtin_mul_overflow(known, dims[i], &known)) {
      kiln::detail::Throw("Reshape: the sizes {} overflow 64 bits, for {}", DimsString(dims), s);
    }
  }
  if (inferred >= 0) {
    if (known == 0 || s.Size() % known != 0) {
      kiln::detail::Throw("Reshape: cannot reshape {} ({} elements) to {}: the -1 cannot be inferred", s,
                          s.Size(), DimsString(dims));
    }
    out[static_cast<size_t>(inferred)] = s.Size() / known;
  } else if (known != s.Size()) {
    kiln::detail::Throw("Reshape: cannot reshape {} ({} elements) to {} ({} elements)", s, s.Size(),
                        DimsString(dims), known);
  }
  return ops_internal::ReshapeTo("Reshape", x, out);
}

Node Transpose(Node x, int axis1, int axis2) {
  CheckNodes("Transpose", {x});
  const int a = NormalizeAxis("Transpose", axis1, x.rank(), x.shape());
  const int b = NormalizeAxis("Transpose", axis2, x.rank(), x.shape());
  if (a == b) return x;
  std::vector<int> perm;
  for (int i = 0; i < x.rank(); ++i) perm.push_back(i);
  std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
  return TransposeAllAxes(x, perm);
}

Node TransposeAllAxes(Node x, const std::vector<int>& permutation) {
  CheckNodes("TransposeAllAxes", {x});
  if (static_cast<int>(permutation.size()) != x.rank()) {
    kiln::detail::Throw("TransposeAllAxes: the permutation [{}] must list each of the {} axes of {} once",
                        fmt::join(permutation, ", "), x.rank(), x.shape());
  }
  compute::OpAttributes attrs;
  attrs.permutation = ops_internal::NormalizeAxes("TransposeAllAxes", permutation, x.shape(), false);
  bool identity = true;
  for (size_t i = 0; i < attrs.permutation.size(); ++i)
    identity = identity && attrs.permutation[i] == int64_t(i);
  if (identity) return x;
  return Emit("TransposeAllAxes", OpType::Transpose, {x}, std::move(attrs));
}

Node ExpandAxes(Node x, const std::vector<int>& axes) {
  CheckNodes("ExpandAxes", {x});
  if (axes.empty()) return x;
  const int out_rank = x.rank() + static_cast<int>(axes.size());
  std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
  for (int a : axes) {
    const int n = NormalizeAxis("ExpandAxes", a, out_rank, x.shape());
    if (is_new[static_cast<size_t>(n)])
      kiln::detail::Throw("ExpandAxes: result axis {} is given twice in [{}]", n, fmt::join(axes, ", "));
    is_new[static_cast<size_t>(n)] = true;
  }
  std::vector<compute::Axis> dims;
  int64_t next = 0;
  for (int i = 0; i < out_rank; ++i)
    dims.push_back(is_new[static_cast<size_t>(i)] ? compute::Axis{1, ""}
                                                  : compute::AxisOf(x.shape(), next++));
  return ops_internal::ReshapeTo("ExpandAxes", x, compute::ShapeOf(x.dtype(), dims));
}

Node InsertAxes(Node x, const std::vector<int>& axes) {
  CheckNodes("InsertAxes", {x});
  const int rank = x.rank();
  std::vector<int> count(static_cast<size_t>(rank) + 1,
                         0);  // New axes before x's axis i (i == rank: at the end).
  for (int a : axes) {
    const int n = a < 0 ? a + rank + 1 : a;
    if (n < 0 || n > rank) {
      kiln::detail::Throw("InsertAxes: position {} is out of range for {} (valid: {} to {})", a, x.shape(),
                          -rank - 1, rank);
    }
    ++count[static_cast<size_t>(n)];
  }
  std::vector<compute::Axis> dims;
  for (int i = 0; i <= rank; ++i) {
    dims.insert(dims.end(), static_cast<size_t>(count[static_cast<size_t>(i)]), compute::Axis{1, ""});
    if (i < rank) dims.push_back(compute::AxisOf(x.shape(), i));
  }
  return ops_internal::ReshapeTo("InsertAxes", x, compute::ShapeOf(x.dtype(), dims));
}

Node ExpandLeftToRank(Node x, int rank) {
  CheckNodes("ExpandLeftToRank", {x});
  if (rank < x.rank())
    kiln::detail::Throw("ExpandLeftToRank: rank {} is below the rank {} of {}", rank, x.rank(), x.shape());
  return InsertAxes(x, std::vector<int>(static_cast<size_t>(rank - x.rank()), 0));
}

Node Squeeze(Node x, const std::vector<int>& axes) {
  CheckNodes("Squeeze", {x});
  const std::vector<int64_t> d = x.shape().Dimensions();
  std::vector<bool> drop(d.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < d.size(); ++i) drop[i] = d[i] == 1;
  } else {
    for (int64_t a : ops_internal::NormalizeAxes("Squeeze", axes, x.shape(), false)) {
      if (d[static_cast<size_t>(a)] != 1)
        kiln::detail::Throw("Squeeze: axis {} of {} has size {}, not 1", a, x.shape(),
                            d[static_cast<size_t>(a)]);
      drop[static_cast<size_t>(a)] = true;
    }
  }
  std::vector<compute::Axis> dims;
  for (size_t i = 0; i < d.size(); ++i) {
    if (!drop[i]) dims.push_back(compute::AxisOf(x.shape(), static_cast<int64_t>(i)));
  }
  return ops_internal::ReshapeTo("Squeeze", x, compute::ShapeOf(x.dtype(), dims));
}

Node BroadcastToDims(Node x, const std::vector<int64_t>& dims) {
  return ops_internal::BroadcastTo("BroadcastToDims", x, dims);
}

Node BroadcastToShape(Node x, const Shape& shape) {
  if (!shape.Ok()) kiln::detail::Throw("BroadcastToShape: invalid target shape");
  return ops_internal::BroadcastTo("BroadcastToShape", x, shape);
}

Node BroadcastPrefix(Node x, const std::vector<int64_t>& prefix) {
  CheckNodes("BroadcastPrefix", {x});
  if (prefix.empty()) return x;
  for (int64_t d : prefix) {
    if (d < 0)
      kiln::detail::Throw("BroadcastPrefix: invalid prefix {} for {}", DimsString(prefix), x.shape());
  }
  compute::OpAttributes attrs;
  std::vector<compute::Axis> dims;
  for (int64_t d : prefix) dims.push_back(compute::Axis{d, ""});
  for (int a = 0; a < x.rank(); ++a) {
    attrs.axes.push_back(static_cast<int64_t>(prefix.size()) + a);
    dims.push_back(compute::AxisOf(x.shape(), a));
  }
  attrs.shape = compute::ShapeOf(x.dtype(), dims);
  return Emit("BroadcastPrefix", OpType::BroadcastInDim, {x}, std::move(attrs));
}

Node Concatenate(const std::vector<Node>& nodes, int axis) {
  if (nodes.empty()) kiln::detail::Throw("Concatenate: needs at least one node");
  CheckNodes("Concatenate", nodes);
  const Shape first = nodes[0].shape();
  if (first.IsScalar()) kiln::detail::Throw("Concatenate: cannot concatenate scalars (use Stack)");
  const int a = NormalizeAxis("Concatenate", axis, first.Rank(), first);
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Shape s = nodes[i].shape();
    if (s.dtype() != first.dtype())
      kiln::detail::Throw("Concatenate: node {} is {} but node 0 is {}: the dtypes differ", i, s, first);
    if (s.Rank() != first.Rank())
      kiln::detail::Throw("Concatenate: node {} is {} but node 0 is {}: the ranks differ", i, s, first);
    for (int k = 0; k < s.Rank(); ++k) {
      if (k != a && s.Dim(k) != first.Dim(k)) {
        kiln::detail::Throw("Concatenate: node {} is {} but node 0 is {}: axis {} differs (only axis {} may)",
                            i, s, first, k, a);
      }
    }
  }
  if (nodes.size() == 1) return nodes[0];
  compute::OpAttributes attrs;
  attrs.axis = a;
  return Emit("Concatenate", OpType::Concatenate, nodes, std::move(attrs));
}

Node Stack(const std::vector<Node>& nodes, int axis) {
  if (nodes.empty()) kiln::detail::Throw("Stack: needs at least one node");
  CheckNodes("Stack", nodes);
  const Shape first = nodes[0].shape();
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (nodes[i].shape() != first)
      kiln::detail::Throw("Stack: node {} is {} but node 0 is {}: stacked nodes must have equal shapes", i,
                          nodes[i].shape(), first);
  }
  const int a = NormalizeAxis("Stack", axis, first.Rank() + 1, first);
  std::vector<Node> expanded;
  for (const Node& n : nodes) expanded.push_back(ExpandAxes(n, {a}));
  return Concatenate(expanded, a);
}

std::vector<Node> Split(Node x, int axis, int parts) {
  CheckNodes("Split", {x});
  const int a = NormalizeAxis("Split", axis, x.rank(), x.shape());
  const int64_t dim = x.shape().Dim(a);
  if (parts < 1 || dim % parts != 0)
    kiln::detail::Throw("Split: axis {} of {} (size {}) cannot be split into {} equal parts", a, x.shape(),
                        dim, parts);
  if (parts == 1) return {x};
  const int64_t step = dim / parts;
  std::vector<Node> result;
  for (int p = 0; p < parts; ++p) {
    compute::OpAttributes attrs;
    for (int k = 0; k < x.rank(); ++k) {
      attrs.starts.push_back(k == a ? p * step : 0);
      attrs.limits.push_back(k == a ? (p + 1) * step : x.shape().Dim(k));
      attrs.strides.push_back(1);
    }
    result.push_back(Emit("Split", OpType::Slice, {x}, std::move(attrs)));
  }
  return result;
}

Node Slice(Node x, const std::vector<AxisRangeSpec>& ranges) {
  CheckNodes("Slice", {x});
  const Shape s = x.shape();
  if (static_cast<int>(ranges.size()) > s.Rank())
    kiln::detail::Throw("Slice: {} ranges given for {}, which has {} axes", ranges.size(), s, s.Rank());
  compute::OpAttributes attrs;
  bool whole = true;
  for (int k = 0; k < s.Rank(); ++k) {
    const int64_t dim = s.Dim(k);
    int64_t start = 0, limit = dim, stride = 1;
    if (static_cast<size_t>(k) < ranges.size()) {
      const AxisRangeSpec& r = ranges[static_cast<size_t>(k)];
      stride = r.stride;
      if (stride < 1) kiln::detail::Throw("Slice: axis {} of {}: stride {} must be at least 1", k, s, stride);
      if (dim == Shape::kDynamic) {
        // A dynamic axis: indices from its start; the end is the axis' end or a static index,
        // checked to be inside the axis when the program runs.
        if (r.start < 0 || (r.end < 0 && r.end != INT64_MAX)) {
          kiln::detail::Throw(
              "Slice: axis {} of {} is dynamic: indices counted from its end ({}, {}) need a static axis", k,
              s, r.start, r.end);
        }
        start = r.start;
        limit = r.single ? start + 1 : r.end == INT64_MAX ? Shape::kDynamic : std::max(r.end, start);
        whole = whole && start == 0 && limit == Shape::kDynamic && stride == 1;
        attrs.starts.push_back(start);
        attrs.limits.push_back(limit);
        attrs.strides.push_back(stride);
        continue;
      }
      if (r.single) {
        start = r.start < 0 ? r.start + dim : r.start;
        if (start < 0 || start >= dim)
          kiln::detail::Throw("Slice: AxisElem({}) is out of range for axis {} of {}", r.start, k, s);
        limit = start + 1;
      } else {
        start = r.start < 0 ? std::max<int64_t>(r.start + dim, 0) : std::min(r.start, dim);
        limit = r.end == INT64_MAX ? dim
                : r.end < 0        ? std::max<int64_t>(r.end + dim, 0)
                                   : std::min(r.end, dim);
        limit = std::max(limit, start);
      }
    }
    if (dim == Shape::kDynamic) limit = Shape::kDynamic;  // The whole dynamic axis.
    whole = whole && start == 0 && limit == dim && stride == 1;
    attrs.starts.push_back(start);
    attrs.limits.push_back(limit);
    attrs.strides.push_back(stride);
  }
  if (whole) return x;
  return Emit("Slice", OpType::Slice, {x}, std::move(attrs));
}

Node Pad(Node x, Node fill, const std::vector<compute::PadAxis>& padding) {
  CheckNodes("Pad", {x, fill});
  if (!fill.shape().IsScalar() || fill.dtype() != x.dtype())
    kiln::detail::Throw("Pad: the fill value must be a scalar {} (x is {}), got {}", x.dtype(), x.shape(),
                        fill.shape());
  if (static_cast<int>(padding.size()) > x.rank())
    kiln::detail::Throw("Pad: {} padding entries given for {}, which has {} axes", padding.size(), x.shape(),
                        x.rank());
  compute::OpAttributes attrs;
  attrs.padding = padding;
  attrs.padding.resize(static_cast<size_t>(x.rank()));  // Missing trailing axes: no padding.
  return Emit("Pad", OpType::Pad, {x, fill}, std::move(attrs));
}

Node Reverse(Node x, const std::vector<int>& axes) {
  CheckNodes("Reverse", {x});
  compute::OpAttributes attrs;
  attrs.axes = ops_internal::NormalizeAxes("Reverse", axes, x.shape(), false);
  if (attrs.axes.empty()) return x;
  return Emit("Reverse", OpType::Reverse, {x}, std::move(attrs));
}

Node ConvertDType(Node x, DType dtype) {
  CheckNodes("ConvertDType", {x});
  if (x.dtype() == dtype) return x;
  compute::OpAttributes attrs;
  attrs.dtype = dtype;
  return Emit("ConvertDType", OpType::ConvertDType, {x}, std::move(attrs));
}

Node Bitcast(Node x, DType dtype) {
  CheckNodes("Bitcast", {x});
  if (x.dtype() == dtype) return x;
  compute::OpAttributes attrs;
  attrs.dtype = dtype;
  return Emit("Bitcast", OpType::Bitcast, {x}, std::move(attrs));
}

Node OneHot(Node indices, int64_t depth, DType dtype) {
  CheckNodes("OneHot", {indices});
  const DType it = indices.dtype();
  if (!IsInt(it) || IsPacked(it))
    kiln::detail::Throw("OneHot: indices must be integers, got {}", indices.shape());
  if (depth < 0) kiln::detail::Throw("OneHot: negative depth {}", depth);
  if (!IsValid(dtype) || IsPacked(dtype)) kiln::detail::Throw("OneHot: invalid result dtype {}", dtype);
  // The iota counts to depth - 1 in the indices' dtype; widen when it cannot.
  const int bits = DTypeBits(it) - (IsUnsigned(it) ? 0 : 1);
  Node idx = indices;
  if (bits < 63 && depth > (int64_t{1} << bits)) idx = ConvertDType(indices, DType::Int64);
  std::vector<compute::Axis> dims = compute::AxesOf(idx.shape());
  dims.push_back(compute::Axis{depth, ""});
  Node iota = Iota(idx.graph(), compute::ShapeOf(idx.dtype(), dims), -1);
  Node hot = ops_internal::Binary("OneHot", OpType::Equal, ExpandAxes(idx, {-1}), iota);
  return ConvertDType(hot, dtype);
}

}  // namespace kiln::graph
