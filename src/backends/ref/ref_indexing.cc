// Indexing kernels: Gather, Scatter, DynamicSlice, DynamicUpdateSlice. Start indices of any
// integer dtype are read as int64 (saturating Uint64 values above INT64_MAX), then clamped so the
// slice fits (Gather, DynamicSlice, DynamicUpdateSlice) or checked, the update being dropped when
// its window would not fit (Scatter). No kernel reads or writes outside its buffers.

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

/// Reads element `i` of an integer buffer as int64 (values beyond int64 saturate).
using IndexReader = int64_t (*)(const uint8_t* data, int64_t i);

template <typename I>
int64_t ReadIndexAs(const uint8_t* data, int64_t i) {
  I v;
  std::memcpy(&v, data + i * static_cast<int64_t>(sizeof(I)), sizeof(I));
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(v);
}

IndexReader ReaderFor(OpType op, DType d) {
  switch (d) {
    case DType::Int8:
      return &ReadIndexAs<int8_t>;
    case DType::Int16:
      return &ReadIndexAs<int16_t>;
    case DType::Int32:
      return &ReadIndexAs<int32_t>;
    case DType::Int64:
      return &ReadIndexAs<int64_t>;
    case DType::Uint8:
      return &ReadIndexAs<uint8_t>;
    case DType::Uint16:
      return &ReadIndexAs<uint16_t>;
    case DType::Uint32:
      return &ReadIndexAs<uint32_t>;
    case DType::Uint64:
      return &ReadIndexAs<uint64_t>;
    default:
      NoKernel(op, d);
  }
}

/// Gather and Scatter plans: a walk over the index vectors (the batch axes of the indices) and a
/// window box over the operand's axes.
struct IndexPlan {
  IndexReader read = nullptr;
  std::vector<int64_t> batch_dims, batch_index_strides, batch_other_strides;
  int64_t vector_stride = 0;        ///< Between entries of one index vector.
  std::vector<int64_t> index_axes;  ///< Operand axis of each index vector entry.
  std::vector<int64_t> operand_dims, operand_strides;
  std::vector<int64_t> window;          ///< Window size per operand axis.
  std::vector<int64_t> window_offsets;  ///< Operand offsets of the window's elements (row-major).
  std::vector<int64_t> other_offsets;   ///< Result (Gather) or updates (Scatter) offsets of them.
  int64_t batch_size = 0;
  int64_t out_size = 0;
  ReduceKind kind = ReduceKind::Set;
};

/// Splits the indices' axes into batch axes and the index vector axis.
void PlanBatch(IndexPlan& p, const Shape& indices, int64_t index_vector_dim) {
  const std::vector<int64_t> strides = RowMajorStrides(indices.Dimensions());
  for (int64_t a = 0; a < indices.Rank(); ++a) {
    if (a == index_vector_dim) {
      p.vector_stride = strides[static_cast<size_t>(a)];
    } else {
      p.batch_dims.push_back(indices.Dimensions()[static_cast<size_t>(a)]);
      p.batch_index_strides.push_back(strides[static_cast<size_t>(a)]);
    }
  }
  p.batch_size = NumElements(p.batch_dims);
}

/// The base operand offset of the window at the index vector starting at `at`, clamped into
/// range (clamp) or -1 when it does not fit (skip).
int64_t WindowBase(const IndexPlan& p, const uint8_t* indices, int64_t at, bool clamp) {
  int64_t base = 0;
  for (size_t k = 0; k < p.index_axes.size(); ++k) {
    const auto axis = static_cast<size_t>(p.index_axes[k]);
    const int64_t limit = p.operand_dims[axis] - p.window[axis];  // >= 0 (shape rules).
    int64_t start = p.read(indices, at + static_cast<int64_t>(k) * p.vector_stride);
    if (start < 0 || start > limit) {
      if (!clamp) return -1;
      start = std::clamp<int64_t>(start, 0, limit);
    }
    base += start * p.operand_strides[axis];
  }
  return base;
}

IndexPlan PlanGather(const Instruction& inst, const std::vector<Shape>& in) {
  const GatherDims& g = inst.attrs.gather;
  const Shape &x = in[0], &indices = in[1];
  IndexPlan p;
  p.read = ReaderFor(inst.op, indices.dtype());
  PlanBatch(p, indices, g.index_vector_dim);
  p.index_axes = g.start_index_map;
  p.operand_dims = x.Dimensions();
  p.operand_strides = RowMajorStrides(x.Dimensions());
  p.window = g.slice_sizes;
  const std::vector<int64_t> out_strides = RowMajorStrides(inst.shape.Dimensions());
  const int64_t out_rank = inst.shape.Rank();
  // Result axes: offset_dims hold the non-collapsed window axes in order, the rest the batch axes.
  std::vector<int64_t> window_out_strides(static_cast<size_t>(x.Rank()), 0);
  size_t next_axis = 0;
  for (int64_t r = 0; r < out_rank; ++r) {
    if (std::find(g.offset_dims.begin(), g.offset_dims.end(), r) != g.offset_dims.end()) {
      while (std::find(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end(),
                       static_cast<int64_t>(next_axis)) != g.collapsed_slice_dims.end())
        ++next_axis;
      window_out_strides[next_axis++] = out_strides[static_cast<size_t>(r)];
    } else {
      p.batch_other_strides.push_back(out_strides[static_cast<size_t>(r)]);
    }
  }
  p.window_offsets = BoxOffsets(p.window, p.operand_strides);
  p.other_offsets = BoxOffsets(p.window, window_out_strides);
  p.out_size = inst.shape.Size();
  return p;
}

