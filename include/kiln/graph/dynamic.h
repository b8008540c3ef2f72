#pragma once
/// @file
/// Graph ops for dynamic shapes (GoMLX's names): dimension specs, the size of an axis as a node,
/// and reshape, broadcast and iota to targets whose axes may be dynamic. On static shapes each
/// falls back to the static op, at no cost. See docs/dynamic-shapes.md.

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln::graph {

/// One axis of a target shape: a static size, a dynamic axis known by name, or an axis inferred
/// from the element count (DynamicReshape only).
struct DimensionSpec {
  /// What the spec says.
  enum class Kind {
    Static,    ///< `size` elements.
    Dynamic,   ///< The dynamic axis `name`: its size is that of the axes of that name at run time.
    Inferred,  ///< The element count divided by the other axes' product; named `name` if not "".
  };
  Kind kind = Kind::Static;  ///< Static, Dynamic or Inferred.
  int64_t size = 0;          ///< The size of a Static axis.
  std::string name;          ///< The axis name of a Dynamic (required) or Inferred (optional) axis.
  /// "3", "batch", "?" (inferred) or "?name".
  std::string ToString() const;
};

/// A static axis of `size` (>= 0).
DimensionSpec StaticDim(int64_t size);
/// The dynamic axis whose size `size` holds: a node from DimensionSize (a static size's constant
/// gives a StaticDim). Sizes computed from data are a kiln::Error: they are not known before the
/// program runs.
DimensionSpec DynamicDim(Node size);
/// The dynamic axis named `name` (an axis of that name must exist among the inputs or values
/// computed before the op that uses it).
DimensionSpec NamedDynamicDim(const std::string& name);
/// The axis DynamicReshape infers from the element count (at most one per reshape).
DimensionSpec InferredDim();
/// InferredDim whose result axis, when dynamic, is named `name`.
DimensionSpec NamedInferredDim(const std::string& name);

/// Axis `axis` of x as a spec: StaticDim of its size, or its dynamic axis by name.
DimensionSpec DimensionSpecFor(Node x, int axis);
/// Every axis of x as specs.
std::vector<DimensionSpec> DimensionSpecsFor(Node x);
/// The size of axis `axis` of x as a scalar Int64 node: a constant for a static axis, the run-time
/// size for a dynamic one.
Node DimensionSize(Node x, int axis);
/// GoMLX's name for DimensionSize.
inline Node DynamicDimensionSize(Node x, int axis) { return DimensionSize(x, axis); }
/// Every axis' size as an Int64 vector [rank] (constants for static axes).
Node DynamicShape(Node x);

/// x reshaped to `specs` (at most one inferred); a static Reshape when x and the specs are static.
/// Element counts that cannot match are a kiln::Error now, those that depend on sizes when it runs.
Node DynamicReshape(Node x, const std::vector<DimensionSpec>& specs);
/// x reshaped to ref's shape (its dynamic axes by name).
Node DynamicReshapeLike(Node x, Node ref);
/// GoMLX's other name for DynamicReshapeLike.
Node ReshapeLike(Node x, Node ref);

/// x broadcast to `specs`: x's axis i becomes result axis `axes[i]` (x's size there must be 1 or
/// the target's); no inferred axes.
Node DynamicBroadcastInDim(Node x, const std::vector<int>& axes, const std::vector<DimensionSpec>& specs);
/// x broadcast to ref's shape (x a scalar or of ref's rank, with size-1 axes where they differ).
Node DynamicBroadcastLike(Node x, Node ref);
/// GoMLX's other name for DynamicBroadcastLike.
Node BroadcastLike(Node x, Node ref);
/// BroadcastToShape to a shape with dynamic axes (named, as Shape::MakeDynamic).
Node DynamicBroadcastToShape(Node x, const Shape& shape);

/// A counter along `axis` (0, 1, 2...) of dtype `dtype` over axes `specs` (no inferred axes).
Node DynamicIota(Graph& g, DType dtype, int axis, const std::vector<DimensionSpec>& specs);
/// A counter along `axis` with ref's shape and dtype.
Node IotaLike(Node ref, int axis);

/// x padded with the scalar `fill` (x's dtype) at the end of each axis i < specs.size() up to
/// the size specs[i] (static, or a dynamic axis by name; not inferred); further axes keep their
/// size. A Pad when every size is static (a target below x's size is an error now), else the
/// values written into a `fill`-filled target (a target below x's size is an error when it runs).
/// Pads sequences to a common or bucketed length.
Node DynamicPad(Node x, Node fill, const std::vector<DimensionSpec>& specs);

/// The shape `specs` describe, in `dtype` (no inferred axes): what the dynamic ops build.
Shape ShapeFromSpecs(DType dtype, const std::vector<DimensionSpec>& specs);

}  // namespace kiln::graph
