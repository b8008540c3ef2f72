// Tests for the initializers: fans, constants, the moments and bounds of the random ones on large
// tensors against their formulas, reproducibility from the store's seed, orthogonality, and a
// scope's initializer reaching a layer's variables.

#include "kiln/ml/initializers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::Throws;
namespace init = kiln::initializers;

using kiln::test::ForEachBackend;
/// The values `initializer` gives a variable of `shape` in a new store seeded with `seed`.
std::vector<double> Draw(const model::Initializer& initializer, const Shape& shape,
                         const compute::BackendPtr& backend, uint64_t seed = 42) {
  model::Store store;
  store.SetRNGStateFromSeed(seed);
  model::Variable v = store.RootScope().WithInitializer(initializer).VariableWithShape("w", shape);
  store.InitializeVariables(backend);
  Tensor t = v.Value();
  if (t.dtype() == DType::Float64) return t.ToVector<double>();
  if (t.dtype() == DType::Int32) {
    std::vector<int32_t> i = t.ToVector<int32_t>();
    return {i.begin(), i.end()};
  }
  std::vector<float> f = t.ToVector<float>();
  return {f.begin(), f.end()};
}

struct Moments {
  double mean = 0, variance = 0, min = 0, max = 0;
};
Moments Stats(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= static_cast<double>(v.size());
  m.min = *std::min_element(v.begin(), v.end());
  m.max = *std::max_element(v.begin(), v.end());
  return m;
}

const Shape kBig(DType::Float32, {200, 300});  // fan_in 200, fan_out 300, 60000 values

TEST(Initializers, FansFollowTheKerasConvention) {
  auto fans = [](std::vector<int64_t> dims) {
    init::Fans f = init::ComputeFans(Shape(DType::Float32, dims));
    return std::vector<int64_t>{f.in, f.out};
  };
  EXPECT_EQ(fans({}), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(fans({7}), (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(fans({784, 512}), (std::vector<int64_t>{784, 512}));
  EXPECT_EQ(fans({5, 5, 32, 64}), (std::vector<int64_t>{5 * 5 * 32, 5 * 5 * 64}));
  EXPECT_EQ(fans({3, 16, 8}), (std::vector<int64_t>{48, 24}));
}

TEST(Initializers, Constants) {
  ForEachBackend([](const compute::BackendPtr& b) {
    EXPECT_EQ(Draw(init::Zeros(), Shape(DType::Float32, {3, 2}), b), std::vector<double>(6, 0.0));
    EXPECT_EQ(Draw(init::Ones(), Shape(DType::Float64, {4}), b), std::vector<double>(4, 1.0));
    EXPECT_EQ(Draw(init::Constant(2.5), Shape(DType::Float32, {2, 2}), b), std::vector<double>(4, 2.5));
    EXPECT_EQ(Draw(init::Constant(-3), Shape(DType::Int32, {2}), b), std::vector<double>(2, -3.0));
  });
}

TEST(Initializers, UniformAndNormalMoments) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Moments u = Stats(Draw(init::RandomUniform(-1, 3), kBig, b));
    EXPECT_GE(u.min, -1);
    EXPECT_LT(u.max, 3);
    EXPECT_NEAR(u.mean, 1, 0.03);
    EXPECT_NEAR(u.variance, 16.0 / 12, 16.0 / 12 * 0.03);
    Moments n = Stats(Draw(init::RandomNormal(2, 0.5), kBig, b));
    EXPECT_NEAR(n.mean, 2, 0.01);
    EXPECT_NEAR(n.variance, 0.25, 0.25 * 0.03);
    EXPECT_LT(n.min, 2 - 3 * 0.5);  // 60000 draws reach past 3 sigma on both sides
    EXPECT_GT(n.max, 2 + 3 * 0.5);
  });
}

