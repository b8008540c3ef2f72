// Data movement kernels (Reshape, Transpose, BroadcastInDim, Concatenate, Slice, Pad, Reverse)
// and Bitcast. All but the byte copies are "box copies": every index of a box of dimensions is
// copied from one strided position to another, with strides and offsets fixed at compile time.

#include <algorithm>
#include <cstring>
#include <memory>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

/// Copies dst[dst_base + sum(i[k] * dst_strides[k])] = src[src_base + sum(i[k] * src_strides[k])]
/// for every index i of the box `dims` (offsets in elements).
struct BoxCopy {
  std::vector<int64_t> dims, src_strides, dst_strides;
  int64_t src_base = 0, dst_base = 0;
  int operand = 0;  ///< Which operand is the source.
};

/// A gather into a contiguous result: result element j (row-major over `out_dims`) comes from
/// src[base + sum(j[k] * src_strides[k])].
BoxCopy Gather(const std::vector<int64_t>& out_dims, std::vector<int64_t> src_strides, int64_t base) {
  return BoxCopy{out_dims, std::move(src_strides), RowMajorStrides(out_dims), base, 0, 0};
}

/// `box` with its axes of size 1 dropped and neighbouring axes merged where both sides are
/// contiguous across them (the same copy, in fewer and longer rows).
BoxCopy Merged(const BoxCopy& box) {
  BoxCopy m;
  m.src_base = box.src_base;
  m.dst_base = box.dst_base;
  m.operand = box.operand;
  for (size_t k = 0; k < box.dims.size(); ++k) {
    if (box.dims[k] == 1) continue;
    if (!m.dims.empty() && m.src_strides.back() == box.src_strides[k] * box.dims[k] &&
        m.dst_strides.back() == box.dst_strides[k] * box.dims[k]) {
      m.dims.back() *= box.dims[k];
      m.src_strides.back() = box.src_strides[k];
      m.dst_strides.back() = box.dst_strides[k];
      continue;
    }
    m.dims.push_back(box.dims[k]);
    m.src_strides.push_back(box.src_strides[k]);
    m.dst_strides.push_back(box.dst_strides[k]);
  }
  if (m.dims.empty() && NumElements(box.dims) == 1) {  // One element.
    m.dims = {1};
    m.src_strides = {1};
    m.dst_strides = {1};
  }
  return m;
}

/// Runs the copies in order, after filling the result with operand `fill_operand`'s scalar
/// when it is >= 0 (Pad). E is an unsigned type of the element's size: elements are copied as bits.
/// Each box copies rows along its last (merged) axis: contiguous rows with memcpy, a repeated
/// element (source stride 0) with a fill, others element by element.
template <typename E>
Kernel CopyBoxes(std::shared_ptr<const std::vector<BoxCopy>> boxes, int fill_operand, int64_t out_size) {
  auto merged = std::make_shared<std::vector<BoxCopy>>();
  for (const BoxCopy& box : *boxes)
    if (NumElements(box.dims) > 0) merged->push_back(Merged(box));
  return [merged, fill_operand, out_size](Operands in, uint8_t* out) {
    E* y = reinterpret_cast<E*>(out);
    if (fill_operand >= 0) {
      const E fill = *reinterpret_cast<const E*>(in[static_cast<size_t>(fill_operand)]);
      std::fill(y, y + out_size, fill);
    }
    for (const BoxCopy& box : *merged) {
      const E* x = reinterpret_cast<const E*>(in[static_cast<size_t>(box.operand)]);
      const int64_t row = box.dims.back(), xs = box.src_strides.back(), ys = box.dst_strides.back();
      const std::vector<int64_t> outer_dims(box.dims.begin(), box.dims.end() - 1);
      const int64_t rows = NumElements(outer_dims);
      IndexWalk walk(outer_dims, std::vector<int64_t>(box.src_strides.begin(), box.src_strides.end() - 1),
                     std::vector<int64_t>(box.dst_strides.begin(), box.dst_strides.end() - 1));
      walk.Reset(box.src_base, box.dst_base);
      for (int64_t r = 0; r < rows; ++r, walk.Next()) {
        const E* from = x + walk.a();
        E* to = y + walk.b();
        if (xs == 1 && ys == 1) {
          if (to != from) std::memcpy(to, from, static_cast<size_t>(row) * sizeof(E));
        } else if (xs == 0 && ys == 1) {
          std::fill(to, to + row, *from);
        } else {
          for (int64_t i = 0; i < row; ++i) to[i * ys] = from[i * xs];
        }
      }
    }
  };
}

