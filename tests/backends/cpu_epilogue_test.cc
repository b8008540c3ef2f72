// Tests of the cpu compiler's contraction epilogues (backends/cpu/epilogue.cc): which rewrites
// the pass makes (bias and activation into DotGeneral and ConvGeneral, transposed matmul
// results folded into the matmul) and which it refuses (an intermediate read elsewhere, a bias
// along another axis, other dtypes); results against the reference backend and against
// `fusion=false`; the loop form for contractions oneDNN declines; gradients through layers
// whose forward pass carries epilogues.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/passes.h"
#include "backends/cpu_test_util.h"
#include "kiln/graph/gradient.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

using kiln::test::Close;
using kiln::test::CountOps;
using kiln::test::ExpectCpuMatchesRefAndPlain;
using kiln::test::RandomUniform;
using kiln::test::RunProgram;

using compute::OpType;
using compute::cpu::Activation;
using compute::cpu::Module;
using graph::Graph;
using graph::Node;

const compute::BackendPtr& Cpu() { return kiln::test::Backend("cpu:threads=2,serial_work=0"); }
const compute::BackendPtr& CpuNoFusion() {
  return kiln::test::Backend("cpu:threads=2,fusion=false,serial_work=0");
}
const compute::BackendPtr& Ref() { return kiln::test::Backend("ref"); }

/// The cpu compiler's module for `program` after its cleanups and the epilogue pass.
Module Epilogued(const compute::Program& program, std::string* log = nullptr) {
  Module m = kiln::test::CleanedModule(program);
  const std::string s = compute::cpu::FuseEpilogues(m).log;
  compute::cpu::EliminateDeadCode(m);
  if (log != nullptr) *log = s;
  return m;
}

/// The nodes of `m` carrying an epilogue.
std::vector<const compute::cpu::Node*> WithEpilogue(const Module& m) {
  std::vector<const compute::cpu::Node*> out;
  for (const compute::cpu::Node& n : m.nodes)
    if (n.epilogue) out.push_back(&n);
  return out;
}

/// The kernel names the cpu backend picks for the epilogue nodes of `m`.
std::vector<std::string> KernelNames(const Module& m, bool all_products = false) {
  auto* cpu = dynamic_cast<compute::cpu::CpuBackend*>(Cpu().get());
  std::vector<std::string> names;
  for (const compute::cpu::Node& n : m.nodes) {
    const bool product = n.kind == compute::cpu::NodeKind::kPrimitive && n.inst.op == OpType::DotGeneral;
    if (!n.epilogue && !(all_products && product)) continue;
    std::vector<Shape> operands;
    for (int o : n.inst.operands) operands.push_back(m.nodes[static_cast<size_t>(o)].inst.shape);
    names.push_back(compute::cpu::ChooseKernel(*cpu, cpu->options().threads, n, operands).name);
  }
  return names;
}

/// x·w + b (b broadcast over the rows), as the dense layers write it.
Node Dense(Node x, Node w, Node b) {
  return graph::MatMul(x, w) + graph::Reshape(b, {1, b.shape().Dimensions()[0]});
}

TEST(CpuEpilogue, DenseBiasReluBecomesOneMatmul) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {37, 50}));
  Node w = g.Parameter(Shape(DType::Float32, {50, 23}));
  Node b = g.Parameter(Shape(DType::Float32, {23}));
  auto program = g.Build({graph::MaxScalar(Dense(x, w, b), 0.0f)});
  std::string log;
  const Module m = Epilogued(*program, &log);
  ASSERT_EQ(WithEpilogue(m).size(), 1u) << m.ToString();
  const compute::cpu::Node& n = *WithEpilogue(m)[0];
  EXPECT_EQ(n.inst.op, OpType::DotGeneral);
  EXPECT_TRUE(n.epilogue->bias);
  EXPECT_EQ(n.epilogue->axis, 1);
  EXPECT_EQ(n.epilogue->activation, Activation::kRelu);
  EXPECT_EQ(n.inst.operands.size(), 3u);
  EXPECT_EQ(CountOps(m, OpType::Add), 0);
  EXPECT_EQ(CountOps(m, OpType::Max), 0);
  EXPECT_NE(log.find("epilogue"), std::string::npos);
  EXPECT_NE(m.ToString().find("+Epilogue[bias(axis 1), Relu]"), std::string::npos) << m.ToString();
  const std::vector<std::string> names = KernelNames(m);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].rfind("dnnl.matmul[", 0), 0u) << names[0];
  EXPECT_NE(names[0].find("+post[bias(axis 1), Relu]"), std::string::npos) << names[0];
  ExpectCpuMatchesRefAndPlain(
      program, {RandomUniform({37, 50}, 1), RandomUniform({50, 23}, 2), RandomUniform({23}, 3)}, 50);
}