IndexPlan PlanScatter(const Instruction& inst, const std::vector<Shape>& in) {
  const ScatterDims& s = inst.attrs.scatter;
  const Shape &x = in[0], &indices = in[1], &updates = in[2];
  IndexPlan p;
  p.read = ReaderFor(inst.op, indices.dtype());
  p.kind = inst.attrs.reduce_kind;
  PlanBatch(p, indices, s.index_vector_dim);
  p.index_axes = s.scatter_dims_to_operand_dims;
  p.operand_dims = x.Dimensions();
  p.operand_strides = RowMajorStrides(x.Dimensions());
  const std::vector<int64_t> up_strides = RowMajorStrides(updates.Dimensions());
  p.window.assign(static_cast<size_t>(x.Rank()), 1);
  std::vector<int64_t> window_up_strides(static_cast<size_t>(x.Rank()), 0);
  size_t next_axis = 0;
  for (int64_t r = 0; r < updates.Rank(); ++r) {
    const auto ur = static_cast<size_t>(r);
    if (std::find(s.update_window_dims.begin(), s.update_window_dims.end(), r) !=
        s.update_window_dims.end()) {
      while (std::find(s.inserted_window_dims.begin(), s.inserted_window_dims.end(),
                       static_cast<int64_t>(next_axis)) != s.inserted_window_dims.end())
        ++next_axis;
      p.window[next_axis] = updates.Dimensions()[ur];
      window_up_strides[next_axis++] = up_strides[ur];
    } else {
      p.batch_other_strides.push_back(up_strides[ur]);
    }
  }
  p.window_offsets = BoxOffsets(p.window, p.operand_strides);
  p.other_offsets = BoxOffsets(p.window, window_up_strides);
  p.out_size = x.Size();
  return p;
}

/// Gather: elements are copied as bits (E: an unsigned type of the element's size).
template <typename E>
Kernel GatherKernel(std::shared_ptr<const IndexPlan> p) {
  return [p](Operands in, uint8_t* out) {
    const E* x = reinterpret_cast<const E*>(in[0]);
    E* y = reinterpret_cast<E*>(out);
    IndexWalk batch(p->batch_dims, p->batch_index_strides, p->batch_other_strides);
    for (int64_t b = 0; b < p->batch_size; ++b, batch.Next()) {
      const int64_t base = WindowBase(*p, in[1], batch.a(), true);
      for (size_t w = 0; w < p->window_offsets.size(); ++w)
        y[batch.b() + p->other_offsets[w]] = x[base + p->window_offsets[w]];
    }
  };
}

template <typename T>
Kernel ScatterKernel(std::shared_ptr<const IndexPlan> p) {
  return [p](Operands in, uint8_t* out) {
    T* y = reinterpret_cast<T*>(out);
    if (out != in[0] && p->out_size > 0)
      std::memcpy(out, in[0], static_cast<size_t>(p->out_size) * sizeof(T));
    const T* u = reinterpret_cast<const T*>(in[2]);
    IndexWalk batch(p->batch_dims, p->batch_index_strides, p->batch_other_strides);
    for (int64_t b = 0; b < p->batch_size; ++b, batch.Next()) {
      const int64_t base = WindowBase(*p, in[1], batch.a(), false);
      if (base < 0) continue;  // The window does not fit: the update is dropped.
      for (size_t w = 0; w < p->window_offsets.size(); ++w) {
        T& dst = y[base + p->window_offsets[w]];
        const T v = u[batch.b() + p->other_offsets[w]];
        if (p->kind == ReduceKind::Set) {
          dst = v;
        } else if constexpr (kIsComplex<T>) {
          dst += v;
        } else if constexpr (kIsFloat<T>) {
          const auto a = Load(dst), c = Load(v);
          dst = Store<T>(p->kind == ReduceKind::Sum   ? a + c
                         : p->kind == ReduceKind::Max ? MaxOf(a, c)
                                                      : MinOf(a, c));
        } else {
          dst = p->kind == ReduceKind::Sum   ? FromBits<T>(Wide<T>(ToBits(dst) + ToBits(v)))
                : p->kind == ReduceKind::Max ? MaxOf(dst, v)
                                             : MinOf(dst, v);
        }
      }
    }
  };
}