TEST(Initializers, TruncatedNormalStaysWithinTwoStddevs) {
  // The variance of a standard normal truncated to [-2, 2]: 1 - 4·φ(2) / (2Φ(2) - 1).
  const double phi2 = std::exp(-2.0) / std::sqrt(2 * M_PI), mass = std::erf(std::sqrt(2.0));
  const double truncated_var = 1 - 4 * phi2 / mass;
  ForEachBackend([&](const compute::BackendPtr& b) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      Moments t = Stats(Draw(init::TruncatedNormal(0.5, 1.0), Shape(dtype, {200, 300}), b));
      EXPECT_GE(t.min, 1.0 - 1.0);
      EXPECT_LE(t.max, 1.0 + 1.0);
      EXPECT_LT(t.min, 0.02);  // the tails reach the bounds
      EXPECT_GT(t.max, 1.98);
      EXPECT_NEAR(t.mean, 1.0, 0.01);
      EXPECT_NEAR(t.variance, 0.25 * truncated_var, 0.25 * truncated_var * 0.03);
    }
  });
}

TEST(Initializers, VarianceScalingMatchesTheFormulas) {
  ForEachBackend([](const compute::BackendPtr& b) {
    // Glorot: variance 2 / (fan_in + fan_out).
    const double glorot = 2.0 / 500;
    Moments gu = Stats(Draw(init::GlorotUniform(), kBig, b));
    EXPECT_LE(std::max(-gu.min, gu.max), std::sqrt(6.0 / 500));
    EXPECT_NEAR(gu.variance, glorot, glorot * 0.03);
    EXPECT_NEAR(gu.mean, 0, 0.002);
    Moments gn = Stats(Draw(init::XavierNormal(), kBig, b));
    EXPECT_NEAR(gn.variance, glorot, glorot * 0.04);
    EXPECT_LE(std::max(-gn.min, gn.max), 2 * std::sqrt(glorot) / 0.87962566103423978 + 1e-6);
    // He on a conv kernel [3, 3, 16, 32]: fan_in 144, variance 2 / 144.
    const Shape conv(DType::Float32, {3, 3, 16, 32});
    const double he = 2.0 / 144;
    Moments hu = Stats(Draw(init::KaimingUniform(), conv, b));
    EXPECT_LE(std::max(-hu.min, hu.max), std::sqrt(6.0 / 144));
    EXPECT_NEAR(hu.variance, he, he * 0.05);
    Moments hn = Stats(Draw(init::HeNormal(), conv, b));
    EXPECT_NEAR(hn.variance, he, he * 0.05);
    // A plain normal by fan-out: variance 3 / 300.
    Moments vs =
        Stats(Draw(init::VarianceScaling(3, init::FanMode::kFanOut, init::Distribution::kNormal), kBig, b));
    EXPECT_NEAR(vs.variance, 0.01, 0.01 * 0.03);
  });
}

TEST(Initializers, ReproducibleFromTheStoreSeed) {
  compute::BackendPtr b = compute::New();
  for (const model::Initializer& i :
       {init::GlorotUniform(), init::HeNormal(), init::RandomNormal(), init::Orthogonal()}) {
    const Shape s(DType::Float32, {20, 10});
    std::vector<double> a = Draw(i, s, b, 7), again = Draw(i, s, b, 7), other = Draw(i, s, b, 8);
    EXPECT_EQ(a, again);
    EXPECT_NE(a, other);
  }
  // The same on ref and cpu: the random bits do not depend on the backend.
  EXPECT_EQ(Draw(init::GlorotNormal(), kBig, compute::NewWithConfig("ref")),
            Draw(init::GlorotNormal(), kBig, b));
  // Two variables draw different numbers, and the store's state advances.
  model::Store store;
  model::Scope s = store.RootScope().WithInitializer(init::RandomUniform());
  const std::vector<uint64_t> before = store.RNGState().Value().ToVector<uint64_t>();
  model::Variable v1 = s.VariableWithShape("a", Shape(DType::Float32, {50}));
  model::Variable v2 = s.VariableWithShape("b", Shape(DType::Float32, {50}));
  store.InitializeVariables(b);
  EXPECT_NE(v1.Value().ToVector<float>(), v2.Value().ToVector<float>());
  EXPECT_NE(store.RNGState().Value().ToVector<uint64_t>(), before);
}

/// max |MᵀM - gain²·I| (or MMᵀ when `rows_orthonormal`) for M [rows, cols] row-major.
double OrthogonalityError(const std::vector<double>& m, int64_t rows, int64_t cols, bool rows_orthonormal,
                          double gain) {
  const int64_t n = rows_orthonormal ? rows : cols, len = rows_orthonormal ? cols : rows;
  auto at = [&](int64_t vec, int64_t k) {
    return rows_orthonormal ? m[static_cast<size_t>(vec * cols + k)] : m[static_cast<size_t>(k * cols + vec)];
  };
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t k = 0; k < len; ++k) dot += at(i, k) * at(j, k);
      worst = std::max(worst, std::abs(dot - (i == j ? gain * gain : 0.0)));
    }
  }
  return worst;
}