TEST(CpuEpilogue, VeryLargeProductsRunThroughSgemmWithTheirEpilogue) {
  // From 2^32 multiply-adds, sgemm outruns the primitive: 1024x2048x2048 takes it, with a bias
  // and a ReLU after (a logistic post-op keeps the primitive), weights stored either way round;
  // one row fewer stays with the primitive. The reference backend is too slow for such products:
  // three rows are checked against sums in double.
  const int64_t m = 1024, k = 2048, n = 2048;
  for (int c = 0; c < 5; ++c) {
    SCOPED_TRACE(c);
    const int64_t rows = c == 4 ? m - 1 : m;
    const bool transposed = c == 3;
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {rows, k}));
    Node w = g.Parameter(
        Shape(DType::Float32, transposed ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}));
    Node b = g.Parameter(Shape(DType::Float32, {n}));
    Node y = transposed ? graph::Dot(x, w).General({1}, {}, {1}, {}) : graph::MatMul(x, w);
    if (c == 1 || c == 2) y = y + graph::BroadcastPrefix(b, {rows});
    if (c == 1) y = graph::MaxScalar(y, 0.0f);
    if (c == 2) y = graph::Sigmoid(y);
    auto program = g.Build({y});
    const std::vector<std::string> names = KernelNames(Epilogued(*program), /*all_products=*/true);
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind(c == 2 || c == 4 ? "dnnl.matmul[" : "dnnl.sgemm", 0), 0u) << names[0];
    const std::vector<Tensor> in = {
        RandomUniform({rows, k}, 20 + c),
        RandomUniform(transposed ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 30 + c),
        RandomUniform({n}, 40 + c)};
    const std::vector<float> got = RunProgram(Cpu(), program, in)[0].ToVector<float>();
    const std::vector<float> xs = in[0].ToVector<float>(), ws = in[1].ToVector<float>(),
                             bs = in[2].ToVector<float>();
    for (int64_t i : {int64_t{0}, rows / 2, rows - 1}) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, scale = 0;
        for (int64_t t = 0; t < k; ++t) {
          const double term = static_cast<double>(xs[static_cast<size_t>(i * k + t)]) *
                              ws[static_cast<size_t>(transposed ? j * k + t : t * n + j)];
          sum += term;
          scale += std::abs(term);
        }
        if (c == 1 || c == 2) sum += bs[static_cast<size_t>(j)];
        if (c == 1) sum = std::max(sum, 0.0);
        if (c == 2) sum = 1 / (1 + std::exp(-sum));
        ASSERT_NEAR(got[static_cast<size_t>(i * n + j)], sum, 1e-5 * (scale + 1))
            << "row " << i << " column " << j;
      }
    }
  }
}

TEST(CpuEpilogue, MatrixVectorProductsRunThroughSgemmWithTheirEpilogue) {
  // One row on the left (a batch of one, a decoding step): dnnl_sgemm streams the weights
  // faster than the primitive. Bias and ReLU still apply (the bias written first, the ReLU after);
  // a logistic post-op keeps the primitive; weights stored transposed work too.
  for (int c = 0; c < 4; ++c) {
    SCOPED_TRACE(c);
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {1, 300}));
    Node w = g.Parameter(
        Shape(DType::Float32, c == 3 ? std::vector<int64_t>{70, 300} : std::vector<int64_t>{300, 70}));
    Node b = g.Parameter(Shape(DType::Float32, {70}));
    Node y = c == 3 ? graph::Dot(x, w).General({1}, {}, {1}, {}) : graph::MatMul(x, w);
    if (c >= 1) y = y + graph::BroadcastPrefix(b, {1});  // A BroadcastInDim: the epilogue's bias.
    if (c == 1) y = graph::MaxScalar(y, 0.0f);
    if (c == 2) y = graph::Sigmoid(y);
    auto program = g.Build({y});
    const std::vector<std::string> names = KernelNames(Epilogued(*program), /*all_products=*/true);
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind(c == 2 ? "dnnl.matmul[" : "dnnl.sgemm", 0), 0u) << names[0];
    if (c == 1) {
      EXPECT_NE(names[0].find("+post[bias(axis 1), Relu]"), std::string::npos) << names[0];
    }
    ExpectCpuMatchesRefAndPlain(
        program,
        {RandomUniform({1, 300}, 7 + c),
         RandomUniform(c == 3 ? std::vector<int64_t>{70, 300} : std::vector<int64_t>{300, 70}, 8),
         RandomUniform({70}, 9)},
        300);
  }
}

TEST(CpuEpilogue, ABatchOfOneFoldsItsBiasWithoutABroadcast) {
  // Dense at batch 1: the bias reshaped to [1, N] already has the result's shape, so no
  // BroadcastInDim is left; it is still the product's bias, and any [1, N] addend is (a
  // residual, say). Two rows are not: the addend may differ per row.
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE(c);
    const int64_t rows = c == 2 ? 2 : 1;
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {rows, 300}));
    Node w = g.Parameter(Shape(DType::Float32, {300, 70}));
    Node b = g.Parameter(Shape(DType::Float32, {70}));
    Node r = g.Parameter(Shape(DType::Float32, {rows, 70}));
    Node y = c == 0 ? Dense(x, w, b) : graph::MatMul(x, w) + graph::Exp(r);
    auto program = g.Build({graph::MaxScalar(y, 0.0f)});
    const Module m = Epilogued(*program);
    if (c == 2) {
      EXPECT_TRUE(WithEpilogue(m).empty()) << m.ToString();
    } else {
      const std::vector<std::string> names = KernelNames(m, /*all_products=*/true);
      ASSERT_EQ(names.size(), 1u);
      EXPECT_EQ(names[0].rfind("dnnl.sgemm", 0), 0u) << names[0];
      EXPECT_NE(names[0].find("+post[bias(axis 1), Relu]"), std::string::npos) << names[0];
      EXPECT_EQ(CountOps(m, OpType::Add), 0);
    }
    ExpectCpuMatchesRefAndPlain(program,
                                {RandomUniform({rows, 300}, 40 + c), RandomUniform({300, 70}, 41),
                                 RandomUniform({70}, 42), RandomUniform({rows, 70}, 43)},
                                300);
  }
}

