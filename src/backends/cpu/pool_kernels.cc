// Window kernels: ReduceWindow (Sum, Max, Min) and SelectAndScatter (Max, Min) on Float32; the
// Max/Min forms also on BFloat16 (ReduceWindow, and SelectAndScatter without overlapping windows):
// the same window functions, their lanes widened to floats in registers and narrowed back exactly.
//
// The operand's axes split into three runs. Trailing axes the window leaves alone (window 1,
// stride 1, no padding or dilation) form the inner block, contiguous in memory: the channels of
// a channels-last pooling. Leading such axes form the lead (the batch): windows of different lead
// indices read disjoint blocks. The axes in between are the windowed ones; their windows' taps
// are precomputed once, at compile time, by the reference's own walk (ref::MakeWindowTaps), so
// taps come in the reference's order. A window then runs over the inner block in SIMD vectors
// (Highway: the best of AVX3 / AVX2 at run time, as fused_simd.cc; `simd=scalar` runs scalar
// loops), its taps accumulated in registers. Windows split across the OpenMP team above
// kPoolParallelWork; a split never changes what is combined in which order, so results do not
// depend on the thread count.
//
// Results equal the reference bit for bit: max and min are exact (first NaN wins, +0 over -0
// for max, -0 over +0 for min), sums accumulate in double in tap order and round once, and
// SelectAndScatter selects the first extreme of each window. Where windows overlap, the source
// values are added per operand element in double, in window order (a scratch block from the
// backend's pool; lead blocks split across threads); where they do not, an element receives at
// most one value and each window writes its own taps directly (s + 0, as the reference's
// 0.0 + s rounds), with no clearing pass when the windows tile the operand. No kernel allocates
// from the system per call: the reference SelectAndScatter's operand-sized std::vector<double>
// was a fresh heap or mmap block, page-faulted in and given back on every call.

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/pool_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: the includes below must follow foreach_target.h.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "backends/cpu/buffer_pool.h"
#include "backends/cpu/pool_kernels.h"
#include "backends/cpu/team_split.h"
#include "core/check.h"
#include "hwy/highway.h"

#ifndef KILN_POOL_KERNELS_SCALAR_
#define KILN_POOL_KERNELS_SCALAR_
namespace kiln::compute::cpu::pool_detail {

/// The reference's MaxOf on floats: a NaN accumulator stays, a NaN value replaces, equal values
/// keep +0 over -0.
inline float MaxF(float a, float b) {
  const uint32_t both = std::bit_cast<uint32_t>(a) & std::bit_cast<uint32_t>(b);
  float m = a > b ? a : b;
  m = a == b ? std::bit_cast<float>(both) : m;
  return a != a ? a : m;
}

/// The reference's MinOf: as MaxF, keeping -0 over +0.
inline float MinF(float a, float b) {
  const uint32_t either = std::bit_cast<uint32_t>(a) | std::bit_cast<uint32_t>(b);
  float m = a < b ? a : b;
  m = a == b ? std::bit_cast<float>(either) : m;
  return a != a ? a : m;
}

/// The reference's Selects: a NaN is kept once selected, a NaN replaces a number, otherwise a
/// strictly greater (smaller) value replaces.
inline bool Takes(bool max, float v, float cur) {
  return cur == cur && (v != v || (max ? v > cur : v < cur));
}

/// For lanes c < n: where `in` replaces best[c], best[c] = in[c] and sel[c] = j.
inline void SelectStepScalar(bool max, const float* in, int32_t j, float* best, int32_t* sel, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    if (Takes(max, in[c], best[c])) {
      best[c] = in[c];
      sel[c] = j;
    }
  }
}

/// An element as a float: Float32 itself, BFloat16 (its bits, the upper half of a float's) widened.
inline float Wide(float v) { return v; }
inline float Wide(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
/// A float back into an element; for BFloat16 only values that came from BFloat16 elements (a
/// max, a min, a selected value plus 0), whose lower halves are zero, so nothing rounds.
inline void Narrow(float v, float& out) { out = v; }
inline void Narrow(float v, uint16_t& out) { out = static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16); }

