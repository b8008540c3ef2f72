// Tests of the cpu backend's elementwise fusion (fusion_group.cc, fused_eval.cc): the fusion
// decisions on known chains, fused results against the reference backend (random chains in
// Float32, Float16 and BFloat16, broadcasts, scalar immediates, conversions, Bool predicates, IEEE
// specials, threads), the scalar form (`simd=scalar`, bit for bit with ref), `fusion=false`,
// fused reductions and multi-output kernels. The SIMD forms are tested in
// cpu_fusion_simd_test.cc.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cost_model.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fused_eval.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/passes.h"
#include "backends/cpu_fusion_test_util.h"
#include "backends/cpu_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace fusion_test;  // NOLINT

// ---- Fusion decisions --------------------------------------------------------------------------

TEST(CpuFusion, KnownChainBecomesOneFusedNode) {
  std::string report;
  const compute::cpu::Module m =
      Fused([](Graph&, const std::vector<Node>& p) { return std::vector<Node>{Chain(p[0])}; },
            {Shape(DType::Float32, {64})}, &report);
  EXPECT_EQ(CountFused(m), 1) << m.ToString();
  ASSERT_EQ(m.nodes.size(), 2u) << m.ToString();  // The parameter and the fused node.
  EXPECT_EQ(m.nodes[1].fused->inputs.size(), 1u);
  EXPECT_NE(report.find("fusion: 1 group"), std::string::npos) << report;
  EXPECT_NE(report.find("Exp"), std::string::npos) << report;
  EXPECT_NE(m.ToString().find("Fused:"), std::string::npos);
}

TEST(CpuFusion, ValueUsedOutsideEndsItsGroup) {
  std::string report;
  const compute::cpu::Module m = Fused(
      [](Graph&, const std::vector<Node>& p) {
        Node e = graph::Exp(p[0] * 3.0f);
        return std::vector<Node>{Tanh(e) + 1.0f, e};
      },
      {Shape(DType::Float32, {8})}, &report);
  // exp(x * 3) is an output: one group up to it, one from it.
  EXPECT_EQ(CountFused(m), 2) << m.ToString() << report;
}

TEST(CpuFusion, NeverCrossesAnOptimizationBarrier) {
  std::string report;
  const compute::cpu::Module m = Fused(
      [](Graph&, const std::vector<Node>& p) {
        Node a = graph::OptimizationBarrier(p[0] * 2.0f + 1.0f);
        return std::vector<Node>{Exp(a) - 1.0f};
      },
      {Shape(DType::Float32, {8})}, &report);
  EXPECT_EQ(CountFused(m), 2) << m.ToString() << report;
}

TEST(CpuFusion, GroupsDoNotHoldInputsAcrossOtherWork) {
  // acc += t_k, each t_k also an output: fusing the Add chain would read every t_k at its end.
  std::string report;
  const compute::cpu::Module m = Fused(
      [](Graph&, const std::vector<Node>& p) {
        std::vector<Node> outs = {p[0]};
        for (int k = 1; k <= 4; ++k) {
          Node t = graph::Tanh(p[0] * static_cast<float>(k + 1));
          outs[0] = outs[0] + t;
          outs.push_back(t);
        }
        return outs;
      },
      {Shape(DType::Float32, {65536})}, &report);
  // Mul + Tanh per term; each Add alone (a lone op of 65536 floats runs as a fused kernel too).
  EXPECT_EQ(CountFused(m), 8) << m.ToString() << report;
  int adds = 0;
  for (const compute::cpu::Node& node : m.nodes)
    adds += node.fused && node.inst.op == compute::OpType::Add && node.fused->ops.size() == 1;
  EXPECT_EQ(adds, 4) << m.ToString() << report;
}

TEST(CpuFusion, LoneLargeFloatOpRunsAsAFusedKernel) {
  // A lone Add (a residual connection) of 65536 floats or more runs in the fused kernel's vector
  // loop; of fewer, or of integers, on the plain kernel.
  for (int64_t n : {int64_t{65535}, int64_t{65536}}) {
    for (DType dtype : {DType::Float32, DType::Int32}) {
      std::string report;
      const compute::cpu::Module m =
          Fused([](Graph&, const std::vector<Node>& p) { return std::vector<Node>{p[0] + p[1]}; },
                {Shape(dtype, {n}), Shape(dtype, {n})}, &report);
      const bool fused = n >= 65536 && dtype == DType::Float32;
      EXPECT_EQ(CountFused(m), fused ? 1 : 0) << n << " " << m.ToString();
      if (dtype == DType::Float32) {
        std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
        for (size_t i = 0; i < a.size(); ++i) {
          a[i] = static_cast<float>(i) * 0.25f - 3.0f;
          b[i] = i % 7 == 0 ? -0.0f : 1.0f / static_cast<float>(i + 1);
        }
        ExpectMatchesRef(
            "cpu:threads=2,serial_work=0",
            [](Graph&, const std::vector<Node>& p) { return std::vector<Node>{p[0] + p[1]}; },
            {Tensor::FromFlat(Shape(DType::Float32, {n}), a),
             Tensor::FromFlat(Shape(DType::Float32, {n}), b)},
            0);
      }
    }
  }
}

