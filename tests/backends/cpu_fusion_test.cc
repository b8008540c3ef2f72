// Tests of the cpu backend's elementwise fusion (fusion_group.cc, fused_eval.cc, fused_simd.cc): the fusion
// decisions on known chains, fused results against the reference backend (random chains in Float32, Float16
// and BFloat16, broadcasts, scalar immediates, conversions, Bool predicates, IEEE specials,
// threads), the scalar form (`simd=scalar`, bit for bit with ref), `fusion=false`, and ulp-bound
// sweeps of each SIMD transcendental against the scalar std:: function ref uses (on every
// compiled Highway target this machine runs); vector programs against the per-instruction passes
// bit for bit (random programs, every tail length, in place).

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
#include "backends/cpu_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using compute::cpu::FOp;
using graph::Graph;
using graph::Node;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

compute::BackendPtr Backend(const std::string& config) { return compute::NewWithConfig(config); }

/// Float32 values uniform in [lo, hi) of the given dims.
Tensor Random(std::vector<int64_t> dims, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return Tensor::FromBytes(
      Shape(DType::Float32, dims),
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
}

/// Element i of `t` as an integer ordered like the float values (for ulp distances); NaNs map
/// to one value, -0 sits one below +0. Bool and other dtypes use their raw bytes.
int64_t OrderedBits(DType d, const uint8_t* p, int64_t i) {
  int64_t bits = 0, sign = 0, width = 0;
  if (d == DType::Float32) {
    uint32_t b;
    std::memcpy(&b, p + i * 4, 4);
    if (std::isnan(std::bit_cast<float>(b))) return std::numeric_limits<int64_t>::max();
    bits = b, width = 32;
  } else if (d == DType::Float16 || d == DType::BFloat16) {
    uint16_t b;
    std::memcpy(&b, p + i * 2, 2);
    const bool nan = d == DType::Float16 ? (b & 0x7C00) == 0x7C00 && (b & 0x3FF) != 0
                                         : (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
    if (nan) return std::numeric_limits<int64_t>::max();
    bits = b, width = 16;
  } else {
    return p[i];
  }
  sign = bits >> (width - 1);
  const int64_t mag = bits & ((int64_t{1} << (width - 1)) - 1);
  return sign ? -mag - 1 : mag;  // -0 and +0 one apart.
}

/// The largest ulp distance between `a` and `b` (same shape; NaN equals NaN only).
int64_t MaxUlps(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  std::vector<uint8_t> x, y;
  a.ConstBytes([&](std::span<const uint8_t> s) { x.assign(s.begin(), s.end()); });
  b.ConstBytes([&](std::span<const uint8_t> s) { y.assign(s.begin(), s.end()); });
  int64_t worst = 0;
  for (int64_t i = 0; i < a.shape().Size(); ++i) {
    const int64_t p = OrderedBits(a.shape().dtype(), x.data(), i),
                  q = OrderedBits(a.shape().dtype(), y.data(), i);
    const bool nan_p = p == std::numeric_limits<int64_t>::max(),
               nan_q = q == std::numeric_limits<int64_t>::max();
    if (nan_p || nan_q) {
      if (nan_p != nan_q) return std::numeric_limits<int64_t>::max();
      continue;
    }
    worst = std::max(worst, std::abs(p - q));
  }
  return worst;
}

/// Whether every element of the Float32 tensors is within scale * (1 + max |b|) of b's (NaN
/// matching NaN): the error of a composite chain, where cancellation magnifies ulps.
bool WithinScaled(const Tensor& a, const Tensor& b, double scale) {
  if (a.shape().dtype() != DType::Float32) return false;
  const std::vector<float> x = a.ToVector<float>(), y = b.ToVector<float>();
  double top = 0;
  for (float v : y)
    if (std::isfinite(v)) top = std::max(top, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (std::isnan(x[i]) != std::isnan(y[i])) return false;
      continue;
    }
    if (x[i] != y[i] && std::fabs(static_cast<double>(x[i]) - y[i]) > scale * (1 + top)) return false;
  }
  return true;
}

/// Runs `fn` on the backend `config` and on ref; the outputs must be within `ulps` (or, when
/// `scale` > 0, Float32 outputs within WithinScaled).
void ExpectMatchesRef(const std::string& config, const graph::GraphFn& fn, const std::vector<Tensor>& inputs,
                      int64_t ulps, double scale = 0) {
  graph::Exec got(Backend(config), fn, static_cast<int>(inputs.size()));
  graph::Exec want(Backend("ref"), fn, static_cast<int>(inputs.size()));
  const std::vector<Tensor> a = got.Call(inputs), b = want.Call(inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (scale > 0 && WithinScaled(a[i], b[i], scale)) continue;
    EXPECT_LE(MaxUlps(a[i], b[i]), ulps) << config << " output " << i << ": got " << a[i] << ", ref " << b[i];
  }
}

/// The module the cpu pipeline fuses for `fn` on inputs of `shapes`, and the fusion report.
compute::cpu::Module Fused(const graph::GraphFn& fn, const std::vector<Shape>& shapes, std::string* report) {
  graph::Exec exec(Backend("ref"), fn, static_cast<int>(shapes.size()));
  compute::cpu::Module m = kiln::test::CleanedModule(*exec.ProgramFor(shapes));
  *report = compute::cpu::FuseElementwise(m).log;
  compute::cpu::EliminateDeadCode(m);
  return m;
}

int CountFused(const compute::cpu::Module& m) {
  int n = 0;
  for (const compute::cpu::Node& node : m.nodes) n += node.fused != nullptr;
  return n;
}

/// The benchmark chain: exp(relu(x * 2 + 1)) * 0.5 - x.
Node Chain(Node x) { return graph::Exp(graph::Max(x * 2.0f + 1.0f, graph::ZerosLike(x))) * 0.5f - x; }

const char* const kConfigs[] = {"cpu", "cpu:simd=scalar", "cpu:threads=2,serial_work=0", "cpu:fusion=false"};

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
        Node a = graph::OptimizationBarrier({p[0] * 2.0f + 1.0f})[0];
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
      {Shape(DType::Float32, {4096})}, &report);
  EXPECT_EQ(CountFused(m), 4) << m.ToString() << report;  // Mul + Tanh per term; the Adds alone.
  int adds = 0;
  for (const compute::cpu::Node& node : m.nodes) adds += !node.fused && node.inst.op == compute::OpType::Add;
  EXPECT_EQ(adds, 4) << m.ToString();
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