TEST(CpuEpilogue, ABatchOfOnesBiasAndReluKeepSpecialValues) {
  // The sgemm path adds the bias and applies the ReLU in a loop of its own: NaN stays NaN, an
  // infinite bias wins, -0 becomes +0, and every other value is ref's to the bit.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {1, 40}));
  Node w = g.Parameter(Shape(DType::Float32, {40, 37}));
  Node b = g.Parameter(Shape(DType::Float32, {37}));
  auto program = g.Build({graph::MaxScalar(Dense(x, w, b), 0.0f)});
  const std::vector<std::string> names = KernelNames(Epilogued(*program), /*all_products=*/true);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].rfind("dnnl.sgemm", 0), 0u) << names[0];
  EXPECT_NE(names[0].find("+post[bias(axis 1), Relu]"), std::string::npos) << names[0];
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> xv(40), wv(40 * 37), bv(37);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = i < 20 ? 0.0f : 0.25f * static_cast<float>(i % 7) - 0.75f;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.125f * static_cast<float>(i % 9) - 0.5f;
  for (size_t f = 0; f < bv.size(); ++f) bv[f] = 0.5f * static_cast<float>(f % 5) - 1.0f;
  bv[3] = nan;
  bv[4] = -inf;
  bv[5] = inf;
  bv[6] = -0.0f;
  const std::vector<Tensor> in = {Tensor::FromFlat(Shape(DType::Float32, {1, 40}), xv),
                                  Tensor::FromFlat(Shape(DType::Float32, {40, 37}), wv),
                                  Tensor::FromFlat(Shape(DType::Float32, {37}), bv)};
  const std::vector<float> got = RunProgram(Cpu(), program, in)[0].ToVector<float>();
  const std::vector<float> want = RunProgram(Ref(), program, in)[0].ToVector<float>();
  ASSERT_EQ(got.size(), 37u);
  int zeros = 0, positives = 0;
  for (size_t f = 0; f < got.size(); ++f) {
    if (std::isnan(want[f])) {
      EXPECT_TRUE(std::isnan(got[f])) << "feature " << f;
      continue;
    }
    EXPECT_FALSE(std::signbit(got[f])) << "feature " << f << ": " << got[f];
    EXPECT_TRUE(got[f] == want[f] || std::fabs(got[f] - want[f]) <= 1e-5f)
        << "feature " << f << ": " << got[f] << " vs " << want[f];
    (got[f] == 0.0f ? zeros : positives) += 1;
  }
  EXPECT_TRUE(std::isnan(got[3]));
  EXPECT_EQ(got[4], 0.0f);
  EXPECT_EQ(got[5], inf);
  EXPECT_GT(zeros, 5);  // Both sides of the ReLU are exercised.
  EXPECT_GT(positives, 5);
}

TEST(CpuEpilogue, BiasFirstAndOtherActivations) {
  // Logistic folds; Tanh does not (oneDNN's tanh gives +0 for -0), its bias still does.
  for (int act = 0; act < 2; ++act) {
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {16, 40}));
    Node w = g.Parameter(Shape(DType::Float32, {40, 12}));
    Node b = g.Parameter(Shape(DType::Float32, {12}));
    // The bias on the left of the Add.
    Node y = graph::Reshape(b, {1, 12}) + graph::MatMul(x, w);
    y = act == 0 ? graph::Tanh(y) : graph::Sigmoid(y);
    auto program = g.Build({y});
    const Module m = Epilogued(*program);
    ASSERT_EQ(WithEpilogue(m).size(), 1u) << m.ToString();
    EXPECT_TRUE(WithEpilogue(m)[0]->epilogue->bias);
    EXPECT_EQ(WithEpilogue(m)[0]->epilogue->activation, act == 0 ? Activation::kNone : Activation::kLogistic);
    EXPECT_EQ(CountOps(m, OpType::Tanh), act == 0 ? 1 : 0);
    ExpectCpuMatchesRefAndPlain(
        program, {RandomUniform({16, 40}, 4), RandomUniform({40, 12}, 5), RandomUniform({12}, 6)}, 40);
  }
}

TEST(CpuEpilogue, ReluKeepsNaNAndGivesPositiveZero) {
  // NaN rows stay NaN through the relu and -0 results become +0, as Max(x, +0) does on ref;
  // Max(x, -0) keeps -0, so it is not a relu.
  for (float zero : {0.0f, -0.0f}) {
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {4, 3}));
    Node w = g.Parameter(Shape(DType::Float32, {3, 16}));
    auto program = g.Build({graph::MaxScalar(graph::MatMul(x, w), zero)});
    const Module m = Epilogued(*program);
    EXPECT_EQ(WithEpilogue(m).size(), std::signbit(zero) ? 0u : 1u) << m.ToString();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Row 0: NaN; row 1: zeros times negative weights (-0 sums); rows 2, 3: ordinary values.
    const Tensor xs = Tensor::FromFlat(Shape(DType::Float32, {4, 3}),
                                       std::vector<float>{nan, 1, 1, 0, 0, 0, 0.5f, -1, 2, -0.25f, 3, 1});
    std::vector<float> wv(48);
    for (size_t i = 0; i < wv.size(); ++i)
      wv[i] = (i % 3 == 0 ? -1.0f : 0.5f) * static_cast<float>(i % 5 + 1);
    const Tensor ws = Tensor::FromFlat(Shape(DType::Float32, {3, 16}), wv);
    const std::vector<float> got = RunProgram(Cpu(), program, {xs, ws})[0].ToVector<float>();
    const std::vector<float> want = RunProgram(Ref(), program, {xs, ws})[0].ToVector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "element " << i;
      if (std::isnan(want[i])) continue;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i]))
          << "element " << i << ": " << got[i] << " vs " << want[i];
      EXPECT_NEAR(got[i], want[i], 1e-5f) << "element " << i;
    }
    EXPECT_TRUE(std::isnan(got[0]));
    EXPECT_FALSE(std::signbit(got[16]));
  }
}

