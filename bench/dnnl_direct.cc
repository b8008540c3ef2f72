// oneDNN 2.6 called directly: dnnl_sgemm and the matmul primitive, and the convolution
// primitives (forward, backward data, backward weights) in plain or oneDNN-chosen layouts;
// each closure is the faster variant.

#include "dnnl_direct.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "bench_util.h"

namespace kiln::bench {
namespace {

// The faster of two closures (one warm-up and three timed runs each).
std::function<void()> Faster(const std::function<void()>& a, const std::function<void()>& b) {
  auto time = [](const std::function<void()>& fn) {
    fn();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  return time(a) <= time(b) ? a : b;
}

// A primitive with its arguments and the memory behind them, kept alive by a closure.
struct PrimitiveRun {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
  std::vector<std::vector<float>> storage;
  int threads = 1;

  // A library-allocated memory of `md` filled with values drawn uniformly from [-scale, scale],
  // the ranges kiln's cases draw their operands from, so both multiply the same kind of data.
  dnnl::memory Filled(const dnnl::memory::desc& md, float scale) {
    dnnl::memory mem(md, engine);
    auto* data = static_cast<float*>(mem.get_data_handle());
    const int64_t count = static_cast<int64_t>(md.get_size() / sizeof(float));
    const std::vector<float> values = UniformValues(static_cast<uint64_t>(count) + 77, count, -scale, scale);
    std::copy(values.begin(), values.end(), data);
    return mem;
  }
  // The closure running the primitive on `threads` threads.
  static std::function<void()> Runner(std::shared_ptr<PrimitiveRun> run) {
    return [run] {
      omp_set_num_threads(run->threads);
      run->primitive.execute(run->stream, run->args);
      run->stream.wait();
    };
  }
};

// dnnl_sgemm on row-major operands.
std::function<void()> SgemmVariant(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int threads) {
  auto a = std::make_shared<std::vector<float>>(UniformValues(11, m * k, -1, 1));
  auto b = std::make_shared<std::vector<float>>(UniformValues(12, k * n, -1, 1));
  auto c = std::make_shared<std::vector<float>>(static_cast<size_t>(m * n));
  return [=] {
    omp_set_num_threads(threads);
    const dnnl_status_t status =
        dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0F, a->data(), trans_a ? m : k,
                   b->data(), trans_b ? k : n, 0.0F, c->data(), n);
    if (status != dnnl_success)
      throw kiln::Error("MakeDnnlMatmul: dnnl_sgemm failed with status " + std::to_string(int(status)));
  };
}

// The matmul primitive; transposed operands described by their strides.
std::function<void()> PrimitiveVariant(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                       int threads) {
  using dnnl::memory;
  auto run = std::make_shared<PrimitiveRun>();
  run->threads = threads;
  const memory::desc a_md({m, k}, memory::data_type::f32, trans_a ? memory::dims{1, m} : memory::dims{k, 1});
  const memory::desc b_md({k, n}, memory::data_type::f32, trans_b ? memory::dims{1, k} : memory::dims{n, 1});
  const memory::desc c_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), run->engine);
  run->primitive = dnnl::matmul(pd);
  run->args = {{DNNL_ARG_SRC, run->Filled(a_md, 1.0F)},
               {DNNL_ARG_WEIGHTS, run->Filled(b_md, 1.0F)},
               {DNNL_ARG_DST, run->Filled(c_md, 0.0F)}};
  return PrimitiveRun::Runner(run);
}

// One convolution pass with the given layout tags for activations and kernel.
std::function<void()> ConvVariant(ConvPass pass, int64_t batch, int64_t size, int64_t in, int64_t out,
                                  int64_t kernel, int threads, dnnl::memory::format_tag act_tag,
                                  dnnl::memory::format_tag wei_tag) {
  using dnnl::memory;
  auto run = std::make_shared<PrimitiveRun>();
  run->threads = threads;
  const memory::desc src_md({batch, in, size, size}, memory::data_type::f32, act_tag);
  const memory::desc wei_md({out, in, kernel, kernel}, memory::data_type::f32, wei_tag);
  const memory::desc dst_md({batch, out, size, size}, memory::data_type::f32, act_tag);
  const memory::dims strides{1, 1}, pad_lo{(kernel - 1) / 2, (kernel - 1) / 2},
      pad_hi{kernel / 2, kernel / 2};
  const dnnl::convolution_forward::desc fwd_desc(dnnl::prop_kind::forward_training,
                                                 dnnl::algorithm::convolution_direct, src_md, wei_md, dst_md,
                                                 strides, pad_lo, pad_hi);
  const dnnl::convolution_forward::primitive_desc fwd_pd(fwd_desc, run->engine);
  switch (pass) {
    case ConvPass::kForward:
      run->primitive = dnnl::convolution_forward(fwd_pd);
      run->args = {{DNNL_ARG_SRC, run->Filled(fwd_pd.src_desc(), 1.0F)},
                   {DNNL_ARG_WEIGHTS, run->Filled(fwd_pd.weights_desc(), 0.1F)},
                   {DNNL_ARG_DST, run->Filled(fwd_pd.dst_desc(), 0.0F)}};
      break;
    case ConvPass::kBackwardData: {
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_md, wei_md, dst_md,
                                                strides, pad_lo, pad_hi),
          run->engine, fwd_pd);
      run->primitive = dnnl::convolution_backward_data(pd);
      run->args = {{DNNL_ARG_DIFF_DST, run->Filled(pd.diff_dst_desc(), 1.0F)},
                   {DNNL_ARG_WEIGHTS, run->Filled(pd.weights_desc(), 0.1F)},
                   {DNNL_ARG_DIFF_SRC, run->Filled(pd.diff_src_desc(), 0.0F)}};
      break;
    }
    case ConvPass::kBackwardWeights: {
      const dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_md, wei_md,
                                                   dst_md, strides, pad_lo, pad_hi),
          run->engine, fwd_pd);
      run->primitive = dnnl::convolution_backward_weights(pd);
      run->args = {{DNNL_ARG_SRC, run->Filled(pd.src_desc(), 1.0F)},
                   {DNNL_ARG_DIFF_DST, run->Filled(pd.diff_dst_desc(), 1.0F)},
                   {DNNL_ARG_DIFF_WEIGHTS, run->Filled(pd.diff_weights_desc(), 0.0F)}};
      break;
    }
  }
  return PrimitiveRun::Runner(run);
}

}  // namespace

// The faster of sgemm and the matmul primitive.
std::function<void()> MakeDnnlMatmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                     int threads) {
  return Faster(SgemmVariant(trans_a, trans_b, m, n, k, threads),
                PrimitiveVariant(trans_a, trans_b, m, n, k, threads));
}

// The faster of NHWC/HWIO and oneDNN's preferred layouts.
std::function<void()> MakeDnnlConv(ConvPass pass, int64_t batch, int64_t size, int64_t in, int64_t out,
                                   int64_t kernel, int threads) {
  using Tag = dnnl::memory::format_tag;
  return Faster(ConvVariant(pass, batch, size, in, out, kernel, threads, Tag::nhwc, Tag::hwio),
                ConvVariant(pass, batch, size, in, out, kernel, threads, Tag::any, Tag::any));
}

}  // namespace kiln::bench