/// A random chain of `ops` elementwise ops over two inputs, in `dtype` (inputs converted).
std::vector<Node> RandomChain(const std::vector<Node>& p, DType dtype, uint32_t seed, int ops) {
  std::mt19937 rng(seed);
  std::vector<Node> values = {graph::ConvertDType(p[0], dtype), graph::ConvertDType(p[1], dtype)};
  auto pick = [&]() { return values[rng() % values.size()]; };
  for (int i = 0; i < ops; ++i) {
    Node a = pick(), b = pick();
    Node r = a;
    switch (rng() % 14) {
      case 0:
        r = a + b;
        break;
      case 1:
        r = a - b;
        break;
      case 2:
        r = a * b;
        break;
      case 3:
        r = a / (graph::Abs(b) + 1.0f);
        break;
      case 4:
        r = graph::Max(a, b);
        break;
      case 5:
        r = graph::Min(a, b);
        break;
      case 6:
        r = graph::Tanh(a);
        break;
      case 7:
        r = graph::Exp(graph::Min(a, graph::ScalarLike(a, 3.0f)));
        break;
      case 8:
        r = graph::Where(graph::Greater(a, b), a, b * 0.5f);
        break;
      case 9:
        r = graph::Neg(a) + 0.25f;
        break;
      case 10:
        r = graph::Sigmoid(a);
        break;
      case 11:
        r = graph::Log1p(graph::Abs(a));
        break;
      case 12:
        r = graph::ConvertDType(graph::ConvertDType(a, DType::BFloat16), dtype) * 3.0f;
        break;
      default:
        r = graph::Sin(a) * b;
        break;
    }
    values.push_back(r);
  }
  return {graph::ConvertDType(values.back(), DType::Float32),
          graph::ConvertDType(values[values.size() - 2], dtype)};
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

TEST(CpuFusion, GroupsReadTwiceOrBroadcastOrHalfStayApart) {
  const Shape s(DType::Float32, {40, 30});
  std::string report;
  // m' read by two other groups.
  auto twice = [](Graph&, const std::vector<Node>& in) {
    Node m = in[0] * 0.9f + in[1] * 0.1f;
    return std::vector<Node>{m, graph::Sqrt(m * m + 1.0f), graph::Exp(m * 2.0f - 1.0f)};
  };
  compute::cpu::Module a = Fused(twice, {s, s}, &report);
  EXPECT_EQ(compute::cpu::MergeFusedOutputs(a).log, "");
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
    ExpectMatchesRef(config, twice, {Random({40, 30}, -1, 1, 70), Random({40, 30}, -1, 1, 71)}, 4);
    ExpectMatchesRef(config, half, {Random({40, 30}, -1, 1, 72), Random({40, 30}, -1, 1, 73)}, 0);
  }
}

