// Tests for quantized weights in graphs: nn::Dequantized, nn::QuantizedDense and
// nn::QuantizedEmbedding against the host's quant::Dequantize on every backend and for every
// scheme, the gradient with respect to x against central differences, and the errors.

#include "kiln/ml/quantized.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/quant/quant.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::ForEachBackend;
using kiln::test::Throws;
using quant::Scheme;

Tensor Random(const std::vector<int64_t>& dims, uint32_t seed, float stddev = 1) {
  return kiln::test::NormalTensor(dims, seed, stddev);
}

void ExpectClose(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<float> g = got.ToVector<float>(), w = want.ToVector<float>();
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " element " << i;
}

/// x [rows, K] · w [K, N] + bias on the host, in double.
Tensor HostDense(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const int64_t rows = x.shape().Dim(0), k = x.shape().Dim(1), n = w.shape().Dim(1);
  std::vector<float> xv = x.ToVector<float>(), wv = w.ToVector<float>(), bv = bias.ToVector<float>();
  std::vector<float> out(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bv[static_cast<size_t>(j)];
      for (int64_t i = 0; i < k; ++i)
        s += static_cast<double>(xv[static_cast<size_t>(r * k + i)]) * wv[static_cast<size_t>(i * n + j)];
      out[static_cast<size_t>(r * n + j)] = static_cast<float>(s);
    }
  }
  return Tensor::FromFlat(Shape(DType::Float32, {rows, n}), out);
}

/// Values v / 128 with integers v in [-127, 127], each run of 32 along the last axis holding a
/// ±127 / 128: the cpu backend's int8 activations (blocks of 32, scale max|x| / 127) hold them
/// exactly, so its integer products of ggml weights match the float product as closely as the
/// other kernels do.
Tensor GridX(const std::vector<int64_t>& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(-127, 127);
  int64_t size = 1;
  for (int64_t d : dims) size *= d;
  std::vector<float> x(static_cast<size_t>(size));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 32 == 5 ? (v(rng) < 0 ? -127 : 127) : v(rng)) / 128;
  return Tensor::FromFlat(Shape(DType::Float32, dims), x);
}

struct Case {
  Scheme scheme;
  int64_t block;
  int axis;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {Scheme::Int8, 0, 0},
      {Scheme::Int8, 64, 0},
      {Scheme::Int8, 8, 1},
      {Scheme::Int4, 32, 0},
      {Scheme::Int4Asymmetric, 32, 0},
      {Scheme::Int8Asymmetric, 24, 1},
      {Scheme::NF4, 64, 0},
      {Scheme::NF4, 12, 1},
      {Scheme::Q8_0, 0, 0},
      {Scheme::Q4_0, 0, 0},
      {Scheme::Q4_K, 0, 0},
      {Scheme::Q6_K, 0, 0},
  };
  return cases;
}

std::string Name(const Case& c) {
  return quant::SchemeName(c.scheme) + " block " + std::to_string(c.block) + " axis " +
         std::to_string(c.axis);
}

TEST(Quantized, DequantizedMatchesTheHost) {
  const Tensor w = Random({256, 24}, 1);
  ForEachBackend([&](const compute::BackendPtr& backend) {
    for (const Case& c : Cases()) {
      quant::Quantized q = quant::Quantize(w, c.scheme, c.block, c.axis);
      Exec exec =
          NewExec(backend, [&](Graph& g) { return nn::Dequantized(q.WeightsIn(g), q.QuantizationIn(g)); });
      ExpectClose(exec.Call1(std::vector<Tensor>{}), quant::Dequantize(q), 1e-6, Name(c));
    }
  });
}