TEST(CpuEpilogue, LargeResultReluOnTheTeam) {
  // 256 x 512 floats (512 KiB): the relu after the matmul splits over the two threads.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {256, 64}));
  Node w = g.Parameter(Shape(DType::Float32, {64, 512}));
  Node b = g.Parameter(Shape(DType::Float32, {512}));
  auto program = g.Build({graph::MaxScalar(Dense(x, w, b), 0.0f)});
  ASSERT_EQ(WithEpilogue(Epilogued(*program)).size(), 1u);
  const std::vector<Tensor> inputs = {RandomUniform({256, 64}, 35), RandomUniform({64, 512}, 36),
                                      RandomUniform({512}, 37)};
  ExpectCpuMatchesRefAndPlain(program, inputs, 64);
  // About half the results are clamped to exactly +0.
  const std::vector<float> got = RunProgram(Cpu(), program, inputs)[0].ToVector<float>();
  const auto zeros =
      std::count_if(got.begin(), got.end(), [](float v) { return v == 0.0f && !std::signbit(v); });
  EXPECT_GT(zeros, 256 * 512 / 4);
  EXPECT_LT(zeros, 256 * 512 * 3 / 4);
}

TEST(CpuEpilogue, ReluWithoutBias) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {8, 30}));
  Node w = g.Parameter(Shape(DType::Float32, {30, 9}));
  auto program = g.Build({graph::MaxScalar(graph::MatMul(x, w), 0.0f)});
  const Module m = Epilogued(*program);
  ASSERT_EQ(WithEpilogue(m).size(), 1u) << m.ToString();
  EXPECT_FALSE(WithEpilogue(m)[0]->epilogue->bias);
  EXPECT_EQ(WithEpilogue(m)[0]->inst.operands.size(), 2u);
  ExpectCpuMatchesRefAndPlain(program, {RandomUniform({8, 30}, 7), RandomUniform({30, 9}, 8)}, 30);
}

TEST(CpuEpilogue, ConvBiasRelu) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {4, 12, 12, 3}));
  Node k = g.Parameter(Shape(DType::Float32, {5, 5, 3, 8}));
  Node b = g.Parameter(Shape(DType::Float32, {8}));
  Node y = graph::Convolve(x, k).PadSame().Done() + graph::Reshape(b, {1, 1, 1, 8});
  auto program = g.Build({graph::MaxScalar(y, 0.0f)});
  const Module m = Epilogued(*program);
  ASSERT_EQ(WithEpilogue(m).size(), 1u) << m.ToString();
  const compute::cpu::Node& n = *WithEpilogue(m)[0];
  EXPECT_EQ(n.inst.op, OpType::ConvGeneral);
  EXPECT_EQ(n.epilogue->axis, 3);
  EXPECT_EQ(n.epilogue->activation, Activation::kRelu);
  const std::vector<std::string> names = KernelNames(m);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].rfind("dnnl.conv[", 0), 0u) << names[0];
  ExpectCpuMatchesRefAndPlain(
      program, {RandomUniform({4, 12, 12, 3}, 9), RandomUniform({5, 5, 3, 8}, 10), RandomUniform({8}, 11)},
      75);
}

TEST(CpuEpilogue, ConvBiasOfTheResultsRankFolds) {
  // Imported models add biases shaped [1, C, 1, 1] (channels first): one value per
  // feature, laid out as a vector, so it folds as the convolution's bias (and the relu after it).
  // A [1, 1, H, 1] one varies along another axis and stays an Add.
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{1, 8, 1, 1}, std::vector<int64_t>{1, 1, 12, 1}}) {
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {2, 3, 12, 12}));
    Node k = g.Parameter(Shape(DType::Float32, {8, 3, 3, 3}));
    Node b = g.Parameter(Shape(DType::Float32, dims));
    Node y = graph::Convolve(x, k).ChannelsFirst().PadSame().Done() + b;
    auto program = g.Build({graph::MaxScalar(y, 0.0f)});
    const Module m = Epilogued(*program);
    if (dims[1] == 8) {  // The bias, then the relu.
      ASSERT_EQ(WithEpilogue(m).size(), 1u) << m.ToString();
      EXPECT_TRUE(WithEpilogue(m)[0]->epilogue->bias);
      EXPECT_EQ(WithEpilogue(m)[0]->epilogue->activation, Activation::kRelu);
      EXPECT_EQ(CountOps(m, OpType::Add), 0) << m.ToString();
    } else {  // Neither: the relu reads the Add.
      EXPECT_TRUE(WithEpilogue(m).empty()) << m.ToString();
      EXPECT_EQ(CountOps(m, OpType::Add), 1) << m.ToString();
    }
    ExpectCpuMatchesRefAndPlain(
        program,
        {RandomUniform({2, 3, 12, 12}, 41), RandomUniform({8, 3, 3, 3}, 42), RandomUniform(dims, 40)}, 27);
  }
}

