// Inter-op parallelism for the backward pass of a dense layer: its input gradient dX = dY·Wᵀ and
// weight gradient dW = Xᵀ·dY are independent, so they could run at the same time, one
// single-threaded oneDNN matmul per core, instead of one after the other on the two-thread team.
// Both variants use oneDNN's matmul primitive directly at the MLP's layer shapes; the cpu backend
// keeps whichever wins (the two-thread team: docs/performance.md has the measurements).

#include <omp.h>

#include <memory>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "bench_util.h"
#include "cases.h"
#include "dnnl_product.h"

namespace kiln::bench {
namespace {

// One row-major product C[m,n] = op(A)·op(B) with its own operands, created for `threads`.
struct Product {
  std::vector<float> a, b, c;
  DnnlProduct product;

  Product(int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, int threads)
      : a(UniformValues(21, m * k, -1, 1)),
        b(UniformValues(22, k * n, -1, 1)),
        c(static_cast<size_t>(m * n)),
        product(m, k, n, trans_a ? dnnl::memory::dims{1, m} : dnnl::memory::dims{k, 1},
                trans_b ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1}, n, a.data(), b.data(),
                c.data(), threads) {}
  // Runs on the calling thread's current team size.
  void Run() { product.Run(); }
};

// The layer m x k x n (forward x[m,k]·W[k,n]): dX = dY[m,n]·W[k,n]ᵀ and dW = x[m,k]ᵀ·dY[m,n].
void InteropCase(benchmark::State& state, int64_t m, int64_t k, int64_t n, bool concurrent) {
  const int threads = BenchThreads();
  const int per_product = concurrent ? 1 : threads;
  Product dx(m, n, k, false, true, per_product), dw(k, m, n, true, false, per_product);
  for (auto _ : state) {
    if (concurrent) {
      // One product per thread, each running single-threaded inside the region.
#pragma omp parallel num_threads(2)
      {
        if (omp_get_thread_num() == 0) {
          dx.Run();
        } else {
          dw.Run();
        }
      }
    } else {
      omp_set_num_threads(threads);
      dx.Run();
      dw.Run();
    }
  }
  SetRate(state, "FLOP/s", 4.0 * static_cast<double>(m * k * n));
}

}  // namespace

// Registers interop/<layer>_{sequential,concurrent} at the MLP's second and third layers.
void RegisterInteropCases() {
  struct Layer {
    int64_t m, k, n;
    std::string name;
  };
  for (const Layer& l : {Layer{256, 512, 512, "256x512x512"}, Layer{256, 512, 10, "256x512x10"}}) {
    for (bool concurrent : {false, true}) {
      benchmark::RegisterBenchmark(
          ("interop/" + l.name + (concurrent ? "_concurrent" : "_sequential")).c_str(), InteropCase, l.m, l.k,
          l.n, concurrent)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace kiln::bench
