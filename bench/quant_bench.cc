// Quantized weights against float32, side by side in one process: a [batch, 4096] x [4096, 4096]
// dense layer on the cpu backend, nn::Dense with float32 weights against nn::QuantizedDense with
// weights quantized by quant::Quantize (Int8 per channel, Int4 in blocks of 32 along K, NF4 in
// blocks of 64, and ggml's Q4_0, Q4_K and Q6_K), all fed as inputs as a loaded model's are.
// Interleaved rounds; reports each median (ms) and float32 time / quantized time.

#include <chrono>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cases.h"
#include "kiln/ml/nn.h"
#include "kiln/ml/quantized.h"
#include "kiln/quant/quant.h"

namespace kiln::bench {
namespace {

using Clock = std::chrono::steady_clock;

template <class Fn>
double Seconds(Fn&& fn, int calls) {
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count() / calls;
}

struct Variant {
  const char* name;
  quant::Scheme scheme;
  int64_t block;
};

void QuantVsFloat(benchmark::State& state, int64_t batch) {
  const int64_t k = 4096, n = 4096;
  const Tensor w = UniformTensor(1, {k, n}, -0.05f, 0.05f);
  const Tensor x = UniformTensor(2, {batch, k}, -1, 1);
  graph::Exec dense = graph::NewExec(Backend(), [](graph::Node a, graph::Node b) { return nn::Dense(a, b); });
  const std::vector<Variant> variants = {{"int8", quant::Scheme::Int8, 0}, {"int4", quant::Scheme::Int4, 32},
                                         {"nf4", quant::Scheme::NF4, 64},  {"q4_0", quant::Scheme::Q4_0, 0},
                                         {"q4_k", quant::Scheme::Q4_K, 0}, {"q6_k", quant::Scheme::Q6_K, 0}};
  std::vector<quant::Quantized> qs;  // All made first: each Exec refers to its element.
  for (const Variant& v : variants) qs.push_back(quant::Quantize(w, v.scheme, v.block));
  std::vector<graph::Exec> execs;
  for (const quant::Quantized& q : qs) {
    execs.push_back(graph::NewExec(Backend(), [&q](const std::vector<graph::Node>& p) {
      nn::Quantization spec = q.QuantizationIn(p[0].graph());  // Layout and type from q...
      if (spec.scale.Ok()) spec.scale = p[2];                  // ...values from the inputs.
      return nn::QuantizedDense(p[0], p[1], spec);
    }));
  }
  auto call = [&](size_t i) {
    const quant::Quantized& q = qs[i];
    std::vector<Tensor> in = {x, q.weights};
    if (q.scales.Ok()) in.push_back(q.scales);
    return execs[i].Call(in);
  };
  dense.Call(x, w);
  for (size_t i = 0; i < variants.size(); ++i) call(i);
  const int calls = batch == 1 ? 20 : 3;
  std::vector<double> f32;
  std::vector<std::vector<double>> times(variants.size());
  for (auto _ : state) {
    f32.push_back(Seconds([&] { benchmark::DoNotOptimize(dense.Call(x, w)); }, calls));
    for (size_t i = 0; i < variants.size(); ++i)
      times[i].push_back(Seconds([&] { benchmark::DoNotOptimize(call(i)); }, calls));
  }
  state.counters["f32_ms"] = Median(f32) * 1e3;
  for (size_t i = 0; i < variants.size(); ++i) {
    state.counters[std::string(variants[i].name) + "_ms"] = Median(times[i]) * 1e3;
    state.counters[std::string(variants[i].name) + "_speedup"] = Median(f32) / Median(times[i]);
  }
}

}  // namespace

void RegisterQuantCases() {
  for (int64_t batch : {1, 16, 64}) {
    benchmark::RegisterBenchmark(("quant/dense_4096_b" + std::to_string(batch)).c_str(), QuantVsFloat, batch)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(9);
  }
}

}  // namespace kiln::bench