TEST(CpuEpilogue, IntermediateReadElsewhereIsNotFused) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {10, 20}));
  Node w = g.Parameter(Shape(DType::Float32, {20, 6}));
  Node b = g.Parameter(Shape(DType::Float32, {6}));
  Node dot = graph::MatMul(x, w);
  Node pre = dot + graph::Reshape(b, {1, 6});
  // The matmul's result is an output too: nothing folds into it.
  {
    auto program = g.Build({graph::MaxScalar(pre, 0.0f), dot});
    const Module m = Epilogued(*program);
    EXPECT_TRUE(WithEpilogue(m).empty()) << m.ToString();
    EXPECT_EQ(CountOps(m, OpType::Add), 1);
    ExpectCpuMatchesRefAndPlain(
        program, {RandomUniform({10, 20}, 12), RandomUniform({20, 6}, 13), RandomUniform({6}, 14)}, 20);
  }
  // The biased value is read twice (as in training, where the relu's gradient reads it): the
  // bias folds, the activation does not.
  {
    Graph g2;
    Node x2 = g2.Parameter(Shape(DType::Float32, {10, 20}));
    Node w2 = g2.Parameter(Shape(DType::Float32, {20, 6}));
    Node b2 = g2.Parameter(Shape(DType::Float32, {6}));
    Node pre2 = graph::MatMul(x2, w2) + graph::Reshape(b2, {1, 6});
    auto program = g2.Build({graph::MaxScalar(pre2, 0.0f), pre2 * 2.0f});
    const Module m = Epilogued(*program);
    ASSERT_EQ(WithEpilogue(m).size(), 1u) << m.ToString();
    EXPECT_TRUE(WithEpilogue(m)[0]->epilogue->bias);
    EXPECT_EQ(WithEpilogue(m)[0]->epilogue->activation, Activation::kNone);
    EXPECT_EQ(CountOps(m, OpType::Max), 1);
    ExpectCpuMatchesRefAndPlain(
        program, {RandomUniform({10, 20}, 15), RandomUniform({20, 6}, 16), RandomUniform({6}, 17)}, 20);
  }
}

TEST(CpuEpilogue, BiasAlongAnotherAxisIsNotFused) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {10, 20}));
  Node w = g.Parameter(Shape(DType::Float32, {20, 6}));
  Node b = g.Parameter(Shape(DType::Float32, {10}));
  // A per-row bias: not a feature bias.
  auto program = g.Build({graph::MatMul(x, w) + graph::Reshape(b, {10, 1})});
  const Module m = Epilogued(*program);
  EXPECT_TRUE(WithEpilogue(m).empty()) << m.ToString();
  ExpectCpuMatchesRefAndPlain(
      program, {RandomUniform({10, 20}, 18), RandomUniform({20, 6}, 19), RandomUniform({10}, 20)}, 20);
}

TEST(CpuEpilogue, SizeOneBiasIsNotFused) {
  // A [1] vector broadcast along the feature axis repeats one value: not a per-feature bias.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {5, 8}));
  Node w = g.Parameter(Shape(DType::Float32, {8, 6}));
  Node b = g.Parameter(Shape(DType::Float32, {1}));
  compute::OpAttributes attrs;
  attrs.shape = Shape(DType::Float32, {5, 6});
  attrs.axes = {1};
  auto program = g.Build({graph::MatMul(x, w) + g.AddOp(OpType::BroadcastInDim, {b}, attrs)});
  const Module m = Epilogued(*program);
  EXPECT_TRUE(WithEpilogue(m).empty()) << m.ToString();
  ExpectCpuMatchesRefAndPlain(
      program, {RandomUniform({5, 8}, 32), RandomUniform({8, 6}, 33), RandomUniform({1}, 34)}, 8);
}

TEST(CpuEpilogue, OtherDTypesAreNotFused) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float64, {4, 5}));
  Node w = g.Parameter(Shape(DType::Float64, {5, 3}));
  Node b = g.Parameter(Shape(DType::Float64, {3}));
  auto program = g.Build({graph::MaxScalar(Dense(x, w, b), 0.0)});
  const Module m = Epilogued(*program);
  EXPECT_TRUE(WithEpilogue(m).empty()) << m.ToString();
}

TEST(CpuEpilogue, TransposedMatmulResultSwapsOperands) {
  Graph g;
  Node a = g.Parameter(Shape(DType::Float32, {64, 10}));
  Node c = g.Parameter(Shape(DType::Float32, {64, 30}));
  // aᵀ·c, transposed: the form autodiff writes for a weight gradient.
  Node y = graph::Transpose(graph::Einsum("ki,kj->ij", a, c), 0, 1);
  auto program = g.Build({y});
  std::string log;
  const Module m = Epilogued(*program, &log);
  EXPECT_EQ(CountOps(m, OpType::Transpose), 0) << m.ToString();
  ASSERT_EQ(CountOps(m, OpType::DotGeneral), 1);
  for (const compute::cpu::Node& n : m.nodes) {
    if (n.inst.op != OpType::DotGeneral) continue;
    EXPECT_EQ(n.inst.shape.Dimensions(), (std::vector<int64_t>{30, 10}));
  }
  EXPECT_NE(log.find("operands swapped"), std::string::npos) << log;
  ExpectCpuMatchesRefAndPlain(program, {RandomUniform({64, 10}, 21), RandomUniform({64, 30}, 22)}, 64);
}

TEST(CpuEpilogue, BatchedTransposeSwapsOperands) {
  Graph g;
  Node a = g.Parameter(Shape(DType::Float32, {3, 7, 5}));
  Node c = g.Parameter(Shape(DType::Float32, {3, 5, 4}));
  Node y = graph::TransposeAllAxes(graph::Einsum("bij,bjk->bik", a, c), {0, 2, 1});
  auto program = g.Build({y});
  const Module m = Epilogued(*program);
  EXPECT_EQ(CountOps(m, OpType::Transpose), 0) << m.ToString();
  ExpectCpuMatchesRefAndPlain(program, {RandomUniform({3, 7, 5}, 23), RandomUniform({3, 5, 4}, 24)}, 5);
  // A permutation that moves the batch axis stays a Transpose.
  Graph g2;
  Node a2 = g2.Parameter(Shape(DType::Float32, {3, 7, 5}));
  Node c2 = g2.Parameter(Shape(DType::Float32, {3, 5, 4}));
  auto program2 = g2.Build({graph::TransposeAllAxes(graph::Einsum("bij,bjk->bik", a2, c2), {1, 0, 2})});
  EXPECT_EQ(CountOps(Epilogued(*program2), OpType::Transpose), 1);
  ExpectCpuMatchesRefAndPlain(program2, {RandomUniform({3, 7, 5}, 25), RandomUniform({3, 5, 4}, 26)}, 5);
}

