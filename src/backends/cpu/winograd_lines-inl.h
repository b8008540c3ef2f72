// The one-dimensional transforms of Winograd's F(2, 5) and F(4, 5) on float32 vectors, for
// conv_winograd_simd.cc, included after foreach_target.h, once per target (Highway's per-target
// include guard below). F(m, 5) takes a line of m + 4 inputs and a line of 5 kernel taps to
// m + 4 points, multiplies them point by point, and takes the products back to m results:
// y = A^T [(G g) . (B^T d)]. The 2-D transforms apply each line down the columns, then along the
// rows. The matrices (conv_winograd.h has F(2, 5)'s) come from the points 0, 1, -1, 2, -2
// (F(2, 5)) and also 1/2, -1/2 (F(4, 5)), and infinity; their rows come in pairs that differ in
// the sign of the odd terms, so each pair is computed as E + O and E - O.

#if defined(KILN_BACKENDS_CPU_WINOGRAD_LINES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_BACKENDS_CPU_WINOGRAD_LINES_INL_H_
#undef KILN_BACKENDS_CPU_WINOGRAD_LINES_INL_H_
#else
#define KILN_BACKENDS_CPU_WINOGRAD_LINES_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace winograd {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

/// c * x on vectors.
HWY_INLINE V Times(D d, float c, V x) { return hn::Mul(hn::Set(d, c), x); }
/// c * x + y on vectors.
HWY_INLINE V Plus(D d, float c, V x, V y) { return hn::MulAdd(hn::Set(d, c), x, y); }

/// The transforms of F(M, 5): Input (B^T, patch line to points), Output (A^T, points to results),
/// Gradient (A, results' gradients to points), Kernel (G, taps to points) and KernelGradient
/// (G^T, points to taps).
template <int M>
struct Lines;

template <>
struct Lines<2> {
  static constexpr int kPatch = 6;

  static HWY_INLINE void Input(D d, const V* x, V* v) {
    v[0] = hn::NegMulAdd(hn::Set(d, 5.0f), x[2], Plus(d, 4.0f, x[0], x[4]));
    const V e1 = hn::NegMulAdd(hn::Set(d, 4.0f), x[2], x[4]),
            o1 = hn::NegMulAdd(hn::Set(d, 4.0f), x[1], x[3]);
    v[1] = hn::Add(e1, o1);
    v[2] = hn::Sub(e1, o1);
    const V e2 = hn::Sub(x[4], x[2]), o2 = Times(d, 2.0f, hn::Sub(x[3], x[1]));
    v[3] = hn::Add(e2, o2);
    v[4] = hn::Sub(e2, o2);
    v[5] = hn::NegMulAdd(hn::Set(d, 5.0f), x[3], Plus(d, 4.0f, x[1], x[5]));
  }

  static HWY_INLINE void Output(D d, const V* m, V* y) {
    const V s1 = hn::Add(m[1], m[2]), t1 = hn::Sub(m[1], m[2]);
    const V s2 = hn::Add(m[3], m[4]), t2 = hn::Sub(m[3], m[4]);
    y[0] = hn::Add(hn::Add(m[0], s1), s2);
    y[1] = hn::Add(Plus(d, 2.0f, t2, t1), m[5]);
  }

  static HWY_INLINE void Gradient(D d, const V* y, V* w) {
    w[0] = y[0];
    w[1] = hn::Add(y[0], y[1]);
    w[2] = hn::Sub(y[0], y[1]);
    w[3] = Plus(d, 2.0f, y[1], y[0]);
    w[4] = hn::NegMulAdd(hn::Set(d, 2.0f), y[1], y[0]);
    w[5] = y[1];
  }

  static HWY_INLINE void Kernel(D d, const V* g, V* u) {
    const V e1 = Times(d, -1 / 6.0f, hn::Add(hn::Add(g[0], g[2]), g[4]));
    const V o1 = Times(d, -1 / 6.0f, hn::Add(g[1], g[3]));
    const V e2 = Plus(d, 1 / 24.0f, g[0], Plus(d, 1 / 6.0f, g[2], Times(d, 2 / 3.0f, g[4])));
    const V o2 = Plus(d, 1 / 12.0f, g[1], Times(d, 1 / 3.0f, g[3]));
    u[0] = Times(d, 0.25f, g[0]);
    u[1] = hn::Add(e1, o1);
    u[2] = hn::Sub(e1, o1);
    u[3] = hn::Add(e2, o2);
    u[4] = hn::Sub(e2, o2);
    u[5] = g[4];
  }

  static HWY_INLINE void KernelGradient(D d, const V* s, V* g) {
    const V p1 = hn::Add(s[1], s[2]), q1 = hn::Sub(s[1], s[2]);
    const V p2 = hn::Add(s[3], s[4]), q2 = hn::Sub(s[3], s[4]);
    g[0] = Plus(d, 0.25f, s[0], Plus(d, -1 / 6.0f, p1, Times(d, 1 / 24.0f, p2)));
    g[1] = Plus(d, -1 / 6.0f, q1, Times(d, 1 / 12.0f, q2));
    g[2] = Times(d, 1 / 6.0f, hn::Sub(p2, p1));
    g[3] = Plus(d, -1 / 6.0f, q1, Times(d, 1 / 3.0f, q2));
    g[4] = hn::Add(Plus(d, -1 / 6.0f, p1, Times(d, 2 / 3.0f, p2)), s[5]);
  }
};

template <>
struct Lines<4> {
  static constexpr int kPatch = 8;

