// Elementwise cases over 16M float32: the fixed chain exp(relu(x*2+1))*0.5 - x, two random
// chains (fixed seeds; each with an [N,1]+[1,M] broadcast and a round trip through a half
// type), and the hand-fused loop of each chain (the physical limit). GB/s counts one read
// of the big input and one write of the result. Also: the fixed chain at small sizes (the
// threading gate) and two row reductions of elementwise chains (reduction fusion).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bench_limits.h"
#include "bench_util.h"
#include "cases.h"

namespace kiln::bench {
namespace {

constexpr int64_t kElements = int64_t{1} << 24;  // 16M
constexpr int64_t kRows = 4096, kCols = 4096;    // the random chains' [N, M]
constexpr int kChainLength = 8, kChainOps = 10;

// One step of a random chain: an op code (see ApplyStep) and its constant.
struct ChainStep {
  int op;
  float c;
};

// The random chain `which` (1 or 2): the same generator as torch_bench.py's.
struct Chain {
  std::vector<ChainStep> steps;
  int broadcast_at, convert_at;
  DType half;
};

// Draws chain `which` from the shared hash.
Chain MakeChain(int which) {
  const uint64_t seed = 500 + static_cast<uint64_t>(which);
  Chain chain;
  for (int k = 0; k < kChainLength; ++k) {
    const auto op = static_cast<int>(HashAt(seed, 2 * static_cast<uint64_t>(k)) % kChainOps);
    const float u =
        static_cast<float>(HashAt(seed, 2 * static_cast<uint64_t>(k) + 1) >> 8) * (1.0F / 16777216.0F);
    chain.steps.push_back({op, u});
  }
  chain.broadcast_at = static_cast<int>(HashAt(seed, 100) % kChainLength);
  chain.convert_at = static_cast<int>(HashAt(seed, 101) % kChainLength);
  chain.half = which == 1 ? DType::Float16 : DType::BFloat16;
  return chain;
}

// Applies one chain op to t (a: the chain's input).
graph::Node ApplyStep(const ChainStep& step, graph::Node t, graph::Node a) {
  switch (step.op) {
    case 0:
      return t * (0.5F + step.c);
    case 1:
      return t + (step.c - 0.5F);
    case 2:
      return graph::MaxScalar(t, 0.0F);
    case 3:
      return graph::Tanh(t);
    case 4:
      return graph::Sigmoid(t);
    case 5:
      return graph::Exp(-graph::Abs(t));
    case 6:
      return t * a;
    case 7:
      return t - a;
    case 8:
      return graph::Abs(t);
    default:
      return graph::Sqrt(graph::Abs(t) + 1.0F);
  }
}

// The chain's graph over a [N, M], col [N, 1] and row [1, M].
graph::Node ChainGraph(const Chain& chain, graph::Node a, graph::Node col, graph::Node row) {
  graph::Node t = a;
  for (int k = 0; k < kChainLength; ++k) {
    t = ApplyStep(chain.steps[static_cast<size_t>(k)], t, a);
    if (k == chain.broadcast_at) t = t + (col + row);
    if (k == chain.convert_at) t = graph::ConvertDType(graph::ConvertDType(t, chain.half), DType::Float32);
  }
  return t;
}

// kiln's fixed chain.
void FixedChainCase(benchmark::State& state) {
  Tensor x = UniformTensor(31, {kElements}, -2, 2);
  auto exec = graph::NewExec(Backend(), [](graph::Node n) {
    return graph::Exp(graph::MaxScalar(n * 2.0F + 1.0F, 0.0F)) * 0.5F - n;
  });
  exec.Call1(x);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call1(x));
  SetRate(state, "bytes/s", 2.0 * 4 * kElements);
}

// kiln's random chain `which`.
void RandomChainCase(benchmark::State& state, int which) {
  const Chain chain = MakeChain(which);
  Tensor a = UniformTensor(20 + static_cast<uint64_t>(which), {kRows, kCols}, -1, 1);
  Tensor col = UniformTensor(30 + static_cast<uint64_t>(which), {kRows, 1}, -1, 1);
  Tensor row = UniformTensor(40 + static_cast<uint64_t>(which), {1, kCols}, -1, 1);
  auto exec = graph::NewExec(Backend(), [chain](graph::Node an, graph::Node cn, graph::Node rn) {
    return ChainGraph(chain, an, cn, rn);
  });
  exec.Call1(a, col, row);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call1(a, col, row));
  SetRate(state, "bytes/s", 2.0 * 4 * kRows * kCols);
}