/// floor(a / b) for b > 0.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// Pad: input index i of an axis lands at low + i * (interior + 1); only the indices landing
/// inside [0, out_dim) are copied (negative low/high crop).
BoxCopy PadBox(const Shape& x, const Shape& out, const std::vector<PadAxis>& padding) {
  BoxCopy box;
  const std::vector<int64_t> src = RowMajorStrides(x.Dimensions()), dst = RowMajorStrides(out.Dimensions());
  for (size_t a = 0; a < padding.size(); ++a) {
    const int64_t n = x.Dimensions()[a], size = out.Dimensions()[a];
    const int64_t low = padding[a].low, step = padding[a].interior + 1;
    // First i with low + i * step >= 0, and one past the last with low + i * step < size.
    const int64_t first = std::clamp<int64_t>(low >= 0 ? 0 : FloorDiv(-low + step - 1, step), 0, n);
    const int64_t end = std::clamp<int64_t>(FloorDiv(size - 1 - low, step) + 1, first, n);
    box.dims.push_back(end - first);
    box.src_strides.push_back(src[a]);
    box.dst_strides.push_back(dst[a] * step);
    box.src_base += first * src[a];
    box.dst_base += (low + first * step) * dst[a];
  }
  box.operand = 0;
  return box;
}

std::vector<BoxCopy> PlanBoxes(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpAttributes& at = inst.attrs;
  const Shape& x = operands[0];
  const std::vector<int64_t>& in_dims = x.Dimensions();
  const std::vector<int64_t>& out_dims = inst.shape.Dimensions();
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  const size_t rank = in_dims.size();
  switch (inst.op) {
    case OpType::Transpose: {
      // Output axis i is operand axis permutation[i].
      std::vector<int64_t> strides;
      for (int64_t p : at.permutation) strides.push_back(in_strides[static_cast<size_t>(p)]);
      return {Gather(out_dims, strides, 0)};
    }
    case OpType::BroadcastInDim: {
      // Operand axis i is output axis axes[i]; size-1 operand axes (and new axes) repeat: stride 0.
      std::vector<int64_t> strides(out_dims.size(), 0);
      for (size_t i = 0; i < rank; ++i) {
        if (in_dims[i] != 1) strides[static_cast<size_t>(at.axes[i])] = in_strides[i];
      }
      return {Gather(out_dims, strides, 0)};
    }
    case OpType::Slice: {
      std::vector<int64_t> strides;
      int64_t base = 0;
      for (size_t i = 0; i < rank; ++i) {
        strides.push_back(in_strides[i] * at.strides[i]);
        base += at.starts[i] * in_strides[i];
      }
      return {Gather(out_dims, strides, base)};
    }
    case OpType::Reverse: {
      // A reversed axis reads from its end backwards.
      std::vector<int64_t> strides = in_strides;
      int64_t base = 0;
      for (int64_t a : at.axes) {
        const auto i = static_cast<size_t>(a);
        strides[i] = -in_strides[i];
        if (in_dims[i] > 0) base += (in_dims[i] - 1) * in_strides[i];
      }
      return {Gather(out_dims, strides, base)};
    }
    case OpType::Concatenate: {
      // Operand k lands at its offset along the axis.
      std::vector<BoxCopy> boxes;
      const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
      const auto axis = static_cast<size_t>(at.axis);
      int64_t offset = 0;
      for (size_t k = 0; k < operands.size(); ++k) {
        const std::vector<int64_t>& dims = operands[k].Dimensions();
        boxes.push_back(BoxCopy{dims, RowMajorStrides(dims), out_strides, 0, offset * out_strides[axis],
                                static_cast<int>(k)});
        offset += dims[axis];
      }
      return boxes;
    }
    case OpType::Pad:
      return {PadBox(x, inst.shape, at.padding)};
    case OpType::Reshape:
#define KILN_LISTED_Movement
#include "kiln/compute/op_cases.inc"
      break;
  }
  NoKernel(inst.op, x.dtype());
}

}  // namespace

Kernel MakeMovementKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpType op = inst.op;
  if (op == OpType::Reshape || op == OpType::Bitcast) {
    // The bytes are unchanged (packed dtypes included); only the shape differs.
    const auto bytes = static_cast<size_t>(inst.shape.ByteSize());
    return [bytes](Operands in, uint8_t* out) {
      if (out != in[0] && bytes > 0) std::memcpy(out, in[0], bytes);
    };
  }
  auto boxes = std::make_shared<const std::vector<BoxCopy>>(PlanBoxes(inst, operands));
  const int fill = op == OpType::Pad ? 1 : -1;
  const int64_t out_size = inst.shape.Size();
  switch (DTypeBits(inst.shape.dtype())) {
    case 8:
      return CopyBoxes<uint8_t>(boxes, fill, out_size);
    case 16:
      return CopyBoxes<uint16_t>(boxes, fill, out_size);
    case 32:
      return CopyBoxes<uint32_t>(boxes, fill, out_size);
    case 64:
      return CopyBoxes<uint64_t>(boxes, fill, out_size);
    case 128:
      return CopyBoxes<Bits128>(boxes, fill, out_size);
    default:
      NoKernel(op, inst.shape.dtype());
  }
}

}  // namespace kiln::compute::ref