TEST(CpuFusion, CentredValuesAreComputedInsideEachReader) {
  // LayerNorm's x - mean is read by the variance's reduction and by the normalisation: each
  // computes it again rather than one pass writing it and two reading it back. (The variance is
  // an output too, as a training step keeps it, so the chain is not one row normalisation.)
  const graph::GraphFn layer_norm = [](Graph&, const std::vector<Node>& p) {
    Node mean = graph::ReduceSum(p[0], {1}) / 128.0f;
    Node d = p[0] - graph::BroadcastToDims(graph::Reshape(mean, {64, 1}), {64, 128});
    Node var = graph::ReduceSum(d * d, {1}) / 128.0f;
    return std::vector<Node>{
        d * graph::BroadcastToDims(graph::Reshape(graph::Rsqrt(var + 1e-5f), {64, 1}), {64, 128}), var};
  };
  std::string report;
  const compute::cpu::Module m = Fused(layer_norm, {Shape(DType::Float32, {64, 128})}, &report);
  int sub_nodes = 0;
  for (const compute::cpu::Node& node : m.nodes) sub_nodes += node.inst.op == compute::OpType::Sub;
  EXPECT_EQ(sub_nodes, 0) << "x - mean written out:\n" << m.ToString() << report;
  std::vector<float> x(64 * 128);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3f * static_cast<float>(i)) * 3.0f + 1.0f;
  ExpectMatchesRef("cpu:threads=2,serial_work=0", layer_norm,
                   {Tensor::FromFlat(Shape(DType::Float32, {64, 128}), x)}, 8);
}

TEST(CpuFusion, BroadcastsBecomeStridedLoads) {
  std::string report;
  const compute::cpu::Module m =
      Fused([](Graph&, const std::vector<Node>& p) { return std::vector<Node>{Exp(p[0] + p[1]) * 2.0f}; },
            {Shape(DType::Float32, {5, 1}), Shape(DType::Float32, {1, 7})}, &report);
  ASSERT_EQ(CountFused(m), 1) << m.ToString();
  const compute::cpu::FusedSpec& spec = *m.nodes.back().fused;
  ASSERT_EQ(spec.inputs.size(), 2u);
  EXPECT_EQ(spec.inputs[0].strides, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(spec.inputs[1].strides, (std::vector<int64_t>{0, 1}));
}

// ---- Values against ref ------------------------------------------------------------------------

TEST(CpuFusion, BenchmarkChainMatchesRef) {
  const Tensor x = Random({3000}, -4, 4, 1);
  for (const char* config : kConfigs)
    ExpectMatchesRef(
        config, [](Graph&, const std::vector<Node>& p) { return std::vector<Node>{Chain(p[0])}; }, {x},
        std::string(config) == "cpu:simd=scalar" || std::string(config) == "cpu:fusion=false" ? 0 : 2);
}

TEST(CpuFusion, ThreadsSplitLargeOutputs) {
  const Tensor x = Random({300001}, -4, 4, 2);
  ExpectMatchesRef(
      "cpu:threads=2,serial_work=0",
      [](Graph&, const std::vector<Node>& p) { return std::vector<Node>{Chain(p[0])}; }, {x}, 2);
}

TEST(CpuFusion, BroadcastRowPlusColumnMatchesRef) {
  const Tensor a = Random({37, 1}, -2, 2, 3), b = Random({1, 53}, -2, 2, 4);
  const Tensor c = Random({53}, -2, 2, 5);
  auto fn = [](Graph&, const std::vector<Node>& p) {
    return std::vector<Node>{graph::Tanh(p[0] * p[1] + graph::ExpandAxes(p[2], {0})) - p[0],
                             graph::Max(p[0] + p[1], graph::ExpandAxes(p[2], {0}))};
  };
  for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {a, b, c}, 4, 1e-6);
}

TEST(CpuFusion, ScalarGroupsAndImmediates) {
  const Tensor x = Tensor::FromValue(2.5f);
  auto fn = [](Graph&, const std::vector<Node>& p) {
    return std::vector<Node>{graph::Sqrt(p[0] * 3.0f + 0.25f) / 7.0f};
  };
  for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {x}, 0);
}