/// What the range form of a SelectAndScatter without overlapping windows reads (ScatterRange):
/// per operand position of a lead block (a run of `inner` elements), the window holding it (-1:
/// none) and its tap there; each window's taps (`taps`, from `start[m]` to `start[m + 1]`).
struct RangeTables {
  const int32_t* window = nullptr;
  const int32_t* tap = nullptr;
  const int64_t* start = nullptr;
  const int64_t* taps = nullptr;
  int64_t positions = 0, lead_in = 0, middle = 0, inner = 0;
  bool max = true, simd = true;
};

}  // namespace kiln::compute::cpu::pool_detail
#endif  // KILN_POOL_KERNELS_SCALAR_

HWY_BEFORE_NAMESPACE();
namespace kiln::compute::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// The reference's MaxOf (MinOf) on vectors: a NaN accumulator stays, a NaN value replaces, equal
/// values keep +0 over -0 (-0 over +0).
template <class D, class V>
HWY_INLINE V Extreme(D d, bool max, V a, V b) {
  const hn::RebindToUnsigned<D> du;
  const auto ua = hn::BitCast(du, a), ub = hn::BitCast(du, b);
  auto m = max ? hn::IfThenElse(hn::Gt(a, b), a, b) : hn::IfThenElse(hn::Lt(a, b), a, b);
  const auto tie = hn::BitCast(d, max ? hn::And(ua, ub) : hn::Or(ua, ub));
  m = hn::IfThenElse(hn::Eq(a, b), tie, m);
  return hn::IfThenElse(hn::IsNaN(a), a, m);
}

/// Lanes of Float32 elements, or of BFloat16 elements widened to floats (exactly).
template <class D>
HWY_INLINE hn::Vec<D> LoadWide(D d, const float* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadWide(D d, const uint16_t* p) {
  const hn::RebindToUnsigned<D> du;
  const hn::Rebind<uint16_t, D> d16;
  return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
}
/// The inverse of LoadWide for values that came from such elements (pool_detail::Narrow).
template <class D>
HWY_INLINE void StoreNarrow(hn::Vec<D> v, D d, float* p) {
  hn::StoreU(v, d, p);
}
template <class D>
HWY_INLINE void StoreNarrow(hn::Vec<D> v, D, uint16_t* p) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const hn::Rebind<uint16_t, D> d16;
  hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, hn::ShiftRight<16>(hn::BitCast(du, v)))), d16, p);
}

/// One window of ReduceWindow Max/Min: out[c] = the extreme of base[taps[j] + c] over j < n
/// (n >= 1), for c < inner, accumulated in registers (as floats; T is float or BFloat16 bits).
template <typename T>
HWY_INLINE void ExtremeWindowOf(bool max, const T* base, const int64_t* taps, int64_t n, T* out,
                                int64_t inner, bool simd) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t c = 0;
  for (; simd && c + lanes <= inner; c += lanes) {
    auto acc = LoadWide(d, base + taps[0] + c);
    for (int64_t j = 1; j < n; ++j) acc = Extreme(d, max, acc, LoadWide(d, base + taps[j] + c));
    // A signaling NaN leaves quieted, as through the reference's double accumulator.
    StoreNarrow(hn::IfThenElse(hn::IsNaN(acc), hn::Add(acc, hn::Zero(d)), acc), d, out + c);
  }
  for (; c < inner; ++c) {
    float acc = pool_detail::Wide(base[taps[0] + c]);
    for (int64_t j = 1; j < n; ++j) {
      const float v = pool_detail::Wide(base[taps[j] + c]);
      acc = max ? pool_detail::MaxF(acc, v) : pool_detail::MinF(acc, v);
    }
    pool_detail::Narrow(acc != acc ? acc + 0.0f : acc, out[c]);
  }
}

