// Tests of the cpu backend's window kernels (pool_kernels.cc): ReduceWindow (Sum, Max, Min) and
// SelectAndScatter (Max, Min) over random shapes, windows, strides, paddings and dilations, with
// inputs full of ties, signed zeros and NaNs, give the reference backend's results bit for bit on
// one and two threads, SIMD or scalar; so do max pooling and its gradient, channels first and last,
// and the BFloat16 forms of Max/Min pooling and non-overlapping SelectAndScatter.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/passes.h"
#include "backends/cpu/pool_kernels.h"
#include "backends/cpu_test_util.h"
#include "kiln/graph/gradient.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

using kiln::test::Pick;
using kiln::test::RunProgram;

using compute::OpType;
using compute::PadAxis;
using compute::ReduceKind;
using graph::Graph;

const compute::BackendPtr& Cpu1() { return kiln::test::Backend("cpu:threads=1"); }
const compute::BackendPtr& Cpu2() { return kiln::test::Backend("cpu:threads=2,serial_work=0"); }
const compute::BackendPtr& CpuScalar() {
  return kiln::test::Backend("cpu:threads=2,simd=scalar,serial_work=0");
}
const compute::BackendPtr& Ref() { return kiln::test::Backend("ref"); }

/// Small integers stored as floats (many ties), with some -0 and, when `nans`, some NaNs.
Tensor Ties(const Shape& shape, std::mt19937& rng, bool nans) {
  std::vector<float> v(static_cast<size_t>(shape.Size()));
  for (float& x : v) {
    const int64_t r = Pick(rng, 0, 99);
    if (nans && r < 3) {
      x = std::numeric_limits<float>::quiet_NaN();
    } else if (r < 10) {
      x = -0.0f;
    } else {
      x = static_cast<float>(Pick(rng, -3, 3));
    }
  }
  return Tensor::FromFlat(shape, v);
}

/// Uniform values in [-1, 1] (sums of these round differently in another order).
Tensor Uniform(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(shape.Size()));
  for (float& x : v) x = u(rng);
  return Tensor::FromFlat(shape, v);
}

/// Whether got and want hold the same bits.
::testing::AssertionResult SameBits(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return ::testing::AssertionFailure() << "shapes differ";
  const std::vector<float> g = got.ToVector<float>(), w = want.ToVector<float>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::bit_cast<uint32_t>(g[i]) != std::bit_cast<uint32_t>(w[i]))
      return ::testing::AssertionFailure() << "element " << i << ": cpu " << g[i] << " vs ref " << w[i];
  }
  return ::testing::AssertionSuccess();
}