TEST(CpuFusion, SpecialValuesFollowRefExactly) {
  // Max/Min propagate NaN and order zeros, Round is half to even, Sign keeps NaN and zeros.
  const Tensor tx =
      Tensor::FromValue(std::vector<float>{-0.0f, 0.0f, 1.5f, 2.5f, -2.5f, kNaN, -kInf, kInf, 0.5f, -0.5f,
                                           3.0f, -7.25f, 1e-40f, -1e30f, 1.0f, 0.0f, kNaN});
  const Tensor ty =
      Tensor::FromValue(std::vector<float>{0.0f, -0.0f, kNaN, 2.5f, 1.0f, 1.0f, 5.0f, -kInf, -0.5f, 0.5f,
                                           3.0f, 7.25f, -1e-40f, 1e30f, kNaN, 0.0f, kNaN});
  auto fn = [](Graph&, const std::vector<Node>& p) {
    Node x = p[0], y = p[1];
    return std::vector<Node>{
        graph::Max(x, y) + 0.0f,
        graph::Min(x, y) * 1.0f,
        graph::Round(x * 1.0f) - graph::Floor(y * 1.0f),
        graph::Sign(x - 0.0f) * graph::Ceil(y + 0.0f),
        graph::Abs(Neg(x)) / graph::Sqrt(graph::Abs(y)),
        graph::Where(graph::IsNaN(x * 2.0f), y, x * 2.0f),
        graph::ConvertDType(graph::LogicalAnd(graph::IsFinite(x + y), graph::Less(x, y)), DType::Float32) +
            1.0f};
  };
  for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {tx, ty}, 0);
}

TEST(CpuFusion, TranscendentalsNearRef) {
  const Tensor tx = Random({4099}, -10, 10, 6);
  auto fn = [](Graph&, const std::vector<Node>& p) {
    Node x = p[0];
    return std::vector<Node>{
        graph::Exp(x * 0.5f) + 1.0f,      graph::Expm1(x * 0.25f) * 2.0f,
        graph::Log(graph::Abs(x) + 0.5f), graph::Log1p(graph::Abs(x) * 3.0f) - 1.0f,
        graph::Sin(x * 3.0f) + 0.0f,      graph::Cos(x * 3.0f) * 1.0f,
        graph::Tanh(x * 0.3f) + 0.0f,     graph::Sigmoid(x * 2.0f) + 0.0f,
        graph::Erf(x * 0.4f) + 0.0f,      graph::Pow(graph::Abs(x) + 0.5f, x * 0.3f) + 0.0f};
  };
  ExpectMatchesRef("cpu", fn, {tx}, 4);
  ExpectMatchesRef("cpu:simd=scalar", fn, {tx}, 0);  // The scalar form runs ref's formulas.
}

TEST(CpuFusion, RandomChainsMatchRef) {
  const Tensor a = Random({17, 33}, -3, 3, 7), b = Random({17, 33}, -3, 3, 8);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (uint32_t seed = 0; seed < 12; ++seed) {
      auto fn = [dtype, seed](Graph&, const std::vector<Node>& p) { return RandomChain(p, dtype, seed, 8); };
      SCOPED_TRACE(fmt::format("{} seed {}", DTypeName(dtype), seed));
      // Composite chains: a few ulps of float32 per transcendental step, compounded (and
      // magnified by cancellation); a half type's result (computed in float32, then rounded)
      // may flip by an ulp at a rounding boundary.
      ExpectMatchesRef("cpu", fn, {a, b}, 2, 1e-5);
      ExpectMatchesRef("cpu:simd=scalar", fn, {a, b}, 0);
      ExpectMatchesRef("cpu:fusion=false", fn, {a, b}, 0);
    }
  }
}

TEST(CpuFusion, ExactChainsMatchRefBitForBit) {
  const Tensor a = Random({1000}, -100, 100, 9), b = Random({1000}, -100, 100, 10);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    auto fn = [dtype](Graph&, const std::vector<Node>& p) {
      Node x = graph::ConvertDType(p[0], dtype), y = graph::ConvertDType(p[1], dtype);
      Node r = (x * y + x) / (graph::Abs(y) + 1.0f) - graph::Max(x, y) * 0.1f;
      return std::vector<Node>{
          graph::ConvertDType(graph::Sqrt(graph::Abs(r)), DType::Float32), r,
          graph::Where(graph::LessOrEqual(r, x), graph::Floor(r), graph::Round(y * 0.5f))};
    };
    SCOPED_TRACE(DTypeName(dtype));
    for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {a, b}, 0);
  }
}

TEST(CpuFusion, BoolResultsAndConversions) {
  const Tensor a = Random({257}, -2, 2, 11), b = Random({257}, -2, 2, 12);
  auto fn = [](Graph&, const std::vector<Node>& p) {
    Node gt = graph::Greater(p[0] * 2.0f, p[1]);
    Node mix = graph::LogicalOr(graph::LogicalNot(gt), graph::Equal(graph::Floor(p[0]), graph::Floor(p[1])));
    return std::vector<Node>{
        mix, graph::ConvertDType(graph::ConvertDType(p[0] * 100.0f, DType::Float16), DType::BFloat16),
        graph::ConvertDType(p[0] - p[1], DType::Bool)};
  };
  for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {a, b}, 0);
}

// ---- Broadcast patterns, conversions and threads (the row view of the result) --------------------