TEST(CpuEpilogue, LoopFormWhenOneDnnDeclines) {
  // An empty sum (K = 0): oneDNN declines, the reference matmul runs and the epilogue follows in
  // a loop, giving relu(bias) in every row.
  compute::Instruction dot;
  dot.op = OpType::DotGeneral;
  dot.attrs.lhs_contracting = {1};
  dot.attrs.rhs_contracting = {0};
  dot.shape = Shape(DType::Float32, {2, 3});
  dot.operands = {0, 1, 2};
  compute::cpu::Node node{dot, nullptr};
  compute::cpu::Epilogue e;
  e.bias = true;
  e.axis = 1;
  e.activation = Activation::kRelu;
  node.epilogue = std::make_shared<const compute::cpu::Epilogue>(e);
  auto* cpu = dynamic_cast<compute::cpu::CpuBackend*>(Cpu().get());
  ASSERT_NE(cpu, nullptr);
  const std::vector<Shape> operands = {Shape(DType::Float32, {2, 0}), Shape(DType::Float32, {0, 3}),
                                       Shape(DType::Float32, {3})};
  compute::cpu::KernelChoice k = compute::cpu::ChooseKernel(*cpu, cpu->options().threads, node, operands);
  EXPECT_NE(k.name.find("+loop[bias(axis 1), Relu]"), std::string::npos) << k.name;
  const float bias[3] = {1.5f, -2.0f, 0.25f};
  float out[6] = {9, 9, 9, 9, 9, 9};
  const uint8_t* in[3] = {nullptr, nullptr, reinterpret_cast<const uint8_t*>(bias)};
  k.kernel(in, reinterpret_cast<uint8_t*>(out));
  const std::vector<float> want = {1.5f, 0.0f, 0.25f, 1.5f, 0.0f, 0.25f};
  EXPECT_EQ(std::vector<float>(out, out + 6), want);
}

TEST(CpuEpilogue, GradientsThroughFusedLayersMatchRef) {
  // A two-layer MLP's loss and weight gradients: the forward matmuls carry bias epilogues, the
  // weight gradients fold their transposes; all must agree with ref.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {32, 24}));
  Node w1 = g.Parameter(Shape(DType::Float32, {24, 16}));
  Node b1 = g.Parameter(Shape(DType::Float32, {16}));
  Node w2 = g.Parameter(Shape(DType::Float32, {16, 5}));
  Node b2 = g.Parameter(Shape(DType::Float32, {5}));
  Node h = graph::MaxScalar(Dense(x, w1, b1), 0.0f);
  Node y = graph::Tanh(Dense(h, w2, b2));
  Node loss = graph::ReduceAllMean(y * y);
  std::vector<Node> outs = graph::Gradient(loss, {w1, b1, w2, b2});
  outs.push_back(loss);
  auto program = g.Build(outs);
  const Module m = Epilogued(*program);
  EXPECT_FALSE(WithEpilogue(m).empty()) << m.ToString();
  ExpectCpuMatchesRefAndPlain(program,
                              {RandomUniform({32, 24}, 27), RandomUniform({24, 16}, 28),
                               RandomUniform({16}, 29), RandomUniform({16, 5}, 30), RandomUniform({5}, 31)},
                              32);
}

// ---- Relu and max pooling ---------------------------------------------------------------------

/// Whether a and b hold the same bits (NaN payloads aside: NaN matches NaN).
::testing::AssertionResult SameBits(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.ToVector<float>(), y = b.ToVector<float>();
  if (x.size() != y.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < x.size(); ++i) {
    const bool same =
        std::isnan(x[i]) ? std::isnan(y[i]) : std::bit_cast<uint32_t>(x[i]) == std::bit_cast<uint32_t>(y[i]);
    if (!same) return ::testing::AssertionFailure() << "element " << i << ": " << x[i] << " vs " << y[i];
  }
  return ::testing::AssertionSuccess();
}

/// The cpu module of `program` after the cleanups and the relu/max-pool pass, and its log.
Module Commuted(const compute::Program& program, std::string* log) {
  Module m = kiln::test::CleanedModule(program);
  *log = compute::cpu::CommuteReluWithMaxPool(m).log;
  compute::cpu::EliminateDeadCode(m);
  return m;
}

TEST(CpuEpilogue, ReluMovesAfterMaxPoolingAndTheConvolutionKeepsItsBias) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 12, 12, 3}));
  Node k = g.Parameter(Shape(DType::Float32, {3, 3, 3, 8}));
  Node b = g.Parameter(Shape(DType::Float32, {8}));
  Node y = graph::MaxScalar(graph::Convolve(x, k).PadSame().Done() + graph::Reshape(b, {1, 1, 1, 8}), 0.0f);
  auto program = g.Build({graph::MaxPool(y).Window(2).Done()});
  std::string log;
  Module m = Commuted(*program, &log);
  EXPECT_NE(log.find("commute"), std::string::npos) << log;
  // The relu now reads the pooled [2, 6, 6, 8] values.
  bool relu_after_pool = false;
  for (const compute::cpu::Node& n : m.nodes) {
    if (n.inst.op != OpType::Max) continue;
    relu_after_pool = m.nodes[static_cast<size_t>(n.inst.operands[0])].inst.op == OpType::ReduceWindow &&
                      n.inst.shape.Dimensions() == std::vector<int64_t>{2, 6, 6, 8};
  }
  EXPECT_TRUE(relu_after_pool) << m.ToString();
  // Through the whole pipeline: the convolution carries the bias only.
  const std::string epilogues = compute::cpu::FuseEpilogues(m).log;
  EXPECT_NE(epilogues.find("Add of bias"), std::string::npos) << epilogues;
  EXPECT_EQ(epilogues.find("Max into"), std::string::npos) << epilogues;
  ExpectCpuMatchesRefAndPlain(
      program, {RandomUniform({2, 12, 12, 3}, 12), RandomUniform({3, 3, 3, 8}, 13), RandomUniform({8}, 14)},
      27);
}

