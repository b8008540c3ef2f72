// The kernels of kRowNorm nodes (row_norms.cc): softmax rows split across the team (each row in
// one SIMD pass, row_simd.cc, or its scalar form with `simd=scalar`), and layer normalisation
// through oneDNN's layer_normalization primitive (forward inference, statistics per row, the
// gain and offset as its scale and shift; its scalar form with `simd=scalar`).

#include "backends/cpu/row_kernels.h"

#include <cmath>
#include <limits>

#include "backends/common/scalar_math.h"
#include "backends/cpu/cost_model.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/dnnl_kernels.h"
#include "backends/cpu/team_split.h"

namespace kiln::compute::cpu {

void SoftmaxRowsScalar(const float* x, float* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) max = common::MaxOf(max, xr[j]);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      yr[j] = std::exp(xr[j] - max);
      sum += static_cast<double>(yr[j]);
    }
    const auto total = static_cast<float>(sum);
    for (int64_t j = 0; j < n; ++j) yr[j] /= total;
  }
}

namespace {

KernelChoice SoftmaxKernel(bool simd, int threads, int64_t rows, int64_t n) {
  return {[simd, threads, rows, n](ref::Operands in, uint8_t* out) {
            const auto* x = reinterpret_cast<const float*>(in[0]);
            auto* y = reinterpret_cast<float*>(out);
            const bool parallel = rows * n * kRowNormCost >= kFusedParallelWork;
            SplitAcrossTeam(rows, threads, parallel, [&](int64_t first, int64_t last) {
              if (simd) {
                SoftmaxRowsSimd(x + first * n, y + first * n, last - first, n);
              } else {
                SoftmaxRowsScalar(x + first * n, y + first * n, last - first, n);
              }
            });
          },
          simd ? "row.softmax" : "row.softmax.scalar"};
}

struct LayerNormPlan {
  dnnl::layer_normalization_forward primitive;
  dnnl::memory::desc data, vector, scratchpad;
  bool scale = false, shift = false;
  int threads = 1;
};

KernelChoice LayerNormKernel(int threads, const RowNorm& norm, int64_t rows, int64_t n) {
  auto plan = std::make_shared<LayerNormPlan>();
  plan->scale = norm.scale;
  plan->shift = norm.shift;
  // The same gate as the fused kernels: small tensors stay on the calling thread.
  plan->threads = rows * n * kRowNormCost >= kFusedParallelWork ? threads : 1;
  plan->data = dnnl::memory::desc({rows, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  plan->vector = dnnl::memory::desc({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  auto flags = dnnl::normalization_flags::none;
  if (norm.scale) flags |= dnnl::normalization_flags::use_scale;
  if (norm.shift) flags |= dnnl::normalization_flags::use_shift;
  const dnnl_util::ThreadScope scope(plan->threads);
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::layer_normalization_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, plan->data, norm.epsilon, flags}, attr, dnnl_util::Engine());
    if (dnnl_util::IsReference(pd)) return {};
    plan->scratchpad = pd.scratchpad_desc();
    plan->primitive = dnnl::layer_normalization_forward(pd);
    return GuardedDnnlKernel(
        "LayerNorm", "dnnl.layer_norm[" + dnnl_util::ImplName(pd) + "]", plan->threads > 1,
        [plan](ref::Operands in, uint8_t* out) {
          dnnl_util::SetThreads(plan->threads);
          std::unordered_map<int, dnnl::memory> args = {
              {DNNL_ARG_SRC, dnnl_util::Wrap(plan->data, in[0])},
              {DNNL_ARG_DST, dnnl_util::Wrap(plan->data, out)},
              {DNNL_ARG_SCRATCHPAD,
               dnnl_util::Wrap(plan->scratchpad, dnnl_util::Scratch(plan->scratchpad.get_size()))}};
          size_t k = 1;
          if (plan->scale) args[DNNL_ARG_SCALE] = dnnl_util::Wrap(plan->vector, in[k++]);
          if (plan->shift) args[DNNL_ARG_SHIFT] = dnnl_util::Wrap(plan->vector, in[k++]);
          dnnl::stream stream(dnnl_util::Engine());
          plan->primitive.execute(stream, args);
          stream.wait();
        });
  } catch (const dnnl::error&) {
    return {};
  }
}

/// The written-out form in scalar code (`simd=scalar`, or when oneDNN declines): per row the mean, the
/// variance of the centred values (sums in double), then the normalised values, gain and offset.
KernelChoice LayerNormFallback(const RowNorm& norm, int64_t rows, int64_t n) {
  return {[norm, rows, n](ref::Operands in, uint8_t* out) {
            const auto* x = reinterpret_cast<const float*>(in[0]);
            auto* y = reinterpret_cast<float*>(out);
            size_t k = 1;
            const float* gamma = norm.scale ? reinterpret_cast<const float*>(in[k++]) : nullptr;
            const float* beta = norm.shift ? reinterpret_cast<const float*>(in[k++]) : nullptr;
            for (int64_t r = 0; r < rows; ++r) {
              const float* xr = x + r * n;
              float* yr = y + r * n;
              double sum = 0;
              for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(xr[j]);
              const auto mean = static_cast<float>(sum / static_cast<double>(n));
              double sq = 0;
              for (int64_t j = 0; j < n; ++j) sq += static_cast<double>((xr[j] - mean) * (xr[j] - mean));
              const float denom = std::sqrt(static_cast<float>(sq / static_cast<double>(n)) + norm.epsilon);
              for (int64_t j = 0; j < n; ++j) {
                float v = (xr[j] - mean) / denom;
                if (gamma != nullptr) v *= gamma[j];
                if (beta != nullptr) v += beta[j];
                yr[j] = v;
              }
            }
          },
          "row.layer_norm.scalar"};
}

}  // namespace

KernelChoice MakeRowNormKernel(CpuBackend& backend, int threads, const Node& node,
                               const std::vector<Shape>& operands) {
  const RowNorm& norm = *node.row_norm;
  const Shape& x = operands.at(0);
  const int64_t n = x.Dimensions().back(), rows = n == 0 ? 0 : x.Size() / n;
  if (rows == 0) return {[](ref::Operands, uint8_t*) {}, "row.empty"};
  const bool simd = backend.options().simd;
  if (norm.kind == RowNorm::Kind::kSoftmax) return SoftmaxKernel(simd, threads, rows, n);
  if (!simd) return LayerNormFallback(norm, rows, n);
  if (KernelChoice k = LayerNormKernel(threads, norm, rows, n); k.kernel) return k;
  return LayerNormFallback(norm, rows, n);
}

}  // namespace kiln::compute::cpu