TEST(CpuFusion, BroadcastPatternsMatchRef) {
  // Rows long enough for the row view (contiguous, per-row constant and constant inputs) and
  // short ones (the flat view, strided gathers), a middle-axis broadcast, a transposed input.
  struct Case {
    std::vector<int64_t> x, y;
  };
  const Case cases[] = {{{70, 300}, {70, 1}},       {{70, 300}, {1, 300}}, {{3, 70, 130}, {3, 1, 130}},
                        {{3, 70, 130}, {1, 70, 1}}, {{200, 5}, {200, 1}},  {{200, 5}, {1, 5}},
                        {{4, 5, 6}, {4, 1, 6}},     {{1000}, {1}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("[{}] with [{}]", fmt::join(c.x, ","), fmt::join(c.y, ",")));
    const Tensor x = Random(c.x, -2, 2, 20), y = Random(c.y, -2, 2, 21);
    auto fn = [](Graph&, const std::vector<Node>& p) {
      return std::vector<Node>{graph::Tanh(p[0] * p[1] + 0.5f) - p[1], graph::Max(p[0], p[1] * 2.0f)};
    };
    for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {x, y}, 4, 1e-6);
  }
  // [N, M] from a transposed [M, N] input: no axis is contiguous, every piece gathers.
  const Tensor a = Random({90, 80}, -2, 2, 22), b = Random({80, 90}, -2, 2, 23);
  auto fn = [](Graph&, const std::vector<Node>& p) {
    return std::vector<Node>{graph::Exp(p[0] - graph::Transpose(p[1], 0, 1)) * 0.5f};
  };
  for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {a, b}, 2, 1e-6);
}

TEST(CpuFusion, HalfInputsAndOutputsConvertInTheKernel) {
  // Half-typed parameters read through the SIMD conversions, half results written by them,
  // over row and flat views (and SIMD tails: 1000 and 77 are no multiples of the lanes).
  for (DType half : {DType::Float16, DType::BFloat16}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1000}, std::vector<int64_t>{77, 130}}) {
      SCOPED_TRACE(fmt::format("{} [{}]", DTypeName(half), fmt::join(dims, ",")));
      const Tensor x = Random(dims, -3, 3, 24), y = Random(dims, -3, 3, 25);
      auto fn = [half](Graph&, const std::vector<Node>& p) {
        Node hx = graph::ConvertDType(p[0], half), hy = graph::ConvertDType(p[1], half);
        // Through a barrier, so that the groups below read half-typed values.
        const std::vector<Node> held = graph::OptimizationBarrier({hx, hy});
        Node a = held[0], b = held[1];
        return std::vector<Node>{a * b + a, graph::ConvertDType(a - b * 0.5f, DType::Float32),
                                 graph::ConvertDType(p[0] * 3.0f, half)};
      };
      for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {x, y}, 0);
    }
  }
}

TEST(CpuFusion, ThreadsGiveTheSameBits) {
  // Above the threading threshold (and below it) the team splits pieces, never values.
  for (int64_t n : {int64_t{1000}, int64_t{400000}}) {
    const Tensor x = Random({n / 100, 100}, -4, 4, 26), c = Random({n / 100, 1}, -1, 1, 27);
    auto fn = [](Graph&, const std::vector<Node>& p) {
      Node v = graph::Exp(graph::Tanh(p[0]) - p[1]) * p[0];
      return std::vector<Node>{v, graph::ReduceSum(v, {1}), graph::ReduceMax(v, {0}), graph::ReduceAllSum(v)};
    };
    graph::Exec one(Backend("cpu:threads=1"), fn, 2), two(Backend("cpu:threads=2,serial_work=0"), fn, 2);
    const std::vector<Tensor> a = one.Call({x, c}), b = two.Call({x, c});
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(MaxUlps(a[i], b[i]), 0) << "n " << n << " output " << i;
  }
}

// ---- Fused reductions ----------------------------------------------------------------------------

TEST(CpuFusion, ReductionTakesItsElementwiseOperand) {
  std::string report;
  const compute::cpu::Module m =
      Fused([](Graph&,
               const std::vector<Node>& p) { return std::vector<Node>{graph::ReduceSum(p[0] * p[0], {1})}; },
            {Shape(DType::Float32, {8, 300})}, &report);
  // One node: sum(x*x) computed in the reduction; x*x never written.
  ASSERT_EQ(m.nodes.size(), 2u) << m.ToString() << report;
  const compute::cpu::Node& node = m.nodes[1];
  ASSERT_NE(node.fused, nullptr);
  EXPECT_EQ(node.inst.op, compute::OpType::ReduceSum);
  EXPECT_EQ(node.inst.shape, Shape(DType::Float32, {8}));
  EXPECT_EQ(node.fused->out_dims, (std::vector<int64_t>{8, 300}));
  EXPECT_NE(report.find("1 into reductions"), std::string::npos) << report;
  EXPECT_NE(report.find("ReduceSum{axes=[1]} of [Mul]"), std::string::npos) << report;
}

