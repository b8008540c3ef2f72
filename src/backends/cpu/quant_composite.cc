// The cpu kernel of the "kiln.quantized_matmul" composite (kiln/compute/composite.h): linearly
// quantized Int8 and Int4 weights and NF4 codes with float32 scales in blocks along K
// (quant_matmul.h), and ggml's Q8_0, Q4_0, Q4_K and Q6_K rows (ggml_matmul.h). Few rows of x
// (bound by reading the weights) run the register kernels, the weights dequantized only in
// registers; many rows (bound by arithmetic) dequantize one cache-sized tile of W at a time and
// multiply by it with oneDNN's sgemm, so no float copy of the whole matrix is ever made. Every
// other form of the composite runs its decomposition (cpu_control.cc).

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "backends/cpu/ggml_matmul.h"
#include "backends/cpu/int8_dot.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/quant_matmul.h"
#include "core/check.h"
#include "kiln/compute/composite.h"

namespace kiln::compute::cpu {

namespace {

namespace cm = composite;

/// Columns per thread are multiples of this (a panel of the kernel on AVX-512, two on AVX2).
constexpr int64_t kColumnAlign = 128;

/// Rows of x from which the tiled path (dequantized tiles through sgemm) beats the register
/// kernels: measured on 4096 × 4096 int8 and int4 weights with bench/quant_bench.cc
/// (quant/dense_4096_b*): at 8 rows the register kernel is ahead, from 16 the tiles (0.72x the
/// float32 product against 0.47x at 16 rows, 0.89x against 0.34x at 64).
constexpr int64_t kTiledRows = 12;
/// The tile of W dequantized at a time: 256 × 256 floats (256 KiB, within L2).
constexpr int64_t kTileRows = 256, kTileColumns = 256;

struct QuantPlan {
  int64_t m = 0, k = 0, n = 0, block = 0;
  bool four_bit = false, nf4 = false, zero = false;
  int ggml = 0;  ///< The ggml block type (ggml_matmul.h), 0 for linear and NF4 weights.
};

/// The plan of a GGML instance (Q8_0, Q4_0, Q4_K, Q6_K) when the kernel runs it.
bool PlanGGML(const Instruction& inst, QuantPlan& plan) {
  const std::vector<int64_t>& v = inst.attrs.values;
  const int64_t type = v[cm::kGGMLType];
  if (type != kGGMLQ8_0 && type != kGGMLQ4_0 && type != kGGMLQ4_K && type != kGGMLQ6_K) return false;
  const Program& body = *inst.subprograms[0];
  if (body.Parameters().size() != 2 || inst.tuple_shapes.size() != 1) return false;
  const Shape x = body.ParameterShape(0), w = body.ParameterShape(1);
  if (x.IsDynamic() || x.dtype() != DType::Float32 || x.Rank() < 1) return false;
  if (w.dtype() != DType::Uint8 || w.Rank() != 2) return false;
  const int64_t bytes = GGMLBlockBytesOf(static_cast<int>(type));
  if (w.Dim(1) % bytes != 0) return false;
  plan.ggml = static_cast<int>(type);
  plan.n = w.Dim(0);
  plan.k = w.Dim(1) / bytes * GGMLBlockValuesOf(static_cast<int>(type));
  if (x.Dimensions().back() != plan.k || plan.k == 0 || plan.n == 0) return false;
  std::vector<int64_t> out = x.Dimensions();
  out.back() = plan.n;
  if (inst.tuple_shapes[0] != Shape(DType::Float32, out)) return false;
  plan.m = x.Size() / plan.k;
  return true;
}

/// The plan when the kernel runs this instance, else nothing (false).
bool Plan(const Instruction& inst, QuantPlan& plan) {
  if (inst.attrs.name != cm::kQuantizedMatmul || inst.subprograms.size() != 1 || !inst.subprograms[0])
    return false;
  const std::vector<int64_t>& v = inst.attrs.values;
  if (v.size() != cm::kNumQuantizedMatmulValues) return false;
  if (v[cm::kScheme] == cm::kSchemeGGML) return PlanGGML(inst, plan);
  if (v[cm::kBlockAxis] != 0) return false;
  const bool nf4 = v[cm::kScheme] == cm::kSchemeNF4;
  if (v[cm::kScheme] != cm::kSchemeLinear && !nf4) return false;
  const Program& body = *inst.subprograms[0];
  const bool zero = v[cm::kHasZero] == 1;
  if (body.Parameters().size() != (zero ? 4u : 3u) || inst.tuple_shapes.size() != 1 || (nf4 && zero))
    return false;
  const Shape x = body.ParameterShape(0), w = body.ParameterShape(1), s = body.ParameterShape(2);
  if (x.IsDynamic() || x.dtype() != DType::Float32 || x.Rank() < 1 || w.Rank() != 2) return false;
  // Linear: Int8 or Int4 values; NF4: 4-bit codes (Uint4, or Int4 read as its low bits).
  const bool four = w.dtype() == DType::Int4 || (nf4 && w.dtype() == DType::Uint4);
  if (!four && (nf4 || w.dtype() != DType::Int8)) return false;
  plan.k = w.Dim(0);
  plan.n = w.Dim(1);
  plan.block = v[cm::kBlockSize];
  plan.four_bit = four;
  plan.nf4 = nf4;
  plan.zero = zero;
  if (x.Dimensions().back() != plan.k || plan.k == 0 || plan.n == 0 || plan.block <= 0 ||
      plan.k % plan.block != 0)
    return false;
  if (plan.four_bit && plan.n % 2 != 0) return false;  // Rows of whole bytes.
  const Shape want(DType::Float32, {plan.k / plan.block, plan.n});
  if (s != want || (zero && body.ParameterShape(3) != want)) return false;
  std::vector<int64_t> out = x.Dimensions();
  out.back() = plan.n;
  if (inst.tuple_shapes[0] != Shape(DType::Float32, out)) return false;
  plan.m = x.Size() / plan.k;
  return true;
}

}  // namespace

TupleKernel MakeQuantizedMatmulKernel(CpuBackend* backend, const Instruction& inst) {
  QuantPlan plan;
  if (!Plan(inst, plan)) return {};
  const int64_t work = plan.m * plan.k * plan.n;
  const int threads = work >= backend->options().serial_work ? backend->options().threads : 1;
  return [backend, plan, threads](const std::vector<BufferPtr>& operands, int) -> std::vector<BufferPtr> {
    std::shared_ptr<CpuBuffer> out =
        backend->NewBuffer(plan.m * plan.n * static_cast<int64_t>(sizeof(float)));
    const float* x = reinterpret_cast<const float*>(backend->AsCpuBuffer(*operands[0])->data());
    const uint8_t* w = backend->AsCpuBuffer(*operands[1])->data();
    float* y = reinterpret_cast<float*>(out->data());
    LinearQuantMatmul p;
    GGMLMatmul g;
    if (plan.ggml != 0) {
      g = GGMLMatmul{x, plan.m, plan.k, plan.n, w, plan.ggml, y};
    } else {
      p.x = x;
      p.m = plan.m;
      p.k = plan.k;
      p.n = plan.n;
      p.q = w;
      p.four_bit = plan.four_bit;
      p.table = plan.nf4 ? cm::kNF4Values.data() : nullptr;
      p.scale = reinterpret_cast<const float*>(backend->AsCpuBuffer(*operands[2])->data());
      p.zero =
          plan.zero ? reinterpret_cast<const float*>(backend->AsCpuBuffer(*operands[3])->data()) : nullptr;
      p.block = plan.block;
      p.y = y;
    }
    // Column ranges of whole panels, one per thread.
    const int64_t chunks = (plan.n + kColumnAlign - 1) / kColumnAlign;
    const int team = static_cast<int>(std::min<int64_t>(threads, chunks));
    const bool tiled = plan.m >= kTiledRows;
    // Q4_0 and Q8_0 at few rows: x quantized once, as ggml's Q8_0, for integer dot products.
    // int8 weights too (their x sums for zero points first, in float).
    const bool int8 = !tiled && backend->options().int8_activations &&
                      (plan.ggml != 0 ? GGMLInt8Runs(plan.ggml) : LinearInt8Runs(p));
    const Int8DotIsa isa = int8 ? CurrentInt8DotIsa() : Int8DotIsa::kScalar;
    Q8Rows xq;
    std::vector<float> xsum;
    if (int8) {
      QuantizeRowsQ8(x, plan.m, plan.k, isa, xq);
      if (plan.ggml == 0 && p.zero != nullptr) xsum = BlockSumsOf(p);
    }
    std::atomic<int> failed{0};  // A sgemm status, raised after the threads join.
    auto run = [&](int64_t id, int64_t count) {
      const int64_t b = std::min(plan.n, chunks * id / count * kColumnAlign);
      const int64_t e = std::min(plan.n, chunks * (id + 1) / count * kColumnAlign);
      if (b >= e) return;
      if (!tiled) {
        if (int8 && plan.ggml != 0) {
          RunGGMLInt8(g, xq, b, e, isa);
        } else if (int8) {
          RunLinearInt8(p, xq, xsum.empty() ? nullptr : xsum.data(), b, e, isa);
        } else if (plan.ggml != 0) {
          RunGGMLMatmul(g, b, e);
        } else {
          std::vector<float> scratch(static_cast<size_t>(plan.m * (e - b)));
          RunLinearQuantMatmul(p, b, e, scratch.data());
        }
        return;
      }
      std::vector<float> tile(static_cast<size_t>(kTileRows * kTileColumns));
      for (int64_t n0 = b; n0 < e; n0 += kTileColumns) {
        const int64_t n1 = std::min(e, n0 + kTileColumns);
        for (int64_t k0 = 0; k0 < plan.k; k0 += kTileRows) {
          const int64_t k1 = std::min(plan.k, k0 + kTileRows);
          dnnl_status_t st;
          if (plan.ggml != 0) {  // The tile is [n, k]: y += x · tileᵀ.
            DecodeGGMLTile(g, n0, n1, k0, k1, tile.data());
            st = dnnl_sgemm('N', 'T', plan.m, n1 - n0, k1 - k0, 1.0f, x + k0, plan.k, tile.data(), k1 - k0,
                            k0 == 0 ? 0.0f : 1.0f, y + n0, plan.n);
          } else {
            DequantizeLinearTile(p, k0, k1, n0, n1, tile.data());
            st = dnnl_sgemm('N', 'N', plan.m, n1 - n0, k1 - k0, 1.0f, x + k0, plan.k, tile.data(), n1 - n0,
                            k0 == 0 ? 0.0f : 1.0f, y + n0, plan.n);
          }
          if (st != dnnl_success) failed = static_cast<int>(st);
        }
      }
    };
    if (team <= 1) {
      run(0, 1);
    } else {
#pragma omp parallel num_threads(team)
      run(omp_get_thread_num(), omp_get_num_threads());
    }
    if (failed != 0)
      detail::Throw("backend \"cpu\": kiln.quantized_matmul: oneDNN's sgemm failed (status {})",
                    failed.load());
    return {out};
  };
}

}  // namespace kiln::compute::cpu
