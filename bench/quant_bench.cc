// Quantized weights against float32, side by side in one process: a [batch, 4096] x [4096, 4096]
// product through the cpu backend's float32 MatMul, and the quant_matmul kernel with int8 and
// packed int4 weights (blocks of 32 scales along K), its columns split over the bench's threads.
// Interleaved rounds; reports each median (ms) and float32 time / quantized time.

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "backends/cpu/quant_matmul.h"
#include "bench_util.h"
#include "cases.h"

namespace kiln::bench {
namespace {

using Clock = std::chrono::steady_clock;

template <class Fn>
double Seconds(Fn&& fn, int calls) {
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count() / calls;
}

void QuantVsFloat(benchmark::State& state, int64_t batch) {
  const int64_t k = 4096, n = 4096, block = 32;
  const Tensor w = UniformTensor(1, {k, n}, -0.05f, 0.05f);
  const Tensor x = UniformTensor(2, {batch, k}, -1, 1);
  graph::Exec dense =
      graph::NewExec(Backend(), [](graph::Node a, graph::Node b) { return graph::MatMul(a, b); });
  std::vector<uint8_t> q8(static_cast<size_t>(k * n)), q4(static_cast<size_t>(k * n / 2));
  for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<uint8_t>(HashAt(3, i) & 0xFF);
  for (size_t i = 0; i < q4.size(); ++i) q4[i] = static_cast<uint8_t>(HashAt(4, i) & 0xFF);
  const std::vector<float> scale = UniformValues(5, k / block * n, 0.001f, 0.002f);
  const std::vector<float> xv = x.ToVector<float>();
  std::vector<float> y(static_cast<size_t>(batch * n)), scratch(static_cast<size_t>(batch * n));
  compute::cpu::LinearQuantMatmul p;
  p.x = xv.data();
  p.m = batch;
  p.k = k;
  p.n = n;
  p.scale = scale.data();
  p.block = block;
  p.y = y.data();
  const int threads = BenchThreads();
  auto run = [&](bool four_bit) {
    p.four_bit = four_bit;
    p.q = four_bit ? q4.data() : q8.data();
    const int64_t part = (n / threads) & ~int64_t{63};
#pragma omp parallel for num_threads(threads)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = t * part, end = t == threads - 1 ? n : (t + 1) * part;
      compute::cpu::RunLinearQuantMatmul(p, begin, end, scratch.data() + begin * batch);
    }
  };
  dense.Call(x, w);
  run(false);
  run(true);
  const int calls = batch == 1 ? 20 : 3;
  std::vector<double> f32, i8, i4;
  for (auto _ : state) {
    f32.push_back(Seconds([&] { benchmark::DoNotOptimize(dense.Call(x, w)); }, calls));
    i8.push_back(Seconds([&] { run(false); }, calls));
    i4.push_back(Seconds([&] { run(true); }, calls));
  }
  state.counters["f32_ms"] = Median(f32) * 1e3;
  state.counters["int8_ms"] = Median(i8) * 1e3;
  state.counters["int4_ms"] = Median(i4) * 1e3;
  state.counters["int8_speedup"] = Median(f32) / Median(i8);
  state.counters["int4_speedup"] = Median(f32) / Median(i4);
}

}  // namespace

void RegisterQuantCases() {
  for (int64_t batch : {1, 64}) {
    benchmark::RegisterBenchmark(("quant/matmul_4096_b" + std::to_string(batch)).c_str(), QuantVsFloat, batch)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(9);
  }
}

}  // namespace kiln::bench