TEST(Initializers, OrthogonalGivesOrthonormalColumnsOrRows) {
  ForEachBackend([](const compute::BackendPtr& b) {
    EXPECT_LT(
        OrthogonalityError(Draw(init::Orthogonal(), Shape(DType::Float32, {64, 32}), b), 64, 32, false, 1),
        1e-5);
    EXPECT_LT(
        OrthogonalityError(Draw(init::Orthogonal(), Shape(DType::Float32, {24, 24}), b), 24, 24, false, 1),
        1e-5);
    // Several blocks of columns, the last one padded (past the rank, for [50, 40]).
    EXPECT_LT(
        OrthogonalityError(Draw(init::Orthogonal(), Shape(DType::Float32, {100, 70}), b), 100, 70, false, 1),
        1e-5);
    EXPECT_LT(
        OrthogonalityError(Draw(init::Orthogonal(), Shape(DType::Float32, {50, 40}), b), 50, 40, false, 1),
        1e-5);
    // Wider than tall: the rows are orthonormal.
    EXPECT_LT(
        OrthogonalityError(Draw(init::Orthogonal(), Shape(DType::Float32, {10, 40}), b), 10, 40, true, 1),
        1e-5);
    // A conv kernel viewed as [3·3·4, 8], with a gain.
    EXPECT_LT(OrthogonalityError(Draw(init::Orthogonal(2.0), Shape(DType::Float64, {3, 3, 4, 8}), b), 36, 8,
                                 false, 2),
              1e-12);
  });
  model::Store store;
  store.RootScope().WithInitializer(init::Orthogonal()).VariableWithShape("v", Shape(DType::Float32, {5}));
  EXPECT_TRUE(Throws([&] { store.InitializeVariables(compute::New()); }, {"Orthogonal", "rank >= 2"}));
}

TEST(Initializers, RandomInitializersNeedFloatVariables) {
  model::Store store;
  store.RootScope()
      .WithInitializer(init::GlorotUniform())
      .VariableWithShape("n", Shape(DType::Int32, {5, 5}));
  EXPECT_TRUE(Throws([&] { store.InitializeVariables(compute::New()); }, {"VarianceScaling", "float dtype"}));
  EXPECT_TRUE(Throws([] { init::RandomUniform(1, 1); }, {"RandomUniform", "min 1"}));
}

TEST(Initializers, ScopeInitializerReachesDenseWeights) {
  model::Store store;
  model::Exec f = model::NewExec(compute::New(), store, [](model::Scope scope, graph::Node x) {
    graph::Node h = layers::Dense(scope.WithInitializer(init::Constant(0.5)).In("const"), x, true, 3);
    return layers::Dense(scope.WithInitializer(init::GlorotUniform()).In("glorot"), h, false, 400);
  });
  Tensor y = f.Call1(Tensor::FromScalarAndDimensions<float>(1.0f, {2, 4}));
  EXPECT_EQ(store.GetVariable("/const/weights").Value().ToVector<float>(), std::vector<float>(12, 0.5f));
  EXPECT_EQ(store.GetVariable("/const/biases").Value().ToVector<float>(), std::vector<float>(3, 0.5f));
  // Each hidden unit is 4·0.5 + 0.5 = 2.5; y = 2.5 · (sum of each weight column).
  std::vector<float> w = store.GetVariable("/glorot/weights").Value().ToVector<float>();
  std::vector<float> yv = y.ToVector<float>();
  const double limit = std::sqrt(6.0 / 403);
  for (int o = 0; o < 400; ++o) {
    double col = 0;
    for (int i = 0; i < 3; ++i) {
      EXPECT_LE(std::abs(w[static_cast<size_t>(i * 400 + o)]), limit);
      col += w[static_cast<size_t>(i * 400 + o)];
    }
    EXPECT_NEAR(yv[static_cast<size_t>(o)], 2.5 * col, 1e-5);
  }
}

}  // namespace