/// `simd` false: the scalar loop alone (`simd=scalar`).
void ExtremeWindow(bool max, const float* base, const int64_t* taps, int64_t n, float* out, int64_t inner,
                   bool simd) {
  ExtremeWindowOf(max, base, taps, n, out, inner, simd);
}
void ExtremeWindowBF16(bool max, const uint16_t* base, const int64_t* taps, int64_t n, uint16_t* out,
                       int64_t inner, bool simd) {
  ExtremeWindowOf(max, base, taps, n, out, inner, simd);
}

/// For lanes [c, c + lanes) of a window (base, taps[0..n)): the index of the tap holding each
/// lane's first extreme, as the reference's Selects take it.
template <typename T, class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> WindowSelection(D d, bool max, const T* base, const int64_t* taps,
                                                          int64_t n, int64_t c) {
  const hn::RebindToSigned<D> di;
  auto best = LoadWide(d, base + taps[0] + c);
  auto sel = hn::Zero(di);
  for (int64_t j = 1; j < n; ++j) {
    const auto v = LoadWide(d, base + taps[j] + c);
    const auto better = max ? hn::Gt(v, best) : hn::Lt(v, best);
    const auto take = hn::AndNot(hn::IsNaN(best), hn::Or(hn::IsNaN(v), better));
    best = hn::IfThenElse(take, v, best);
    sel = hn::IfThenElse(hn::RebindMask(di, take), hn::Set(di, static_cast<int32_t>(j)), sel);
  }
  return sel;
}

/// The same for lane c alone.
template <typename T>
HWY_INLINE int64_t WindowSelectionScalar(bool max, const T* base, const int64_t* taps, int64_t n, int64_t c) {
  int64_t sel = 0;
  for (int64_t j = 1; j < n; ++j)
    if (pool_detail::Takes(max, pool_detail::Wide(base[taps[j] + c]), pool_detail::Wide(base[taps[sel] + c])))
      sel = j;
  return sel;
}

/// One window of SelectAndScatter whose taps no other window shares: for each c < inner, the
/// first extreme tap of base[taps[j] + c] gets s[c] (s + 0, as the reference's 0.0 + s rounds),
/// the window's other taps 0; the selection stays in registers.
template <typename T>
HWY_INLINE void SelectScatterWindowOf(bool max, const T* base, const int64_t* taps, int64_t n, const T* s,
                                      T* out, int64_t inner, bool simd) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto zero = hn::Zero(d);
  int64_t c = 0;
  for (; simd && c + lanes <= inner; c += lanes) {
    const auto sel = WindowSelection(d, max, base, taps, n, c);
    const auto value = hn::Add(LoadWide(d, s + c), zero);
    for (int64_t j = 0; j < n; ++j) {
      const auto mine = hn::RebindMask(d, hn::Eq(sel, hn::Set(di, static_cast<int32_t>(j))));
      StoreNarrow(hn::IfThenElse(mine, value, zero), d, out + taps[j] + c);
    }
  }
  for (; c < inner; ++c) {
    const int64_t sel = WindowSelectionScalar(max, base, taps, n, c);
    for (int64_t j = 0; j < n; ++j)
      pool_detail::Narrow(j == sel ? pool_detail::Wide(s[c]) + 0.0f : 0.0f, out[taps[j] + c]);
  }
}