TEST(Quantized, DenseMatchesDequantizedWeights) {
  const Tensor w = Random({256, 24}, 2, 0.1f);
  const Tensor x = GridX({2, 3, 256}, 3);
  const Tensor bias = Random({24}, 4);
  ForEachBackend([&](const compute::BackendPtr& backend) {
    for (const Case& c : Cases()) {
      quant::Quantized q = quant::Quantize(w, c.scheme, c.block, c.axis);
      Exec exec = NewExec(backend, [&](Node xn, Node b) {
        return nn::QuantizedDense(xn, q.WeightsIn(xn.graph()), q.QuantizationIn(xn.graph()), b,
                                  [](Node y) { return activations::Relu(y); });
      });
      Tensor want = HostDense(x.Reshape({6, 256}), quant::Dequantize(q), bias);
      std::vector<float> wv = want.ToVector<float>();
      for (float& v : wv) v = std::max(v, 0.0f);
      ExpectClose(exec.Call1(x, bias), Tensor::FromFlat(Shape(DType::Float32, {2, 3, 24}), wv), 2e-5,
                  Name(c));
    }
  });
}

TEST(Quantized, WeightsAsParameters) {
  // The quantized parts fed at run time (as a loaded model would) give the same result.
  const Tensor w = Random({64, 8}, 5);
  const Tensor x = Random({4, 64}, 6);
  quant::Quantized q = quant::Quantize(w, Scheme::Int4Asymmetric, 16);
  ForEachBackend([&](const compute::BackendPtr& backend) {
    Exec exec = NewExec(backend, [](Node xn, Node wq, Node s, Node z) {
      return nn::QuantizedDense(xn, wq, nn::Quantization::Linear(s, z, 0, 16));
    });
    ExpectClose(exec.Call1(x, q.weights, q.scales, q.zero_points),
                HostDense(x, quant::Dequantize(q),
                          Tensor::FromFlat(Shape(DType::Float32, {8}), std::vector<float>(8))),
                2e-5, "parameters");
  });
}

TEST(Quantized, GradientWithRespectToXMatchesDifferences) {
  const Tensor w = Random({32, 6}, 7);
  std::vector<double> xv(2 * 32);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.37 * static_cast<double>(i));
  const Tensor x = Tensor::FromFlat(Shape(DType::Float64, {2, 32}), xv);
  for (Scheme s : {Scheme::Int4, Scheme::NF4, Scheme::Q8_0}) {
    quant::Quantized q = quant::Quantize(w, s, s == Scheme::Q8_0 ? 0 : 16);
    auto loss = [&](Node xn) {
      Node y = nn::QuantizedDense(xn, q.WeightsIn(xn.graph()), q.QuantizationIn(xn.graph()), Node(),
                                  [](Node v) { return Tanh(v); });
      return ReduceAllSum(y * y);
    };
    ForEachBackend([&](const compute::BackendPtr& backend) {
      Exec value = NewExec(backend, [&](Node xn) { return loss(xn); });
      Exec grad = NewExec(backend, [&](Node xn) { return Gradient(loss(xn), {xn})[0]; });
      std::vector<double> g = grad.Call1(x).ToVector<double>();
      const double h = 1e-6;
      for (size_t i = 0; i < xv.size(); i += 5) {
        auto at = [&](double delta) {
          std::vector<double> moved = xv;
          moved[i] += delta;
          return value.Call1(Tensor::FromFlat(x.shape(), moved)).Item<double>();
        };
        const double numeric = (at(h) - at(-h)) / (2 * h);
        EXPECT_NEAR(g[i], numeric, 1e-6 * (1 + std::abs(numeric)))
            << quant::SchemeName(s) << " element " << i;
      }
    });
  }
}

