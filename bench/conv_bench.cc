// Convolution cases at the CNN's shapes (batch 128, channels last, 5x5, same padding):
// forward, backward data and backward weights (the latter two through VJP of a convolution),
// in kiln and in oneDNN called directly; and forward convolutions of few output features
// (conv_few/, a decoder's last layer: 28x28, 4-64 input features to 1-8), which kiln runs as a
// product and a shift-add where that pays (ShiftConvPays, src/backends/cpu/dnnl_kernels.h).

#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "cases.h"
#include "dnnl_direct.h"

namespace kiln::bench {
namespace {

constexpr int64_t kBatch = 128;

// One convolution layer: size x size images of `in` features to `out`, a kernel x kernel kernel.
struct Layer {
  int64_t size, in, out;
  std::string name;
  int64_t kernel = 5;
};

// FLOPs of one pass (the three passes do the same multiply-adds).
double ConvFlops(const Layer& l) {
  return 2.0 * static_cast<double>(kBatch * l.size * l.size * l.out * l.kernel * l.kernel * l.in);
}

// kiln: the graph for `pass` takes x, kernel and the output gradient g.
void KilnCase(benchmark::State& state, ConvPass pass, Layer l) {
  Tensor x = UniformTensor(21, {kBatch, l.size, l.size, l.in}, -1, 1);
  Tensor k = UniformTensor(22, {l.kernel, l.kernel, l.in, l.out}, -0.1F, 0.1F);
  Tensor g = UniformTensor(23, {kBatch, l.size, l.size, l.out}, -1, 1);
  auto exec = graph::NewExec(Backend(), [pass](graph::Node xn, graph::Node kn, graph::Node gn) {
    graph::Node y = graph::Convolve(xn, kn).PadSame().Done();
    if (pass == ConvPass::kForward) return y;
    return graph::VJP({y}, {gn}, {pass == ConvPass::kBackwardData ? xn : kn})[0];
  });
  exec.Call1(x, k, g);
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call1(x, k, g));
  SetRate(state, "FLOP/s", ConvFlops(l));
}

// oneDNN's convolution primitives.
void DnnlCase(benchmark::State& state, ConvPass pass, Layer l) {
  const auto run = MakeDnnlConv(pass, kBatch, l.size, l.in, l.out, l.kernel, BenchThreads());
  run();
  for (auto _ : state) run();
  SetRate(state, "FLOP/s", ConvFlops(l));
}

}  // namespace

// Both layers, three passes, kiln and oneDNN.
void RegisterConvCases() {
  const std::vector<Layer> layers = {{28, 1, 32, "28x28x1_5x5x32"}, {14, 32, 64, "14x14x32_5x5x64"}};
  const std::vector<std::pair<ConvPass, std::string>> passes = {{ConvPass::kForward, "fwd"},
                                                                {ConvPass::kBackwardData, "bwd_data"},
                                                                {ConvPass::kBackwardWeights, "bwd_weights"}};
  for (const auto& [pass, pass_name] : passes) {
    for (const Layer& l : layers) {
      benchmark::RegisterBenchmark(("conv_" + pass_name + "/" + l.name).c_str(), KilnCase, pass, l)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("conv_" + pass_name + "_onednn/" + l.name).c_str(), DnnlCase, pass, l)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  // Kernel gradients of first layers (few input features), which kiln runs as tap sums
  // (src/backends/cpu/conv_tap_sums.h).
  for (const Layer& l : std::vector<Layer>{{28, 1, 32, "28x28x1_3x3x32", 3},
                                           {28, 2, 32, "28x28x2_5x5x32"},
                                           {32, 3, 32, "32x32x3_5x5x32"},
                                           {32, 3, 64, "32x32x3_3x3x64", 3},
                                           {28, 4, 32, "28x28x4_5x5x32"}}) {
    benchmark::RegisterBenchmark(("conv_bwd_weights_few/" + l.name).c_str(), KilnCase,
                                 ConvPass::kBackwardWeights, l)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("conv_bwd_weights_few_onednn/" + l.name).c_str(), DnnlCase,
                                 ConvPass::kBackwardWeights, l)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (const auto& [in, out] : std::vector<std::pair<int64_t, int64_t>>{{32, 1},
                                                                        {32, 2},
                                                                        {32, 3},
                                                                        {32, 4},
                                                                        {32, 8},
                                                                        {16, 1},
                                                                        {16, 4},
                                                                        {8, 1},
                                                                        {8, 4},
                                                                        {4, 1},
                                                                        {64, 1},
                                                                        {64, 4}}) {
    const Layer l{28, in, out, "28x28x" + std::to_string(in) + "_5x5x" + std::to_string(out)};
    benchmark::RegisterBenchmark(("conv_few/" + l.name).c_str(), KilnCase, ConvPass::kForward, l)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("conv_few_onednn/" + l.name).c_str(), DnnlCase, ConvPass::kForward, l)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace kiln::bench