/// Runs `program` on cpu (one and two threads, SIMD and scalar) and ref and expects identical bits.
void ExpectSameAsRef(const std::shared_ptr<const compute::Program>& program,
                     const std::vector<Tensor>& inputs, const std::string& what) {
  const std::vector<Tensor> want = RunProgram(Ref(), program, inputs);
  for (const compute::BackendPtr* cpu : {&Cpu1(), &Cpu2(), &CpuScalar()}) {
    const std::vector<Tensor> got = RunProgram(*cpu, program, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(SameBits(got[i], want[i])) << what << " output " << i;
  }
}

/// The name of the window kernel the cpu backend picks for the first `op` of `program`.
std::string PoolKernelName(const compute::Program& program, OpType op) {
  auto* cpu = dynamic_cast<compute::cpu::CpuBackend*>(Cpu2().get());
  EXPECT_NE(cpu, nullptr);
  const std::vector<compute::Instruction>& insts = program.Instructions();
  for (const compute::Instruction& inst : insts) {
    if (inst.op != op) continue;
    std::vector<Shape> operands;
    for (int o : inst.operands) operands.push_back(insts[static_cast<size_t>(o)].shape);
    compute::cpu::Node node{inst, nullptr};
    return compute::cpu::TryPoolKernel(*cpu, cpu->options().threads, node, operands).name;
  }
  return "";
}

/// A random window over `rank` axes: per axis window, stride, padding, dilations and a size
/// that fits the (dilated) window. Channels-last 2-D pools are drawn often.
struct Window {
  std::vector<int64_t> dims, window, strides, dilations, input_dilations;
  std::vector<PadAxis> padding;
};

Window RandomWindow(std::mt19937& rng, bool dilate) {
  Window w;
  const int64_t rank = Pick(rng, 1, 4);
  const bool pool2d = rank == 4 && Pick(rng, 0, 1) == 0;
  for (int64_t a = 0; a < rank; ++a) {
    const bool untouched = pool2d && (a == 0 || a == 3);
    const int64_t k = untouched ? 1 : Pick(rng, 1, 3);
    const int64_t s = untouched ? 1 : Pick(rng, 1, 3);
    const int64_t d = dilate && !untouched ? Pick(rng, 1, 2) : 1;
    const int64_t b = dilate && !untouched ? Pick(rng, 1, 2) : 1;
    const PadAxis p = untouched ? PadAxis{} : PadAxis{Pick(rng, 0, 2), Pick(rng, 0, 2), 0};
    const int64_t extent = (k - 1) * d + 1;
    // The dilated, padded input must hold one window.
    const int64_t min_size = std::max<int64_t>(1, (extent - p.low - p.high + b - 1) / b + 1);
    // Channels up to 40: full SIMD vectors and a remainder.
    const int64_t untouched_size = a == 3 ? Pick(rng, 1, 40) : Pick(rng, 1, 4);
    w.dims.push_back(untouched ? untouched_size : Pick(rng, min_size, min_size + 5));
    w.window.push_back(k);
    w.strides.push_back(s);
    w.dilations.push_back(d);
    w.input_dilations.push_back(b);
    w.padding.push_back(p);
  }
  return w;
}

TEST(CpuPool, ReduceWindowMatchesRef) {
  std::mt19937 rng(11);
  int fast = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const bool dilate = trial % 3 == 2;
    const Window w = RandomWindow(rng, dilate);
    const ReduceKind kind =
        std::vector<ReduceKind>{ReduceKind::Max, ReduceKind::Min, ReduceKind::Sum}[trial % 3];
    const Shape shape(DType::Float32, w.dims);
    Graph g;
    graph::Node x = g.Parameter(shape);
    graph::Node y =
        graph::ReduceWindow(x, kind, w.window, w.strides, w.padding, w.dilations, w.input_dilations);
    std::shared_ptr<const compute::Program> program = g.Build({y});
    const std::string what =
        fmt::format("trial {} dims {} window {} strides {} dilations {} input_dilations {}", trial, w.dims,
                    w.window, w.strides, w.dilations, w.input_dilations);
    const Tensor in =
        kind == ReduceKind::Sum && trial % 2 == 0 ? Uniform(shape, rng) : Ties(shape, rng, trial % 4 == 0);
    ExpectSameAsRef(program, {in}, what);
    fast += PoolKernelName(*program, OpType::ReduceWindow) == "pool.reduce_window";
  }
  EXPECT_EQ(fast, 150);
}

TEST(CpuPool, SelectAndScatterMatchesRef) {
  std::mt19937 rng(12);
  int overlapping = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const Window w = RandomWindow(rng, false);
    const Shape shape(DType::Float32, w.dims);
    // The windows' shape: ReduceWindow's result.
    Graph probe;
    const Shape windows =
        graph::ReduceWindow(probe.Parameter(shape), ReduceKind::Max, w.window, w.strides, w.padding).shape();
    Graph g;
    graph::Node x = g.Parameter(shape), s = g.Parameter(windows);
    graph::Node y = trial % 2 == 0 ? graph::SelectAndScatterMax(x, s, w.window, w.strides, w.padding)
                                   : graph::SelectAndScatterMin(x, s, w.window, w.strides, w.padding);
    std::shared_ptr<const compute::Program> program = g.Build({y});
    const std::string what =
        fmt::format("trial {} dims {} window {} strides {}", trial, w.dims, w.window, w.strides);
    ExpectSameAsRef(program, {Ties(shape, rng, trial % 4 == 1), Uniform(windows, rng)}, what);
    const std::string name = PoolKernelName(*program, OpType::SelectAndScatter);
    EXPECT_EQ(name.rfind("pool.select_and_scatter", 0), 0u) << what;
    overlapping += name == "pool.select_and_scatter(overlapping)";
  }
  EXPECT_GT(overlapping, 20);
}