/// DynamicSlice (update == false) and DynamicUpdateSlice: a box of `box` dims at clamped starts.
struct SlicePlan {
  std::vector<IndexReader> readers;  ///< One per axis.
  std::vector<int64_t> limits;       ///< dims - box per axis: the largest start.
  std::vector<int64_t> operand_strides;
  std::vector<int64_t> box_offsets_operand, box_offsets_box;
  int first_index = 1;
  int64_t operand_bytes = 0;
};

template <typename E>
Kernel SliceKernel(std::shared_ptr<const SlicePlan> p, bool update) {
  return [p, update](Operands in, uint8_t* out) {
    int64_t base = 0;
    for (size_t a = 0; a < p->readers.size(); ++a) {
      const int64_t start = p->readers[a](in[static_cast<size_t>(p->first_index) + a], 0);
      base += std::clamp<int64_t>(start, 0, p->limits[a]) * p->operand_strides[a];
    }
    E* y = reinterpret_cast<E*>(out);
    if (!update) {
      const E* x = reinterpret_cast<const E*>(in[0]);
      for (size_t i = 0; i < p->box_offsets_operand.size(); ++i) y[i] = x[base + p->box_offsets_operand[i]];
      return;
    }
    if (out != in[0] && p->operand_bytes > 0) std::memcpy(out, in[0], static_cast<size_t>(p->operand_bytes));
    const E* u = reinterpret_cast<const E*>(in[1]);
    for (size_t i = 0; i < p->box_offsets_operand.size(); ++i) y[base + p->box_offsets_operand[i]] = u[i];
  };
}

/// DynamicSlice and DynamicUpdateSlice.
Kernel MakeSliceKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpType op = inst.op;
  const Shape& x = operands.at(0);
  const DType dtype = x.dtype();
  const bool update = op == OpType::DynamicUpdateSlice;
  SlicePlan p;
  p.first_index = update ? 2 : 1;
  const std::vector<int64_t>& box = update ? operands.at(1).Dimensions() : inst.attrs.sizes;
  for (int a = 0; a < x.Rank(); ++a) {
    const auto i = static_cast<size_t>(a);
    p.readers.push_back(ReaderFor(op, operands.at(static_cast<size_t>(p.first_index) + i).dtype()));
    p.limits.push_back(x.Dimensions()[i] - box[i]);
  }
  p.operand_strides = RowMajorStrides(x.Dimensions());
  p.box_offsets_operand = BoxOffsets(box, p.operand_strides);
  p.operand_bytes = x.ByteSize();
  auto plan = std::make_shared<const SlicePlan>(std::move(p));
  switch (DTypeBits(dtype)) {
    case 8:
      return SliceKernel<uint8_t>(plan, update);
    case 16:
      return SliceKernel<uint16_t>(plan, update);
    case 32:
      return SliceKernel<uint32_t>(plan, update);
    case 64:
      return SliceKernel<uint64_t>(plan, update);
    case 128:
      return SliceKernel<Bits128>(plan, update);
    default:
      NoKernel(op, dtype);
  }
}

}  // namespace

Kernel MakeIndexingKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpType op = inst.op;
  const Shape& x = operands.at(0);
  const DType dtype = x.dtype();
  switch (op) {
    case OpType::Gather: {
      auto plan = std::make_shared<const IndexPlan>(PlanGather(inst, operands));
      switch (DTypeBits(dtype)) {
        case 8:
          return GatherKernel<uint8_t>(plan);
        case 16:
          return GatherKernel<uint16_t>(plan);
        case 32:
          return GatherKernel<uint32_t>(plan);
        case 64:
          return GatherKernel<uint64_t>(plan);
        case 128:
          return GatherKernel<Bits128>(plan);
        default:
          NoKernel(op, dtype);
      }
    }
    case OpType::Scatter: {
      auto plan = std::make_shared<const IndexPlan>(PlanScatter(inst, operands));
      if (dtype == DType::Bool) return ScatterKernel<uint8_t>(plan);  // Set only (shape rules).
      if (IsComplex(dtype))                                           // Set or Sum (shape rules).
        return DispatchComplexDType(dtype, [&](auto tag) { return ScatterKernel<decltype(tag)>(plan); });
      return DispatchDType(dtype, [&](auto tag) -> Kernel {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bool>) {
          NoKernel(op, dtype);
        } else {
          return ScatterKernel<T>(plan);
        }
      });
    }
    case OpType::DynamicSlice:
    case OpType::DynamicUpdateSlice:
      return MakeSliceKernel(inst, operands);
#define KILN_LISTED_Indexing
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(op, dtype);
}

}  // namespace kiln::compute::ref
