// Matmul cases: the MLP's shapes (m x k x n), their two backward forms (dW = x^T·g,
// dX = g·W^T) and square sizes, in kiln and in oneDNN called directly.

#include <string>
#include <vector>

#include "bench_util.h"
#include "cases.h"
#include "dnnl_direct.h"

namespace kiln::bench {
namespace {

// Which product: forward x[m,k]·W[k,n], dW = x^T·g (x[m,k], g[m,n]) or dX = g·W^T (g[m,n], W[k,n]).
enum class Form { kForward, kWeightGrad, kInputGrad };

// The operand dims of `form` at m x k x n.
std::vector<std::vector<int64_t>> OperandDims(Form form, int64_t m, int64_t k, int64_t n) {
  switch (form) {
    case Form::kForward:
      return {{m, k}, {k, n}};
    case Form::kWeightGrad:
      return {{m, k}, {m, n}};
    case Form::kInputGrad:
      return {{m, n}, {k, n}};
  }
  return {};
}

// The graph of `form`.
graph::Node Product(Form form, graph::Node a, graph::Node b) {
  switch (form) {
    case Form::kForward:
      return graph::MatMul(a, b);
    case Form::kWeightGrad:
      return graph::Dot(a, b).General({0}, {}, {0}, {});
    case Form::kInputGrad:
      return graph::Dot(a, b).General({1}, {}, {1}, {});
  }
  return {};
}

// kiln: one Exec::Call per iteration.
void KilnCase(benchmark::State& state, Form form, int64_t m, int64_t k, int64_t n) {
  const auto dims = OperandDims(form, m, k, n);
  Tensor a = UniformTensor(11, dims[0], -1, 1), b = UniformTensor(12, dims[1], -1, 1);
  auto exec = graph::NewExec(Backend(), [form](graph::Node x, graph::Node y) { return Product(form, x, y); });
  exec.Call1(a, b);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call1(a, b));
  SetRate(state, "FLOP/s", 2.0 * static_cast<double>(m * k * n));
}

// oneDNN on operands of the same shapes (the faster of sgemm and the matmul primitive).
void DnnlCase(benchmark::State& state, Form form, int64_t m, int64_t k, int64_t n) {
  const auto run = form == Form::kForward      ? MakeDnnlMatmul(false, false, m, n, k, BenchThreads())
                   : form == Form::kWeightGrad ? MakeDnnlMatmul(true, false, k, n, m, BenchThreads())
                                               : MakeDnnlMatmul(false, true, m, k, n, BenchThreads());
  for (auto _ : state) run();
  SetRate(state, "FLOP/s", 2.0 * static_cast<double>(m * k * n));
}

// kiln on half-precision operands, converted before the timed calls (the cpu backend runs
// BFloat16 products on bfloat16 instructions where the CPU has them, and widens the others to
// Float32 between fused conversions).
void KilnHalfCase(benchmark::State& state, DType dtype, int64_t m, int64_t k, int64_t n) {
  Tensor a = UniformTensor(11, {m, k}, -1, 1), b = UniformTensor(12, {k, n}, -1, 1);
  auto to_half = graph::NewExec(Backend(), [dtype](graph::Node x) { return graph::ConvertDType(x, dtype); });
  Tensor ah = to_half.Call1(a), bh = to_half.Call1(b);
  auto exec = graph::NewExec(Backend(), [](graph::Node x, graph::Node y) { return graph::MatMul(x, y); });
  exec.Call1(ah, bh);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call1(ah, bh));
  SetRate(state, "FLOP/s", 2.0 * static_cast<double>(m * k * n));
}

}  // namespace

// Registers kiln and oneDNN at every shape and form.
void RegisterMatmulCases() {
  struct Shape3 {
    int64_t m, k, n;
    std::string name;
  };
  std::vector<Shape3> shapes = {
      {256, 784, 512, "256x784x512"}, {256, 512, 512, "256x512x512"}, {256, 512, 10, "256x512x10"}};
  const std::vector<std::pair<Form, std::string>> forms = {
      {Form::kForward, "matmul"}, {Form::kWeightGrad, "matmul_dw"}, {Form::kInputGrad, "matmul_dx"}};
  for (const auto& [form, group] : forms) {
    std::vector<Shape3> list = shapes;
    if (form == Form::kForward)
      for (int64_t s : {256, 512, 1024, 2048}) list.push_back({s, s, s, "sq" + std::to_string(s)});
    for (const Shape3& s : list) {
      benchmark::RegisterBenchmark((group + "/" + s.name).c_str(), KilnCase, form, s.m, s.k, s.n)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((group + "_onednn/" + s.name).c_str(), DnnlCase, form, s.m, s.k, s.n)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  // Against matmul/256x784x512 and matmul/sq2048: BFloat16 runs on the CPU's bfloat16 instructions
  // where it has them, Float16 is widened to Float32.
  for (const auto& [dtype, name] : {std::pair{DType::BFloat16, "bf16"}, std::pair{DType::Float16, "f16"}}) {
    for (const Shape3& s : {shapes[0], Shape3{2048, 2048, 2048, "sq2048"}}) {
      benchmark::RegisterBenchmark((std::string("matmul_half/") + name + "_" + s.name).c_str(), KilnHalfCase,
                                   dtype, s.m, s.k, s.n)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace kiln::bench
