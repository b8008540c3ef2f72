// A persistent team against one OpenMP region per kernel, on the MLP training step's large work:
// its five large products (two forward, the second layer's input gradient, both weight
// gradients) and the three elementwise passes between them (two ReLUs and the gradient's mask),
// at batch 256, through oneDNN's matmul primitive called directly.
//
// - omp: as the cpu backend runs them today: each product a two-thread primitive and each pass a
//   `#pragma omp parallel` region; under OMP_WAIT_POLICY=PASSIVE every region wakes the sleeping
//   thread.
// - team: one parallel region for the whole sequence; each thread runs its half of every product
//   (a single-threaded primitive over half the result's rows) and of every pass, and the two meet
//   at a spinning barrier between steps, so no thread sleeps inside the sequence and each pass
//   reads the rows its own core has just written.
//
// Both run alternately in the same loop; the case reports each one's median time and the median
// of the per-iteration ratio team/omp (below 1: the team is faster).

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include <dnnl.hpp>

#include "bench_util.h"
#include "cases.h"
#include "dnnl_product.h"

namespace kiln::bench {
namespace {

using dnnl::memory;

constexpr int64_t kBatch = 256, kIn = 784, kHidden = 512;

void Relu(const float* in, float* out, int64_t first, int64_t last) {
  for (int64_t i = first; i < last; ++i) out[i] = in[i] > 0 ? in[i] : 0;
}
// The ReLU's gradient as kiln's autodiff emits it (Max's rule: the tie goes to x).
void Mask(const float* pre, float* g, int64_t first, int64_t last) {
  for (int64_t i = first; i < last; ++i) g[i] = pre[i] >= 0 ? g[i] : 0;
}

void TeamCase(benchmark::State& state) {
  const std::vector<float> x = UniformValues(21, kBatch * kIn, -1, 1),
                           w1 = UniformValues(22, kIn * kHidden, -0.05F, 0.05F),
                           w2 = UniformValues(23, kHidden * kHidden, -0.05F, 0.05F),
                           g2 = UniformValues(24, kBatch * kHidden, -1, 1);
  const int64_t n = kBatch * kHidden;
  std::vector<float> h1(n), a1(n), h2(n), a2(n), d1(n), dw2(kHidden * kHidden), dw1(kIn * kHidden);
  // The whole products, each on two threads: h1 = x w1, h2 = a1 w2, d1 = g2 w2^T, dw2 = a1^T g2,
  // dw1 = x^T d1.
  const auto whole = [&](int threads) {
    std::vector<DnnlProduct> p;
    p.reserve(5);
    p.emplace_back(kBatch, kIn, kHidden, memory::dims{kIn, 1}, memory::dims{kHidden, 1}, kHidden, x.data(),
                   w1.data(), h1.data(), threads);
    p.emplace_back(kBatch, kHidden, kHidden, memory::dims{kHidden, 1}, memory::dims{kHidden, 1}, kHidden,
                   a1.data(), w2.data(), h2.data(), threads);
    p.emplace_back(kBatch, kHidden, kHidden, memory::dims{kHidden, 1}, memory::dims{1, kHidden}, kHidden,
                   g2.data(), w2.data(), d1.data(), threads);
    p.emplace_back(kHidden, kBatch, kHidden, memory::dims{1, kHidden}, memory::dims{kHidden, 1}, kHidden,
                   a1.data(), g2.data(), dw2.data(), threads);
    p.emplace_back(kIn, kBatch, kHidden, memory::dims{1, kIn}, memory::dims{kHidden, 1}, kHidden, x.data(),
                   d1.data(), dw1.data(), threads);
    return p;
  };
  std::vector<DnnlProduct> omp = whole(2);
  // Thread t's halves: rows [t/2, (t+1)/2) of every result, single-threaded.
  std::vector<DnnlProduct> half[2];
  for (int t = 0; t < 2; ++t) {
    const int64_t r = kBatch / 2 * t, r2 = kHidden / 2 * t, r1 = kIn / 2 * t;
    half[t].reserve(5);
    half[t].emplace_back(kBatch / 2, kIn, kHidden, memory::dims{kIn, 1}, memory::dims{kHidden, 1}, kHidden,
                         x.data() + r * kIn, w1.data(), h1.data() + r * kHidden, 1);
    half[t].emplace_back(kBatch / 2, kHidden, kHidden, memory::dims{kHidden, 1}, memory::dims{kHidden, 1},
                         kHidden, a1.data() + r * kHidden, w2.data(), h2.data() + r * kHidden, 1);
    half[t].emplace_back(kBatch / 2, kHidden, kHidden, memory::dims{kHidden, 1}, memory::dims{1, kHidden},
                         kHidden, g2.data() + r * kHidden, w2.data(), d1.data() + r * kHidden, 1);
    half[t].emplace_back(kHidden / 2, kBatch, kHidden, memory::dims{1, kHidden}, memory::dims{kHidden, 1},
                         kHidden, a1.data() + r2, g2.data(), dw2.data() + r2 * kHidden, 1);
    half[t].emplace_back(kIn / 2, kBatch, kHidden, memory::dims{1, kIn}, memory::dims{kHidden, 1}, kHidden,
                         x.data() + r1, d1.data(), dw1.data() + r1 * kHidden, 1);
  }
  const auto run_omp = [&] {
    omp_set_num_threads(2);
    omp[0].Run();
#pragma omp parallel num_threads(2)
    Relu(h1.data(), a1.data(), n * omp_get_thread_num() / 2, n * (omp_get_thread_num() + 1) / 2);
    omp[1].Run();
#pragma omp parallel num_threads(2)
    Relu(h2.data(), a2.data(), n * omp_get_thread_num() / 2, n * (omp_get_thread_num() + 1) / 2);
    omp[2].Run();
    omp[3].Run();
#pragma omp parallel num_threads(2)
    Mask(h1.data(), d1.data(), n * omp_get_thread_num() / 2, n * (omp_get_thread_num() + 1) / 2);
    omp[4].Run();
  };
  std::atomic<int> arrived{0};
  const auto run_team = [&] {
    arrived = 0;
#pragma omp parallel num_threads(2)
    {
      const int t = omp_get_thread_num();
      const int64_t first = n * t / 2, last = n * (t + 1) / 2;
      int phase = 0;
      const auto meet = [&] {
        ++phase;
        arrived.fetch_add(1, std::memory_order_acq_rel);
        while (arrived.load(std::memory_order_acquire) < 2 * phase) _mm_pause();
      };
      half[t][0].Run();
      meet();
      Relu(h1.data(), a1.data(), first, last);
      meet();
      half[t][1].Run();
      meet();
      Relu(h2.data(), a2.data(), first, last);
      meet();
      half[t][2].Run();
      half[t][3].Run();
      meet();
      Mask(h1.data(), d1.data(), first, last);
      meet();
      half[t][4].Run();
    }
  };
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::vector<double> omp_ms, team_ms, ratio;
  for (auto _ : state) {
    const Clock::time_point t0 = Clock::now();
    run_omp();
    const Clock::time_point t1 = Clock::now();
    run_team();
    const Clock::time_point t2 = Clock::now();
    omp_ms.push_back(ms(t0, t1));
    team_ms.push_back(ms(t1, t2));
    ratio.push_back(team_ms.back() / omp_ms.back());
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  state.counters["omp_ms"] = median(omp_ms);
  state.counters["team_ms"] = median(team_ms);
  state.counters["team_over_omp"] = median(ratio);
}

}  // namespace

// Registers team/mlp_products.
void RegisterTeamCases() {
  benchmark::RegisterBenchmark("team/mlp_products", TeamCase)->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace kiln::bench
