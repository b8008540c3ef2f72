// ConvGeneral (StableHLO's convolution): for each output (batch, feature, spatial position) the
// sum over the window's valid taps (padding and input-dilation holes skipped) and the feature
// group's input features. Batch group g reads input batches [g*B/G, (g+1)*B/G) and writes output
// features [g*O/G, (g+1)*O/G); feature group g reads input features [g*Ci, (g+1)*Ci) for output
// features [g*O/F, (g+1)*O/F). Floats (half types too) accumulate in double and round once;
// integers wrap.

#include <algorithm>
#include <memory>

#include "backends/ref/ref_kernels.h"

namespace kiln::compute::ref {

namespace {

struct ConvPlan {
  WindowTaps taps;
  std::vector<int64_t> out_spatial;  // Output offset of each window (row-major).
  int64_t out_batch = 0, out_features = 0, kernel_in = 0;
  int64_t in_batch_stride = 0, in_feature_stride = 0, k_in_stride = 0, k_out_stride = 0;
  int64_t out_batch_stride = 0, out_feature_stride = 0;
  int64_t batch_group_size = 0, batch_group_features = 0, feature_group_features = 0;
};

template <typename T>
Kernel Conv(std::shared_ptr<const ConvPlan> plan) {
  return [plan](Operands in, uint8_t* out) {
    const T* x = reinterpret_cast<const T*>(in[0]);
    const T* k = reinterpret_cast<const T*>(in[1]);
    T* y = reinterpret_cast<T*>(out);
    const ConvPlan& p = *plan;
    const WindowTaps& t = p.taps;
    for (int64_t b = 0; b < p.out_batch; ++b) {
      for (int64_t f = 0; f < p.out_features; ++f) {
        const int64_t in_batch = (f / p.batch_group_features) * p.batch_group_size + b;
        const int64_t in_feature0 = (f / p.feature_group_features) * p.kernel_in;
        const T* xb = x + in_batch * p.in_batch_stride + in_feature0 * p.in_feature_stride;
        const T* kf = k + f * p.k_out_stride;
        T* yb = y + b * p.out_batch_stride + f * p.out_feature_stride;
        for (size_t w = 0; w < p.out_spatial.size(); ++w) {
          using Acc = typename AccOf<T>::type;
          Acc acc{0};
          for (int64_t j = t.start[w]; j < t.start[w + 1]; ++j) {
            const T* xs = xb + t.in[static_cast<size_t>(j)];
            const T* ks = kf + t.tap[static_cast<size_t>(j)];
            for (int64_t c = 0; c < p.kernel_in; ++c) {
              const T a = xs[c * p.in_feature_stride], v = ks[c * p.k_in_stride];
              if constexpr (kIsFloat<T>) {
                acc += static_cast<double>(Load(a)) * static_cast<double>(Load(v));
              } else {
                acc += ToBits(a) * ToBits(v);
              }
            }
          }
          if constexpr (kIsFloat<T>) {
            yb[p.out_spatial[w]] = RoundDouble<T>(acc);
          } else {
            yb[p.out_spatial[w]] = FromBits<T>(acc);
          }
        }
      }
    }
  };
}

}  // namespace

Kernel MakeConvKernel(const Instruction& inst, const std::vector<Shape>& operands) {
  const OpAttributes& at = inst.attrs;
  const ConvDims& c = at.conv;
  const Shape &x = operands.at(0), &k = operands.at(1), &y = inst.shape;
  const std::vector<int64_t> xs = RowMajorStrides(x.Dimensions()), ks = RowMajorStrides(k.Dimensions()),
                             ys = RowMajorStrides(y.Dimensions());
  const auto at_axis = [](const std::vector<int64_t>& v, int64_t a) { return v[static_cast<size_t>(a)]; };
  auto plan = std::make_shared<ConvPlan>();
  std::vector<WindowAxis> axes(c.input_spatial.size());
  std::vector<int64_t> out_dims, out_strides;
  for (size_t i = 0; i < axes.size(); ++i) {
    WindowAxis& ax = axes[i];
    ax.size = x.Dimensions()[static_cast<size_t>(c.input_spatial[i])];
    ax.in_stride = at_axis(xs, c.input_spatial[i]);
    ax.out = y.Dimensions()[static_cast<size_t>(c.output_spatial[i])];
    ax.window = k.Dimensions()[static_cast<size_t>(c.kernel_spatial[i])];
    ax.tap_stride = at_axis(ks, c.kernel_spatial[i]);
    if (!at.strides.empty()) ax.stride = at.strides[i];
    if (!at.padding.empty()) ax.pad_low = at.padding[i].low;
    if (!at.input_dilations.empty()) ax.base_dilation = at.input_dilations[i];
    if (!at.kernel_dilations.empty()) ax.window_dilation = at.kernel_dilations[i];
    out_dims.push_back(ax.out);
    out_strides.push_back(at_axis(ys, c.output_spatial[i]));
  }
  plan->taps = MakeWindowTaps(axes);
  plan->out_spatial = BoxOffsets(out_dims, out_strides);
  plan->out_batch = y.Dimensions()[static_cast<size_t>(c.output_batch)];
  plan->out_features = y.Dimensions()[static_cast<size_t>(c.output_feature)];
  plan->kernel_in = k.Dimensions()[static_cast<size_t>(c.kernel_input_feature)];
  plan->in_batch_stride = at_axis(xs, c.input_batch);
  plan->in_feature_stride = at_axis(xs, c.input_feature);
  plan->k_in_stride = at_axis(ks, c.kernel_input_feature);
  plan->k_out_stride = at_axis(ks, c.kernel_output_feature);
  plan->out_batch_stride = at_axis(ys, c.output_batch);
  plan->out_feature_stride = at_axis(ys, c.output_feature);
  plan->batch_group_size = plan->out_batch;
  // Guard the divisions against empty feature axes (then nothing is computed).
  plan->batch_group_features = std::max<int64_t>(plan->out_features / at.batch_groups, 1);
  plan->feature_group_features = std::max<int64_t>(plan->out_features / at.feature_groups, 1);
  const DType dtype = x.dtype();
  return DispatchDType(dtype, [&](auto tag) -> Kernel {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      NoKernel(inst.op, dtype);
    } else {
      return Conv<T>(plan);
    }
  });
}

}  // namespace kiln::compute::ref
