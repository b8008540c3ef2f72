// Helpers the reference kernels share: strides, index walks, the missing-kernel error.

#include "backends/ref/ref_kernels.h"

#include "core/check.h"

namespace kiln::compute::ref {

void NoKernel(OpType op, DType dtype) {
  detail::Throw("backend \"ref\": no kernel for {} on {} (the shape rules should have rejected it)",
                OpName(op), dtype);
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  return strides;
}

int64_t NumElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

IndexWalk::IndexWalk(std::vector<int64_t> dims, std::vector<int64_t> a_strides,
                     std::vector<int64_t> b_strides)
    : dims_(std::move(dims)), a_strides_(std::move(a_strides)), b_strides_(std::move(b_strides)) {
  // Without b strides, b stays at its base.
  if (b_strides_.empty()) b_strides_.assign(dims_.size(), 0);
  index_.assign(dims_.size(), 0);
}

void IndexWalk::Reset(int64_t a_base, int64_t b_base) {
  std::fill(index_.begin(), index_.end(), 0);
  a_ = a_base;
  b_ = b_base;
}

std::vector<int64_t> BoxOffsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  const int64_t n = NumElements(dims);
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(n));
  IndexWalk walk(dims, strides);
  for (int64_t i = 0; i < n; ++i, walk.Next()) offsets.push_back(walk.a());
  return offsets;
}

Kernel MakeKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  switch (GetOpCategory(inst.op)) {
    case OpCategory::Leaf:
      return inst.op == OpType::Parameter ? Kernel() : MakeLeafKernel(inst);
    case OpCategory::Unary:
    case OpCategory::UnaryPredicate:
      return MakeUnaryKernel(inst, operands);
    case OpCategory::Binary:
    case OpCategory::Compare:
    case OpCategory::Select:
      return MakeBinaryKernel(inst, operands);
    case OpCategory::Reduce:
    case OpCategory::ArgReduce:
      return MakeReduceKernel(inst, operands);
    case OpCategory::Movement:
      return MakeMovementKernel(inst, operands);
    case OpCategory::Convert:
      return inst.op == OpType::Bitcast ? MakeMovementKernel(inst, operands)
                                        : MakeConvertKernel(inst, operands);
    case OpCategory::Contraction:
      return MakeDotKernel(inst, operands);
    case OpCategory::Convolution:
      return MakeConvKernel(inst, operands);
    case OpCategory::Window:
      return MakeWindowKernel(inst, operands);
    case OpCategory::Indexing:
      return MakeIndexingKernel(inst, operands);
    case OpCategory::SortScan:
      return MakeSortScanKernel(inst, operands);
    case OpCategory::Complex:
      return MakeComplexKernel(inst, operands);
    case OpCategory::Control:
      return Kernel();  // Tuple ops and GetTupleElement run in Execute.
    case OpCategory::Collective:
      return MakeCollectiveKernel(inst, operands);
  }
  NoKernel(inst.op, inst.shape.dtype());
}

}  // namespace kiln::compute::ref
