#pragma once
// kiln's own convolution kernels, in Highway SIMD code (not with `simd=scalar`): Winograd's
// F(4x4, 5x5) and F(2x2, 5x5) (conv_winograd.cc) and the tap sums for kernel gradients of few
// input features (conv_tap_sums.cc). ChooseKernel (kernels.cc) tries them before oneDNN's.

#include <algorithm>
#include <vector>

#include "backends/cpu/kernels.h"

namespace kiln::compute::cpu {

/// Whether `inst` is a 2-D Float32 ConvGeneral with unit strides and dilations, no groups and no
/// empty operand or result (what both kernels start from).
inline bool UnitStrided2DFloat32Conv(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpAttributes& at = inst.attrs;
  if (inst.op != OpType::ConvGeneral || at.conv.input_spatial.size() != 2) return false;
  if (at.feature_groups != 1 || at.batch_groups != 1) return false;
  for (const std::vector<int64_t>* v : {&at.strides, &at.input_dilations, &at.kernel_dilations}) {
    if (!std::all_of(v->begin(), v->end(), [](int64_t e) { return e == 1; })) return false;
  }
  for (const Shape* s : {&operands.at(0), &operands.at(1), &inst.shape}) {
    if (s->dtype() != DType::Float32 || s->Size() == 0) return false;
  }
  return true;
}

/// A 2-D Float32 ConvGeneral with a 5x5 kernel (or autodiff's kernel-gradient form, whose result
/// is the 5x5 kernel), unit strides and dilations, no groups, and input and output features in
/// multiples of 16 (input times output features at most 128 x 128), contiguous in the data, as
/// Winograd's F(4x4, 5x5) or F(2x2, 5x5) (conv_winograd.cc); `epilogue` (when not null): a bias
/// along the output features and ReLU or none. With `constant_kernel` the kernel is transformed
/// once. Empty for any other convolution.
KernelChoice MakeWinogradConv(int threads, const Instruction& inst, const std::vector<Shape>& operands,
                              const Epilogue* epilogue, bool constant_kernel = false);

/// Autodiff's kernel-gradient form of a 2-D Float32 ConvGeneral (the result is the kernel) with
/// a 3x3 or 5x5 kernel, unit strides and dilations, no groups, 1 to 4 input features and the
/// output features contiguous in the result's gradient, as tap sums (conv_tap_sums.cc). Empty for
/// any other convolution.
KernelChoice MakeTapSumsConv(int threads, const Instruction& inst, const std::vector<Shape>& operands);

}  // namespace kiln::compute::cpu