TEST(CpuFusion, LogSumExpFusesItsExponentials) {
  // log(sum(exp(x - max))) + max: the max is a reduction of a parameter, the exp chain (with
  // the max broadcast back along the rows) is computed inside the sum.
  std::string report;
  const compute::cpu::Module m = Fused(
      [](Graph&, const std::vector<Node>& p) { return std::vector<Node>{graph::ReduceLogSumExp(p[0], {1})}; },
      {Shape(DType::Float32, {16, 100})}, &report);
  int reductions = 0;
  for (const compute::cpu::Node& node : m.nodes) {
    if (!node.fused || compute::GetOpCategory(node.inst.op) != compute::OpCategory::Reduce) continue;
    ++reductions;
    if (node.inst.op == compute::OpType::ReduceSum) {
      const std::vector<compute::OpType>& ops = node.fused->ops;
      EXPECT_NE(std::find(ops.begin(), ops.end(), compute::OpType::Exp), ops.end()) << report;
    }
  }
  EXPECT_EQ(reductions, 2) << m.ToString() << report;
}

TEST(CpuFusion, FusionOffKeepsReductionsApart) {
  // The dump of cpu:fusion=false shows no fused node; with fusion the reduction's kernel is
  // the fused one.
  auto fn = [](Graph&, const std::vector<Node>& p) {
    return std::vector<Node>{graph::ReduceMax(p[0] * 2.0f, {0})};
  };
  const Tensor x = Random({30, 70}, -1, 1, 28);
  for (const char* config : {"cpu", "cpu:fusion=false"}) {
    setenv("KILN_CPU_DUMP", "1", 1);
    compute::BackendPtr backend = Backend(config);
    unsetenv("KILN_CPU_DUMP");
    graph::Exec exec(backend, fn, 1);
    ::testing::internal::CaptureStderr();
    exec.Call({x});
    const std::string dump = ::testing::internal::GetCapturedStderr();
    const bool fused = std::string(config) == "cpu";
    EXPECT_EQ(dump.find("]+ReduceMax") != std::string::npos, fused) << dump;
    EXPECT_EQ(dump.find("Fused:") != std::string::npos, fused) << dump;
  }
}

/// Reductions of an elementwise chain over every [O, R, I] form: rows (R contiguous), long and
/// short kept inner axes, the middle axis, everything, empty axes and empty shapes; reduced rows
/// in one block and in several.
struct ReduceCase {
  std::vector<int64_t> dims;
  std::vector<int> axes;
};
const ReduceCase kReduceCases[] = {{{37, 1000}, {1}},
                                   {{37, 1000}, {0}},
                                   {{5, 7, 300}, {1}},
                                   {{300, 3}, {0}},
                                   {{6, 40, 9}, {0, 1}},
                                   {{6, 40, 9}, {1, 2}},
                                   {{50000}, {0}},
                                   {{3, 1, 70}, {1}},
                                   {{2, 3}, {}},
                                   {{0, 5}, {0}},
                                   {{4, 0, 3}, {1}},
                                   {{70000, 2}, {1}},
                                   // Several blocks of reduced rows: short kept rows (a bias
                                   // gradient's [N, C] over N), kept rows longer than a tile.
                                   {{70000, 24}, {0}},
                                   // Kept rows summed whole rows at a time: vector blocks, single
                                   // vectors and a scalar tail, rows not dividing a piece.
                                   {{5000, 32}, {0}},
                                   {{3000, 64}, {0}},
                                   {{2000, 48}, {0}},
                                   {{4100, 100}, {0}},
                                   {{64, 7, 7, 64}, {0, 1, 2}},
                                   {{300, 512}, {0}},
                                   {{2, 300, 1100}, {1}},
                                   {{1, 9000, 3, 40}, {0, 1, 2}}};

TEST(CpuFusion, FusedReductionsMatchRef) {
  for (const ReduceCase& c : kReduceCases) {
    SCOPED_TRACE(fmt::format("[{}] over [{}]", fmt::join(c.dims, ","), fmt::join(c.axes, ",")));
    const Tensor x = Random(c.dims, -2, 2, 30);
    std::vector<int64_t> col_dims = c.dims;
    if (!col_dims.empty()) col_dims.back() = 1;
    const Tensor col = Random(col_dims, -1, 1, 31);
    const std::vector<int> axes = c.axes;
    auto fn = [axes](Graph&, const std::vector<Node>& p) {
      Node e = graph::Exp(graph::Tanh(p[0]) - p[1]) * p[0];
      return std::vector<Node>{graph::ReduceSum(p[0] * p[0], axes), graph::ReduceSum(e, axes),
                               graph::ReduceMax(e, axes), graph::ReduceMin(p[0] - p[1], axes),
                               graph::ReduceMax(p[0], axes)};
    };
    // Sums of many float32 terms: the SIMD forms differ from std:: by ulps per term and add in
    // another order (in double); the scalar form adds like ref.
    ExpectMatchesRef("cpu", fn, {x, col}, 4, 1e-6);
    ExpectMatchesRef("cpu:threads=2,serial_work=0", fn, {x, col}, 4, 1e-6);
    ExpectMatchesRef("cpu:fusion=false", fn, {x, col}, 4, 1e-6);
  }
}

