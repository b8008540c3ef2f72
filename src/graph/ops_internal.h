#pragma once
// Helpers the graph frontend files (ops_*.cc) share: operand validation, axis normalisation,
// GoMLX broadcasting and emitting primitives under the frontend function's name.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "kiln/compute/program.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/ops.h"

namespace kiln::graph::ops_internal {

// ---- Validation (ops_elementwise.cc) ------------------------------------------------------------

/// Throws unless every node is valid and all belong to one graph; the error names `op`, the
/// invalid operand's position or both graphs.
void CheckNodes(const char* op, const std::vector<Node>& nodes);

/// Appends primitive `type` to the operands' graph. A shape-rule error is re-raised prefixed
/// with `op` when the frontend name differs from the primitive's ("Sigmoid: Logistic: ...").
Node Emit(const char* op, compute::OpType type, const std::vector<Node>& operands,
          compute::OpAttributes attrs = {});
/// Emit for a leaf (no operands) in graph `g`.
Node EmitLeaf(const char* op, Graph& g, compute::OpType type, compute::OpAttributes attrs);

// ---- Broadcasting (ops_elementwise.cc) ------------------------------------------------------------

/// The common shape of `nodes` under GoMLX's rule (scalars broadcast; same ranks broadcast
/// size-1 axes; different ranks and dtypes are errors naming `op` and the shapes), in the first
/// node's dtype. A dynamic axis meets a static one as the static size (checked when the program
/// runs), a size-1 axis takes the other's size and name.
Shape BroadcastShape(const char* op, const std::vector<Node>& nodes, bool same_dtype = true);
/// `x` broadcast to the dimensions (and dynamic axis names) of `target`, in x's dtype (x a scalar,
/// or of the same rank with size-1 axes); x if the dimensions are equal.
Node BroadcastTo(const char* op, Node x, const Shape& target);
/// BroadcastTo static `dims`.
Node BroadcastTo(const char* op, Node x, const std::vector<int64_t>& dims);
/// A broadcasting elementwise binary primitive, errors naming `op`.
Node Binary(const char* op, compute::OpType type, Node a, Node b);

// ---- Axes (ops_shape.cc) ----------------------------------------------------------------------

/// `axis` of a rank-`rank` value (negative counts from the end); the error names `op`, the axis
/// and `shape` (the shape the axis refers to, for the message).
int NormalizeAxis(const char* op, int axis, int rank, const Shape& shape);
/// Normalised, distinct axes of `shape`; an empty list means every axis when `empty_is_all`.
std::vector<int64_t> NormalizeAxes(const char* op, const std::vector<int>& axes, const Shape& shape,
                                   bool empty_is_all);
/// Reshape that names `op` in its errors and returns x itself when the dims do not change.
Node ReshapeTo(const char* op, Node x, const std::vector<int64_t>& dims);
/// ReshapeTo the dimensions and dynamic axis names of `target` (its dtype is ignored).
Node ReshapeTo(const char* op, Node x, const Shape& target);
/// `shape` with the (normalised) `axes` set to 1, dynamic axis names kept on the others.
Shape KeepDims(const Shape& shape, const std::vector<int64_t>& axes);

// ---- Reductions (ops_reduce.cc) ---------------------------------------------------------------

/// A reduction primitive over normalised `axes`, errors naming `op`.
Node Reduce(const char* op, compute::OpType type, Node x, const std::vector<int64_t>& axes);
/// `reduced` (x reduced over `axes`) broadcast back to x's dims.
Node BroadcastBack(const char* op, Node reduced, Shape x_shape, const std::vector<int64_t>& axes);

// ---- Constants (ops_constants.cc) -------------------------------------------------------------

/// The smallest value of `dtype` (-inf for floats, the minimum for integers) as a scalar.
Node Lowest(Graph& g, DType dtype);
/// The largest value of `dtype` (+inf for floats, the maximum for integers) as a scalar.
Node Highest(Graph& g, DType dtype);

/// "[2, 3]".
inline std::string DimsString(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}
/// Converts an int axis list to the int64 lists of OpAttributes.
inline std::vector<int64_t> ToInt64(const std::vector<int>& v) { return {v.begin(), v.end()}; }
/// The float check reductions and means share; error names `op`.
inline void CheckFloat(const char* op, Node x) {
  if (!IsFloat(x.dtype()))
    kiln::detail::Throw("{}: needs a float dtype, got {} (convert it with ConvertDType first)", op,
                        x.shape());
}

}  // namespace kiln::graph::ops_internal
