// Shape rules: Gather, Scatter, DynamicSlice, DynamicUpdateSlice, ArgSort, CumSum. The index
// operands take any plain integer dtype; the data operands any unpacked dtype (the numeric
// combinations of Scatter and the sorts and scans need a numeric one).

#include <algorithm>
#include <limits>
#include <string>

#include "compute/shape_rules.h"
#include "core/check.h"

namespace kiln::compute {

namespace {

std::string List(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

void CheckIndexDType(OpType op, const Shape& indices, const char* what) {
  if (!InDTypeClass(indices.dtype(), DTypeClass::Int))
    FailShape(op, fmt::format("{} must have an integer dtype, got {}", what, indices));
}

/// `axes` strictly increasing within [0, bound).
void CheckSortedAxes(OpType op, const std::vector<int64_t>& axes, int64_t bound, const char* what) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= bound)
      FailShape(op, fmt::format("{} {} has axis {} out of range [0, {})", what, List(axes), axes[i], bound));
    if (i > 0 && axes[i] <= axes[i - 1])
      FailShape(op, fmt::format("{} {} must be strictly increasing", what, List(axes)));
  }
}

/// `axes` distinct within [0, bound) (any order).
void CheckDistinctAxes(OpType op, const std::vector<int64_t>& axes, int64_t bound, const char* what) {
  std::vector<bool> seen(static_cast<size_t>(bound), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= bound)
      FailShape(op, fmt::format("{} {} has axis {} out of range [0, {})", what, List(axes), a, bound));
    if (seen[static_cast<size_t>(a)])
      FailShape(op, fmt::format("{} {} repeats axis {}", what, List(axes), a));
    seen[static_cast<size_t>(a)] = true;
  }
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

/// The batch dims of `indices` (all but index_vector_dim) and the index vector's length.
std::vector<int64_t> BatchDims(OpType op, const Shape& indices, int64_t index_vector_dim,
                               size_t& vector_size) {
  const int64_t rank = indices.Rank();
  if (index_vector_dim < 0 || index_vector_dim > rank)
    FailShape(op, fmt::format("index_vector_dim {} out of range [0, {}] for indices {}", index_vector_dim,
                              rank, indices));
  std::vector<int64_t> batch = indices.Dimensions();
  vector_size = 1;
  if (index_vector_dim < rank) {
    vector_size = static_cast<size_t>(batch[static_cast<size_t>(index_vector_dim)]);
    batch.erase(batch.begin() + index_vector_dim);
  }
  return batch;
}

Shape GatherShape(const std::vector<Shape>& in, const GatherDims& g) {
  const OpType op = OpType::Gather;
  const Shape &x = in[0], &indices = in[1];
  CheckIndexDType(op, indices, "indices");
  const int64_t rank = x.Rank();
  size_t k = 0;
  const std::vector<int64_t> batch = BatchDims(op, indices, g.index_vector_dim, k);
  if (g.start_index_map.size() != k)
    FailShape(op, fmt::format("start_index_map {} has {} entries but the index vectors of {} have {}",
                              List(g.start_index_map), g.start_index_map.size(), indices, k));
  CheckDistinctAxes(op, g.start_index_map, rank, "start_index_map");
  if (static_cast<int64_t>(g.slice_sizes.size()) != rank)
    FailShape(op, fmt::format("slice_sizes {} must have one entry per axis of {}", List(g.slice_sizes), x));
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t s = g.slice_sizes[static_cast<size_t>(a)], d = x.Dimensions()[static_cast<size_t>(a)];
    if (s < 0 || s > d)
      FailShape(op, fmt::format("slice size {} of axis {} is out of range [0, {}] for {}", s, a, d, x));
  }
  CheckSortedAxes(op, g.collapsed_slice_dims, rank, "collapsed_slice_dims");
  for (int64_t a : g.collapsed_slice_dims) {
    if (g.slice_sizes[static_cast<size_t>(a)] != 1)
      FailShape(op, fmt::format("collapsed axis {} must have slice size 1, got {}", a,
                                g.slice_sizes[static_cast<size_t>(a)]));
  }
  const size_t offset_count = static_cast<size_t>(rank) - g.collapsed_slice_dims.size();
  if (g.offset_dims.size() != offset_count)
    FailShape(op, fmt::format("offset_dims {} must have {} entries (operand rank {} minus {} collapsed axes)",
                              List(g.offset_dims), offset_count, rank, g.collapsed_slice_dims.size()));
  const int64_t out_rank = static_cast<int64_t>(batch.size() + offset_count);
  CheckSortedAxes(op, g.offset_dims, out_rank, "offset_dims");
  std::vector<int64_t> dims;
  size_t next_batch = 0;
  int64_t next_axis = 0;
  for (int64_t r = 0; r < out_rank; ++r) {
    if (Contains(g.offset_dims, r)) {
      while (Contains(g.collapsed_slice_dims, next_axis)) ++next_axis;
      dims.push_back(g.slice_sizes[static_cast<size_t>(next_axis++)]);
    } else {
      dims.push_back(batch[next_batch++]);
    }
  }
  return Shape(x.dtype(), dims);
}