// The hand-fused loop of random chain `which` on the same data and threads; stops with an error
// when the loop's compiled-in op codes are not the generator's, or its result is not kiln's.
void HandFusedRandomCase(benchmark::State& state, int which) {
  const Chain chain = MakeChain(which);
  const HandChainCodes codes = HandFusedChainCodes(which);
  bool same = codes.broadcast_at == chain.broadcast_at && codes.convert_at == chain.convert_at &&
              codes.bfloat16 == (chain.half == DType::BFloat16);
  std::vector<float> constants;
  for (int k = 0; k < kChainLength; ++k) {
    same = same && codes.ops[k] == chain.steps[static_cast<size_t>(k)].op;
    constants.push_back(chain.steps[static_cast<size_t>(k)].c);
  }
  if (!same) {
    state.SkipWithError("the hand-fused loop's op codes are not the generator's chain");
    return;
  }
  const std::vector<float> a = UniformValues(20 + static_cast<uint64_t>(which), kRows * kCols, -1, 1);
  const std::vector<float> col = UniformValues(30 + static_cast<uint64_t>(which), kRows, -1, 1);
  const std::vector<float> row = UniformValues(40 + static_cast<uint64_t>(which), kCols, -1, 1);
  std::vector<float> y(a.size());
  auto run = [&] {
    HandFusedRandomChain(which, constants.data(), a.data(), col.data(), row.data(), y.data(), kRows, kCols,
                         BenchThreads());
  };
  run();
  // The same values as kiln's chain (up to a half-precision step where rounding differs).
  auto exec = graph::NewExec(Backend(), [chain](graph::Node an, graph::Node cn, graph::Node rn) {
    return ChainGraph(chain, an, cn, rn);
  });
  const std::vector<float> want =
      exec.Call1(UniformTensor(20 + static_cast<uint64_t>(which), {kRows, kCols}, -1, 1),
                 UniformTensor(30 + static_cast<uint64_t>(which), {kRows, 1}, -1, 1),
                 UniformTensor(40 + static_cast<uint64_t>(which), {1, kCols}, -1, 1))
          .ToVector<float>();
  double max_diff = 0;
  for (size_t i = 0; i < y.size(); ++i) max_diff = std::max(max_diff, std::abs(double{y[i]} - want[i]));
  if (!(max_diff < 0.05)) {
    state.SkipWithError("the hand-fused loop does not compute kiln's chain");
    return;
  }
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["max_diff_vs_kiln"] = max_diff;
  SetRate(state, "bytes/s", 2.0 * 4 * kRows * kCols);
}

// The hand-fused loop on the same data and threads.
void HandFusedCase(benchmark::State& state) {
  const std::vector<float> x = UniformValues(31, kElements, -2, 2);
  std::vector<float> y(x.size());
  HandFusedChain(x.data(), y.data(), kElements, BenchThreads());
  for (auto _ : state) {
    HandFusedChain(x.data(), y.data(), kElements, BenchThreads());
    benchmark::DoNotOptimize(y.data());
  }
  SetRate(state, "bytes/s", 2.0 * 4 * kElements);
}

// The fixed chain at small sizes: where the threading gate switches (compare with
// --backend=cpu:threads=1).
void SizeSweepCase(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor x = UniformTensor(31, {n}, -2, 2);
  auto exec = graph::NewExec(Backend(), [](graph::Node v) {
    return graph::Exp(graph::MaxScalar(v * 2.0F + 1.0F, 0.0F)) * 0.5F - v;
  });
  exec.Call1(x);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call1(x));
  SetRate(state, "bytes/s", 2.0 * 4 * static_cast<double>(n));
}

// Reductions of elementwise chains over the rows of [4096, 4096] (fused: the chain is computed
// inside the reduction): sum(x*x) and log-sum-exp. GB/s counts one read of the input.
void RowReductionCase(benchmark::State& state, bool logsumexp) {
  Tensor x = UniformTensor(32, {kRows, kCols}, -2, 2);
  auto exec = graph::NewExec(Backend(), [logsumexp](graph::Node v) {
    return logsumexp ? graph::ReduceLogSumExp(v, {1}) : graph::ReduceSum(v * v, {1});
  });
  exec.Call1(x);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call1(x));
  SetRate(state, "bytes/s", 4.0 * kRows * kCols);
}

}  // namespace

// The three chains and the limit.
void RegisterElementwiseCases() {
  benchmark::RegisterBenchmark("elementwise/fixed_chain", FixedChainCase)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  for (int which : {1, 2}) {
    benchmark::RegisterBenchmark(("elementwise/random_chain" + std::to_string(which)).c_str(),
                                 RandomChainCase, which)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("elementwise/size_sweep", SizeSweepCase)
      ->RangeMultiplier(4)
      ->Range(4096, 1 << 22)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("reduce/sum_squares_rows", RowReductionCase, false)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("reduce/logsumexp_rows", RowReductionCase, true)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("limit/handfused_chain", HandFusedCase)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  for (int which : {1, 2}) {
    benchmark::RegisterBenchmark(("limit/handfused_random_chain" + std::to_string(which)).c_str(),
                                 HandFusedRandomCase, which)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace kiln::bench
