#pragma once
// A oneDNN matmul primitive over memory its caller owns, for the benchmarks that call oneDNN
// directly to compare ways of running products (interop_bench.cc, team_bench.cc).

#include <omp.h>

#include <cstdint>

#include <dnnl.hpp>

namespace kiln::bench {

/// C[m,n] (row stride ldc) = A[m,k]·B[k,n], A's and B's element strides given (a transposed
/// operand is one whose row stride is 1): a primitive created for `threads` OpenMP threads.
struct DnnlProduct {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::matmul primitive;
  dnnl::memory a, b, c;

  DnnlProduct(int64_t m, int64_t k, int64_t n, const dnnl::memory::dims& a_strides,
              const dnnl::memory::dims& b_strides, int64_t ldc, const float* a_data, const float* b_data,
              float* c_data, int threads) {
    using dnnl::memory;
    omp_set_num_threads(threads);
    const memory::desc a_md({m, k}, memory::data_type::f32, a_strides);
    const memory::desc b_md({k, n}, memory::data_type::f32, b_strides);
    const memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
    primitive = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine));
    a = memory(a_md, engine, const_cast<float*>(a_data));
    b = memory(b_md, engine, const_cast<float*>(b_data));
    c = memory(c_md, engine, c_data);
  }
  /// Runs on the calling thread's current team size (one thread inside a parallel region).
  void Run() {
    dnnl::stream stream(engine);
    primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
};

}  // namespace kiln::bench