// ---- Ulp sweeps of the SIMD transcendentals -----------------------------------------------------

/// The ulp distance of two floats (0 when both are NaN; zeros of different signs are far apart).
int64_t Ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  if (a == 0 && b == 0 && std::signbit(a) != std::signbit(b)) return std::numeric_limits<int64_t>::max();
  auto ord = [](float f) {
    const auto bits = static_cast<int64_t>(std::bit_cast<uint32_t>(f));
    return bits & 0x80000000 ? -(bits & 0x7FFFFFFF) : bits;
  };
  return std::abs(ord(a) - ord(b));
}

/// The largest ulp error of the SIMD op against `want` over [lo, hi] (about `steps` points,
/// equally spaced, plus the special values).
int64_t SweepUlps(FOp op, float (*want)(float), float lo, float hi, int steps) {
  std::vector<float> x = {0.0f, -0.0f, kNaN, kInf, -kInf, 1e-40f, -1e-40f, 1e-30f, -1e-30f, 100.0f, -100.0f};
  for (int i = 0; i <= steps; ++i)
    x.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(steps));
  std::vector<float> y(x.size());
  compute::cpu::RunFusedOpSimd(op, x.data(), nullptr, nullptr, y.data(), x.size());
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t u = Ulps(y[i], want(x[i]));
    EXPECT_LE(u, 8) << compute::cpu::FOpName(op) << "(" << x[i] << ") = " << y[i] << ", want " << want(x[i]);
    worst = std::max(worst, u);
  }
  return worst;
}

TEST(CpuFusionUlps, TranscendentalsWithinBounds) {
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    EXPECT_STREQ(compute::cpu::FusedSimdTarget(), target);
    constexpr int kSteps = 400000;
    EXPECT_LE(SweepUlps(
                  FOp::kExp, [](float v) { return std::exp(v); }, -104, 90, kSteps),
              2);
    EXPECT_LE(SweepUlps(
                  FOp::kExpm1, [](float v) { return std::expm1(v); }, -90, 90, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kExpm1, [](float v) { return std::expm1(v); }, -0.01f, 0.01f, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kLog, [](float v) { return std::log(v); }, -1, 1e6f, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kLog, [](float v) { return std::log(v); }, 0, 2, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kLog1p, [](float v) { return std::log1p(v); }, -1.5f, 1e4f, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kLog1p, [](float v) { return std::log1p(v); }, -0.01f, 0.01f, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kSin, [](float v) { return std::sin(v); }, -50000, 50000, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kCos, [](float v) { return std::cos(v); }, -50000, 50000, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kTanh, [](float v) { return std::tanh(v); }, -20, 20, kSteps),
              4);
  });
}

TEST(CpuFusionUlps, OurLogisticAndErfWithinTwoUlps) {
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    EXPECT_STREQ(compute::cpu::FusedSimdTarget(), target);
    constexpr int kSteps = 1000000;
    auto logistic = [](float v) {
      if (v >= 0) return 1.0f / (1.0f + std::exp(-v));
      const float e = std::exp(v);
      return e / (1.0f + e);
    };
    EXPECT_LE(SweepUlps(FOp::kLogistic, logistic, -110, 110, kSteps), 2);
    EXPECT_LE(SweepUlps(FOp::kLogistic, logistic, -1, 1, kSteps), 2);
    EXPECT_LE(SweepUlps(
                  FOp::kErf, [](float v) { return std::erf(v); }, -6, 6, kSteps),
              2);
    EXPECT_LE(SweepUlps(
                  FOp::kErf, [](float v) { return std::erf(v); }, -0.01f, 0.01f, kSteps),
              2);
  });
}