Shape ScatterShape(const std::vector<Shape>& in, const ScatterDims& s, ReduceKind kind) {
  const OpType op = OpType::Scatter;
  const Shape &x = in[0], &indices = in[1], &updates = in[2];
  CheckIndexDType(op, indices, "indices");
  if (updates.dtype() != x.dtype())
    FailShape(op, fmt::format("updates {} must have the operand's dtype {}", updates, x.dtype()));
  switch (kind) {
    case ReduceKind::Set:
      break;
    case ReduceKind::Sum:
      if (!InDTypeClass(x.dtype(), DTypeClass::NumericComplex))
        FailShape(op, fmt::format("combining with Sum needs a numeric or complex dtype, got {}", x.dtype()));
      break;
    case ReduceKind::Max:
    case ReduceKind::Min:
      if (!InDTypeClass(x.dtype(), DTypeClass::Numeric))
        FailShape(op, fmt::format("combining with Max or Min needs a numeric dtype, got {}", x.dtype()));
      break;
    default:
      FailShape(op, "reduce_kind must be Set, Sum, Max or Min");
  }
  const int64_t rank = x.Rank();
  size_t k = 0;
  const std::vector<int64_t> batch = BatchDims(op, indices, s.index_vector_dim, k);
  if (s.scatter_dims_to_operand_dims.size() != k)
    FailShape(
        op,
        fmt::format("scatter_dims_to_operand_dims {} has {} entries but the index vectors of {} have {}",
                    List(s.scatter_dims_to_operand_dims), s.scatter_dims_to_operand_dims.size(), indices, k));
  CheckDistinctAxes(op, s.scatter_dims_to_operand_dims, rank, "scatter_dims_to_operand_dims");
  CheckSortedAxes(op, s.inserted_window_dims, rank, "inserted_window_dims");
  if (s.update_window_dims.size() + s.inserted_window_dims.size() != static_cast<size_t>(rank))
    FailShape(
        op, fmt::format("update_window_dims {} and inserted_window_dims {} must add up to the rank {} of {}",
                        List(s.update_window_dims), List(s.inserted_window_dims), rank, x));
  const int64_t updates_rank = static_cast<int64_t>(batch.size() + s.update_window_dims.size());
  if (updates.Rank() != updates_rank)
    FailShape(op,
              fmt::format("updates {} must have rank {} ({} scatter axes of indices {} and {} window axes)",
                          updates, updates_rank, batch.size(), indices, s.update_window_dims.size()));
  CheckSortedAxes(op, s.update_window_dims, updates_rank, "update_window_dims");
  size_t next_batch = 0;
  int64_t next_axis = 0;
  for (int64_t r = 0; r < updates_rank; ++r) {
    const int64_t d = updates.Dimensions()[static_cast<size_t>(r)];
    if (Contains(s.update_window_dims, r)) {
      while (Contains(s.inserted_window_dims, next_axis)) ++next_axis;
      const int64_t limit = x.Dimensions()[static_cast<size_t>(next_axis)];
      if (d > limit)
        FailShape(op, fmt::format("updates {} axis {} (window of operand axis {}) is larger than {}", updates,
                                  r, next_axis, x));
      ++next_axis;
    } else {
      if (d != batch[next_batch])
        FailShape(op, fmt::format("updates {} axis {} must match the scatter axes {} of indices {}", updates,
                                  r, List(batch), indices));
      ++next_batch;
    }
  }
  return x;
}

