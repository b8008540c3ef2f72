// The cpu kernel of the "kiln.adam_update" composite (kiln/compute/composite.h): Adam's update of
// one Float32 variable in one pass over its elements, m', v' and w' computed in registers from
// w, g, m and v. The decomposition's operations, in its order, each rounded to Float32 (this file
// compiles with -ffp-contract=off, so no multiply and add fuse into one rounding): the results
// are the decomposition's to the bit. The fused elementwise machine runs the same update as an
// interpreter, one pass over a piece per operation; this loop is about five times faster. Highway
// with dynamic dispatch, as fused_simd.cc.

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/adam_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include <cstring>

#include "backends/cpu/adam_simd.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Elements [first, last) of the update.
void AdamRange(const AdamConstants& c, const AdamArrays& a, size_t first, size_t last) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const V b1 = hn::Set(d, c.b1), omb1 = hn::Set(d, c.one_minus_b1), b2 = hn::Set(d, c.b2),
          omb2 = hn::Set(d, c.one_minus_b2), eps = hn::Set(d, c.eps), step = hn::Set(d, c.step_size),
          sqrt_bc2 = hn::Set(d, c.sqrt_bc2), decay = hn::Set(d, c.decay);
  auto block = [&](V w, V g, V m, V v, V& m2, V& v2, V& w2) {
    m2 = hn::Add(hn::Mul(m, b1), hn::Mul(g, omb1));
    v2 = hn::Add(hn::Mul(v, b2), hn::Mul(hn::Mul(g, g), omb2));
    const V denom = hn::Add(hn::Div(hn::Sqrt(v2), sqrt_bc2), eps);
    const V base = c.has_decay ? hn::Mul(w, decay) : w;
    w2 = hn::Sub(base, hn::Div(hn::Mul(step, m2), denom));
  };
  size_t i = first;
  for (; i + lanes <= last; i += lanes) {
    V m2, v2, w2;
    block(hn::LoadU(d, a.w + i), hn::LoadU(d, a.g + i), hn::LoadU(d, a.m + i), hn::LoadU(d, a.v + i), m2, v2,
          w2);
    hn::StoreU(m2, d, a.m_out + i);
    hn::StoreU(v2, d, a.v_out + i);
    hn::StoreU(w2, d, a.w_out + i);
  }
  if (i == last) return;
  // The last partial vector through zero-padded copies (lanes past the end are discarded).
  HWY_ALIGN float buf[4][hn::MaxLanes(d)] = {};
  const size_t rest = last - i;
  std::memcpy(buf[0], a.w + i, rest * sizeof(float));
  std::memcpy(buf[1], a.g + i, rest * sizeof(float));
  std::memcpy(buf[2], a.m + i, rest * sizeof(float));
  std::memcpy(buf[3], a.v + i, rest * sizeof(float));
  V m2, v2, w2;
  block(hn::Load(d, buf[0]), hn::Load(d, buf[1]), hn::Load(d, buf[2]), hn::Load(d, buf[3]), m2, v2, w2);
  hn::Store(m2, d, buf[0]);
  hn::Store(v2, d, buf[1]);
  hn::Store(w2, d, buf[2]);
  std::memcpy(a.m_out + i, buf[0], rest * sizeof(float));
  std::memcpy(a.v_out + i, buf[1], rest * sizeof(float));
  std::memcpy(a.w_out + i, buf[2], rest * sizeof(float));
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(AdamRange);

void AdamUpdateRange(const AdamConstants& c, const AdamArrays& a, size_t first, size_t last) {
  HWY_DYNAMIC_DISPATCH(AdamRange)(c, a, first, last);
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