TEST(CpuFusionUlps, ExactOpsMatchScalarForm) {
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    EXPECT_STREQ(compute::cpu::FusedSimdTarget(), target);
    std::vector<float> a = {-0.0f,       0.0f,       kNaN,       kInf,     -kInf,    1.5f,     2.5f,
                            -2.5f,       0.5f,       1e-40f,     3.3f,     -1e38f,   65519.0f, 1.00390625f,
                            1.01171875f, 3.4e38f,    -7.0f,      65520.0f, 2.98e-8f, 5.96e-8f, 8.9e-8f,
                            6.1e-5f,     1.0004883f, 1.0014648f, 0.1f,     -3.14159f};
    std::vector<float> b(a.rbegin(), a.rend());
    std::vector<float> c(a.size(), 0.0f);
    for (size_t i = 0; i < c.size(); i += 2) c[i] = 1.0f;
    for (int k = static_cast<int>(FOp::kNeg); k <= static_cast<int>(FOp::kWhere); ++k) {
      const auto op = static_cast<FOp>(k);
      if (FOpTranscendental(op)) continue;  // Swept above.
      const float* x = op == FOp::kWhere ? c.data() : a.data();
      const float* y = op == FOp::kWhere ? a.data() : b.data();
      const float* z = b.data();
      std::vector<float> simd(a.size()), scalar(a.size());
      compute::cpu::RunFusedOpSimd(op, x, y, z, simd.data(), a.size());
      compute::cpu::RunFusedOpScalar(op, x, y, z, scalar.data(), a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(std::bit_cast<uint32_t>(simd[i]) == std::bit_cast<uint32_t>(scalar[i]) ||
                      (std::isnan(simd[i]) && std::isnan(scalar[i])),
                  true)
            << compute::cpu::FOpName(op) << " at " << i << ": simd " << simd[i] << ", scalar " << scalar[i];
      }
    }
  });
}

TEST(CpuFusionUlps, HalfRoundingMatchesKilnHalfTypes) {
  // Random bit patterns (all exponents, subnormals, ties) through the SIMD roundings.
  std::mt19937 rng(13);
  std::vector<float> x(200000);
  for (float& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  for (size_t i = 0; i < 1000; ++i) x[i] = static_cast<float>(i) * 0.5f + 2048.0f;  // Ties in Float16.
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    for (FOp op : {FOp::kRoundF16, FOp::kRoundBF16}) {
      std::vector<float> simd(x.size()), scalar(x.size());
      compute::cpu::RunFusedOpSimd(op, x.data(), nullptr, nullptr, simd.data(), x.size());
      compute::cpu::RunFusedOpScalar(op, x.data(), nullptr, nullptr, scalar.data(), x.size());
      int bad = 0;
      for (size_t i = 0; i < x.size() && bad < 5; ++i) {
        if (std::isnan(simd[i]) && std::isnan(scalar[i])) continue;
        if (std::bit_cast<uint32_t>(simd[i]) != std::bit_cast<uint32_t>(scalar[i])) {
          ++bad;
          ADD_FAILURE() << compute::cpu::FOpName(op) << "(" << x[i] << "): simd " << simd[i] << ", scalar "
                        << scalar[i];
        }
      }
    }
  });
}

/// A random program over inputs in registers 0 and 1 and immediates in 2 and 3: `ops`
/// instructions drawn from every compute op, reading any written register and writing a new
/// register or over an old one (so values die, live on in slots, or get overwritten); the result
/// is the last written register or, one time in three, an earlier value still alive at the end.
compute::cpu::FusedSpec RandomProgram(std::mt19937& rng, int ops) {
  using compute::cpu::FInstr;
  compute::cpu::FusedSpec spec;
  spec.inputs.resize(2);
  spec.out_dims = {1};
  spec.code.push_back(FInstr{FOp::kImm, 2, 0, 0, 0, 0.5f, -1});
  spec.code.push_back(FInstr{FOp::kImm, 3, 0, 0, 0, -1.25f, -1});
  spec.code.push_back(FInstr{FOp::kInput, 0, 0, 0, 0, 0, 0});
  spec.code.push_back(FInstr{FOp::kInput, 1, 0, 0, 0, 0, 1});
  const int first = static_cast<int>(FOp::kNeg), last = static_cast<int>(FOp::kWhere);
  uint16_t regs = 4;
  std::vector<int> writer(16, -1);  // Per register: the op that last wrote it (-1: not an op).
  for (int k = 0; k < ops; ++k) {
    FInstr ins;
    ins.op = static_cast<FOp>(first + static_cast<int>(rng() % static_cast<uint32_t>(last - first + 1)));
    ins.a = static_cast<uint16_t>(rng() % regs);
    ins.b = static_cast<uint16_t>(rng() % regs);
    ins.c = static_cast<uint16_t>(rng() % regs);
    // Mostly a chain on the previous result, as real groups are.
    if (k > 0 && rng() % 3 != 0) ins.a = spec.code.back().dst;
    // A new register, or over an op's register or an input (never over an immediate).
    if (regs == 4 || (regs < 12 && rng() % 2 == 0)) {
      ins.dst = regs++;
    } else {
      const auto pick = static_cast<uint16_t>(rng() % (regs - 2));
      ins.dst = pick < 2 ? pick : static_cast<uint16_t>(pick + 2);
    }
    writer[ins.dst] = k;
    spec.code.push_back(ins);
  }
  spec.num_regs = regs;
  spec.result = spec.code.back().dst;
  if (rng() % 3 == 0) {
    std::vector<uint16_t> alive;
    for (uint16_t r = 0; r < regs; ++r)
      if (writer[r] >= 0) alive.push_back(r);
    spec.result = alive[rng() % alive.size()];
  }
  return spec;
}

/// `spec` run one SIMD pass per instruction over whole registers (the per-instruction evaluator).
std::vector<float> RunByPasses(const compute::cpu::FusedSpec& spec, const std::vector<float>& x,
                               const std::vector<float>& y) {
  const size_t n = x.size();
  std::vector<std::vector<float>> r(static_cast<size_t>(spec.num_regs), std::vector<float>(n));
  for (const compute::cpu::FInstr& ins : spec.code) {
    if (ins.op == FOp::kImm) {
      r[ins.dst].assign(n, ins.imm);
    } else if (ins.op == FOp::kInput) {
      r[ins.dst] = ins.input == 0 ? x : y;
    } else {
      std::vector<float> out(n);
      compute::cpu::RunFusedOpSimd(ins.op, r[ins.a].data(), r[ins.b].data(), r[ins.c].data(), out.data(), n);
      r[ins.dst] = out;
    }
  }
  return r[static_cast<size_t>(spec.result)];
}

bool SameBits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

TEST(CpuFusionVector, ProgramsMatchPerInstructionPassesBitForBit) {
  // Lengths around the vector widths (4, 8, 16 lanes) and blocks of four vectors, so every tail
  // path runs; programs of 1 to 24 instructions; on every compiled target.
  const size_t sizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 100, 257, 1000, 1024};
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    std::mt19937 rng(21);
    for (int ops : {1, 2, 3, 5, 8, 13, 24}) {
      for (int trial = 0; trial < 12; ++trial) {
        const compute::cpu::FusedSpec spec = RandomProgram(rng, ops);
        const compute::cpu::VProgram prog = compute::cpu::MakeVProgram(spec);
        ASSERT_FALSE(prog.code.empty());
        ASSERT_EQ(prog.code.size(), static_cast<size_t>(ops));
        for (size_t n : sizes) {
          std::vector<float> x(n), y(n);
          std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
          for (size_t i = 0; i < n; ++i) {
            x[i] = dist(rng);
            y[i] = i % 5 == 0 ? 0.0f : dist(rng);  // Zeros for the predicates and Where.
          }
          const std::vector<float> want = RunByPasses(spec, x, y);
          std::vector<float> slots(prog.SlotFloats()), tail(prog.TailFloats()), out(n);
          std::vector<const float*> tail_in(2);
          const float* in[2] = {x.data(), y.data()};
          compute::cpu::RunVProgramSimd(prog, in, out.data(), n, slots.data(), tail.data(), tail_in.data());
          // In place: the result written over the first input.
          std::vector<float> inplace = x;
          const float* in2[2] = {inplace.data(), y.data()};
          compute::cpu::RunVProgramSimd(prog, in2, inplace.data(), n, slots.data(), tail.data(),
                                        tail_in.data());
          int bad = 0;
          for (size_t i = 0; i < n && bad < 3; ++i) {
            if (SameBits(out[i], want[i]) && SameBits(inplace[i], want[i])) continue;
            ++bad;
            ADD_FAILURE() << "ops " << ops << " trial " << trial << " n " << n << " at " << i << ": vector "
                          << out[i] << ", in place " << inplace[i] << ", passes " << want[i] << "\n"
                          << spec.ToString();
          }
        }
      }
    }
  });
}

TEST(CpuFusionVector, ResultsThatAreNotComputedKeepThePasses) {
  // A group that only converts its input has no compute instruction: no vector program.
  compute::cpu::FusedSpec spec;
  spec.inputs.resize(1);
  spec.code.push_back(compute::cpu::FInstr{FOp::kInput, 0, 0, 0, 0, 0, 0});
  spec.num_regs = 1;
  EXPECT_TRUE(compute::cpu::MakeVProgram(spec).code.empty());
  // The result is the input although an op ran: the same.
  spec.code.push_back(compute::cpu::FInstr{FOp::kNeg, 1, 0, 0, 0, 0, -1});
  spec.num_regs = 2;
  EXPECT_TRUE(compute::cpu::MakeVProgram(spec).code.empty());
  // Values read again later are saved to their slot; the one read next stays the accumulator.
  spec.result = 1;
  spec.code.push_back(compute::cpu::FInstr{FOp::kExp, 2, 1, 0, 0, 0, -1});
  spec.code.push_back(compute::cpu::FInstr{FOp::kMul, 1, 2, 1, 0, 0, -1});
  spec.num_regs = 3;
  const compute::cpu::VProgram prog = compute::cpu::MakeVProgram(spec);
  ASSERT_EQ(prog.code.size(), 3u);
  EXPECT_EQ(prog.code[0].src[0], compute::cpu::VSrc::kInput);
  EXPECT_EQ(prog.code[0].save, 1);
  EXPECT_EQ(prog.code[1].src[0], compute::cpu::VSrc::kAcc);
  EXPECT_EQ(prog.code[1].save, -1);
  EXPECT_EQ(prog.code[2].src[0], compute::cpu::VSrc::kAcc);
  EXPECT_EQ(prog.code[2].src[1], compute::cpu::VSrc::kSlot);
  EXPECT_EQ(prog.result_src, compute::cpu::VSrc::kAcc);
}

TEST(CpuFusionVector, ChainsOfEveryLengthAndTailMatchRef) {
  // Whole executables: fused groups of 1 to 20 ops over lengths that leave every kind of tail,
  // against ref (the exact chain bit for bit, the random ones within the transcendental bound).
  for (int64_t n : {1, 5, 16, 17, 63, 65, 130, 1023, 1025, 2051}) {
    SCOPED_TRACE(fmt::format("n {}", n));
    const Tensor a = Random({n}, -3, 3, 31), b = Random({n}, -3, 3, 32);
    auto exact = [](Graph&, const std::vector<Node>& p) {
      Node r = (p[0] * p[1] + p[0]) / (graph::Abs(p[1]) + 1.0f) - graph::Max(p[0], p[1]) * 0.1f;
      return std::vector<Node>{r, graph::Where(graph::LessOrEqual(r, p[0]), graph::Floor(r), p[1] * r)};
    };
    ExpectMatchesRef("cpu", exact, {a, b}, 0);
    for (int ops : {1, 4, 20}) {
      auto fn = [ops](Graph&, const std::vector<Node>& p) { return RandomChain(p, DType::Float32, 5, ops); };
      ExpectMatchesRef("cpu", fn, {a, b}, 2, 1e-5);
      ExpectMatchesRef("cpu:fusion=false", fn, {a, b}, 0);
    }
  }
}

TEST(CpuFusionVector, EveryTargetRunsWholeGraphsLikeRef) {
  // Vector programs on AVX3, one pass per instruction elsewhere: whole executables on each target
  // this machine runs, with tails, broadcasts and half types.
  const Tensor a = Random({7, 37}, -3, 3, 41), b = Random({7, 37}, -3, 3, 42),
               col = Random({7, 1}, -1, 1, 43);
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    auto exact = [](Graph&, const std::vector<Node>& p) {
      Node r = (p[0] * p[1] + p[0]) / (graph::Abs(p[1]) + 1.0f) - graph::Max(p[0], p[1]) * 0.1f + p[2];
      return std::vector<Node>{r, graph::ConvertDType(r * 3.0f, DType::BFloat16)};
    };
    ExpectMatchesRef("cpu", exact, {a, b, col}, 0);
    for (DType dtype : {DType::Float32, DType::Float16}) {
      for (uint32_t seed = 0; seed < 4; ++seed) {
        auto fn = [dtype, seed](Graph&, const std::vector<Node>& p) {
          return RandomChain(p, dtype, seed, 10);
        };
        ExpectMatchesRef("cpu", fn, {a, b}, 2, 1e-5);
      }
    }
  });
}

TEST(CpuFusionUlps, SeveralTargetsAreTested) {
  int targets = 0;
  compute::cpu::ForEachFusedSimdTarget([&](const char*) { ++targets; });
  EXPECT_GE(targets, 2) << "the best SIMD target and the portable fallback";
  EXPECT_STRNE(compute::cpu::FusedSimdTarget(), "");
}

}  // namespace
}  // namespace kiln