/// Result elements [first, first + len) of a SelectAndScatter without overlapping windows, into
/// dst: each position's run of inner elements gets s + 0 where its tap holds the lane's first
/// extreme, else 0 (SelectScatterWindow's values there). Consecutive positions of one window
/// wholly inside the range share one selection.
void ScatterRange(const pool_detail::RangeTables& t, const float* x, const float* source, int64_t first,
                  int64_t len, float* dst) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d)), inner = t.inner;
  const auto zero = hn::Zero(d);
  while (len > 0) {
    const int64_t l = first / t.lead_in, at = first % t.lead_in, pos = at / inner, c0 = at % inner;
    const int64_t run = std::min(len, inner - c0);
    const int32_t m = t.window[pos];
    int64_t group = 1;  // Positions sharing the selection (whole runs only).
    while (c0 == 0 && (group + 1) * inner <= len && pos + group < t.positions && t.window[pos + group] == m)
      ++group;
    if (m < 0) {
      std::fill(dst, dst + group * run, 0.0f);
    } else {
      const float* base = x + l * t.lead_in;
      const int64_t* taps = t.taps + t.start[m];
      const int64_t n = t.start[m + 1] - t.start[m];
      const float* s = source + (l * t.middle + m) * inner;
      const int32_t* tap = t.tap + pos;
      int64_t c = c0;
      for (; t.simd && c + lanes <= c0 + run; c += lanes) {
        const auto sel = WindowSelection(d, t.max, base, taps, n, c);
        const auto value = hn::Add(hn::LoadU(d, s + c), zero);
        for (int64_t k = 0; k < group; ++k) {
          const auto mine = hn::RebindMask(d, hn::Eq(sel, hn::Set(di, tap[k])));
          hn::StoreU(hn::IfThenElse(mine, value, zero), d, dst + k * inner + (c - c0));
        }
      }
      for (; c < c0 + run; ++c) {
        const int64_t sel = WindowSelectionScalar(t.max, base, taps, n, c);
        for (int64_t k = 0; k < group; ++k) dst[k * inner + (c - c0)] = sel == tap[k] ? s[c] + 0.0f : 0.0f;
      }
    }
    const int64_t done = (group - 1) * inner + run;
    dst += done;
    first += done;
    len -= done;
  }
}

void SelectScatterWindow(bool max, const float* base, const int64_t* taps, int64_t n, const float* s,
                         float* out, int64_t inner, bool simd) {
  SelectScatterWindowOf(max, base, taps, n, s, out, inner, simd);
}
void SelectScatterWindowBF16(bool max, const uint16_t* base, const int64_t* taps, int64_t n,
                             const uint16_t* s, uint16_t* out, int64_t inner, bool simd) {
  SelectScatterWindowOf(max, base, taps, n, s, out, inner, simd);
}

