// Tests of the cpu backend's tap sums (backends/cpu/conv_tap_sums.h), the kernel gradient of 2-D
// convolutions with 1 to 4 input features and 3x3 or 5x5 kernels: random convolutions (random
// layouts, paddings, cropping ones too, sizes that leave partial steps, output features that leave
// partial vectors) take the kernel for their kernel gradient and agree with ref; the gradient
// agrees with central differences; every SIMD target agrees; any thread count gives the same
// bits; the switches and the shapes it does not take stay on the other kernels.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/simd_target.h"
#include "backends/cpu_test_util.h"
#include "kiln/graph/conv.h"
#include "kiln/graph/gradient.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

using kiln::test::Close;
using kiln::test::ConvKernels;
using kiln::test::Pick;
using kiln::test::Random;
using kiln::test::RunProgram;

using compute::OpAttributes;
using compute::OpType;
using graph::Graph;

const compute::BackendPtr& Cpu() { return kiln::test::Backend("cpu:threads=2,serial_work=0"); }
const compute::BackendPtr& Ref() { return kiln::test::Backend("ref"); }

/// A convolution's kernel gradient: the program's output is dk = VJP(conv(x, k), adj) for k.
struct GradientProgram {
  std::shared_ptr<const compute::Program> program;
  std::vector<Tensor> inputs;  ///< x, k, the adjoint of y.
  int64_t terms = 0;           ///< Products summed per result.
  std::string expected;        ///< The kernel name tap sums give it, or "" where they must not.
  std::string what;
};

/// The tap sums' kernel name.
std::string TapSumsName(int64_t taps, int64_t cin) {
  return fmt::format("conv.tap_sums({0}x{0} taps, {1} input feature{2})", taps, cin, cin == 1 ? "" : "s");
}

/// x [batch, h, w, cin] with its axes in a random order, a 3x3 or 5x5 kernel in a random layout,
/// the result's features last with its other axes in a random order; 1-4 input features, 1-40
/// output features (partial vectors), sizes 1-13, paddings -1 to 3.
GradientProgram RandomGradient(std::mt19937& rng) {
  while (true) {
    std::vector<int64_t> xa = {0, 1, 2, 3}, ya = {0, 1, 2}, ka = {0, 1, 2, 3};
    std::shuffle(xa.begin(), xa.end(), rng);
    std::shuffle(ya.begin(), ya.end(), rng);
    std::shuffle(ka.begin(), ka.end(), rng);
    OpAttributes at;
    at.conv = {xa[0], xa[3], {xa[1], xa[2]}, ka[1], ka[0], {ka[2], ka[3]}, ya[0], 3, {ya[1], ya[2]}};
    const int64_t taps = Pick(rng, 0, 1) == 0 ? 3 : 5;
    const int64_t batch = Pick(rng, 1, 3), cin = Pick(rng, 1, 4), cout = Pick(rng, 1, 40);
    std::vector<int64_t> xd(4), kd(4);
    xd[static_cast<size_t>(xa[0])] = batch;
    xd[static_cast<size_t>(xa[3])] = cin;
    kd[static_cast<size_t>(ka[0])] = cout;
    kd[static_cast<size_t>(ka[1])] = cin;
    bool ok = true;
    int64_t positions = 1;
    for (size_t i = 0; i < 2; ++i) {
      const int64_t in = Pick(rng, 1, 13), low = Pick(rng, -1, 3), high = Pick(rng, -1, 3);
      xd[static_cast<size_t>(xa[1 + i])] = in;
      kd[static_cast<size_t>(ka[2 + i])] = taps;
      at.padding.push_back({low, high, 0});
      const int64_t out = in + low + high - taps + 1;
      if (out < 1 || in + std::min<int64_t>(low, 0) + std::min<int64_t>(high, 0) < 1) ok = false;
      positions *= std::max<int64_t>(out, 1);
    }
    if (!ok) continue;
    const Shape xs(DType::Float32, xd), ks(DType::Float32, kd);
    Graph g;
    graph::Node x = g.Parameter(xs), k = g.Parameter(ks);
    graph::Node y = g.AddOp(OpType::ConvGeneral, {x, k}, at);
    graph::Node adj = g.Parameter(y.shape());
    GradientProgram c;
    c.program = g.Build({graph::VJP({y}, {adj}, {k})[0]});
    c.inputs = {Random(xs, rng), Random(ks, rng), Random(y.shape(), rng)};
    c.terms = batch * positions;
    // Autodiff's kernel-gradient form runs as tap sums where the result's gradient has more
    // positions than the kernel has taps.
    c.expected = positions > taps * taps ? TapSumsName(taps, cin) : "";
    c.what = fmt::format("x {} k {} y {} padding ({},{}) ({},{})", xs.ToString(), ks.ToString(),
                         y.shape().ToString(), at.padding[0].low, at.padding[0].high, at.padding[1].low,
                         at.padding[1].high);
    return c;
  }
}