TEST(CpuPool, BFloat16MaxAndMinRunOnBFloat16Kernels) {
  // The Float32 inputs become BFloat16 in the graph (ties, signed zeros and NaNs are exact there;
  // the uniform source rounds) and the results Float32 again (exactly), compared bit for bit.
  // Max/Min pooling and SelectAndScatter without overlapping windows run the BFloat16 kernels;
  // overlapping SelectAndScatter has none (it is widened to Float32 when compiled).
  std::mt19937 rng(14);
  int overlapping = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const Window w = RandomWindow(rng, trial % 3 == 2);
    const Shape shape(DType::Float32, w.dims);
    const bool reduce = trial % 2 == 0, max = trial % 4 < 2;
    const ReduceKind kind = max ? ReduceKind::Max : ReduceKind::Min;
    Graph g;
    graph::Node x = graph::ConvertDType(g.Parameter(shape), DType::BFloat16);
    std::vector<Tensor> inputs = {Ties(shape, rng, trial % 5 == 0)};
    graph::Node y;
    Shape windows;  // SelectAndScatter's windows (its source's shape).
    if (reduce) {
      y = graph::ReduceWindow(x, kind, w.window, w.strides, w.padding, w.dilations, w.input_dilations);
    } else {
      Graph probe;
      windows = graph::ReduceWindow(probe.Parameter(shape), kind, w.window, w.strides, w.padding).shape();
      graph::Node src = graph::ConvertDType(g.Parameter(windows), DType::BFloat16);
      inputs.push_back(Uniform(windows, rng));
      y = max ? graph::SelectAndScatterMax(x, src, w.window, w.strides, w.padding)
              : graph::SelectAndScatterMin(x, src, w.window, w.strides, w.padding);
    }
    std::shared_ptr<const compute::Program> program = g.Build({graph::ConvertDType(y, DType::Float32)});
    const std::string what = fmt::format("trial {} dims {} window {} strides {} dilations {}", trial, w.dims,
                                         w.window, w.strides, w.dilations);
    ExpectSameAsRef(program, inputs, what);
    const OpType op = reduce ? OpType::ReduceWindow : OpType::SelectAndScatter;
    const std::string name = PoolKernelName(*program, op);
    // Windows overlap where an axis has more than one window and a stride below the window
    // (SelectAndScatter takes no dilations); the kernels leave those to the Float32 ones.
    bool overlap = false;
    for (size_t a = 0; a < w.dims.size(); ++a)
      overlap = overlap || (!reduce && windows.Dim(static_cast<int>(a)) > 1 && w.strides[a] < w.window[a]);
    if (overlap) {
      EXPECT_EQ(name, "") << what;
      ++overlapping;
    } else {
      EXPECT_EQ(name, reduce ? "pool.reduce_window(bf16)" : "pool.select_and_scatter(bf16)") << what;
    }
  }
  EXPECT_GT(overlapping, 5);
}

/// Max pooling forward and gradient, as a CNN uses them: large enough to split across threads.
/// `bf16`: x, the pooled values and their gradient in BFloat16 (the graph converts).
void CheckMaxPoolGradient(const std::vector<int64_t>& dims, int window, int stride, bool same,
                          bool channels_first, std::mt19937& rng, bool bf16 = false) {
  const Shape shape(DType::Float32, dims);
  Graph g;
  graph::Node x = g.Parameter(shape);
  graph::Node xin = bf16 ? graph::ConvertDType(x, DType::BFloat16) : x;
  graph::PoolBuilder b = graph::MaxPool(xin).Window(window).Strides(stride);
  if (same) b.PadSame();
  if (channels_first) b.ChannelsFirst();
  graph::Node y = b.Done();
  graph::Node weights = g.Parameter(y.shape().WithDType(DType::Float32));
  graph::Node loss =
      graph::ReduceSum(graph::Mul(y, bf16 ? graph::ConvertDType(weights, DType::BFloat16) : weights));
  std::vector<graph::Node> grads = graph::Gradient(loss, {x});
  std::shared_ptr<const compute::Program> program =
      g.Build({graph::ConvertDType(y, DType::Float32), grads[0]});
  const std::string what = fmt::format("dims {} window {} stride {} same {} channels_first {} bf16 {}", dims,
                                       window, stride, same, channels_first, bf16);
  ExpectSameAsRef(program, {Ties(shape, rng, false), Uniform(y.shape().WithDType(DType::Float32), rng)},
                  what);
}

