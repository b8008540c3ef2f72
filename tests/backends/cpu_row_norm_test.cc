// Tests of the cpu compiler's row normalisations (backends/cpu/row_norms.cc, row_kernels.cc): a
// softmax or a layer normalisation over the last axis, as graph::Softmax, nn::LayerNorm and
// imported models write them, becomes one kRowNorm node; results against the reference backend,
// against the cpu backend without the optimising passes and with `simd=scalar`; chains whose
// values are read elsewhere stay as they are.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/passes.h"
#include "backends/cpu_test_util.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

using compute::OpType;
using compute::cpu::Module;
using compute::cpu::NodeKind;
using compute::cpu::RowNorm;
using graph::Graph;
using graph::Node;
using kiln::test::CountOps;
using kiln::test::ExpectCpuMatchesRefAndPlain;
using kiln::test::RandomUniform;

/// The module after the cleanups and the row normalisation pass (as the compiler runs them).
Module Normed(const compute::Program& program) {
  Module m = kiln::test::CleanedModule(program);
  compute::cpu::FuseRowNorms(m);
  compute::cpu::EliminateDeadCode(m);
  return m;
}

/// The kRowNorm nodes of `m`.
std::vector<RowNorm> RowNorms(const Module& m) {
  std::vector<RowNorm> r;
  for (const compute::cpu::Node& n : m.nodes)
    if (n.kind == NodeKind::kRowNorm) r.push_back(*n.row_norm);
  return r;
}

/// The cpu configurations besides the default: the kernels' scalar forms and every other SIMD
/// target this machine runs (AVX2, the portable one: their partial vectors take other paths).
std::vector<std::string> OtherCpuConfigs() {
  std::vector<std::string> configs = {"cpu:threads=2,simd=scalar,serial_work=0"};
  for (const compute::BackendInfo& info : compute::RegisteredBackends())
    for (const std::string& v : info.variants) configs.push_back(v + ",threads=2,serial_work=0");
  return configs;
}

/// ExpectCpuMatchesRefAndPlain, and the same against each of OtherCpuConfigs.
void ExpectMatches(const std::shared_ptr<const compute::Program>& program, const std::vector<Tensor>& inputs,
                   int64_t terms) {
  ExpectCpuMatchesRefAndPlain(program, inputs, terms);
  const std::vector<Tensor> want = kiln::test::RunProgram(kiln::test::Backend("ref"), program, inputs);
  for (const std::string& config : OtherCpuConfigs()) {
    const std::vector<Tensor> got = kiln::test::RunProgram(kiln::test::Backend(config), program, inputs);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(kiln::test::Close(got[i], want[i], terms)) << "output " << i << " with " << config;
  }
}

TEST(CpuRowNorms, SoftmaxOverTheLastAxisIsOneNode) {
  // Rows of 40 (two vectors and a partial one), 3 (shorter than a vector), 64 (whole vectors,
  // held in registers) and 1000 (the long-row loop); the largest tensor splits across the team.
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{3, 7, 40}, {5, 3}, {6, 64}, {4, 1000}, {64, 8, 40, 40}}) {
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, dims));
    auto program = g.Build({graph::Softmax(x * 8.0f)});
    const Module m = Normed(*program);
    const std::vector<RowNorm> norms = RowNorms(m);
    ASSERT_EQ(norms.size(), 1u) << m.ToString();
    EXPECT_EQ(norms[0].kind, RowNorm::Kind::kSoftmax);
    EXPECT_EQ(CountOps(m, OpType::ReduceMax), 0) << m.ToString();
    EXPECT_EQ(CountOps(m, OpType::Exp), 0) << m.ToString();
    ExpectMatches(program, {RandomUniform(dims, 7)}, dims.back());
  }
}

/// Whether got and want agree as Close does, NaN matching NaN.
::testing::AssertionResult SameOrBothNaN(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) ? std::isnan(got[i])
                            : std::abs(got[i] - want[i]) <= 1e-6f * (1 + std::abs(want[i])))
      continue;
    return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