TEST(CpuTapSums, RandomKernelGradientsMatchRef) {
  std::mt19937 rng(83);
  int taken = 0, three = 0, five = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const GradientProgram c = RandomGradient(rng);
    const std::vector<std::string> names = ConvKernels(Cpu(), *c.program);
    ASSERT_EQ(names.size(), 1u) << c.what;
    if (c.expected.empty()) {
      EXPECT_EQ(names[0].find("tap_sums"), std::string::npos) << c.what << ": " << names[0];
    } else {
      EXPECT_EQ(names[0], c.expected) << c.what;
      ++taken;
      (c.expected.find("3x3") != std::string::npos ? three : five) += 1;
    }
    EXPECT_TRUE(
        Close(RunProgram(Cpu(), c.program, c.inputs)[0], RunProgram(Ref(), c.program, c.inputs)[0], c.terms))
        << c.what;
  }
  EXPECT_GE(taken, 30);
  EXPECT_GE(three, 10);
  EXPECT_GE(five, 10);
}

/// A first layer's kernel gradient: x [batch, h, w, cin] (channels last, PadSame) to `cout`
/// features with a taps x taps kernel.
GradientProgram LayerGradient(const std::vector<int64_t>& x_dims, int64_t taps, int64_t cout,
                              std::mt19937& rng) {
  Graph g;
  const Shape xs(DType::Float32, x_dims), ks(DType::Float32, {taps, taps, x_dims[3], cout});
  graph::Node x = g.Parameter(xs), k = g.Parameter(ks);
  graph::Node y = graph::Convolve(x, k).PadSame().Done();
  graph::Node adj = g.Parameter(y.shape());
  GradientProgram c;
  c.program = g.Build({graph::VJP({y}, {adj}, {k})[0]});
  c.inputs = {Random(xs, rng), Random(ks, rng), Random(y.shape(), rng)};
  c.terms = x_dims[0] * x_dims[1] * x_dims[2];
  c.expected = TapSumsName(taps, x_dims[3]);
  c.what = fmt::format("x {} by {}x{} to {} features", xs.ToString(), taps, taps, cout);
  return c;
}

TEST(CpuTapSums, GradientMatchesCentralDifferences) {
  // The kernel gradient on the tap sums against central differences of the loss in Float64 on ref,
  // at sampled elements.
  std::mt19937 rng(89);
  for (const auto& [dims, taps, cout] : std::vector<std::tuple<std::vector<int64_t>, int64_t, int64_t>>{
           {{2, 9, 11, 1}, 5, 20}, {{2, 7, 6, 3}, 3, 35}}) {
    const GradientProgram c = LayerGradient(dims, taps, cout, rng);
    ASSERT_EQ(ConvKernels(Cpu(), *c.program), std::vector<std::string>{c.expected});
    kiln::test::ExpectConvGradientMatchesCentralDifferences(
        c.inputs, 1, RunProgram(Cpu(), c.program, c.inputs)[0], 60, rng, c.what + " dk");
  }
}

TEST(CpuTapSums, EverySimdTargetMatchesRef) {
  // Each target's passes: 5x5 (one vector at a time; AVX-512 holds all 25 sums, the others tap
  // rows in groups), 3x3 with pairs of vectors and a partial one (70 features), widths that leave
  // a partial step, several input features.
  std::mt19937 rng(97);
  const std::vector<GradientProgram> cases = {
      LayerGradient({3, 9, 10, 1}, 5, 32, rng), LayerGradient({2, 8, 7, 3}, 3, 70, rng),
      LayerGradient({1, 6, 13, 4}, 5, 17, rng), LayerGradient({2, 5, 5, 2}, 3, 8, rng)};
  for (const compute::cpu::SimdTarget& t : compute::cpu::SimdTargets()) {
    const compute::BackendPtr& backend = kiln::test::Backend("cpu:threads=2,serial_work=0,simd=" + t.name);
    for (const GradientProgram& c : cases) {
      EXPECT_EQ(ConvKernels(backend, *c.program), std::vector<std::string>{c.expected})
          << t.name << " " << c.what;
      EXPECT_TRUE(Close(RunProgram(backend, c.program, c.inputs)[0],
                        RunProgram(Ref(), c.program, c.inputs)[0], c.terms))
          << t.name << " " << c.what;
    }
  }
}

