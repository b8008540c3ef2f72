#pragma once
// Adam's update of one Float32 variable in one pass (adam_simd.cc), the kernel of the
// "kiln.adam_update" composite (adam_kernel.cc).

#include <cstddef>

namespace kiln::compute::cpu {

/// The update's constants, as the composite's values and scalar operands hold them.
struct AdamConstants {
  float b1 = 0, one_minus_b1 = 0, b2 = 0, one_minus_b2 = 0, eps = 0;
  float step_size = 0, sqrt_bc2 = 1, decay = 1;
  bool has_decay = false;
};

/// The update's arrays: inputs w, g, m, v and outputs m', v', w' (an output may be its input).
struct AdamArrays {
  const float *w = nullptr, *g = nullptr, *m = nullptr, *v = nullptr;
  float *m_out = nullptr, *v_out = nullptr, *w_out = nullptr;
};

/// Elements [first, last) of the update (kiln/compute/composite.h's kAdamUpdate formulas).
void AdamUpdateRange(const AdamConstants& c, const AdamArrays& a, size_t first, size_t last);

}  // namespace kiln::compute::cpu