void SelectStep(bool max, const float* in, int32_t j, float* best, int32_t* sel, int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vj = hn::Set(di, j);
  int64_t c = 0;
  for (; c + lanes <= n; c += lanes) {
    const auto v = hn::LoadU(d, in + c), cur = hn::LoadU(d, best + c);
    const auto better = max ? hn::Gt(v, cur) : hn::Lt(v, cur);
    const auto take = hn::AndNot(hn::IsNaN(cur), hn::Or(hn::IsNaN(v), better));
    hn::StoreU(hn::IfThenElse(take, v, cur), d, best + c);
    const auto s = hn::LoadU(di, sel + c);
    hn::StoreU(hn::IfThenElse(hn::RebindMask(di, take), vj, s), di, sel + c);
  }
  pool_detail::SelectStepScalar(max, in + c, j, best + c, sel + c, n - c);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::compute::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::compute::cpu {

HWY_EXPORT(ExtremeWindow);
HWY_EXPORT(SelectStep);
HWY_EXPORT(SelectScatterWindow);
HWY_EXPORT(ExtremeWindowBF16);
HWY_EXPORT(SelectScatterWindowBF16);
HWY_EXPORT(ScatterRange);

namespace {

/// Chunk of the inner block a window processes at once (accumulators stay on the stack).
constexpr int64_t kLanes = 256;
/// Largest window table precomputed (taps); larger cases stay on the reference kernel.
constexpr int64_t kMaxTaps = int64_t{1} << 22;

/// The window layout of one node, computed at compile time.
struct PoolPlan {
  int64_t lead = 1;     ///< Windows along the leading untouched axes.
  int64_t lead_in = 0;  ///< Operand elements per lead index.
  int64_t middle = 1;   ///< Windows per lead index.
  int64_t inner = 1;    ///< Contiguous elements per tap.
  int64_t operand_size = 0;
  ref::WindowTaps taps;  ///< Windows over the windowed axes; offsets in operand elements.
  int threads = 1;
  bool parallel = false;
  bool simd = true;
};

/// Whether the window leaves the axis alone (the axis then needs no tap table).
bool Untouched(const ref::WindowAxis& ax) {
  return ax.window == 1 && ax.stride == 1 && ax.pad_low == 0 && ax.base_dilation == 1 &&
         ax.window_dilation == 1 && ax.out == ax.size;
}

/// The windowed axes [first, last): all but the leading and trailing ones the window leaves alone.
std::pair<size_t, size_t> WindowedRange(const std::vector<ref::WindowAxis>& axes) {
  size_t first = 0, last = axes.size();
  while (last > 0 && Untouched(axes[last - 1])) --last;
  while (first < last && Untouched(axes[first])) ++first;
  return {first, last};
}

/// Whether the window table (taps of the windowed axes) is small enough to precompute.
bool TableFits(const std::vector<ref::WindowAxis>& axes) {
  const auto [first, last] = WindowedRange(axes);
  int64_t table = 1;
  for (size_t a = first; a < last; ++a) table *= axes[a].out * axes[a].window;
  return table <= kMaxTaps;
}

/// Builds the plan, or returns false when the window table would be too large.
bool MakePlan(const std::vector<ref::WindowAxis>& axes, int64_t operand_size, PoolPlan& plan) {
  if (!TableFits(axes)) return false;
  const auto [first, last] = WindowedRange(axes);
  for (size_t a = 0; a < first; ++a) plan.lead *= axes[a].out;
  for (size_t a = last; a < axes.size(); ++a) plan.inner *= axes[a].out;
  plan.lead_in = first > 0 ? axes[first - 1].in_stride : operand_size;
  plan.operand_size = operand_size;
  const std::vector<ref::WindowAxis> windowed(axes.begin() + static_cast<std::ptrdiff_t>(first),
                                              axes.begin() + static_cast<std::ptrdiff_t>(last));
  plan.taps = ref::MakeWindowTaps(windowed);
  plan.middle = static_cast<int64_t>(plan.taps.start.size()) - 1;
  return true;
}

/// ReduceWindow Max/Min, one window at a time (ExtremeWindow). T is float, or BFloat16's bits
/// (uint16_t): max and min are exact, so BFloat16 lanes widened in registers give the Float32
/// kernel's result narrowed.
template <typename T>
void ExtremeWindows(const PoolPlan& p, bool max, const T* x, T* y) {
  const int64_t m_len = p.middle, inner = p.inner;
  const int64_t* start = p.taps.start.data();
  const int64_t* taps = p.taps.in.data();
  constexpr bool kFloat = std::is_same_v<T, float>;
  // An empty window holds the identity: -inf for Max, +inf for Min.
  const float identity =
      max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  T empty;
  pool_detail::Narrow(identity, empty);
  SplitAcrossTeam(p.lead * m_len, p.threads, p.parallel, [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const T* base = x + (w / m_len) * p.lead_in;
      const int64_t m = w % m_len, t0 = start[m], n = start[m + 1] - t0;
      T* out = y + w * inner;
      if (n == 0) {
        std::fill(out, out + inner, empty);
      } else if constexpr (kFloat) {
        HWY_DYNAMIC_DISPATCH(ExtremeWindow)(max, base, taps + t0, n, out, inner, p.simd);
      } else {
        HWY_DYNAMIC_DISPATCH(ExtremeWindowBF16)(max, base, taps + t0, n, out, inner, p.simd);
      }
    }
  });
}

void ReduceWindowF32(const PoolPlan& p, ReduceKind kind, const float* x, float* y) {
  if (kind != ReduceKind::Sum) return ExtremeWindows(p, kind == ReduceKind::Max, x, y);
  const int64_t m_len = p.middle, inner = p.inner;
  const int64_t* start = p.taps.start.data();
  const int64_t* taps = p.taps.in.data();
  SplitAcrossTeam(p.lead * m_len, p.threads, p.parallel, [&](int64_t w0, int64_t w1) {
    double sum[kLanes];
    for (int64_t w = w0; w < w1; ++w) {
      const float* base = x + (w / m_len) * p.lead_in;
      const int64_t m = w % m_len, t0 = start[m], n = start[m + 1] - t0;
      float* out = y + w * inner;
      for (int64_t c0 = 0; c0 < inner; c0 += kLanes) {
        const int64_t len = std::min(kLanes, inner - c0);
        std::fill(sum, sum + len, 0.0);
        for (int64_t j = 0; j < n; ++j) {
          const float* in = base + taps[t0 + j] + c0;
          for (int64_t c = 0; c < len; ++c) sum[c] += static_cast<double>(in[c]);
        }
        for (int64_t c = 0; c < len; ++c) out[c0 + c] = static_cast<float>(sum[c]);
      }
    }
  });
}

/// SelectAndScatter Max/Min where each operand element lies in at most one window: each window
/// writes its taps (the source value at the selection, zeros elsewhere; SelectScatterWindow).
/// Elements outside every window are cleared first, unless the windows tile the operand. T as
/// for ExtremeWindows.
template <typename T>
void SelectScatterWindows(const PoolPlan& p, bool max, const T* x, const T* source, T* y) {
  const int64_t m_len = p.middle, inner = p.inner;
  const int64_t* start = p.taps.start.data();
  const int64_t* taps = p.taps.in.data();
  const bool tiles = static_cast<int64_t>(p.taps.in.size()) * p.lead * inner == p.operand_size;
  if (!tiles) std::memset(y, 0, static_cast<size_t>(p.operand_size) * sizeof(T));
  SplitAcrossTeam(p.lead * m_len, p.threads, p.parallel, [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t l = w / m_len, m = w % m_len, t0 = start[m], n = start[m + 1] - t0;
      if (n == 0) continue;
      const T* base = x + l * p.lead_in;
      T* out = y + l * p.lead_in;
      const T* s = source + w * inner;
      if constexpr (std::is_same_v<T, float>) {
        HWY_DYNAMIC_DISPATCH(SelectScatterWindow)(max, base, taps + t0, n, s, out, inner, p.simd);
      } else {
        HWY_DYNAMIC_DISPATCH(SelectScatterWindowBF16)(max, base, taps + t0, n, s, out, inner, p.simd);
      }
    }
  });
}

/// A SelectAndScatter computed over runs of its result (ScatterRunsByRange): its plan, and per
/// operand position of a lead block the window holding it (-1: none) and its tap there.
struct RangePlan {
  PoolPlan plan;
  std::vector<int32_t> window, tap;
  pool_detail::RangeTables tables;  ///< Pointing into the two above and the plan's taps.
};

/// Finds, for each lane of inner chunk [c0, c0 + len) of window (base, taps[0..n)), the index
/// of the tap holding its first extreme.
inline void Select(const PoolPlan& p, bool max, const float* base, const int64_t* taps, int64_t n, int64_t c0,
                   int64_t len, int32_t* sel) {
  float best[kLanes];
  std::memcpy(best, base + taps[0] + c0, static_cast<size_t>(len) * sizeof(float));
  std::fill(sel, sel + len, 0);
  for (int64_t j = 1; j < n; ++j) {
    const float* in = base + taps[j] + c0;
    if (p.simd) {
      HWY_DYNAMIC_DISPATCH(SelectStep)(max, in, static_cast<int32_t>(j), best, sel, len);
    } else {
      pool_detail::SelectStepScalar(max, in, static_cast<int32_t>(j), best, sel, len);
    }
  }
}

void SelectAndScatterF32(const PoolPlan& p, bool max, bool overlap, BufferPool* pool, const float* x,
                         const float* source, float* y) {
  if (!overlap) return SelectScatterWindows(p, max, x, source, y);
  const int64_t m_len = p.middle, inner = p.inner;
  const int64_t* start = p.taps.start.data();
  const int64_t* taps = p.taps.in.data();
  // Overlapping windows: per-element double sums in window order, one lead block per unit.
  const int64_t bytes = std::max<int64_t>(p.operand_size, 1) * static_cast<int64_t>(sizeof(double));
  uint8_t* scratch = pool->Allocate(bytes);
  double* acc = reinterpret_cast<double*>(scratch);
  SplitAcrossTeam(p.lead, p.threads, p.parallel, [&](int64_t l0, int64_t l1) {
    int32_t sel[kLanes];
    for (int64_t l = l0; l < l1; ++l) {
      const float* base = x + l * p.lead_in;
      double* a = acc + l * p.lead_in;
      std::fill(a, a + p.lead_in, 0.0);
      for (int64_t m = 0; m < m_len; ++m) {
        const int64_t t0 = start[m], n = start[m + 1] - t0;
        if (n == 0) continue;
        const float* s = source + (l * m_len + m) * inner;
        for (int64_t c0 = 0; c0 < inner; c0 += kLanes) {
          const int64_t len = std::min(kLanes, inner - c0);
          Select(p, max, base, taps + t0, n, c0, len, sel);
          for (int64_t c = 0; c < len; ++c) a[taps[t0 + sel[c]] + c0 + c] += static_cast<double>(s[c0 + c]);
        }
      }
      float* out = y + l * p.lead_in;
      for (int64_t i = 0; i < p.lead_in; ++i) out[i] = static_cast<float>(a[i]);
    }
  });
  pool->Release(scratch, bytes);
}

/// Whether windows along some axis overlap (a tap in two windows).
bool Overlaps(const std::vector<ref::WindowAxis>& axes) {
  for (const ref::WindowAxis& ax : axes) {
    if (ax.out > 1 && ax.stride < ax.window) return true;
  }
  return false;
}

/// Untouched trailing elements per tap below which a SelectAndScatter is not computed by runs
/// (a run shorter than a vector spends its time in the scalar tail).
constexpr int64_t kMinRangeInner = 16;

}  // namespace