void CheckScalarIndices(OpType op, const std::vector<Shape>& in, size_t first, const Shape& x) {
  if (in.size() - first != static_cast<size_t>(x.Rank()))
    FailShape(
        op, fmt::format("needs one start index per axis of {} ({}), got {}", x, x.Rank(), in.size() - first));
  for (size_t i = first; i < in.size(); ++i) {
    if (!in[i].IsScalar() || !InDTypeClass(in[i].dtype(), DTypeClass::Int))
      FailShape(op, fmt::format("start index {} must be an integer scalar, got {}", i - first, in[i]));
  }
}

}  // namespace

Shape IndexingShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  switch (op) {
    case OpType::DynamicSlice: {
      if (in.empty()) FailShape(op, "needs an operand");
      const Shape& x = in[0];
      CheckScalarIndices(op, in, 1, x);
      if (at.sizes.size() != static_cast<size_t>(x.Rank()))
        FailShape(op, fmt::format("sizes {} must have one entry per axis of {}", List(at.sizes), x));
      for (size_t a = 0; a < at.sizes.size(); ++a) {
        if (at.sizes[a] < 0 || at.sizes[a] > x.Dimensions()[a])
          FailShape(op, fmt::format("size {} of axis {} is out of range [0, {}] for {}", at.sizes[a], a,
                                    x.Dimensions()[a], x));
      }
      return Shape(x.dtype(), at.sizes);
    }
    case OpType::DynamicUpdateSlice: {
      if (in.size() < 2) FailShape(op, "needs an operand and an update");
      const Shape &x = in[0], &update = in[1];
      if (update.dtype() != x.dtype() || update.Rank() != x.Rank())
        FailShape(op, fmt::format("update {} must have the dtype and rank of {}", update, x));
      for (int a = 0; a < x.Rank(); ++a) {
        if (update.Dimensions()[static_cast<size_t>(a)] > x.Dimensions()[static_cast<size_t>(a)])
          FailShape(op, fmt::format("update {} is larger than {} on axis {}", update, x, a));
      }
      CheckScalarIndices(op, in, 2, x);
      return x;
    }
    case OpType::Gather:
      return GatherShape(in, at.gather);
    case OpType::Scatter:
      return ScatterShape(in, at.scatter, at.reduce_kind);
#define KILN_LISTED_Indexing
#include "kiln/compute/op_cases.inc"
      break;
  }
  FailShape(op, "not an indexing op");
}

Shape SortScanShape(OpType op, const std::vector<Shape>& in, const OpAttributes& at) {
  const Shape& x = in[0];
  if (!InDTypeClass(x.dtype(), DTypeClass::Numeric))
    FailShape(op, fmt::format("operand dtype {} is not a numeric dtype (integer or float)", x.dtype()));
  if (at.axis < 0 || at.axis >= x.Rank())
    FailShape(op, fmt::format("axis {} out of range for {}", at.axis, x));
  if (op == OpType::ArgSort) {
    if (x.Dimensions()[static_cast<size_t>(at.axis)] > std::numeric_limits<int32_t>::max())
      FailShape(op, fmt::format("axis {} of {} is too long for Int32 indices", at.axis, x));
    return x.WithDType(DType::Int32);
  }
  if (op == OpType::CumSum) return x;
  FailShape(op, "not a sort or scan op");
}

}  // namespace kiln::compute
