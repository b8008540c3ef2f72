// Tests of the cpu backend's Winograd convolutions (backends/cpu/conv_winograd.h): random 2-D
// convolutions with 5x5 kernels, features in multiples of 16 and random layouts, paddings (cropping
// ones too) and sizes (odd ones leave tiles half outside) take the Winograd kernel, forward and for
// both gradients, and agree with ref; the gradients agree with central differences; every SIMD
// target agrees; any thread count gives the same bits; the switches and the shapes it does not
// take leave convolutions on oneDNN.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels.h"
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

/// A convolution with its two gradients: the program's outputs are y, dx and dk.
struct ConvProgram {
  std::shared_ptr<const compute::Program> program;
  std::vector<Tensor> inputs;    ///< x, k, the adjoint of y.
  int64_t terms = 0;             ///< Products summed per result (the most of the three).
  int64_t positions = 0;         ///< Spatial positions of the result.
  std::vector<int64_t> in, out;  ///< The input's and the result's spatial sizes.
  std::string what;
};

/// x [batch, h, w, cin] in a random order of its first three axes (features last), a 5x5 kernel in
/// a random layout, the result features last with the other axes in a random order.
ConvProgram RandomConv(std::mt19937& rng) {
  while (true) {
    std::vector<int64_t> xa = {0, 1, 2}, ya = {0, 1, 2}, ka = {0, 1, 2, 3};
    std::shuffle(xa.begin(), xa.end(), rng);
    std::shuffle(ya.begin(), ya.end(), rng);
    std::shuffle(ka.begin(), ka.end(), rng);
    OpAttributes at;
    compute::ConvDims& d = at.conv;
    d = {xa[0], 3, {xa[1], xa[2]}, ka[1], ka[0], {ka[2], ka[3]}, ya[0], 3, {ya[1], ya[2]}};
    const int64_t batch = Pick(rng, 1, 3), cin = 16 * Pick(rng, 1, 4), cout = 16 * Pick(rng, 1, 4);
    std::vector<int64_t> xd(4), kd(4);
    xd[static_cast<size_t>(xa[0])] = batch;
    xd[3] = cin;
    kd[static_cast<size_t>(ka[0])] = cout;
    kd[static_cast<size_t>(ka[1])] = cin;
    bool ok = true;
    int64_t positions = 1;
    std::vector<int64_t> ins, outs;
    for (size_t i = 0; i < 2; ++i) {
      const int64_t in = Pick(rng, 1, 13), low = Pick(rng, -1, 4), high = Pick(rng, -1, 4);
      xd[static_cast<size_t>(xa[1 + i])] = in;
      kd[static_cast<size_t>(ka[2 + i])] = 5;
      at.padding.push_back({low, high, 0});
      const int64_t out = in + low + high - 4;
      if (out < 1 || in + std::min<int64_t>(low, 0) + std::min<int64_t>(high, 0) < 1) ok = false;
      ins.push_back(in);
      outs.push_back(out);
      positions *= std::max<int64_t>(out, 1);
    }
    if (!ok) continue;
    const Shape xs(DType::Float32, xd), ks(DType::Float32, kd);
    Graph g;
    graph::Node x = g.Parameter(xs), k = g.Parameter(ks);
    graph::Node y = g.AddOp(OpType::ConvGeneral, {x, k}, at);
    graph::Node adj = g.Parameter(y.shape());
    std::vector<graph::Node> grads = graph::VJP({y}, {adj}, {x, k});
    ConvProgram c;
    c.program = g.Build({y, grads[0], grads[1]});
    c.inputs = {Random(xs, rng), Random(ks, rng), Random(y.shape(), rng)};
    c.terms = std::max({25 * cin, 25 * cout, batch * positions});
    c.positions = positions;
    c.in = ins;
    c.out = outs;
    c.what = fmt::format("x {} k {} y {} padding ({},{}) ({},{})", xs.ToString(), ks.ToString(),
                         y.shape().ToString(), at.padding[0].low, at.padding[0].high, at.padding[1].low,
                         at.padding[1].high);
    return c;
  }
}