TEST(CpuFusion, ExactFusedReductionsMatchRefBitForBit) {
  // Exact programs in the scalar form: sums in double in ref's order, max and min exactly.
  for (const ReduceCase& c : kReduceCases) {
    SCOPED_TRACE(fmt::format("[{}] over [{}]", fmt::join(c.dims, ","), fmt::join(c.axes, ",")));
    const Tensor x = Random(c.dims, -2, 2, 32);
    const std::vector<int> axes = c.axes;
    auto fn = [axes](Graph&, const std::vector<Node>& p) {
      return std::vector<Node>{graph::ReduceSum(p[0] * p[0] - 1.0f, axes),
                               graph::ReduceMax(graph::Abs(p[0]) * 3.0f, axes),
                               graph::ReduceMin(p[0] * 0.5f, axes)};
    };
    ExpectMatchesRef("cpu:simd=scalar", fn, {x}, 0);
  }
}

TEST(CpuFusion, FusedReductionsFollowRefOnSpecialValues) {
  // NaN propagates through max and min and sums; infinities; zeros of both signs.
  const Tensor x = Tensor::FromValue(std::vector<std::vector<float>>{
      {1, kNaN, 3, 4}, {-0.0f, 0.0f, -0.0f, -0.0f}, {kInf, 1, 2, 3}, {-kInf, kInf, 0, 1}, {-1, -2, -3, -4}});
  auto fn = [](Graph&, const std::vector<Node>& p) {
    Node v = p[0] * 1.0f + 0.0f;
    return std::vector<Node>{graph::ReduceMax(v * 2.0f, {1}), graph::ReduceMin(v * 2.0f, {1}),
                             graph::ReduceSum(v * 2.0f, {1}), graph::ReduceMax(v * 2.0f, {0})};
  };
  for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {x}, 0);
}

TEST(CpuFusion, MaxAndMinOfRowsLongerThanAVectorWithATail) {
  // Rows of 40 (two AVX-512 vectors and a tail of 8, a softmax's keys): NaN, infinities and
  // zeros of both signs in the vector part and in the tail give ref's results.
  std::vector<float> v(6 * 40);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) * 5.0f;
  v[0 * 40 + 37] = kNaN;   // In the tail.
  v[1 * 40 + 3] = kNaN;    // In the vector part.
  v[2 * 40 + 39] = kInf;   // Tail.
  v[3 * 40 + 35] = -kInf;  // Tail.
  for (size_t i = 0; i < 40; ++i) v[4 * 40 + i] = i % 2 == 0 ? -0.0f : 0.0f;
  for (size_t i = 0; i < 40; ++i) v[5 * 40 + i] = -0.0f;
  const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {6, 40}), v);
  auto fn = [](Graph&, const std::vector<Node>& p) {
    return std::vector<Node>{graph::ReduceMax(p[0] * 1.0f, {1}), graph::ReduceMin(p[0] * 1.0f, {1})};
  };
  for (const char* config : kConfigs) ExpectMatchesRef(config, fn, {x}, 0);
}

// ---- Multi-output fusion ----------------------------------------------------------------------

/// One Adam step as graph ops: (p, m, v, g) -> (p', m', v').
std::vector<Node> AdamStep(Graph&, const std::vector<Node>& in) {
  Node m = in[1] * 0.9f + in[3] * 0.1f;
  Node v = in[2] * 0.999f + in[3] * in[3] * 0.001f;
  Node p = in[0] - m * 0.01f / (graph::Sqrt(v) + 1e-8f);
  return {p, m, v};
}

/// The fused nodes of `m` that write extra results.
std::vector<const compute::cpu::Node*> MultiOutput(const compute::cpu::Module& m) {
  std::vector<const compute::cpu::Node*> out;
  for (const compute::cpu::Node& n : m.nodes)
    if (!n.writes.empty()) out.push_back(&n);
  return out;
}

TEST(CpuFusion, AnOptimizerUpdateIsOneKernelWritingThreeResults) {
  const std::vector<Shape> shapes(4, Shape(DType::Float32, {300, 70}));
  std::string report;
  compute::cpu::Module m = Fused(AdamStep, shapes, &report);
  const std::string merged = compute::cpu::MergeFusedOutputs(m).log;
  const std::vector<const compute::cpu::Node*> multi = MultiOutput(m);
  ASSERT_EQ(multi.size(), 1u) << merged << m.ToString();
  EXPECT_EQ(multi[0]->writes.size(), 2u);
  EXPECT_EQ(multi[0]->fused->extra.size(), 2u);
  for (int w : multi[0]->writes) {
    EXPECT_EQ(m.nodes[static_cast<size_t>(w)].written_by, multi[0] - m.nodes.data());
    EXPECT_TRUE(m.nodes[static_cast<size_t>(w)].inst.operands.empty());
  }
  // p, m, v and g, each read once.
  EXPECT_EQ(multi[0]->inst.operands.size(), 4u) << merged;
  std::vector<Tensor> inputs;
  for (int k = 0; k < 4; ++k) inputs.push_back(Random({300, 70}, k == 2 ? 0.0f : -1.0f, 1.0f, 40 + k));
  // Exact ops only (products, sums, a square root, a division): the same bits as ref.
  for (const char* config : kConfigs) ExpectMatchesRef(config, AdamStep, inputs, 0);
  // Large enough for the team to split it.
  std::vector<Tensor> large;
  for (int k = 0; k < 4; ++k) large.push_back(Random({700, 600}, k == 2 ? 0.0f : -1.0f, 1.0f, 50 + k));
  ExpectMatchesRef("cpu:threads=2,serial_work=0", AdamStep, large, 0);
}

