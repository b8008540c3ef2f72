#pragma once
/// @file
/// Shape: a dtype plus dimensions. Axes may be dynamic (unknown until run time), optionally named.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "kiln/core/dtype.h"

namespace kiln {

/// The dtype and dimensions of a tensor or graph node. A scalar has no dimensions.
class Shape {
 public:
  /// Marks a dynamic axis (size known only at run time), as GoMLX's DynamicDim.
  static constexpr int64_t kDynamic = -1;

  /// An invalid shape (dtype Invalid): the state of default-constructed holders.
  Shape() = default;
  /// A scalar of `dtype`.
  explicit Shape(DType dtype);
  /// `dtype` with `dimensions`; each is >= 0 or kDynamic (throws kiln::Error otherwise).
  Shape(DType dtype, std::vector<int64_t> dimensions);
  /// A shape with dynamic axes named: `names[i]` names axis i where it is kDynamic ("" leaves it
  /// unnamed); names of static axes must be empty. `names` is empty or has one entry per axis.
  static Shape MakeDynamic(DType dtype, std::vector<int64_t> dimensions, std::vector<std::string> names);

  /// The element type (DType::Invalid for a default-constructed shape).
  DType dtype() const { return dtype_; }
  /// True unless the dtype is Invalid.
  bool Ok() const { return dtype_ != DType::Invalid; }
  /// Number of axes (0 for a scalar).
  int Rank() const { return static_cast<int>(dims_.size()); }
  /// True when the shape has no axes.
  bool IsScalar() const { return dims_.empty(); }
  /// The size of each axis, kDynamic where unknown until run time.
  const std::vector<int64_t>& Dimensions() const { return dims_; }
  /// Dimension of `axis`; negative axes count from the end. Throws on an out-of-range axis.
  int64_t Dim(int axis) const;
  /// Number of elements (1 for a scalar). Throws kiln::Error for a dynamic shape.
  int64_t Size() const;
  /// Bytes the elements take; packed types round up to whole bytes. Throws for a dynamic shape.
  int64_t ByteSize() const;
  /// True when some axis is dynamic.
  bool IsDynamic() const;
  /// Name of a dynamic axis ("" if unnamed or static).
  std::string AxisName(int axis) const;
  /// Per-axis names (empty when no axis is named).
  const std::vector<std::string>& AxisNames() const { return names_; }

  /// The same dimensions with another dtype.
  Shape WithDType(DType dtype) const;

  /// Throws kiln::Error unless the dimensions match; -1 in `dims` accepts any size.
  void AssertDims(const std::vector<int64_t>& dims) const;
  /// Throws kiln::Error unless the rank is `rank`.
  void AssertRank(int rank) const;

  /// Prints as GoMLX: "(Float32)[2, 3]", "(Float64)" for a scalar, "(Float32)[batch, 3]".
  std::string ToString() const;

  /// Same dtype, dimensions and axis names.
  friend bool operator==(const Shape& a, const Shape& b) = default;
  /// A hash of dtype, dimensions and axis names, consistent with operator==.
  std::size_t Hash() const;

 private:
  DType dtype_ = DType::Invalid;
  std::vector<int64_t> dims_;
  std::vector<std::string> names_;  // Empty, or one per axis ("" where unnamed).
};

/// Writes shape.ToString().
std::ostream& operator<<(std::ostream& os, const Shape& shape);

}  // namespace kiln

/// Lets a Shape key std::unordered_map and std::unordered_set (through Shape::Hash).
template <>
struct std::hash<kiln::Shape> {
  /// Shape::Hash() of `s`.
  std::size_t operator()(const kiln::Shape& s) const noexcept { return s.Hash(); }
};