TEST(CpuPool, MaxPoolGradientMatchesRef) {
  std::mt19937 rng(13);
  for (bool channels_first : {false, true}) {
    const std::vector<int64_t> dims =
        channels_first ? std::vector<int64_t>{16, 32, 24, 24} : std::vector<int64_t>{16, 24, 24, 32};
    CheckMaxPoolGradient(dims, 2, 2, false, channels_first, rng);
    CheckMaxPoolGradient(dims, 3, 2, true, channels_first, rng);
    CheckMaxPoolGradient(dims, 3, 3, true, channels_first, rng);
    CheckMaxPoolGradient(dims, 3, 1, false, channels_first, rng);
    CheckMaxPoolGradient(dims, 2, 2, false, channels_first, rng, /*bf16=*/true);
    CheckMaxPoolGradient(dims, 3, 2, true, channels_first, rng, /*bf16=*/true);
  }
}

TEST(CpuPool, SelectAndScatterComputedInsideItsReaderMatchesRef) {
  // A channels-last SelectAndScatter without overlapping windows (gaps between windows, padding,
  // Max and Min, ties, signed zeros and NaNs) read by an elementwise group (a ReLU-style mask)
  // whose values are also summed over all but the channels: with 16 channels or more the group
  // computes the scattered values itself (FuseSelectAndScatter), and the reduction the group
  // (MergeFusedOutputs). The group's values are ref's bit for bit, the sums within rounding.
  std::mt19937 rng(15);
  int fused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t channels = trial % 6 == 5 ? Pick(rng, 1, 15) : Pick(rng, 16, 40);
    std::vector<int64_t> dims = {Pick(rng, 1, 3), 0, 0, channels}, window = {1, 1, 1, 1},
                         strides = {1, 1, 1, 1};
    std::vector<PadAxis> padding(4);
    for (size_t a = 1; a < 3; ++a) {
      window[a] = Pick(rng, 1, 3);
      strides[a] = window[a] + Pick(rng, 0, 1);
      padding[a] = PadAxis{Pick(rng, 0, window[a] - 1), Pick(rng, 0, window[a] - 1), 0};
      dims[a] = Pick(rng, window[a], window[a] + 9);
    }
    const Shape shape(DType::Float32, dims);
    Graph probe;
    const Shape windows =
        graph::ReduceWindow(probe.Parameter(shape), ReduceKind::Max, window, strides, padding).shape();
    Graph g;
    graph::Node x = g.Parameter(shape), src = g.Parameter(windows), z = g.Parameter(shape);
    graph::Node scattered = trial % 2 == 0 ? graph::SelectAndScatterMax(x, src, window, strides, padding)
                                           : graph::SelectAndScatterMin(x, src, window, strides, padding);
    graph::Node y =
        graph::Where(graph::GreaterOrEqual(z, graph::ZerosLike(z)), scattered, graph::ZerosLike(z)) * 1.5f +
        z;
    std::shared_ptr<const compute::Program> program = g.Build({y, graph::ReduceSum(y, {0, 1, 2})});
    const std::string what =
        fmt::format("trial {} dims {} window {} strides {}", trial, dims, window, strides);
    compute::cpu::Module m = kiln::test::CleanedModule(*program);
    compute::cpu::FuseElementwise(m);
    compute::cpu::EliminateDeadCode(m);
    const int count = compute::cpu::FuseSelectAndScatter(m).count;
    // Elements per tap: the channels and the spatial axes after the last one windowed.
    int64_t per_tap = channels;
    for (size_t a = 2; a >= 1 && window[a] == 1 && strides[a] == 1 && padding[a].low + padding[a].high == 0;
         --a)
      per_tap *= dims[a];
    EXPECT_EQ(count, per_tap >= 16 ? 1 : 0) << what;
    fused += count;
    const std::vector<Tensor> inputs = {Ties(shape, rng, trial % 4 == 1), Uniform(windows, rng),
                                        Ties(shape, rng, false)};
    const std::vector<Tensor> want = RunProgram(Ref(), program, inputs);
    for (const compute::BackendPtr* cpu : {&Cpu1(), &Cpu2(), &CpuScalar()}) {
      const std::vector<Tensor> got = RunProgram(*cpu, program, inputs);
      ASSERT_EQ(got.size(), 2u);
      EXPECT_TRUE(SameBits(got[0], want[0])) << what;
      EXPECT_TRUE(kiln::test::Close(got[1], want[1], dims[0] * dims[1] * dims[2])) << what;
    }
  }
  EXPECT_GT(fused, 40);
}

