// Window kernels: ReduceWindow (Sum, Product, Max, Min; padding and base-dilation holes hold
// the reduction's identity, so they are simply skipped) and SelectAndScatter. Every window's
// taps are precomputed at compile time as offsets into the operand. Floats accumulate in double
// and round once; integers wrap.

#include <cmath>
#include <limits>
#include <memory>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

WindowTaps MakeWindowTaps(const std::vector<WindowAxis>& axes) {
  WindowTaps taps;
  std::vector<int64_t> out_dims;
  for (const WindowAxis& ax : axes) out_dims.push_back(ax.out);
  const int64_t num_windows = NumElements(out_dims);
  if (num_windows == 0) {
    // An empty result: no taps, and nothing sized by one huge axis beside an empty one.
    taps.start.push_back(0);
    return taps;
  }
  // Per axis, per output position: the valid taps as (operand offset, tap offset).
  std::vector<std::vector<std::vector<std::pair<int64_t, int64_t>>>> per_axis(axes.size());
  for (size_t a = 0; a < axes.size(); ++a) {
    const WindowAxis& ax = axes[a];
    per_axis[a].resize(static_cast<size_t>(ax.out));
    for (int64_t o = 0; o < ax.out; ++o) {
      for (int64_t k = 0; k < ax.window; ++k) {
        const int64_t p = o * ax.stride + k * ax.window_dilation - ax.pad_low;
        if (p < 0 || p % ax.base_dilation != 0) continue;
        const int64_t i = p / ax.base_dilation;
        if (i >= ax.size) continue;
        per_axis[a][static_cast<size_t>(o)].emplace_back(i * ax.in_stride, k * ax.tap_stride);
      }
    }
  }
  taps.start.reserve(static_cast<size_t>(num_windows) + 1);
  taps.start.push_back(0);
  std::vector<int64_t> index(axes.size(), 0);
  std::vector<size_t> choice(axes.size(), 0);
  for (int64_t w = 0; w < num_windows; ++w) {
    // Cartesian product of the axes' tap lists, row-major.
    bool empty = false;
    for (size_t a = 0; a < axes.size(); ++a) {
      choice[a] = 0;
      if (per_axis[a][static_cast<size_t>(index[a])].empty()) empty = true;
    }
    while (!empty) {
      int64_t in = 0, tap = 0;
      for (size_t a = 0; a < axes.size(); ++a) {
        const auto& t = per_axis[a][static_cast<size_t>(index[a])][choice[a]];
        in += t.first;
        tap += t.second;
      }
      taps.in.push_back(in);
      taps.tap.push_back(tap);
      size_t a = axes.size();
      for (; a-- > 0;) {
        if (++choice[a] < per_axis[a][static_cast<size_t>(index[a])].size()) break;
        choice[a] = 0;
      }
      if (a == static_cast<size_t>(-1)) break;
    }
    taps.start.push_back(static_cast<int64_t>(taps.in.size()));
    for (size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < axes[a].out) break;
      index[a] = 0;
    }
  }
  return taps;
}

namespace {

template <typename T, typename Acc, typename Combine, typename Finish>
Kernel ReduceWindowWith(std::shared_ptr<const WindowTaps> taps, Acc init, Combine combine, Finish finish) {
  return [taps, init, combine, finish](Operands in, uint8_t* out) {
    const T* x = reinterpret_cast<const T*>(in[0]);
    T* y = reinterpret_cast<T*>(out);
    const WindowTaps& t = *taps;
    for (size_t w = 0; w + 1 < t.start.size(); ++w) {
      Acc acc = init;
      for (int64_t j = t.start[w]; j < t.start[w + 1]; ++j)
        acc = combine(acc, x[t.in[static_cast<size_t>(j)]]);
      y[w] = finish(acc);
    }
  };
}

template <typename T>
Kernel ReduceWindowKernel(ReduceKind kind, std::shared_ptr<const WindowTaps> taps) {
  if constexpr (kIsFloat<T>) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    auto load = [](T v) { return static_cast<double>(Load(v)); };
    auto finish = [](double acc) { return RoundDouble<T>(acc); };
    switch (kind) {
      case ReduceKind::Sum:
        return ReduceWindowWith<T>(
            taps, 0.0, [load](double a, T v) { return a + load(v); }, finish);
      case ReduceKind::Product:
        return ReduceWindowWith<T>(
            taps, 1.0, [load](double a, T v) { return a * load(v); }, finish);
      case ReduceKind::Max:
        return ReduceWindowWith<T>(
            taps, -kInf, [load](double a, T v) { return MaxOf(a, load(v)); }, finish);
      default:
        return ReduceWindowWith<T>(
            taps, kInf, [load](double a, T v) { return MinOf(a, load(v)); }, finish);
    }
  } else {
    auto finish = [](Wide<T> acc) { return FromBits<T>(acc); };
    auto same = [](T acc) { return acc; };
    switch (kind) {
      case ReduceKind::Sum:
        return ReduceWindowWith<T>(
            taps, Wide<T>{0}, [](Wide<T> a, T v) -> Wide<T> { return a + ToBits(v); }, finish);
      case ReduceKind::Product:
        return ReduceWindowWith<T>(
            taps, Wide<T>{1}, [](Wide<T> a, T v) -> Wide<T> { return a * ToBits(v); }, finish);
      case ReduceKind::Max:
        return ReduceWindowWith<T>(
            taps, std::numeric_limits<T>::lowest(), [](T a, T v) { return MaxOf(a, v); }, same);
      default:
        return ReduceWindowWith<T>(
            taps, std::numeric_limits<T>::max(), [](T a, T v) { return MinOf(a, v); }, same);
    }
  }
}