/// The kernel name of a Winograd convolution (`form` "conv.winograd" or
/// "conv.winograd_kernel_gradient") over results of `size` positions: 4x4 tiles unless 2x2 ones
/// take fewer points (64 per 4x4 tile, 36 per 2x2).
std::string WinogradName(const std::string& form, const std::vector<int64_t>& size) {
  const auto points = [&](int64_t m) {
    return (m + 4) * (m + 4) * ((size[0] + m - 1) / m) * ((size[1] + m - 1) / m);
  };
  return fmt::format("{}({}x{} tiles)", form, points(4) < points(2) ? 4 : 2, points(4) < points(2) ? 4 : 2);
}

TEST(CpuWinograd, RandomConvolutionsAndTheirGradientsMatchRef) {
  std::mt19937 rng(41);
  int kernel_gradients = 0, small_tiles = 0, large_tiles = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const ConvProgram c = RandomConv(rng);
    const std::vector<Tensor> got = RunProgram(Cpu(), c.program, c.inputs),
                              want = RunProgram(Ref(), c.program, c.inputs);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(Close(got[i], want[i], c.terms)) << c.what << " output " << i;
    // The forward convolution and the input gradient (a forward one with the reversed kernel)
    // run as Winograd's; so does the kernel gradient where the result's gradient has more
    // positions than the kernel (autodiff's form that oneDNN runs as backward weights).
    const std::vector<std::string> names = ConvKernels(Cpu(), *c.program);
    ASSERT_EQ(names.size(), 3u) << c.what;
    EXPECT_EQ(names[0], WinogradName("conv.winograd", c.out)) << c.what;
    EXPECT_EQ(names[1], WinogradName("conv.winograd", c.in)) << c.what;
    if (c.positions > 25) {
      EXPECT_EQ(names[2], WinogradName("conv.winograd_kernel_gradient", c.out)) << c.what;
      ++kernel_gradients;
    } else {
      EXPECT_EQ(names[2].rfind("dnnl.", 0), 0u) << c.what << ": " << names[2];
    }
    for (const std::string& name : names) {
      small_tiles += name.find("(2x2 tiles)") != std::string::npos ? 1 : 0;
      large_tiles += name.find("(4x4 tiles)") != std::string::npos ? 1 : 0;
    }
  }
  EXPECT_GE(kernel_gradients, 10);
  EXPECT_GE(small_tiles, 3);
  EXPECT_GE(large_tiles, 40);
}

/// A layer's convolution (channels last, 5x5, PadSame) with its two gradients; `bias_relu` adds
/// a bias and ReLU after it.
ConvProgram LayerConv(const std::vector<int64_t>& x_dims, int64_t cout, bool bias_relu, std::mt19937& rng) {
  Graph g;
  const Shape xs(DType::Float32, x_dims), ks(DType::Float32, {5, 5, x_dims[3], cout}),
      bs(DType::Float32, {cout});
  graph::Node x = g.Parameter(xs), k = g.Parameter(ks), b = g.Parameter(bs);
  graph::Node y = graph::Convolve(x, k).PadSame().Done();
  if (bias_relu) y = graph::MaxScalar(y + graph::Reshape(b, {1, 1, 1, cout}), 0.0f);
  graph::Node adj = g.Parameter(y.shape());
  std::vector<graph::Node> grads = graph::VJP({y}, {adj}, {x, k});
  ConvProgram c;
  c.program = g.Build({y, grads[0], grads[1]});
  c.inputs = {Random(xs, rng), Random(ks, rng), Random(bs, rng), Random(y.shape(), rng)};
  c.terms = std::max({25 * x_dims[3], 25 * cout, x_dims[0] * x_dims[1] * x_dims[2]});
  c.what = fmt::format("x {} to {} features", xs.ToString(), cout);
  return c;
}