TEST(CpuFusion, AMultiOutputKernelWritesIntoDonatedInputs) {
  const compute::BackendPtr& cpu = Backend("cpu:threads=2,serial_work=0");
  graph::Exec exec(cpu, AdamStep, 4);
  std::vector<Tensor> inputs, copies;
  for (int k = 0; k < 4; ++k) {
    Tensor t = Random({700, 600}, k == 2 ? 0.0f : -1.0f, 1.0f, 60 + k);
    copies.push_back(Tensor::FromFlat(t.shape(), t.ToVector<float>()));
    inputs.push_back(Tensor::FromFlat(t.shape(), t.ToVector<float>()));
  }
  const std::vector<Tensor> want = graph::Exec(Backend("ref"), AdamStep, 4).Call(copies);
  std::vector<const void*> data;
  for (int k = 0; k < 3; ++k) data.push_back(inputs[static_cast<size_t>(k)].DeviceBuffer(cpu, 0)->HostData());
  const std::vector<Tensor> got =
      exec.Call(graph::Donate(inputs[0]), graph::Donate(inputs[1]), graph::Donate(inputs[2]), inputs[3]);
  ASSERT_EQ(got.size(), 3u);
  // The three results take the three donated buffers (any of them: the kernel reads all three
  // element for element before it writes), no new buffer and no copy.
  std::vector<const void*> used;
  for (size_t k = 0; k < 3; ++k) {
    used.push_back(got[k].DeviceBuffer(cpu, 0)->HostData());
    EXPECT_EQ(MaxUlps(got[k], want[k]), 0) << "output " << k;
  }
  std::sort(used.begin(), used.end());
  std::sort(data.begin(), data.end());
  EXPECT_EQ(used, data);
}

/// A ReLU gradient and its bias gradient: g masked where x >= 0, summed over the rows, and the
/// masked values read again by a product (a weight gradient), x and g themselves products.
std::vector<Node> MaskedGradient(Graph&, const std::vector<Node>& in) {
  Node x = graph::MatMul(in[0], in[1]), g = graph::MatMul(in[2], in[1]);
  Node masked = graph::Where(graph::GreaterOrEqual(x, graph::ZerosLike(x)), g, graph::ZerosLike(g));
  return {graph::ReduceSum(masked, {0}), graph::MatMul(graph::Transpose(masked, 0, 1), in[3])};
}

TEST(CpuFusion, AReductionStoresTheGroupItSumsForALaterReader) {
  const std::vector<Shape> shapes = {Shape(DType::Float32, {256, 64}), Shape(DType::Float32, {64, 64}),
                                     Shape(DType::Float32, {256, 64}), Shape(DType::Float32, {256, 16})};
  std::string report;
  compute::cpu::Module m = Fused(MaskedGradient, shapes, &report);
  const std::string merged = compute::cpu::MergeFusedOutputs(m).log;
  const std::vector<const compute::cpu::Node*> multi = MultiOutput(m);
  ASSERT_EQ(multi.size(), 1u) << merged << m.ToString();
  EXPECT_EQ(multi[0]->kind, compute::cpu::NodeKind::kFusedReduce);
  EXPECT_EQ(multi[0]->inst.op, compute::OpType::ReduceSum);
  ASSERT_EQ(multi[0]->writes.size(), 1u);
  const compute::cpu::Node& masked = m.nodes[static_cast<size_t>(multi[0]->writes[0])];
  EXPECT_EQ(masked.kind, compute::cpu::NodeKind::kWrittenBy);
  EXPECT_EQ(masked.inst.shape, Shape(DType::Float32, {256, 64}));
  // The reduction reads x and g (the two products) and computes the mask itself.
  EXPECT_EQ(multi[0]->inst.operands.size(), 2u) << merged;
  std::vector<Tensor> inputs;
  for (int k = 0; k < 4; ++k)
    inputs.push_back(Random(shapes[static_cast<size_t>(k)].Dimensions(), -1, 1, 80 + k));
  for (const char* config : kConfigs) ExpectMatchesRef(config, MaskedGradient, inputs, 4, 1e-6);
  ExpectMatchesRef("cpu:threads=2,serial_work=0", MaskedGradient, inputs, 4, 1e-6);
}