/// True when `v` replaces the current selection `cur` (first max or min wins; a NaN is
/// selected over any number, the first NaN over later ones).
template <typename C>
bool Selects(bool max, C v, C cur) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(cur)) return false;
    if (std::isnan(v)) return true;
  }
  return max ? v > cur : v < cur;
}

template <typename T>
Kernel SelectAndScatterKernel(bool max, int64_t operand_size, std::shared_ptr<const WindowTaps> taps) {
  return [max, operand_size, taps](Operands in, uint8_t* out) {
    const T* x = reinterpret_cast<const T*>(in[0]);
    const T* source = reinterpret_cast<const T*>(in[1]);
    T* y = reinterpret_cast<T*>(out);
    const WindowTaps& t = *taps;
    using Acc = typename AccOf<T>::type;
    std::vector<Acc> acc(static_cast<size_t>(operand_size), Acc{0});
    for (size_t w = 0; w + 1 < t.start.size(); ++w) {
      if (t.start[w] == t.start[w + 1]) continue;  // A window of padding only: nothing selected.
      int64_t selected = t.in[static_cast<size_t>(t.start[w])];
      for (int64_t j = t.start[w] + 1; j < t.start[w + 1]; ++j) {
        const int64_t i = t.in[static_cast<size_t>(j)];
        if (Selects(max, Load(x[i]), Load(x[selected]))) selected = i;
      }
      if constexpr (kIsFloat<T>) {
        acc[static_cast<size_t>(selected)] += static_cast<double>(Load(source[w]));
      } else {
        acc[static_cast<size_t>(selected)] += ToBits(source[w]);
      }
    }
    for (int64_t i = 0; i < operand_size; ++i) {
      if constexpr (kIsFloat<T>) {
        y[i] = RoundDouble<T>(acc[static_cast<size_t>(i)]);
      } else {
        y[i] = FromBits<T>(acc[static_cast<size_t>(i)]);
      }
    }
  };
}

}  // namespace

std::vector<WindowAxis> WindowAxesOf(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpAttributes& at = inst.attrs;
  const Shape& x = operands.at(0);
  const size_t n = static_cast<size_t>(x.Rank());
  const std::vector<int64_t> strides = RowMajorStrides(x.Dimensions());
  const Shape& windows = inst.op == OpType::ReduceWindow ? inst.shape : operands.at(1);
  std::vector<WindowAxis> axes(n);
  for (size_t a = 0; a < n; ++a) {
    WindowAxis& ax = axes[a];
    ax.size = x.Dimensions()[a];
    ax.in_stride = strides[a];
    ax.out = windows.Dimensions()[a];
    ax.window = at.window[a];
    if (!at.strides.empty()) ax.stride = at.strides[a];
    if (!at.padding.empty()) ax.pad_low = at.padding[a].low;
    if (inst.op == OpType::ReduceWindow) {
      if (!at.input_dilations.empty()) ax.base_dilation = at.input_dilations[a];
      if (!at.kernel_dilations.empty()) ax.window_dilation = at.kernel_dilations[a];
    }
  }
  return axes;
}

Kernel MakeWindowKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpAttributes& at = inst.attrs;
  const Shape& x = operands.at(0);
  const std::vector<WindowAxis> axes = WindowAxesOf(inst, operands);
  auto taps = std::make_shared<const WindowTaps>(MakeWindowTaps(axes));
  const DType dtype = x.dtype();
  return DispatchDType(dtype, [&](auto tag) -> Kernel {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      NoKernel(inst.op, dtype);
    } else if (inst.op == OpType::ReduceWindow) {
      return ReduceWindowKernel<T>(at.reduce_kind, taps);
    } else {
      return SelectAndScatterKernel<T>(at.reduce_kind == ReduceKind::Max, x.Size(), taps);
    }
  });
}

}  // namespace kiln::compute::ref