TEST(CpuWinograd, GradientsMatchCentralDifferences) {
  // The input gradient and the kernel gradient on the Winograd kernels against central
  // differences of the loss in Float64 on ref, at sampled elements.
  std::mt19937 rng(43);
  const ConvProgram c = LayerConv({2, 9, 11, 16}, 32, false, rng);
  const std::vector<std::string> names = ConvKernels(Cpu(), *c.program);
  ASSERT_EQ(names, (std::vector<std::string>{"conv.winograd(4x4 tiles)", "conv.winograd(4x4 tiles)",
                                             "conv.winograd_kernel_gradient(4x4 tiles)"}));
  const std::vector<Tensor> got = RunProgram(Cpu(), c.program, c.inputs);
  const std::vector<Tensor> xkw = {c.inputs[0], c.inputs[1], c.inputs[3]};
  kiln::test::ExpectConvGradientMatchesCentralDifferences(xkw, 0, got[1], 40, rng, "dx");
  kiln::test::ExpectConvGradientMatchesCentralDifferences(xkw, 1, got[2], 40, rng, "dk");
}

TEST(CpuWinograd, RoundingStaysNearADirectSums) {
  // Against the convolution in Float64: the Winograd results' RMS error (relative to the results'
  // RMS) at most 6 times oneDNN's direct Float32 sums' and below 5e-6 (4x4 tiles: 2.3e-6 against
  // 4.7e-7 for the CNN's second layer, 32 to 64 features; 2x2 tiles gave 1.4e-6).
  std::mt19937 rng(71);
  Graph g;
  const Shape xs(DType::Float32, {4, 14, 14, 32}), ks(DType::Float32, {5, 5, 32, 64});
  graph::Node x = g.Parameter(xs), k = g.Parameter(ks);
  std::shared_ptr<const compute::Program> program = g.Build({graph::Convolve(x, k).PadSame().Done()});
  Graph wide;
  graph::Node xw = wide.Parameter(Shape(DType::Float64, xs.Dimensions())),
              kw = wide.Parameter(Shape(DType::Float64, ks.Dimensions()));
  std::shared_ptr<const compute::Program> exact = wide.Build({graph::Convolve(xw, kw).PadSame().Done()});
  const std::vector<Tensor> inputs = {Random(xs, rng), Random(ks, rng)};
  std::vector<Tensor> wide_inputs;
  for (const Tensor& t : inputs) {
    const std::vector<float> f = t.ToVector<float>();
    wide_inputs.push_back(Tensor::FromFlat(Shape(DType::Float64, t.shape().Dimensions()),
                                           std::vector<double>(f.begin(), f.end())));
  }
  const std::vector<double> want = RunProgram(Ref(), exact, wide_inputs)[0].ToVector<double>();
  const auto rms_error = [&](const compute::BackendPtr& backend) {
    const std::vector<float> got = RunProgram(backend, program, inputs)[0].ToVector<float>();
    double error = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      error += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
    return std::sqrt(error / norm);
  };
  const compute::BackendPtr& direct = kiln::test::Backend("cpu:threads=2,serial_work=0,winograd=false");
  ASSERT_EQ(ConvKernels(Cpu(), *program)[0], "conv.winograd(4x4 tiles)");
  ASSERT_EQ(ConvKernels(direct, *program)[0].rfind("dnnl.", 0), 0u);
  const double winograd = rms_error(Cpu()), sums = rms_error(direct);
  EXPECT_LT(winograd, 6 * sums) << "direct " << sums;
  EXPECT_LT(winograd, 5e-6);
  EXPECT_GT(winograd, 0.0);
}

TEST(CpuWinograd, EverySimdTargetMatchesRef) {
  // Each target's register blocks: 48 to 16 features (3 and 1 vectors of AVX-512), 16 to 64 (4),
  // with a bias and ReLU after the convolution, sizes that leave tiles half outside.
  std::mt19937 rng(47);
  const std::vector<ConvProgram> cases = {
      LayerConv({2, 7, 9, 48}, 16, true, rng), LayerConv({1, 10, 5, 16}, 64, false, rng),
      LayerConv({3, 6, 6, 32}, 32, true, rng), LayerConv({2, 2, 9, 32}, 16, true, rng)};
  for (const compute::cpu::SimdTarget& t : compute::cpu::SimdTargets()) {
    const compute::BackendPtr& backend = kiln::test::Backend("cpu:threads=2,serial_work=0,simd=" + t.name);
    for (const ConvProgram& c : cases) {
      EXPECT_EQ(ConvKernels(backend, *c.program)[0].rfind("conv.winograd(", 0), 0u)
          << t.name << " " << c.what;
      const std::vector<Tensor> got = RunProgram(backend, c.program, c.inputs),
                                want = RunProgram(Ref(), c.program, c.inputs);
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(Close(got[i], want[i], c.terms)) << t.name << " " << c.what << " output " << i;
    }
  }
}

