#include "kiln/core/shape.h"

#include <ostream>

#include "core/check.h"

namespace kiln {

Shape::Shape(DType dtype) : dtype_(dtype) {}

Shape::Shape(DType dtype, std::vector<int64_t> dimensions) : dtype_(dtype), dims_(std::move(dimensions)) {
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] < 0 && dims_[i] != kDynamic) {
      detail::Throw(
          "Shape: dimension {} of axis {} is negative (only Shape::kDynamic, -1, marks a dynamic axis)",
          dims_[i], i);
    }
  }
}

Shape Shape::MakeDynamic(DType dtype, std::vector<int64_t> dimensions, std::vector<std::string> names) {
  Shape s(dtype, std::move(dimensions));
  if (names.empty()) return s;
  if (names.size() != s.dims_.size()) {
    detail::Throw("Shape::MakeDynamic: {} axis names given for {} axes", names.size(), s.dims_.size());
  }
  bool any = false;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].empty() && s.dims_[i] != kDynamic) {
      detail::Throw(
          "Shape::MakeDynamic: axis {} has static dimension {} but is named \"{}\" (only dynamic "
          "axes are named)",
          i, s.dims_[i], names[i]);
    }
    any = any || !names[i].empty();
  }
  if (any) s.names_ = std::move(names);
  return s;
}

int64_t Shape::Dim(int axis) const {
  const int rank = Rank();
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    detail::Throw("Shape::Dim: axis {} out of range for {} (rank {})", axis, *this, rank);
  return dims_[a];
}

bool Shape::IsDynamic() const {
  for (int64_t d : dims_)
    if (d == kDynamic) return true;
  return false;
}

int64_t Shape::Size() const {
  int64_t size = 1;
  for (int64_t d : dims_) {
    if (d == kDynamic)
      detail::Throw("Shape::Size: {} has dynamic axes; its size is known only at run time", *this);
    if (__builtin_mul_overflow(size, d, &size))
      detail::Throw("Shape::Size: {} has more elements than int64 holds", *this);
  }
  return size;
}

int64_t Shape::ByteSize() const {
  const int64_t size = Size();
  const int bits = DTypeBits(dtype_);
  if (bits >= 8 && size > INT64_MAX / (bits / 8))
    detail::Throw("Shape::ByteSize: {} overflows int64 bytes", *this);
  return DTypeByteSize(dtype_, size);
}

std::string Shape::AxisName(int axis) const {
  Dim(axis);  // Range check.
  if (names_.empty()) return "";
  return names_[axis < 0 ? axis + Rank() : axis];
}

Shape Shape::WithDType(DType dtype) const {
  Shape s = *this;
  s.dtype_ = dtype;
  return s;
}

void Shape::AssertRank(int rank) const {
  if (Rank() != rank) detail::Throw("shape {} has rank {}, wanted rank {}", *this, Rank(), rank);
}

void Shape::AssertDims(const std::vector<int64_t>& dims) const {
  bool ok = dims.size() == dims_.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = dims[i] == -1 || dims[i] == dims_[i];
  if (!ok)
    detail::Throw("shape {} does not have dimensions [{}] (-1 matches any size)", *this,
                  fmt::join(dims, ", "));
}

std::string Shape::ToString() const {
  std::string s = fmt::format("({})", DTypeName(dtype_));
  if (dims_.empty()) return s;
  s += '[';
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) s += ", ";
    if (dims_[i] == kDynamic) {
      s += (names_.empty() || names_[i].empty()) ? std::string("?") : names_[i];
    } else {
      s += std::to_string(dims_[i]);
    }
  }
  s += ']';
  return s;
}

std::size_t Shape::Hash() const {
  std::size_t h = std::hash<int>()(static_cast<int>(dtype_));
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int64_t d : dims_) mix(std::hash<int64_t>()(d));
  for (const auto& n : names_) mix(std::hash<std::string>()(n));
  return h;
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << shape.ToString(); }

}  // namespace kiln