TEST(CpuRowNorms, SoftmaxRowsWithInfinitiesAndNaNAreTheReferences) {
  // Per row of 20: masked keys (-inf), every key masked, +inf, a NaN, and values so far apart
  // that exp(x - max) is below float32's normal range.
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr int64_t kRow = 20;
  std::vector<float> v(6 * kRow);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i)) * 3;
  for (int64_t j = 0; j < kRow; j += 3) v[static_cast<size_t>(kRow + j)] = -kInf;
  for (int64_t j = 0; j < kRow; ++j) v[static_cast<size_t>(2 * kRow + j)] = -kInf;
  v[3 * kRow + 17] = kInf;
  v[4 * kRow + 5] = std::nanf("");
  for (int64_t j = 0; j < kRow; ++j) v[static_cast<size_t>(5 * kRow + j)] = j % 2 == 0 ? 0.0f : -95.0f;
  const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {6, kRow}), v);
  Graph g;
  auto program = g.Build({graph::Softmax(g.Parameter(x.shape()))});
  ASSERT_EQ(RowNorms(Normed(*program)).size(), 1u);
  const std::vector<float> want =
      kiln::test::RunProgram(kiln::test::Backend("ref"), program, {x})[0].ToVector<float>();
  std::vector<std::string> configs = OtherCpuConfigs();
  configs.push_back("cpu:threads=2,serial_work=0");
  for (const std::string& config : configs) {
    const std::vector<float> got =
        kiln::test::RunProgram(kiln::test::Backend(config), program, {x})[0].ToVector<float>();
    EXPECT_TRUE(SameOrBothNaN(got, want)) << config;
  }
  // The masked keys get exactly 0, a NaN or +inf spoils its whole row (as the reference).
  EXPECT_EQ(want[kRow], 0.0f);
  EXPECT_TRUE(std::isnan(want[2 * kRow]) && std::isnan(want[3 * kRow]) && std::isnan(want[4 * kRow]));
}

TEST(CpuRowNorms, LayerNormFormsAreOneNode) {
  const std::vector<int64_t> dims = {256, 120};  // Large enough to split across the team.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, dims));
  Node gamma = g.Parameter(Shape(DType::Float32, {120}));
  Node beta = g.Parameter(Shape(DType::Float32, {1, 120}));
  // nn::LayerNorm with a gain and an offset, without them, and the form ONNX exporters write:
  // (x - mean) / sqrt(mean((x - mean)^2) + eps) * gamma + beta, the means as ReduceSum / L.
  Node full = nn::LayerNorm(x, {-1}, gamma, beta, 1e-5);
  Node bare = nn::LayerNorm(x + 1.0f, {-1}, Node(), Node(), 1e-3);
  Node mean = graph::ReduceAndKeep(x * 2.0f, graph::ReduceSum, {1}) / 120.0f;
  Node d = x * 2.0f - mean;
  Node var = graph::ReduceAndKeep(d * d, graph::ReduceSum, {1}) / 120.0f;
  Node onnx = d / graph::Sqrt(var + 1e-6f) * graph::Reshape(gamma, {1, 120}) + beta;
  auto program = g.Build({full, bare, onnx});
  const Module m = Normed(*program);
  const std::vector<RowNorm> norms = RowNorms(m);
  ASSERT_EQ(norms.size(), 3u) << m.ToString();
  for (const RowNorm& n : norms) EXPECT_EQ(n.kind, RowNorm::Kind::kLayerNorm);
  EXPECT_EQ(CountOps(m, OpType::ReduceSum), 0) << m.ToString();
  std::vector<float> eps;
  for (const RowNorm& n : norms) eps.push_back(n.epsilon);
  EXPECT_EQ(eps, (std::vector<float>{1e-5f, 1e-3f, 1e-6f}));
  EXPECT_TRUE(norms[0].scale && norms[0].shift && !norms[1].scale && !norms[1].shift && norms[2].scale &&
              norms[2].shift);
  ExpectMatches(program, {RandomUniform(dims, 1), RandomUniform({120}, 2), RandomUniform({1, 120}, 3)}, 120);
}

TEST(CpuRowNorms, ChainsReadElsewhereOrOverOtherAxesStay) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {6, 40}));
  // A softmax over the first axis, one whose exponentials are an output too, and a layer
  // normalisation whose centred values another output reads.
  Node over_rows = graph::Softmax(x, {0});
  Node e = graph::Exp(x - graph::StopGradient(graph::ReduceAndKeep(x, graph::ReduceMax, {1})));
  Node shared = e / graph::ReduceAndKeep(e, graph::ReduceSum, {1});
  Node centred = x - graph::ReduceAndKeep(x, graph::ReduceMean, {1});
  Node norm = centred * graph::Rsqrt(graph::ReduceAndKeep(centred * centred, graph::ReduceMean, {1}) + 1e-5f);
  auto program = g.Build({over_rows, shared, e, norm, centred});
  const Module m = Normed(*program);
  EXPECT_TRUE(RowNorms(m).empty()) << m.ToString();
  ExpectMatches(program, {RandomUniform({6, 40}, 4)}, 40);
}

TEST(CpuRowNorms, LayerNormGradientMatchesTheReference) {
  // Training keeps the forward's intermediates for the backward pass: the chain is not rewritten
  // there, and the softmax of the loss is (its exponentials are read once).
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {8, 40}));
  Node gamma = g.Parameter(Shape(DType::Float32, {40}));
  Node y = graph::Softmax(nn::LayerNorm(x, {-1}, gamma, Node(), 1e-5));
  Node loss = graph::ReduceSum(y * y, {});
  const std::vector<Node> grads = graph::Gradient(loss, {x, gamma});
  auto program = g.Build({loss, grads[0], grads[1]});
  ExpectMatches(program, {RandomUniform({8, 40}, 5), RandomUniform({40}, 6)}, 40);
}

}  // namespace
}  // namespace kiln