TEST(CpuFusion, AReductionsExtraResultTakesTheBlockOfAnOperandItReadsLast) {
  // x and g (64 KiB each) die at the reduction, which writes the masked values (64 KiB) over one
  // of them: the arena holds two such blocks, not three.
  setenv("KILN_CPU_DUMP", "1", 1);
  compute::BackendPtr backend = Backend("cpu");
  unsetenv("KILN_CPU_DUMP");
  graph::Exec exec(backend, MaskedGradient, 4);
  std::vector<Tensor> inputs = {Random({256, 64}, -1, 1, 90), Random({64, 64}, -1, 1, 91),
                                Random({256, 64}, -1, 1, 92), Random({256, 16}, -1, 1, 93)};
  ::testing::internal::CaptureStderr();
  const std::vector<Tensor> got = exec.Call(inputs);
  const std::string dump = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(dump.find("+ReduceSum.jit (+1 results)"), std::string::npos) << dump;
  const size_t at = dump.find(" steps, arena ");
  ASSERT_NE(at, std::string::npos) << dump;
  const int64_t arena = std::stoll(dump.substr(at + 14));
  EXPECT_GE(arena, 2 * 65536) << dump;
  EXPECT_LT(arena, 3 * 65536) << dump;
  const std::vector<Tensor> want = graph::Exec(Backend("ref"), MaskedGradient, 4).Call(inputs);
  for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(WithinScaled(got[k], want[k], 1e-6)) << k;
}

TEST(CpuFusion, AGroupReadTwiceIsWrittenByItsFirstReader) {
  // m' read by two other groups: computed inside the first, which stores it for the second.
  const Shape s(DType::Float32, {40, 30});
  std::string report;
  auto twice = [](Graph&, const std::vector<Node>& in) {
    Node m = in[0] * 0.9f + in[1] * 0.1f;
    return std::vector<Node>{m, graph::Sqrt(m * m + 1.0f), graph::Exp(m * 2.0f - 1.0f)};
  };
  compute::cpu::Module a = Fused(twice, {s, s}, &report);
  const std::string merged = compute::cpu::MergeFusedOutputs(a).log;
  const std::vector<const compute::cpu::Node*> multi = MultiOutput(a);
  ASSERT_EQ(multi.size(), 1u) << merged << a.ToString();
  ASSERT_EQ(multi[0]->writes.size(), 1u);
  const int m_id = multi[0]->writes[0];
  // The second reader comes after the writer and still reads m'.
  int later_readers = 0;
  for (size_t v = 0; v < a.nodes.size(); ++v) {
    for (int o : a.nodes[v].inst.operands) {
      if (o != m_id) continue;
      EXPECT_GT(static_cast<int>(v), multi[0] - a.nodes.data());
      ++later_readers;
    }
  }
  EXPECT_EQ(later_readers, 1) << a.ToString();
  for (const char* config : kConfigs)
    ExpectMatchesRef(config, twice, {Random({40, 30}, -1, 1, 70), Random({40, 30}, -1, 1, 71)}, 4);
}

TEST(CpuFusion, GroupsReadBeforeTheirReaderOrBroadcastOrHalfStayApart) {
  const Shape s(DType::Float32, {40, 30});
  std::string report;
  // m' read by a matrix product between it and the group reading it element for element: it
  // must exist before that group runs.
  auto before = [](Graph&, const std::vector<Node>& in) {
    Node m = in[0] * 0.9f + in[1] * 0.1f;
    Node prod = graph::MatMul(m, graph::Transpose(m, 0, 1));
    return std::vector<Node>{graph::Sqrt(m * m + graph::Reshape(graph::ReduceSum(prod, {1}), {40, 1})) *
                             1.0f};
  };
  compute::cpu::Module a = Fused(before, {s, s}, &report);
  EXPECT_EQ(compute::cpu::MergeFusedOutputs(a).log, "") << a.ToString();
  // A row [30] broadcast into a [40, 30] group.
  auto broadcast = [](Graph&, const std::vector<Node>& in) {
    Node r = graph::Exp(in[1] * 0.5f);
    return std::vector<Node>{r, in[0] * graph::BroadcastPrefix(r, {40}) + 1.0f};
  };
  compute::cpu::Module b = Fused(broadcast, {s, Shape(DType::Float32, {30})}, &report);
  EXPECT_EQ(compute::cpu::MergeFusedOutputs(b).log, "");
  // A BFloat16 result: the reader sees it rounded.
  auto half = [](Graph&, const std::vector<Node>& in) {
    Node h = graph::ConvertDType(in[0] * 3.0f + 1.0f, DType::BFloat16);
    return std::vector<Node>{h, graph::ConvertDType(h, DType::Float32) * in[1] - 2.0f};
  };
  compute::cpu::Module c = Fused(half, {s, s}, &report);
  EXPECT_EQ(compute::cpu::MergeFusedOutputs(c).log, "");
  for (const char* config : kConfigs) {
    ExpectMatchesRef(config, before, {Random({40, 30}, -1, 1, 74), Random({40, 30}, -1, 1, 75)}, 4, 1e-6);
    ExpectMatchesRef(config, half, {Random({40, 30}, -1, 1, 72), Random({40, 30}, -1, 1, 73)}, 0);
  }
}

}  // namespace
}  // namespace kiln