bool ScatterRunsByRange(const Instruction& inst, const std::vector<Shape>& operands) {
  if (inst.op != OpType::SelectAndScatter || operands.size() != 2) return false;
  if (inst.attrs.reduce_kind != ReduceKind::Max && inst.attrs.reduce_kind != ReduceKind::Min) return false;
  for (const Shape& s : operands)
    if (s.dtype() != DType::Float32 || s.IsDynamic()) return false;
  const std::vector<ref::WindowAxis> axes = ref::WindowAxesOf(inst, operands);
  if (Overlaps(axes) || !TableFits(axes)) return false;
  const auto [first, last] = WindowedRange(axes);
  int64_t inner = 1;
  for (size_t a = last; a < axes.size(); ++a) inner *= axes[a].out;
  return inner >= kMinRangeInner;
}

ScatterRangeFn MakeScatterRange(const Instruction& inst, const std::vector<Shape>& operands, bool simd) {
  if (!ScatterRunsByRange(inst, operands))
    detail::Throw("backend \"cpu\": this SelectAndScatter cannot be computed piece by piece");
  auto r = std::make_shared<RangePlan>();
  if (!MakePlan(ref::WindowAxesOf(inst, operands), operands[0].Size(), r->plan))
    detail::Throw("backend \"cpu\": SelectAndScatter window table too large");
  r->plan.simd = simd;
  const PoolPlan& p = r->plan;
  const auto positions = static_cast<size_t>(p.inner > 0 ? p.lead_in / p.inner : 0);
  r->window.assign(positions, -1);
  r->tap.assign(positions, 0);
  for (int64_t m = 0; m < p.middle; ++m) {
    for (int64_t t = p.taps.start[static_cast<size_t>(m)]; t < p.taps.start[static_cast<size_t>(m) + 1];
         ++t) {
      const auto pos = static_cast<size_t>(p.taps.in[static_cast<size_t>(t)] / p.inner);
      r->window[pos] = static_cast<int32_t>(m);
      r->tap[pos] = static_cast<int32_t>(t - p.taps.start[static_cast<size_t>(m)]);
    }
  }
  pool_detail::RangeTables& t = r->tables;
  t.window = r->window.data();
  t.tap = r->tap.data();
  t.start = p.taps.start.data();
  t.taps = p.taps.in.data();
  t.positions = static_cast<int64_t>(positions);
  t.lead_in = p.lead_in;
  t.middle = p.middle;
  t.inner = p.inner;
  t.max = inst.attrs.reduce_kind == ReduceKind::Max;
  t.simd = simd;
  return [r](const float* operand, const float* source, int64_t start, int64_t len, float* dst) {
    HWY_DYNAMIC_DISPATCH(ScatterRange)(r->tables, operand, source, start, len, dst);
  };
}