TEST(CpuEpilogue, ReluAndMaxPoolingCommuteBitForBitOnSpecialValues) {
  // NaN, ±0, -inf, windows of negatives only; 2x2 stride 2, 3x3 stride 2 with padding short of
  // the window (commuted) and padding as wide as the window (a window of padding only: kept).
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(),
                  kInf = std::numeric_limits<float>::infinity();
  std::vector<float> v;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2.0f, 1.0f);
  for (int i = 0; i < 6 * 6 * 2; ++i) v.push_back(u(rng));
  const float specials[] = {kNaN, -0.0f, 0.0f, -kInf, kInf, -0.0f, -1.0f, -3.0f};
  for (size_t i = 0; i < v.size(); i += 5) v[i] = specials[(i / 5) % 8];
  v[0] = v[1] = v[12] = v[13] = -0.0f;  // a 2x2 window of -0 only (channel 0)
  const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {1, 6, 6, 2}), v);
  struct Pool {
    std::vector<int64_t> window, strides;
    std::vector<compute::PadAxis> padding;
    bool commutes;
  };
  const std::vector<Pool> pools = {
      {{1, 2, 2, 1}, {1, 2, 2, 1}, {}, true},
      {{1, 3, 3, 1}, {1, 2, 2, 1}, {{0, 0, 0}, {1, 1, 0}, {1, 1, 0}, {0, 0, 0}}, true},
      {{1, 2, 2, 1}, {1, 1, 1, 1}, {{0, 0, 0}, {2, 2, 0}, {0, 0, 0}, {0, 0, 0}}, false},
  };
  for (const Pool& p : pools) {
    SCOPED_TRACE(p.commutes ? "commutes" : "kept");
    Graph g;
    Node in = g.Parameter(x.shape());
    auto program = g.Build({graph::ReduceWindow(graph::MaxScalar(in, 0.0f), compute::ReduceKind::Max,
                                                p.window, p.strides, p.padding)});
    std::string log;
    Commuted(*program, &log);
    EXPECT_EQ(log.find("commute") != std::string::npos, p.commutes) << log;
    const Tensor want = RunProgram(Ref(), program, {x})[0];
    EXPECT_TRUE(SameBits(RunProgram(Cpu(), program, {x})[0], want));
    EXPECT_TRUE(SameBits(RunProgram(CpuNoFusion(), program, {x})[0], want));
  }
}

TEST(CpuEpilogue, ReluReadTwiceStaysBeforeThePooling) {
  // Training reads the relu's result again (its gradient): nothing moves.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {1, 4, 4, 2}));
  Node r = graph::MaxScalar(x, 0.0f);
  auto program = g.Build({graph::MaxPool(r).Window(2).Done(), r});
  std::string log;
  Commuted(*program, &log);
  EXPECT_EQ(log, "");
}
/// HardSwish as exported CNNs write it, x * Min(Max(x + 3, 0), 6) / 6, or as ONNX's HardSwish
/// converts, x * Min(Max(x * (1/6) + 0.5, 0), 1).
Node HardSwishWritten(Node x, bool onnx_form) {
  if (onnx_form) {
    Node y = x * graph::ScalarLike(x, 1.0 / 6) + graph::ScalarLike(x, 0.5);
    return x * graph::Min(graph::Max(y, graph::ZerosLike(y)), graph::OnesLike(y));
  }
  Node y = x + graph::ScalarLike(x, 3.0);
  Node gate = graph::Min(graph::Max(y, graph::ZerosLike(y)), graph::ScalarLike(y, 6.0));
  return (x * gate) / graph::ScalarLike(x, 6.0);
}

TEST(CpuEpilogue, HardSwishInBothWrittenFormsFolds) {
  for (bool onnx_form : {false, true}) {
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {2, 10, 10, 3}));
    Node k = g.Parameter(Shape(DType::Float32, {3, 3, 3, 16}));
    Node b = g.Parameter(Shape(DType::Float32, {16}));
    Node y = graph::Convolve(x, k).PadSame().Done() + graph::Reshape(b, {1, 1, 1, 16});
    auto program = g.Build({HardSwishWritten(y, onnx_form)});
    const Module m = Epilogued(*program);
    ASSERT_EQ(WithEpilogue(m).size(), 1u) << m.ToString();
    EXPECT_EQ(WithEpilogue(m)[0]->epilogue->activation, Activation::kHardSwish);
    EXPECT_TRUE(WithEpilogue(m)[0]->epilogue->bias);
    EXPECT_EQ(CountOps(m, OpType::Min) + CountOps(m, OpType::Max) + CountOps(m, OpType::Div), 0)
        << m.ToString();
    const std::vector<std::string> names = KernelNames(m);
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind("dnnl.conv[", 0), 0u) << names[0];
    // Inputs scaled so that the pre-activations reach past -3 and +3.
    Tensor xs = RandomUniform({2, 10, 10, 3}, 51);
    xs.MutableFlatData<float>([](std::span<float> v) {
      for (float& e : v) e *= 4;
    });
    ExpectCpuMatchesRefAndPlain(program, {xs, RandomUniform({3, 3, 3, 16}, 52), RandomUniform({16}, 53)}, 27);
  }
}