TEST(Quantized, EmbeddingGathersDequantizedRows) {
  const Tensor table = Random({40, 256}, 8);
  const Tensor ids = Tensor::FromFlat(Shape(DType::Int32, {2, 3}), std::vector<int32_t>{0, 39, 7, 7, 12, 1});
  const std::vector<Case> cases = {
      {Scheme::Int8, 0, 1}, {Scheme::Int8, 8, 0}, {Scheme::Int4, 32, 1}, {Scheme::Int4Asymmetric, 64, 1},
      {Scheme::NF4, 64, 1}, {Scheme::NF4, 40, 0}, {Scheme::Q4_K, 0, 0},  {Scheme::Q8_0, 0, 0},
      {Scheme::Q6_K, 0, 0}};
  ForEachBackend([&](const compute::BackendPtr& backend) {
    for (const Case& c : cases) {
      // GGML rows run along the quantized axis: quantize the transposed table so its rows are ids.
      const bool ggml = quant::IsGGML(c.scheme);
      std::vector<float> tv = table.ToVector<float>(), tt(tv.size());
      for (int64_t r = 0; r < 40; ++r)
        for (int64_t d = 0; d < 256; ++d)
          tt[static_cast<size_t>(d * 40 + r)] = tv[static_cast<size_t>(r * 256 + d)];
      const Tensor src = ggml ? Tensor::FromFlat(Shape(DType::Float32, {256, 40}), tt) : table;
      quant::Quantized q = quant::Quantize(src, c.scheme, c.block, c.axis);
      std::vector<float> deq = quant::Dequantize(q).ToVector<float>();
      std::vector<int32_t> idv = ids.ToVector<int32_t>();
      std::vector<float> want;
      for (int32_t id : idv)
        for (int64_t d = 0; d < 256; ++d)
          want.push_back(ggml ? deq[static_cast<size_t>(d * 40 + id)]
                              : deq[static_cast<size_t>(id * 256 + d)]);
      Exec exec = NewExec(backend, [&](Node i) {
        return nn::QuantizedEmbedding(i, q.WeightsIn(i.graph()), q.QuantizationIn(i.graph()));
      });
      ExpectClose(exec.Call1(ids), Tensor::FromFlat(Shape(DType::Float32, {2, 3, 256}), want), 1e-6, Name(c));
    }
  });
}

TEST(Quantized, BadInput) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 64}), "x");
  Node w8 = g.Parameter(Shape(DType::Int8, {64, 8}), "w8");
  Node s = g.Parameter(Shape(DType::Float32, {2, 8}), "s");
  nn::Quantization q = nn::Quantization::Linear(s, Node(), 0, 32);
  EXPECT_NO_THROW(nn::QuantizedDense(x, w8, q));
  nn::Quantization bad = q;
  bad.block_size = 24;
  EXPECT_TRUE(Throws([&] { nn::QuantizedDense(x, w8, bad); }, {"block size 24", "axis 0", "64"}));
  bad = q;
  bad.block_size = 16;
  EXPECT_TRUE(Throws([&] { nn::QuantizedDense(x, w8, bad); }, {"scale must be", "[4, 8]", "[2, 8]"}));
  bad = q;
  bad.scheme = nn::QuantizationScheme::NF4;
  EXPECT_TRUE(Throws([&] { nn::QuantizedDense(x, w8, bad); }, {"NF4", "Uint4"}));
  Node wf = g.Parameter(Shape(DType::Float32, {64, 8}), "wf");
  EXPECT_TRUE(Throws([&] { nn::QuantizedDense(x, wf, q); }, {"Linear weights", "Float32"}));
  Node w32 = g.Parameter(Shape(DType::Int8, {32, 8}), "w32");
  EXPECT_TRUE(Throws([&] { nn::QuantizedDense(x, w32, q); }, {"K = 64"}));
  nn::Quantization gq = nn::Quantization::GGML(nn::GGMLType::Q4_0);
  Node rows = g.Parameter(Shape(DType::Uint8, {8, 40}), "rows");
  EXPECT_TRUE(Throws([&] { nn::QuantizedDense(x, rows, gq); }, {"Q4_0", "18-byte blocks"}));
  Node rows2 = g.Parameter(Shape(DType::Uint8, {8, 36}), "rows2");
  EXPECT_NO_THROW(nn::QuantizedDense(x, rows2, gq));
  Node rows3 = g.Parameter(Shape(DType::Uint8, {8, 54}), "rows3");
  EXPECT_TRUE(Throws([&] { nn::QuantizedDense(x, rows3, gq); }, {"rows of 96 values", "64 input features"}));
  gq.ggml_type = nn::GGMLType::F16;
  EXPECT_TRUE(Throws([&] { nn::QuantizedDense(x, rows2, gq); }, {"F16", "not a quantized block format"}));
}

}  // namespace