  static HWY_INLINE void Input(D d, const V* x, V* v) {
    v[0] = Plus(d, 21 / 4.0f, hn::Sub(x[2], x[4]), hn::Sub(x[6], x[0]));
    const V e1 = Plus(d, -17 / 4.0f, x[4], hn::Add(x[2], x[6]));
    const V o1 = Plus(d, -17 / 4.0f, x[3], hn::Add(x[1], x[5]));
    v[1] = hn::Add(e1, o1);
    v[2] = hn::Sub(e1, o1);
    const V e2 = Plus(d, 0.25f, x[2], Plus(d, -5 / 4.0f, x[4], x[6]));
    const V o2 = Plus(d, 0.5f, x[1], Plus(d, -5 / 2.0f, x[3], Times(d, 2.0f, x[5])));
    v[3] = hn::Add(e2, o2);
    v[4] = hn::Sub(e2, o2);
    const V e3 = Plus(d, 4.0f, x[2], Plus(d, -5.0f, x[4], x[6]));
    const V o3 = Plus(d, 2.0f, x[1], Plus(d, -5 / 2.0f, x[3], Times(d, 0.5f, x[5])));
    v[5] = hn::Add(e3, o3);
    v[6] = hn::Sub(e3, o3);
    v[7] = Plus(d, 21 / 4.0f, hn::Sub(x[3], x[5]), hn::Sub(x[7], x[1]));
  }

  static HWY_INLINE void Output(D d, const V* m, V* y) {
    const V s1 = hn::Add(m[1], m[2]), t1 = hn::Sub(m[1], m[2]);
    const V s2 = hn::Add(m[3], m[4]), t2 = hn::Sub(m[3], m[4]);
    const V s3 = hn::Add(m[5], m[6]), t3 = hn::Sub(m[5], m[6]);
    y[0] = hn::Add(hn::Add(m[0], s1), hn::Add(s2, s3));
    y[1] = Plus(d, 2.0f, t2, Plus(d, 0.5f, t3, t1));
    y[2] = Plus(d, 4.0f, s2, Plus(d, 0.25f, s3, s1));
    y[3] = hn::Add(Plus(d, 8.0f, t2, Plus(d, 0.125f, t3, t1)), m[7]);
  }

  static HWY_INLINE void Gradient(D d, const V* y, V* w) {
    w[0] = y[0];
    const V e1 = hn::Add(y[0], y[2]), o1 = hn::Add(y[1], y[3]);
    w[1] = hn::Add(e1, o1);
    w[2] = hn::Sub(e1, o1);
    const V e2 = Plus(d, 4.0f, y[2], y[0]), o2 = Plus(d, 2.0f, y[1], Times(d, 8.0f, y[3]));
    w[3] = hn::Add(e2, o2);
    w[4] = hn::Sub(e2, o2);
    const V e3 = Plus(d, 0.25f, y[2], y[0]), o3 = Plus(d, 0.5f, y[1], Times(d, 0.125f, y[3]));
    w[5] = hn::Add(e3, o3);
    w[6] = hn::Sub(e3, o3);
    w[7] = y[3];
  }

  static HWY_INLINE void Kernel(D d, const V* g, V* u) {
    const V e1 = Times(d, -2 / 9.0f, hn::Add(hn::Add(g[0], g[2]), g[4]));
    const V o1 = Times(d, -2 / 9.0f, hn::Add(g[1], g[3]));
    const V e2 = Plus(d, 1 / 90.0f, g[0], Plus(d, 2 / 45.0f, g[2], Times(d, 8 / 45.0f, g[4])));
    const V o2 = Plus(d, 1 / 45.0f, g[1], Times(d, 4 / 45.0f, g[3]));
    const V e3 = Plus(d, 32 / 45.0f, g[0], Plus(d, 8 / 45.0f, g[2], Times(d, 2 / 45.0f, g[4])));
    const V o3 = Plus(d, 16 / 45.0f, g[1], Times(d, 4 / 45.0f, g[3]));
    u[0] = hn::Neg(g[0]);
    u[1] = hn::Add(e1, o1);
    u[2] = hn::Sub(e1, o1);
    u[3] = hn::Add(e2, o2);
    u[4] = hn::Sub(e2, o2);
    u[5] = hn::Add(e3, o3);
    u[6] = hn::Sub(e3, o3);
    u[7] = g[4];
  }

  static HWY_INLINE void KernelGradient(D d, const V* s, V* g) {
    const V p1 = hn::Add(s[1], s[2]), q1 = hn::Sub(s[1], s[2]);
    const V p2 = hn::Add(s[3], s[4]), q2 = hn::Sub(s[3], s[4]);
    const V p3 = hn::Add(s[5], s[6]), q3 = hn::Sub(s[5], s[6]);
    g[0] = hn::Sub(Plus(d, -2 / 9.0f, p1, Plus(d, 1 / 90.0f, p2, Times(d, 32 / 45.0f, p3))), s[0]);
    g[1] = Plus(d, -2 / 9.0f, q1, Plus(d, 1 / 45.0f, q2, Times(d, 16 / 45.0f, q3)));
    g[2] = Plus(d, -2 / 9.0f, p1, Plus(d, 2 / 45.0f, p2, Times(d, 8 / 45.0f, p3)));
    g[3] = Plus(d, -2 / 9.0f, q1, Times(d, 4 / 45.0f, hn::Add(q2, q3)));
    g[4] = hn::Add(Plus(d, -2 / 9.0f, p1, Plus(d, 8 / 45.0f, p2, Times(d, 2 / 45.0f, p3))), s[7]);
  }
};

}  // namespace winograd
}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_BACKENDS_CPU_WINOGRAD_LINES_INL_H_