TEST(CpuPool, EmptyWindowsHoldTheIdentity) {
  // Windows wholly in padding hold the identity; signed zeros pass through.
  Graph g;
  const Shape shape(DType::Float32, {2, 3});
  graph::Node x = g.Parameter(shape);
  graph::Node mx = graph::ReduceWindow(x, ReduceKind::Max, {1, 2}, {1, 3}, {{0, 0, 0}, {4, 2, 0}});
  graph::Node mn = graph::ReduceWindow(x, ReduceKind::Min, {1, 2}, {1, 3}, {{0, 0, 0}, {4, 2, 0}});
  std::shared_ptr<const compute::Program> program = g.Build({mx, mn});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor in = Tensor::FromFlat(shape, std::vector<float>{1, nan, 2, -0.0f, 0.0f, 5});
  const std::vector<Tensor> got = RunProgram(Cpu1(), program, {in});
  const float inf = std::numeric_limits<float>::infinity();
  // Padded columns: 4 low, 3 data, 2 high = 9; windows start at 0, 3, 6.
  const std::vector<float> want_max = {-inf, 1, 2, -inf, -0.0f, 5};
  const std::vector<float> want_min = {inf, 1, 2, inf, -0.0f, 5};
  const std::vector<float> mx_got = got[0].ToVector<float>(), mn_got = got[1].ToVector<float>();
  ASSERT_EQ(mx_got.size(), want_max.size());
  for (size_t i = 0; i < want_max.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(mx_got[i]), std::bit_cast<uint32_t>(want_max[i])) << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(mn_got[i]), std::bit_cast<uint32_t>(want_min[i])) << i;
  }
  ExpectSameAsRef(program, {in}, "empty windows");
}

TEST(CpuPool, SignalingNaNsLeaveQuieted) {
  // The reference reduces in double: a signaling NaN comes back quiet, payload kept.
  const float snan = std::bit_cast<float>(uint32_t{0x7fa00001});
  Graph g;
  const Shape shape(DType::Float32, {1, 4, 4, 20});
  graph::Node x = g.Parameter(shape);
  graph::Node mx = graph::MaxPool(x).Window(2).Done();
  graph::Node mn = graph::MinPool(x).Window(2).Done();
  std::shared_ptr<const compute::Program> program = g.Build({mx, mn});
  std::vector<float> v(static_cast<size_t>(shape.Size()), 1.0f);
  for (size_t i = 0; i < v.size(); i += 7) v[i] = snan;
  const Tensor in = Tensor::FromFlat(shape, v);
  const std::vector<float> got = RunProgram(Cpu1(), program, {in})[0].ToVector<float>();
  EXPECT_EQ(std::bit_cast<uint32_t>(got[0]), uint32_t{0x7fe00001});
  ExpectSameAsRef(program, {in}, "signaling NaNs");
}

}  // namespace
}  // namespace kiln
