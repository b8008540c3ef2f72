// Tests for the cpu backend's quantized matrix-product kernel (quant_matmul.cc): int8 and packed
// int4 weights, blocks of scales along K, zero points, bias, column ranges and ragged sizes,
// against an element-by-element reference written here, on every SIMD target this CPU runs; and
// for the "kiln.quantized_matmul" Composite that nn::QuantizedDense emits: which forms the cpu
// backend runs with the kernel (quant_composite.cc), and that both paths agree with ref.

#include "backends/cpu/quant_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/ggml_matmul.h"
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

void Check(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(static_cast<size_t>(c.m * c.k)), scale(static_cast<size_t>(c.k / c.block * c.n)),
      zero(scale.size()), bias(static_cast<size_t>(c.n));
  for (float& v : x) v = u(rng);
  for (float& v : scale) v = 0.01f + 0.1f * std::abs(u(rng));
  for (float& v : zero) v = 0.05f * u(rng);
  for (float& v : bias) v = u(rng);
  const int64_t row_bytes = c.four_bit ? c.n / 2 : c.n;
  std::vector<uint8_t> q(static_cast<size_t>(c.k * row_bytes));
  for (uint8_t& b : q) b = static_cast<uint8_t>(rng() & 0xFF);
  LinearQuantMatmul p;
  p.x = x.data();
  p.m = c.m;
  p.k = c.k;
  p.n = c.n;
  p.q = q.data();
  p.four_bit = c.four_bit;
  std::vector<float> table(16);
  for (float& v : table) v = u(rng);
  p.table = c.nf4 ? table.data() : nullptr;
  p.scale = scale.data();
  p.zero = c.zero ? zero.data() : nullptr;
  p.block = c.block;
  p.bias = c.bias ? bias.data() : nullptr;
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
      compute::cpu::ForEachFusedSimdTarget([&](const char* target) {  // Each kernel on every target.
        const std::vector<float> got = run(cpu);
        ASSERT_EQ(got.size(), want.size()) << what;
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])))
              << what << " on " << target << " element " << i;
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