bool PoolKernelRunsBFloat16(const Instruction& inst, const std::vector<Shape>& operands) {
  if (inst.op != OpType::ReduceWindow && inst.op != OpType::SelectAndScatter) return false;
  if (inst.attrs.reduce_kind != ReduceKind::Max && inst.attrs.reduce_kind != ReduceKind::Min) return false;
  for (const Shape& s : operands)
    if (s.dtype() != DType::BFloat16) return false;
  const std::vector<ref::WindowAxis> axes = ref::WindowAxesOf(inst, operands);
  return TableFits(axes) && (inst.op == OpType::ReduceWindow || !Overlaps(axes));
}

KernelChoice TryPoolKernel(CpuBackend& backend, int threads, const Node& node,
                           const std::vector<Shape>& operands) {
  const Instruction& inst = node.inst;
  if (node.kind != NodeKind::kPrimitive ||
      (inst.op != OpType::ReduceWindow && inst.op != OpType::SelectAndScatter))
    return {};
  const OpAttributes& at = inst.attrs;
  const Shape& x = operands.at(0);
  const bool bf16 = x.dtype() == DType::BFloat16;
  if (x.dtype() != DType::Float32 && !(bf16 && PoolKernelRunsBFloat16(inst, operands))) return {};
  const bool reduce = inst.op == OpType::ReduceWindow;
  const ReduceKind kind = at.reduce_kind;
  if (kind != ReduceKind::Max && kind != ReduceKind::Min && (!reduce || kind != ReduceKind::Sum)) return {};
  // The same axes as the reference's MakeWindowKernel.
  const std::vector<ref::WindowAxis> axes = ref::WindowAxesOf(inst, operands);
  const bool overlap = Overlaps(axes);
  auto plan = std::make_shared<PoolPlan>();
  if (!MakePlan(axes, x.Size(), *plan)) return {};
  plan->threads = std::max(1, threads);
  plan->simd = backend.options().simd;
  const int64_t work = static_cast<int64_t>(plan->taps.in.size()) * plan->lead * plan->inner;
  plan->parallel = plan->threads > 1 && work >= kPoolParallelWork;
  if (bf16) {  // Max and Min, without overlapping windows for SelectAndScatter (PoolKernelRunsBFloat16).
    const bool max = kind == ReduceKind::Max;
    if (reduce)
      return {[plan, max](ref::Operands in, uint8_t* out) {
                ExtremeWindows(*plan, max, reinterpret_cast<const uint16_t*>(in[0]),
                               reinterpret_cast<uint16_t*>(out));
              },
              "pool.reduce_window(bf16)"};
    return {[plan, max](ref::Operands in, uint8_t* out) {
              SelectScatterWindows(*plan, max, reinterpret_cast<const uint16_t*>(in[0]),
                                   reinterpret_cast<const uint16_t*>(in[1]),
                                   reinterpret_cast<uint16_t*>(out));
            },
            "pool.select_and_scatter(bf16)"};
  }
  if (reduce) {
    return {[plan, kind](ref::Operands in, uint8_t* out) {
              ReduceWindowF32(*plan, kind, reinterpret_cast<const float*>(in[0]),
                              reinterpret_cast<float*>(out));
            },
            "pool.reduce_window"};
  }
  const bool max = kind == ReduceKind::Max;
  BufferPool* pool = &backend.pool();
  return {[plan, max, overlap, pool](ref::Operands in, uint8_t* out) {
            SelectAndScatterF32(*plan, max, overlap, pool, reinterpret_cast<const float*>(in[0]),
                                reinterpret_cast<const float*>(in[1]), reinterpret_cast<float*>(out));
          },
          overlap ? "pool.select_and_scatter(overlapping)" : "pool.select_and_scatter"};
}

}  // namespace kiln::compute::cpu
#endif  // HWY_ONCE
