// The tiny graph: ten ops on 4-element tensors, timed per Exec::Call (the per-call overhead).

#include "bench_util.h"
#include "cases.h"

namespace kiln::bench {
namespace {

// a+b, *a, -b, relu, tanh, +a, abs, sqrt, *b, exp: ten ops (torch_bench.py runs the same).
graph::Node TenOps(graph::Node a, graph::Node b) {
  graph::Node t = a + b;
  t = t * a;
  t = t - b;
  t = graph::MaxScalar(t, 0.0F);
  t = graph::Tanh(t);
  t = t + a;
  t = graph::Abs(t);
  t = graph::Sqrt(t);
  t = t * b;
  return graph::Exp(t);
}

// Microseconds per call.
void TinyCase(benchmark::State& state) {
  Tensor a = UniformTensor(51, {4}, -1, 1), b = UniformTensor(52, {4}, -1, 1);
  auto exec = graph::NewExec(Backend(), TenOps);
  exec.Call1(a, b);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call1(a, b));
  SetRate(state, "calls/s", 1.0);
}

}  // namespace

// One case.
void RegisterTinyCases() {
  benchmark::RegisterBenchmark("tiny/ten_ops", TinyCase)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace kiln::bench