TEST(CpuWinograd, AnyThreadCountGivesTheSameBits) {
  // Each result comes from one tile; the kernel gradient's partial sums are split by tiles alone.
  std::mt19937 rng(53);
  const ConvProgram c = LayerConv({16, 14, 14, 32}, 64, true, rng);
  const std::vector<Tensor> base = RunProgram(Cpu(), c.program, c.inputs);
  EXPECT_EQ(ConvKernels(Cpu(), *c.program)[2], "conv.winograd_kernel_gradient(4x4 tiles)");
  for (const char* config :
       {"cpu:threads=1", "cpu:threads=2,team=false,serial_work=0", "cpu:threads=3,serial_work=0"}) {
    const std::vector<Tensor> again = RunProgram(kiln::test::Backend(config), c.program, c.inputs);
    for (size_t i = 0; i < base.size(); ++i) {
      const std::vector<float> a = base[i].ToVector<float>(), b = again[i].ToVector<float>();
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << config << " output " << i;
    }
  }
}

TEST(CpuWinograd, SwitchesAndOtherShapesLeaveConvolutionsOnOneDnn) {
  std::mt19937 rng(59);
  const ConvProgram c = LayerConv({2, 8, 8, 16}, 16, false, rng);
  for (const char* config : {"cpu:winograd=false", "cpu:simd=scalar"}) {
    for (const std::string& name : ConvKernels(kiln::test::Backend(config), *c.program))
      EXPECT_EQ(name.rfind("dnnl.", 0), 0u) << config << ": " << name;
  }
  // Features not in multiples of 16, another kernel size, a stride, a dilation, groups, features
  // first, and more than 128 by 128 features.
  for (const kiln::test::ConvVariant& o :
       std::vector<kiln::test::ConvVariant>{{{1, 8, 8, 24}, {5, 5, 24, 16}},
                                            {{1, 8, 8, 16}, {5, 5, 16, 8}},
                                            {{1, 8, 8, 16}, {3, 3, 16, 16}},
                                            {{1, 8, 8, 16}, {5, 5, 16, 16}, 2},
                                            {{1, 12, 12, 16}, {5, 5, 16, 16}, 1, 2},
                                            {{1, 8, 8, 32}, {5, 5, 16, 32}, 1, 1, 2},
                                            {{1, 16, 8, 8}, {16, 16, 5, 5}, 1, 1, 1, true},
                                            {{1, 6, 6, 144}, {5, 5, 144, 128}}}) {
    Graph g;
    std::shared_ptr<const compute::Program> program = g.Build({o.Build(g)});
    const std::string name = ConvKernels(Cpu(), *program)[0];
    EXPECT_EQ(name.rfind("dnnl.", 0), 0u) << o.ToString() << ": " << name;
  }
}

TEST(CpuWinograd, TheEpilogueRunsInTheKernelUnlessItIsNotReLU) {
  // relu(conv + bias) is one Winograd kernel; a logistic after it leaves the convolution on
  // oneDNN, whose post-op takes it.
  std::mt19937 rng(61);
  for (bool relu : {true, false}) {
    Graph g;
    const Shape xs(DType::Float32, {2, 9, 9, 16}), ks(DType::Float32, {5, 5, 16, 32}),
        bs(DType::Float32, {32});
    graph::Node x = g.Parameter(xs), k = g.Parameter(ks), bias = g.Parameter(bs);
    graph::Node y = graph::Convolve(x, k).PadSame().Done() + graph::Reshape(bias, {1, 1, 1, 32});
    y = relu ? graph::MaxScalar(y, 0.0f) : graph::Logistic(y);
    std::shared_ptr<const compute::Program> program = g.Build({y});
    const std::vector<Tensor> inputs = {Random(xs, rng), Random(ks, rng), Random(bs, rng)};
    std::string dump;
    const std::vector<Tensor> got = kiln::test::RunDumped(program, inputs, dump);
    EXPECT_TRUE(Close(got[0], RunProgram(Ref(), program, inputs)[0], 400));
    if (relu) {
      EXPECT_NE(dump.find("kernel conv.winograd(4x4 tiles)+post[bias(axis 3), Relu]"), std::string::npos)
          << dump;
    } else {
      EXPECT_EQ(dump.find("kernel conv.winograd"), std::string::npos) << dump;
      EXPECT_NE(dump.find("kernel dnnl.conv"), std::string::npos) << dump;
    }
  }
}