TEST(CpuEpilogue, HardSwishMapsSpecialValuesAsWritten) {
  // A 1x1 identity convolution passes each value through to the activation: NaN stays NaN, +inf
  // stays +inf, -inf gives NaN (-inf * 0), as the written form computes them.
  const std::vector<float> values = {-std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN(),
                                     -3.0f,
                                     3.0f,
                                     -0.0f,
                                     0.0f,
                                     1.5f,
                                     -1.5f,
                                     1e30f,
                                     -1e30f,
                                     2.9999998f};
  const int64_t n = static_cast<int64_t>(values.size());
  for (bool onnx_form : {false, true}) {
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {1, n, 1, 1}));
    Node k = g.Parameter(Shape(DType::Float32, {1, 1, 1, 1}));
    auto program = g.Build({HardSwishWritten(graph::Convolve(x, k).Done(), onnx_form)});
    ASSERT_EQ(WithEpilogue(Epilogued(*program)).size(), 1u);
    const std::vector<Tensor> in = {
        Tensor::FromFlat(Shape(DType::Float32, {1, n, 1, 1}), values),
        Tensor::FromFlat(Shape(DType::Float32, {1, 1, 1, 1}), std::vector<float>{1})};
    const std::vector<float> got = RunProgram(Cpu(), program, in)[0].ToVector<float>();
    const std::vector<float> want = RunProgram(Ref(), program, in)[0].ToVector<float>();
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << values[i] << " -> " << got[i];
      } else if (std::isinf(want[i])) {
        EXPECT_EQ(got[i], want[i]) << values[i];
      } else {
        EXPECT_NEAR(got[i], want[i], 1e-6 * (1 + std::abs(want[i]))) << values[i];
      }
    }
  }
}

TEST(CpuEpilogue, HardSwishInputReadElsewhereIsNotFused) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 6, 6, 3}));
  Node k = g.Parameter(Shape(DType::Float32, {3, 3, 3, 4}));
  Node y = graph::Convolve(x, k).PadSame().Done();
  auto program = g.Build({HardSwishWritten(y, false), y});
  const Module m = Epilogued(*program);
  EXPECT_TRUE(WithEpilogue(m).empty()) << m.ToString();
  ExpectCpuMatchesRefAndPlain(program, {RandomUniform({2, 6, 6, 3}, 61), RandomUniform({3, 3, 3, 4}, 62)},
                              27);
}

// A Float32 mean over replicas is AllReduce-sum then Div by the replica count; the division moves
// into the AllReduce's kernel only when the sums feed nothing else, the dtype is Float32 and the
// divisor is a constant.
TEST(CpuCollectiveMean, FoldsOnlyADivisionThatTheSumsAloneFeed) {
  struct Case {
    const char* what;
    bool folds;
    std::function<std::vector<Node>(Node x, Node y)> fn;
    DType dtype = DType::Float32;
  };
  const std::vector<Case> cases = {
      {"mean", true,
       [](Node x, Node) { return std::vector<Node>{graph::AllReduce(x, graph::ReduceOp::Mean)}; }},
      {"mean and sum", false,
       [](Node x, Node) {
         return std::vector<Node>{graph::AllReduce(x, graph::ReduceOp::Mean), graph::AllReduce(x)};
       }},
      {"Float64 mean", false,
       [](Node x, Node) { return std::vector<Node>{graph::AllReduce(x, graph::ReduceOp::Mean)}; },
       DType::Float64},
      {"divided by a parameter", false,
       [](Node x, Node y) { return std::vector<Node>{graph::AllReduce(x) / y}; }},
      {"max divided", false,
       [](Node x, Node) {
         return std::vector<Node>{graph::DivScalar(graph::AllReduce(x, graph::ReduceOp::Max), 2)};
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    graph::Graph g;
    g.SetReplicas(2);
    const std::vector<Node> out = c.fn(g.Parameter(Shape(c.dtype, {10})), g.Parameter(Shape(c.dtype, {10})));
    auto program = g.Build(out);
    Module m = kiln::test::CleanedModule(*program);
    const std::string log = compute::cpu::FoldMeanIntoAllReduce(m).log;
    compute::cpu::EliminateDeadCode(m);
    int folded = 0;
    for (const compute::cpu::Node& n : m.nodes) {
      if (n.collective_divisor == 0) continue;
      ++folded;
      EXPECT_EQ(n.inst.op, OpType::AllReduce);
      EXPECT_EQ(n.collective_divisor, 2.0f);
      auto* cpu = dynamic_cast<compute::cpu::CpuBackend*>(Cpu().get());
      std::vector<Shape> operands = {m.nodes[static_cast<size_t>(n.inst.operands[0])].inst.shape};
      EXPECT_EQ(compute::cpu::ChooseKernel(*cpu, 1, n, operands).name, "ref+div");
    }
    EXPECT_EQ(folded, c.folds ? 1 : 0) << m.ToString();
    EXPECT_EQ(CountOps(m, OpType::Div), c.folds ? 0 : 1) << m.ToString();
    EXPECT_EQ(m.ToString().find("+Div[2]") != std::string::npos, c.folds) << m.ToString();
    EXPECT_EQ(log.find("into the AllReduce") != std::string::npos, c.folds) << log;
  }
}

}  // namespace
}  // namespace kiln