TEST(CpuTapSums, WideGradientsRunInBandsOfFewRows) {
  // A band of the gradient's rows takes at most 256 KiB: 300 positions of 120 features a row make
  // bands of one row (215 of 150 features: bands of two), so the input planes are filled band by
  // band inside each image and chunk.
  std::mt19937 rng(107);
  for (const GradientProgram& c :
       {LayerGradient({2, 7, 300, 2}, 5, 120, rng), LayerGradient({1, 9, 215, 3}, 3, 150, rng)}) {
    ASSERT_EQ(ConvKernels(Cpu(), *c.program), std::vector<std::string>{c.expected}) << c.what;
    EXPECT_TRUE(
        Close(RunProgram(Cpu(), c.program, c.inputs)[0], RunProgram(Ref(), c.program, c.inputs)[0], c.terms))
        << c.what;
  }
}

TEST(CpuTapSums, AnyThreadCountGivesTheSameBits) {
  // The partial sums are split by fixed chunks of the gradient's rows, whatever the team.
  std::mt19937 rng(101);
  const GradientProgram c = LayerGradient({16, 28, 28, 1}, 5, 32, rng);
  ASSERT_EQ(ConvKernels(Cpu(), *c.program), std::vector<std::string>{c.expected});
  const std::vector<float> base = RunProgram(Cpu(), c.program, c.inputs)[0].ToVector<float>();
  EXPECT_TRUE(
      Close(RunProgram(Cpu(), c.program, c.inputs)[0], RunProgram(Ref(), c.program, c.inputs)[0], c.terms));
  for (const char* config :
       {"cpu:threads=1", "cpu:threads=2,team=false,serial_work=0", "cpu:threads=3,serial_work=0"}) {
    const std::vector<float> again =
        RunProgram(kiln::test::Backend(config), c.program, c.inputs)[0].ToVector<float>();
    ASSERT_EQ(again.size(), base.size());
    EXPECT_EQ(std::memcmp(again.data(), base.data(), base.size() * sizeof(float)), 0) << config;
  }
}

TEST(CpuTapSums, SwitchesAndOtherShapesStayOnTheOtherKernels) {
  std::mt19937 rng(103);
  const GradientProgram c = LayerGradient({2, 8, 8, 1}, 5, 16, rng);
  const std::vector<std::string> scalar = ConvKernels(kiln::test::Backend("cpu:simd=scalar"), *c.program);
  ASSERT_EQ(scalar.size(), 1u);
  EXPECT_EQ(scalar[0].rfind("dnnl.", 0), 0u) << scalar[0];
  // Five input features, a 7x7 or 3x5 kernel, a stride, a dilation, groups, the result's
  // features first.
  for (const kiln::test::ConvVariant& o :
       std::vector<kiln::test::ConvVariant>{{{1, 8, 8, 5}, {5, 5, 5, 16}},
                                            {{1, 12, 12, 1}, {7, 7, 1, 16}},
                                            {{1, 8, 8, 1}, {3, 5, 1, 16}},
                                            {{1, 9, 9, 1}, {5, 5, 1, 16}, 2},
                                            {{1, 12, 12, 1}, {3, 3, 1, 16}, 1, 2},
                                            {{1, 8, 8, 2}, {5, 5, 1, 16}, 1, 1, 2},
                                            {{1, 1, 8, 8}, {16, 1, 5, 5}, 1, 1, 1, true}}) {
    Graph g;
    graph::Node k;
    graph::Node y = o.Build(g, &k);
    std::shared_ptr<const compute::Program> program =
        g.Build({graph::VJP({y}, {g.Parameter(y.shape())}, {k})[0]});
    for (const std::string& name : ConvKernels(Cpu(), *program))
      EXPECT_EQ(name.find("tap_sums"), std::string::npos) << o.ToString() << ": " << name;
  }
}

}  // namespace
}  // namespace kiln