TEST(CpuWinograd, ConstantKernelsAreTransformedOnceAndStayRight) {
  // A constant kernel is taken to the 36 points on the first call (the kernel's name says so);
  // later calls on other inputs, from several threads at once, still match ref. The second
  // kernel is a constant in another layout ([out, in, 5, 5], copied before its transform).
  std::mt19937 rng(73);
  Graph g;
  const Shape xs(DType::Float32, {2, 9, 8, 16});
  graph::Node x = g.Parameter(xs);
  graph::Node k = graph::Const(g, Random(Shape(DType::Float32, {5, 5, 16, 32}), rng));
  graph::Node k2 = graph::Const(g, Random(Shape(DType::Float32, {16, 32, 5, 5}), rng));
  graph::Node y = graph::Convolve(x, k).PadSame().Done();
  OpAttributes oihw;
  oihw.conv = {0, 3, {1, 2}, 1, 0, {2, 3}, 0, 3, {1, 2}};
  oihw.padding = {{2, 2, 0}, {2, 2, 0}};
  graph::Node z = g.AddOp(OpType::ConvGeneral, {y, k2}, oihw);
  std::shared_ptr<const compute::Program> program = g.Build({z});
  const kiln::test::Dumped compiled = kiln::test::CompileDumped("cpu:threads=2,serial_work=0", program);
  EXPECT_EQ(kiln::test::Occurrences(compiled.dump, "kernel conv.winograd(4x4 tiles)(kernel kept)"), 2u)
      << compiled.dump;
  std::vector<Tensor> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back(Random(xs, rng));
  std::vector<Tensor> want;
  for (const Tensor& in : inputs) want.push_back(RunProgram(Ref(), program, {in})[0]);
  kiln::test::ExpectConcurrentCallsMatch(*compiled.exe, compiled.backend, program->OutputShape(0), inputs,
                                         want, 25 * 32 * 25 * 16);
}

TEST(CpuWinograd, ANaNReachesNoResultOutsideTheTilesWhosePatchesHoldIt) {
  // Results come in 4x4 tiles from 8x8 patches: a NaN at input (6, 6) reaches every result whose
  // 5x5 window holds it (rows and columns 4-8) and may reach the other results of those results'
  // tiles (rows and columns 4-11), no other. Where the NaN falls on a patch's first row, only
  // the tile's first row reads that point, so fewer of the others take it than the tiles hold.
  std::mt19937 rng(67);
  Graph g;
  const Shape xs(DType::Float32, {1, 14, 14, 16}), ks(DType::Float32, {5, 5, 16, 16});
  graph::Node x = g.Parameter(xs), k = g.Parameter(ks);
  std::shared_ptr<const compute::Program> program = g.Build({graph::Convolve(x, k).PadSame().Done()});
  std::vector<float> xv = Random(xs, rng).ToVector<float>();
  xv[(6 * 14 + 6) * 16 + 3] = std::nanf("");
  const Tensor kt = Random(ks, rng);
  ASSERT_EQ(ConvKernels(Cpu(), *program)[0], "conv.winograd(4x4 tiles)");
  const std::vector<float> got =
      RunProgram(Cpu(), program, {Tensor::FromFlat(xs, xv), kt})[0].ToVector<float>();
  for (int64_t r = 0; r < 14; ++r) {
    for (int64_t col = 0; col < 14; ++col) {
      const bool window = r >= 4 && r <= 8 && col >= 4 && col <= 8;
      const bool tile = r >= 4 && r <= 11 && col >= 4 && col <= 11;
      for (int64_t f = 0; f < 16; ++f) {
        const bool nan = std::isnan(got[static_cast<size_t>((r * 14 + col) * 16 + f)]);
        if (window || !tile) {
          EXPECT_EQ(nan, window) << "result (" << r << ", " << col << ") feature " << f;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln
