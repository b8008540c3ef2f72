// Tests for the cpu backend's quantized matrix-product kernel (quant_matmul.cc): int8 and packed
// int4 weights, blocks of scales along K, zero points, bias, column ranges and ragged sizes,
// against an element-by-element reference written here, on every SIMD target this CPU runs; and
// for the "kiln.quantized_matmul" Composite that nn::QuantizedDense emits: which forms the cpu
// backend runs with the kernel (quant_composite.cc), and that both paths agree with ref.

#include "backends/cpu/quant_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/ggml_matmul.h"
#include "backends/cpu/int8_dot.h"
#include "backends/cpu/kernels.h"
#include "kiln/kiln.h"
#include "kiln/ml/quantized.h"
#include "kiln/quant/quant.h"
#include "test_util.h"

namespace {

using kiln::compute::cpu::LinearQuantMatmul;

/// The product element by element in double, each weight read straight from its definition.
void Reference(const LinearQuantMatmul& p) {
  const int64_t row_bytes = p.four_bit ? p.n / 2 : p.n;
  for (int64_t r = 0; r < p.m; ++r) {
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = p.bias != nullptr ? p.bias[j] : 0.0;
      for (int64_t i = 0; i < p.k; ++i) {
        const uint8_t* row = p.q + i * row_bytes;
        int v;
        double value;
        if (p.four_bit) {
          const int nibble = (row[j / 2] >> (j % 2 == 0 ? 0 : 4)) & 0x0F;
          v = nibble >= 8 ? nibble - 16 : nibble;
          value = p.table != nullptr ? p.table[nibble] : v;  // NF4: the code's table entry.
        } else {
          v = static_cast<int8_t>(row[j]);
          value = v;
        }
        const int64_t s = (i / p.block) * p.n + j;
        const double w = value * static_cast<double>(p.scale[s]) + (p.zero != nullptr ? p.zero[s] : 0.0);
        sum += static_cast<double>(p.x[r * p.k + i]) * w;
      }
      p.y[r * p.n + j] = static_cast<float>(sum);
    }
  }
}

struct Case {
  int64_t m, k, n, block;
  bool four_bit, zero, bias;
  bool nf4 = false;  ///< four_bit codes into a table of 16 values.
};

/// Random operands of case `c` (weights, scales, zero points, bias, the NF4 table, x) and the
/// LinearQuantMatmul that points at them (y left to the caller).
struct RandomLinear {
  std::vector<float> x, scale, zero, bias, table;
  std::vector<uint8_t> q;
  LinearQuantMatmul p;

  RandomLinear(const Case& c, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1, 1);
    x.resize(static_cast<size_t>(c.m * c.k));
    scale.resize(static_cast<size_t>(c.k / c.block * c.n));
    zero.resize(scale.size());
    bias.resize(static_cast<size_t>(c.n));
    table.resize(16);
    for (float& v : x) v = u(rng);
    for (float& v : scale) v = 0.01f + 0.1f * std::abs(u(rng));
    for (float& v : zero) v = 0.05f * u(rng);
    for (float& v : bias) v = u(rng);
    q.resize(static_cast<size_t>(c.k * (c.four_bit ? c.n / 2 : c.n)));
    for (uint8_t& b : q) b = static_cast<uint8_t>(rng() & 0xFF);
    for (float& v : table) v = u(rng);
    p.x = x.data();
    p.m = c.m;
    p.k = c.k;
    p.n = c.n;
    p.q = q.data();
    p.four_bit = c.four_bit;
    p.table = c.nf4 ? table.data() : nullptr;
    p.scale = scale.data();
    p.zero = c.zero ? zero.data() : nullptr;
    p.block = c.block;
    p.bias = c.bias ? bias.data() : nullptr;
  }
};

void Check(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  RandomLinear operands(c, rng);
  LinearQuantMatmul& p = operands.p;
  std::vector<float> want(static_cast<size_t>(c.m * c.n)), got(want.size(), NAN);
  p.y = want.data();
  Reference(p);
  p.y = got.data();
  // Two column ranges, split at an even column, as two threads would run them.
  const int64_t split = (c.n / 2) & ~int64_t{1};
  std::vector<float> scratch(static_cast<size_t>(c.m * c.n));
  kiln::compute::cpu::RunLinearQuantMatmul(p, 0, split, scratch.data());
  kiln::compute::cpu::RunLinearQuantMatmul(p, split, c.n, scratch.data());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])))
        << "m " << c.m << " k " << c.k << " n " << c.n << " block " << c.block << " four_bit " << c.four_bit
        << " nf4 " << c.nf4 << " zero " << c.zero << " element " << i;
  // The tiles of the batched path: W itself, column and row ranges included.
  const int64_t k0 = c.block, k1 = c.k, n0 = split, n1 = c.n;
  std::vector<float> tile(static_cast<size_t>((k1 - k0) * (n1 - n0)));
  kiln::compute::cpu::DequantizeLinearTile(p, k0, k1, n0, n1, tile.data());
  LinearQuantMatmul one = p;  // x = e_i picks row i of W.
  std::vector<float> e(static_cast<size_t>(c.k)), w_row(static_cast<size_t>(c.n));
  one.x = e.data();
  one.m = 1;
  one.bias = nullptr;
  one.y = w_row.data();
  for (int64_t i = k0; i < k1; i += 7) {
    std::fill(e.begin(), e.end(), 0.0f);
    e[static_cast<size_t>(i)] = 1;
    Reference(one);
    for (int64_t j = n0; j < n1; ++j)
      ASSERT_NEAR(tile[static_cast<size_t>((i - k0) * (n1 - n0) + (j - n0))], w_row[static_cast<size_t>(j)],
                  1e-6)
          << "tile of m " << c.m << " k " << c.k << " n " << c.n << " nf4 " << c.nf4 << " at " << i << ", "
          << j;
  }
}

TEST(QuantMatmul, MatchesTheReferenceOnEveryTarget) {
  const std::vector<Case> cases = {
      {1, 64, 64, 64, false, false, false},       {1, 64, 64, 32, true, false, true},
      {3, 96, 70, 32, false, true, true},         {5, 32, 34, 16, true, true, false},
      {2, 128, 130, 64, true, false, true},       {4, 48, 33, 16, false, false, true},
      {1, 256, 512, 32, true, true, true},        {7, 16, 18, 8, false, true, false},
      {1, 64, 64, 32, true, false, false, true},  {3, 128, 130, 64, true, false, true, true},
      {2, 96, 256, 32, true, false, false, true},
  };
  kiln::compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    uint32_t seed = 1;
    for (const Case& c : cases) Check(c, seed++);
  });
}

// ---- Integer dot products with int8 activations (int8_dot.cc) ------------------------------------

using kiln::compute::cpu::Int8DotIsa;

/// The instruction sets of the integer dot products this CPU runs: plain C++ always, then AVX2's
/// and VNNI's where it has them.
std::vector<Int8DotIsa> Int8DotIsasHere() {
  std::vector<Int8DotIsa> isas = {Int8DotIsa::kScalar};
  const Int8DotIsa best = kiln::compute::cpu::CurrentInt8DotIsa();
  if (best != Int8DotIsa::kScalar) isas.push_back(Int8DotIsa::kAvx2);
  if (best == Int8DotIsa::kAvx512Vnni) isas.push_back(best);
  return isas;
}

/// Runs `run` (which writes y) on each instruction set here: every element within
/// 1e-6 · (1 + size) of the definition `want`, and the same bits as the plain C++ form's.
void ExpectOnEveryIsa(const std::function<void(Int8DotIsa, float*)>& run, const std::vector<double>& want,
                      const std::vector<double>& size, const std::string& what) {
  std::vector<float> first;
  for (Int8DotIsa isa : Int8DotIsasHere()) {
    std::vector<float> y(want.size(), NAN);
    run(isa, y.data());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], want[i], 1e-6 * (1 + size[i]))
          << what << " on " << kiln::compute::cpu::Int8DotIsaName(isa) << " at " << i;
    if (first.empty())
      first = y;
    else
      EXPECT_EQ(std::memcmp(y.data(), first.data(), y.size() * sizeof(float)), 0)
          << what << ": " << kiln::compute::cpu::Int8DotIsaName(isa) << " and plain C++ differ";
  }
}

TEST(Int8Dot, ActivationsQuantizeAsDefinedOnEveryInstructionSet) {
  const int64_t m = 3, k = 128;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 2);
  std::vector<float> x(static_cast<size_t>(m * k));
  for (float& v : x) v = normal(rng);
  for (int64_t l = 32; l < 64; ++l) x[static_cast<size_t>(l)] = 0;  // Row 0, block 1: d = 0.
  x[static_cast<size_t>(k + 70)] = NAN;                             // Row 1, block 2.
  x[static_cast<size_t>(2 * k + 100)] = -INFINITY;                  // Row 2, block 3.
  for (int64_t l = 0; l < 32; ++l)
    x[static_cast<size_t>(2 * k + l)] = static_cast<float>(l - 16) / 2;  // Ties.
  for (int64_t l = 64; l < 96; ++l)  // Row 0, block 2: so small that 127 / max|x| overflows.
    x[static_cast<size_t>(l)] = 1e-39f * static_cast<float>(l % 5);
  kiln::compute::cpu::Q8Rows want;
  for (Int8DotIsa isa : Int8DotIsasHere()) {
    SCOPED_TRACE(kiln::compute::cpu::Int8DotIsaName(isa));
    kiln::compute::cpu::Q8Rows got;
    kiln::compute::cpu::QuantizeRowsQ8(x.data(), m, k, isa, got);
    ASSERT_EQ(got.blocks, k / 32);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t b = 0; b < k / 32; ++b) {
        const size_t at = static_cast<size_t>(r * got.blocks + b);
        const float* xb = x.data() + r * k + b * 32;
        float amax = 0;
        bool finite = true;
        for (int l = 0; l < 32; ++l) {
          finite = finite && std::isfinite(xb[l]);
          amax = std::max(amax, std::abs(xb[l]));
        }
        int32_t sum = 0;
        for (int l = 0; l < 32; ++l) {
          const int q = got.q[at * 32 + static_cast<size_t>(l)];
          sum += q;
          if (!finite) {
            ASSERT_EQ(q, 0);
            continue;
          }
          const float d = amax / 127;
          const float scaled = d == 0 || !std::isfinite(1 / d) ? 0.0f : xb[l] * (1 / d);
          // Nearest integer, ties to even.
          const float lower = std::floor(scaled), frac = scaled - lower;
          const float nearest =
              frac > 0.5f || (frac == 0.5f && std::fmod(lower, 2.0f) != 0) ? lower + 1 : lower;
          ASSERT_EQ(q, static_cast<int>(nearest)) << "row " << r << " element " << b * 32 + l;
          ASSERT_LE(std::abs(q), 127);
        }
        EXPECT_EQ(got.sum[at], sum);
        if (finite && !std::isfinite(127 / amax))
          EXPECT_EQ(got.d[at], 0.0f) << r << ", " << b;  // Zero, or too small to scale.
        else if (finite)
          EXPECT_EQ(got.d[at], amax / 127) << r << ", " << b;
        else
          EXPECT_TRUE(std::isnan(got.d[at])) << r << ", " << b;
      }
    }
    if (isa == Int8DotIsa::kScalar) {
      want = got;
      continue;
    }
    EXPECT_EQ(got.q, want.q);
    EXPECT_EQ(got.sum, want.sum);
    EXPECT_EQ(std::memcmp(got.d.data(), want.d.data(), got.d.size() * sizeof(float)), 0);
  }
}

TEST(Int8Dot, GGMLProductsMatchTheDefinitionWithTheSameBitsOnEveryInstructionSet) {
  namespace cpu = kiln::compute::cpu;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int type : {cpu::kGGMLQ4_0, cpu::kGGMLQ8_0}) {
    for (const auto& [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 32, 1}, {1, 256, 9}, {2, 96, 6}, {3, 64, 13}, {5, 128, 8}, {7, 32, 5}, {11, 160, 4}}) {
      const std::string what = std::string(type == cpu::kGGMLQ4_0 ? "Q4_0" : "Q8_0") + " m " +
                               std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n);
      const int64_t bytes = cpu::GGMLBlockBytesOf(type), nb = k / 32;
      std::vector<uint8_t> w(static_cast<size_t>(n * nb * bytes));
      for (uint8_t& b : w) b = static_cast<uint8_t>(rng() & 0xFF);
      for (int64_t blk = 0; blk < n * nb; ++blk) {  // A float16 scale at the start of each block.
        const uint16_t half = kiln::detail::FloatToHalfBits(0.02f * u(rng));
        std::memcpy(w.data() + blk * bytes, &half, 2);
      }
      std::vector<float> x(static_cast<size_t>(m * k));
      for (float& v : x) v = 3 * u(rng);
      cpu::Q8Rows xq;
      cpu::QuantizeRowsQ8(x.data(), m, k, Int8DotIsa::kScalar, xq);
      // The definition in double: Σ_b dw · dx · Σ_l w · q, with w the block's signed value.
      std::vector<double> want(static_cast<size_t>(m * n)), size(want.size());
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* block = w.data() + (j * nb + b) * bytes;
            uint16_t half;
            std::memcpy(&half, block, 2);
            int64_t dot = 0;
            for (int l = 0; l < 32; ++l) {
              const int v = type == cpu::kGGMLQ4_0
                                ? (l < 16 ? block[2 + l] & 0x0F : block[2 + l - 16] >> 4) - 8
                                : static_cast<int8_t>(block[2 + l]);
              dot += v * xq.q[static_cast<size_t>((r * nb + b) * 32 + l)];
            }
            const double term = static_cast<double>(kiln::detail::HalfBitsToFloat(half)) *
                                xq.d[static_cast<size_t>(r * nb + b)] * static_cast<double>(dot);
            want[static_cast<size_t>(r * n + j)] += term;
            size[static_cast<size_t>(r * n + j)] += std::abs(term);
          }
      ExpectOnEveryIsa(
          [&](Int8DotIsa isa, float* y) {
            cpu::GGMLMatmul p{nullptr, m, k, n, w.data(), type, y};
            cpu::RunGGMLInt8(p, xq, 0, n / 2, isa);  // Two column ranges, as two threads run them.
            cpu::RunGGMLInt8(p, xq, n / 2, n, isa);
          },
          want, size, what);
    }
  }
}

TEST(Int8Dot, Int8WeightProductsMatchTheDefinitionWithTheSameBitsOnEveryInstructionSet) {
  namespace cpu = kiln::compute::cpu;
  // Int8 weights (Case's four_bit off) and the column where two ranges meet.
  const std::vector<std::pair<Case, int64_t>> cases = {
      {{1, 64, 64, 64, false, false, false}, 32},   {{1, 256, 130, 256, false, false, true}, 64},
      {{2, 128, 100, 32, false, true, false}, 40},  {{3, 96, 64, 32, false, true, true}, 0},
      {{5, 128, 200, 64, false, false, false}, 72}, {{11, 64, 33, 64, false, true, false}, 1},
  };
  std::mt19937 rng(13);
  for (const auto& [c, split] : cases) {
    const std::string what = "m " + std::to_string(c.m) + " k " + std::to_string(c.k) + " n " +
                             std::to_string(c.n) + " block " + std::to_string(c.block) +
                             (c.zero ? " zero" : "") + (c.bias ? " bias" : "");
    RandomLinear operands(c, rng);
    LinearQuantMatmul& p = operands.p;
    const std::vector<float>&scale = operands.scale, &zero = operands.zero, &bias = operands.bias;
    const std::vector<uint8_t>& q = operands.q;
    ASSERT_TRUE(cpu::LinearInt8Runs(p));
    cpu::Q8Rows xq;
    cpu::QuantizeRowsQ8(operands.x.data(), c.m, c.k, Int8DotIsa::kScalar, xq);
    const std::vector<float> xsum = cpu::BlockSumsOf(p);
    // The definition in double: Σ_i s · w · dx · q + z · xsum, + bias.
    std::vector<double> want(static_cast<size_t>(c.m * c.n)), size(want.size());
    for (int64_t r = 0; r < c.m; ++r)
      for (int64_t j = 0; j < c.n; ++j) {
        double y = c.bias ? bias[static_cast<size_t>(j)] : 0.0, mag = std::abs(y);
        for (int64_t i = 0; i < c.k; ++i) {
          const size_t s = static_cast<size_t>((i / c.block) * c.n + j);
          const double term =
              static_cast<double>(scale[s]) * static_cast<int8_t>(q[static_cast<size_t>(i * c.n + j)]) *
              xq.d[static_cast<size_t>(r * xq.blocks + i / 32)] * xq.q[static_cast<size_t>(r * c.k + i)];
          y += term;
          mag += std::abs(term);
        }
        if (c.zero)
          for (int64_t b = 0; b < c.k / c.block; ++b) {
            const double term = static_cast<double>(zero[static_cast<size_t>(b * c.n + j)]) *
                                xsum[static_cast<size_t>(r * (c.k / c.block) + b)];
            y += term;
            mag += std::abs(term);
          }
        want[static_cast<size_t>(r * c.n + j)] = y;
        size[static_cast<size_t>(r * c.n + j)] = mag;
      }
    ExpectOnEveryIsa(
        [&](Int8DotIsa isa, float* y) {
          p.y = y;
          cpu::RunLinearInt8(p, xq, c.zero ? xsum.data() : nullptr, 0, split, isa);
          cpu::RunLinearInt8(p, xq, c.zero ? xsum.data() : nullptr, split, c.n, isa);
        },
        want, size, what);
  }
}

TEST(Int8Dot, OutputErrorAgainstFloat32StaysWithinTheQuantizationBars) {
  // One row of x (the integer path) through random weights: the output's relative error against
  // nn::Dense with the float32 weights, weights' and activations' rounding together; the bars are
  // 1e-2 for int8 per channel and 0.12 for the 4-bit schemes.
  using namespace kiln;
  using quant::Scheme;
  const Tensor w = kiln::test::NormalTensor({512, 96}, 21, 0.05f);
  const Tensor x = kiln::test::NormalTensor({1, 512}, 22, 1.0f);
  compute::BackendPtr cpu = compute::NewWithConfig("cpu");
  graph::Exec dense =
      graph::NewExec(cpu, [&](graph::Node xn) { return nn::Dense(xn, graph::Const(xn.graph(), w)); });
  const std::vector<float> want = dense.Call1(x).ToVector<float>();
  for (const auto& [scheme, bar] : std::vector<std::pair<Scheme, double>>{{Scheme::Int8, 1e-2},
                                                                          {Scheme::Int8Asymmetric, 1e-2},
                                                                          {Scheme::Q8_0, 1e-2},
                                                                          {Scheme::Q4_0, 0.12}}) {
    const quant::Quantized q = quant::Quantize(w, scheme);
    graph::Exec exec = graph::NewExec(cpu, [&](graph::Node xn) {
      return nn::QuantizedDense(xn, q.WeightsIn(xn.graph()), q.QuantizationIn(xn.graph()));
    });
    const std::vector<float> got = exec.Call1(x).ToVector<float>();
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      num += (got[i] - want[i]) * (got[i] - want[i]);
      den += want[i] * want[i];
    }
    const double err = std::sqrt(num / den);
    std::cout << quant::SchemeName(scheme) << ": output relative error " << err << "\n";
    EXPECT_LT(err, bar) << quant::SchemeName(scheme);
    EXPECT_GT(err, 0) << quant::SchemeName(scheme);
  }
}

TEST(Int8Dot, NonFiniteActivationsGiveNaN) {
  namespace cpu = kiln::compute::cpu;
  const int64_t k = 64, n = 4;
  std::vector<uint8_t> w(static_cast<size_t>(n * 2 * 34), 1);
  for (int64_t blk = 0; blk < n * 2; ++blk) {
    const uint16_t half = kiln::detail::FloatToHalfBits(0.5f);
    std::memcpy(w.data() + blk * 34, &half, 2);
  }
  std::vector<float> x(static_cast<size_t>(2 * k), 1.0f);
  x[40] = INFINITY;  // Row 0 only.
  for (Int8DotIsa isa : Int8DotIsasHere()) {
    cpu::Q8Rows xq;
    cpu::QuantizeRowsQ8(x.data(), 2, k, isa, xq);
    std::vector<float> y(static_cast<size_t>(2 * n));
    cpu::GGMLMatmul p{nullptr, 2, k, n, w.data(), cpu::kGGMLQ8_0, y.data()};
    cpu::RunGGMLInt8(p, xq, 0, n, isa);
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_TRUE(std::isnan(y[static_cast<size_t>(j)])) << cpu::Int8DotIsaName(isa);
      EXPECT_EQ(y[static_cast<size_t>(n + j)], 0.5f * 64) << cpu::Int8DotIsaName(isa);  // d · Σ 1 · 1.
    }
  }
}

TEST(Int8Dot, InstructionSetFollowsTheSimdTargetInForce) {
  namespace cpu = kiln::compute::cpu;
  const Int8DotIsa best = cpu::CurrentInt8DotIsa();
  cpu::ForEachFusedSimdTarget([&](const char* target) {
    const std::string name = target;
    const Int8DotIsa isa = cpu::CurrentInt8DotIsa();
    if (name.rfind("AVX3", 0) == 0)
      EXPECT_EQ(isa, best) << name;
    else if (name == "AVX2")
      EXPECT_EQ(isa, best == Int8DotIsa::kScalar ? Int8DotIsa::kScalar : Int8DotIsa::kAvx2) << name;
    else
      EXPECT_EQ(isa, Int8DotIsa::kScalar) << name;
  });
}

// ---- The Composite -------------------------------------------------------------------------------

struct CompositeCase {
  kiln::quant::Scheme scheme;
  int64_t block;
  int axis;
  int64_t n;
  bool kernel;  ///< Whether the cpu backend runs it with quant_matmul.
};

TEST(QuantMatmul, QuantizedDenseRunsTheKernelWhereItApplies) {
  using namespace kiln;
  using quant::Scheme;
  const std::vector<CompositeCase> cases = {
      {Scheme::Int8, 0, 0, 300, true},
      {Scheme::Int8, 64, 0, 257, true},
      {Scheme::Int4, 32, 0, 300, true},
      {Scheme::Int4Asymmetric, 32, 0, 130, true},
      {Scheme::Int8Asymmetric, 64, 0, 77, true},
      {Scheme::Int4, 32, 0, 129, false},  // Odd N: rows split bytes.
      {Scheme::Int8, 16, 1, 64, false},
      {Scheme::NF4, 64, 0, 64, true},
      {Scheme::NF4, 32, 0, 200, true},
      {Scheme::NF4, 16, 1, 64, false},
      {Scheme::Q8_0, 0, 0, 64, true},
      {Scheme::Q4_0, 0, 0, 70, true},
      {Scheme::Q4_K, 0, 0, 64, true},
      {Scheme::Q6_K, 0, 0, 40, true},
  };
  const int64_t k = 256;
  compute::BackendPtr cpu = compute::NewWithConfig("cpu:threads=2,serial_work=0");
  compute::BackendPtr cpu_float =
      compute::NewWithConfig("cpu:threads=2,serial_work=0,int8_activations=false");
  compute::BackendPtr ref = compute::NewWithConfig("ref");
  auto* cpu_backend = dynamic_cast<compute::cpu::CpuBackend*>(cpu.get());
  ASSERT_NE(cpu_backend, nullptr);
  uint32_t seed = 10;
  for (const CompositeCase& c : cases) {
    const std::string what = quant::SchemeName(c.scheme) + " block " + std::to_string(c.block) + " axis " +
                             std::to_string(c.axis) + " n " + std::to_string(c.n);
    const Tensor w = kiln::test::NormalTensor({k, c.n}, seed++, 0.1f);
    quant::Quantized q = quant::Quantize(w, c.scheme, c.block, c.axis);
    auto build = [&](graph::Graph& g, graph::Node x) {
      return nn::QuantizedDense(x, q.WeightsIn(g), q.QuantizationIn(g));
    };
    // The kernel choice, read off the Composite instruction.
    graph::Graph g;
    std::shared_ptr<const compute::Program> program =
        g.Build({build(g, g.Parameter(Shape(DType::Float32, {3, k})))});
    int composites = 0;
    for (const compute::Instruction& inst : program->Instructions()) {
      if (inst.op != compute::OpType::Composite) continue;
      ++composites;
      EXPECT_EQ(inst.attrs.name, "kiln.quantized_matmul") << what;
      EXPECT_EQ(static_cast<bool>(compute::cpu::MakeQuantizedMatmulKernel(cpu_backend, inst)), c.kernel)
          << what;
    }
    EXPECT_EQ(composites, 1) << what;
    // cpu (kernel or decomposition) against ref, for one row, a few, rows of a rank-3 x, and
    // enough rows for the tiled path (dequantized tiles through sgemm).
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, k}, std::vector<int64_t>{5, k},
                                             std::vector<int64_t>{2, 3, k}, std::vector<int64_t>{20, k}}) {
      const Tensor x = kiln::test::NormalTensor(dims, seed++, 1.0f);
      auto run = [&](const compute::BackendPtr& backend) {
        graph::Exec exec = graph::NewExec(backend, [&](graph::Node xn) { return build(xn.graph(), xn); });
        return exec.Call1(x).ToVector<float>();
      };
      const std::vector<float> want = run(ref);
      // Q4_0 and Q8_0 at few rows quantize x to int8 in blocks of 32 (int8_dot.h): each output
      // may move by at most Σ_i |W[i, j]| · (the half step of x[i]'s block), max|x| / 254.
      // So do int8 weights whose blocks of scales are whole blocks of 32; their bound counts
      // |W - zero point|, the part x is multiplied by in integers.
      const bool int8_weights = (c.scheme == Scheme::Int8 || c.scheme == Scheme::Int8Asymmetric) &&
                                c.axis == 0 && (c.block == 0 || c.block % 32 == 0);
      const bool int8 =
          (c.scheme == Scheme::Q4_0 || c.scheme == Scheme::Q8_0 || int8_weights) && x.shape().Size() / k < 12;
      std::vector<double> bound(want.size());
      if (int8) {
        const std::vector<float> xv = x.ToVector<float>();
        std::vector<float> wd = quant::Dequantize(q).ToVector<float>();
        if (q.zero_points.Ok()) {
          const std::vector<float> z = q.zero_points.ToVector<float>();
          for (size_t i = 0; i < wd.size(); ++i)
            wd[i] -= z[(i / static_cast<size_t>(c.n)) / static_cast<size_t>(q.block_size) *
                           static_cast<size_t>(c.n) +
                       i % static_cast<size_t>(c.n)];
        }
        for (size_t i = 0; i < want.size(); ++i) {
          const int64_t r = static_cast<int64_t>(i) / c.n, j = static_cast<int64_t>(i) % c.n;
          for (int64_t b = 0; b < k; b += 32) {
            double amax = 0, wsum = 0;
            for (int64_t l = b; l < b + 32; ++l) {
              amax = std::max(amax, static_cast<double>(std::abs(xv[static_cast<size_t>(r * k + l)])));
              wsum += std::abs(wd[static_cast<size_t>(l * c.n + j)]);
            }
            bound[i] += amax / 254 * wsum;
          }
        }
      }
      compute::cpu::ForEachFusedSimdTarget([&](const char* target) {  // Each kernel on every target.
        const std::vector<float> got = run(cpu);
        ASSERT_EQ(got.size(), want.size()) << what;
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], bound[i] * 1.0001 + 1e-4 * (1 + std::abs(want[i])))
              << what << " on " << target << " element " << i;
        if (!int8) return;
        // With int8_activations=false x stays float, as close to ref as every other kernel.
        const std::vector<float> exact = run(cpu_float);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(exact[i], want[i], 1e-4 * (1 + std::abs(want[i])))
              << what << " (float activations) on " << target << " element " << i;
      });
    }
  }
}

TEST(QuantMatmul, GGMLKernelLayoutsMatchQuantsTable) {
  // The cpu backend may not use kiln::quant (layering), so its kernels keep the four block
  // layouts they decode; they must agree with quant's table of ggml types.
  using kiln::nn::GGMLType;
  namespace cpu = kiln::compute::cpu;
  const std::pair<int, GGMLType> types[] = {{cpu::kGGMLQ8_0, GGMLType::Q8_0},
                                            {cpu::kGGMLQ4_0, GGMLType::Q4_0},
                                            {cpu::kGGMLQ4_K, GGMLType::Q4_K},
                                            {cpu::kGGMLQ6_K, GGMLType::Q6_K}};
  for (const auto& [kernel, type] : types) {
    EXPECT_EQ(kernel, static_cast<int>(type));
    const kiln::quant::GGMLTypeInfo* info = kiln::quant::FindGGMLType(kernel);
    ASSERT_NE(info, nullptr) << kernel;
    EXPECT_EQ(cpu::GGMLBlockBytesOf(kernel), info->block_bytes) << info->name;
    EXPECT_EQ(cpu::GGMLBlockValuesOf(kernel), info->block_values) << info->name;
  }
}

}  // namespace
