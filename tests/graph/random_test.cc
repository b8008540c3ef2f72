// Tests for the random number generators (graph/random.h): Philox-4x32-10 against Random123's
// known-answer vectors, reproducibility across backends, the state's counter, moments of the
// distributions and independence of split states.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln/kiln.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

compute::BackendPtr Ref() { return compute::NewWithConfig("ref"); }

/// An independent host Philox-4x32-10 (Random123's philox4x32_R(10, ...)).
std::array<uint32_t, 4> HostPhilox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0], p1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

/// The words RandomBits32 should produce from state [key, hi, lo].
std::vector<uint32_t> HostBits(uint64_t key, uint64_t hi, uint64_t lo, int64_t count) {
  std::vector<uint32_t> out;
  for (int64_t b = 0; static_cast<int64_t>(out.size()) < count; ++b) {
    const uint64_t l = lo + static_cast<uint64_t>(b);
    const uint64_t h = hi + (l < lo ? 1 : 0);
    auto w = HostPhilox({static_cast<uint32_t>(l), static_cast<uint32_t>(l >> 32), static_cast<uint32_t>(h),
                         static_cast<uint32_t>(h >> 32)},
                        {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
    for (uint32_t x : w) {
      if (static_cast<int64_t>(out.size()) < count) out.push_back(x);
    }
  }
  return out;
}

struct Kat {
  std::array<uint32_t, 4> counter;
  std::array<uint32_t, 2> key;
  std::array<uint32_t, 4> expected;
};

const Kat kKats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(RandomTest, PhiloxKnownAnswers) {
  for (const Kat& kat : kKats) {
    EXPECT_EQ(HostPhilox(kat.counter, kat.key), kat.expected);
    Exec exec = NewExec(Ref(), [&](Graph& g) {
      std::array<Node, 4> c;
      for (int i = 0; i < 4; ++i)
        c[static_cast<size_t>(i)] = Scalar(g, DType::Uint32, kat.counter[static_cast<size_t>(i)]);
      std::array<Node, 4> w =
          Philox4x32(c, {Scalar(g, DType::Uint32, kat.key[0]), Scalar(g, DType::Uint32, kat.key[1])});
      return std::vector<Node>(w.begin(), w.end());
    });
    std::vector<Tensor> out = exec.Call();
    ASSERT_EQ(out.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(out[i].Item<uint32_t>(), kat.expected[i]) << "word " << i;
  }
}

TEST(RandomTest, BitsFollowTheCounterWithCarry) {
  const uint64_t key = 0x0123456789abcdefull, hi = 7, lo = ~uint64_t{0} - 1;  // Carries after 2 blocks.
  for (const char* config : {"ref", "ref:shared=false"}) {
    Exec exec = NewExec(compute::NewWithConfig(config), [&](Node state) {
      auto [next, bits] = RandomBits32(state, 14);
      return std::vector<Node>{next, bits};
    });
    std::vector<Tensor> out = exec.Call(std::vector<uint64_t>{key, hi, lo});
    EXPECT_EQ(out[1].ToVector<uint32_t>(), HostBits(key, hi, lo, 14)) << config;
    EXPECT_EQ(out[0].ToVector<uint64_t>(), (std::vector<uint64_t>{key, 8, 2})) << config;  // 4 blocks used.
  }
}

std::vector<double> Draw(const char* config, uint64_t seed, int which, int64_t n,
                         DType dtype = DType::Float32) {
  Exec exec = NewExec(compute::NewWithConfig(config), [&](Graph& g) {
    Node state = RNGStateFromSeed(g, seed);
    std::pair<Node, Node> r =
        which == 0 ? RandomUniform(state, Shape(dtype, {n})) : RandomNormal(state, Shape(dtype, {n}));
    return ConvertDType(r.second, DType::Float64);
  });
  return exec.Call1().ToVector<double>();
}

TEST(RandomTest, SameSeedSameNumbersOnEveryRefConfiguration) {
  const std::vector<double> a = Draw("ref", 42, 0, 1000), b = Draw("ref:shared=false", 42, 0, 1000);
  EXPECT_EQ(a, b);
  EXPECT_EQ(Draw("ref", 42, 1, 1000), Draw("ref:shared=false", 42, 1, 1000));
  EXPECT_NE(a, Draw("ref", 43, 0, 1000));
  // Float32 uniforms are the top 24 bits of the words.
  const std::vector<uint32_t> bits = HostBits(42, 0, 0, 1000);
  for (size_t i = 0; i < bits.size(); ++i)
    ASSERT_EQ(a[i], std::ldexp(static_cast<double>(bits[i] >> 8), -24));
}

void Moments(const std::vector<double>& v, double& mean, double& var) {
  mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(v.size());
}

TEST(RandomTest, UniformMomentsAndRange) {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    const std::vector<double> u = Draw("ref", 7, 0, 100000, d);
    double mean = 0, var = 0;
    Moments(u, mean, var);
    EXPECT_NEAR(mean, 0.5, 4 * std::sqrt(1.0 / 12 / 1e5) + (d == DType::BFloat16 ? 1.0 / 512 : 0)) << d;
    EXPECT_NEAR(var, 1.0 / 12, 0.002) << d;
    for (double x : u) ASSERT_TRUE(x >= 0 && x < 1) << d << " " << x;
  }
}

TEST(RandomTest, NormalMoments) {
  for (DType d : {DType::Float32, DType::Float64}) {
    const std::vector<double> z = Draw("ref", 11, 1, 100000, d);
    double mean = 0, var = 0;
    Moments(z, mean, var);
    EXPECT_NEAR(mean, 0, 4 / std::sqrt(1e5)) << d;
    EXPECT_NEAR(var, 1, 4 * std::sqrt(2 / 1e5)) << d;
    for (double x : z) ASSERT_TRUE(std::isfinite(x));
  }
}

TEST(RandomTest, BernoulliRate) {
  Exec exec = NewExec(Ref(), [](Graph& g) {
    return ConvertDType(RandomBernoulli(RNGStateFromSeed(g, 3), 0.3, Shape(DType::Bool, {100000})).second,
                        DType::Float64);
  });
  double mean = 0, var = 0;
  Moments(exec.Call1().ToVector<double>(), mean, var);
  EXPECT_NEAR(mean, 0.3, 4 * std::sqrt(0.21 / 1e5));
  Exec edges = NewExec(Ref(), [](Graph& g) {
    Node s = RNGStateFromSeed(g, 3);
    return std::vector<Node>{RandomBernoulli(s, 0.0, Shape(DType::Bool, {1000})).second,
                             RandomBernoulli(s, 1.0, Shape(DType::Bool, {1000})).second};
  });
  std::vector<Tensor> out = edges.Call();
  for (bool b : out[0].ToVector<bool>()) ASSERT_FALSE(b);
  for (bool b : out[1].ToVector<bool>()) ASSERT_TRUE(b);
}

TEST(RandomTest, IntNHistogram) {
  for (DType d : {DType::Int32, DType::Uint8, DType::Int64}) {
    Exec exec = NewExec(Ref(), [d](Graph& g) {
      return ConvertDType(RandomIntN(RNGStateFromSeed(g, 5), 10, Shape(d, {100000})).second, DType::Int64);
    });
    std::vector<int64_t> counts(10, 0);
    for (int64_t v : exec.Call1().ToVector<int64_t>()) {
      ASSERT_TRUE(v >= 0 && v < 10) << v;
      ++counts[static_cast<size_t>(v)];
    }
    double chi2 = 0;
    for (int64_t c : counts) chi2 += (static_cast<double>(c) - 1e4) * (static_cast<double>(c) - 1e4) / 1e4;
    EXPECT_LT(chi2, 40.0) << d;  // 9 degrees of freedom: P(chi2 > 40) < 1e-5.
  }
  EXPECT_THROW(NewExec(Ref(),
                       [](Graph& g) {
                         return RandomIntN(RNGStateFromSeed(g, 5), 300, Shape(DType::Uint8, {2})).second;
                       })
                   .Call(),
               Error);
}

TEST(RandomTest, BinomialMean) {
  Exec exec = NewExec(Ref(), [](Graph& g) {
    return ConvertDType(RandomBinomial(RNGStateFromSeed(g, 9), 5, 0.4, Shape(DType::Float32, {20000})).second,
                        DType::Float64);
  });
  const std::vector<double> v = exec.Call1().ToVector<double>();
  double mean = 0, var = 0;
  Moments(v, mean, var);
  EXPECT_NEAR(mean, 2.0, 4 * std::sqrt(1.2 / 2e4));
  EXPECT_NEAR(var, 1.2, 0.08);
  for (double x : v) ASSERT_TRUE(x >= 0 && x <= 5 && x == std::floor(x));
}

TEST(RandomTest, SplitStatesAreUncorrelated) {
  Exec exec = NewExec(Ref(), [](Graph& g) {
    auto [a, b] = RNGStateSplit(RNGStateFromSeed(g, 1));
    const Shape s(DType::Float64, {100000});
    return std::vector<Node>{RandomUniform(a, s).second, RandomUniform(b, s).second, a, b};
  });
  std::vector<Tensor> out = exec.Call();
  const std::vector<double> x = out[0].ToVector<double>(), y = out[1].ToVector<double>();
  EXPECT_NE(out[2].ToVector<uint64_t>(), out[3].ToVector<uint64_t>());
  double mx = 0, my = 0, vx = 0, vy = 0, cov = 0;
  Moments(x, mx, vx);
  Moments(y, my, vy);
  int equal = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    cov += (x[i] - mx) * (y[i] - my);
    equal += x[i] == y[i] ? 1 : 0;
  }
  cov /= static_cast<double>(x.size());
  EXPECT_NEAR(cov / std::sqrt(vx * vy), 0, 4 / std::sqrt(1e5));
  EXPECT_LT(equal, 2);
}

TEST(RandomTest, StateAdvancesAndCallsDoNotRepeat) {
  Exec exec = NewExec(Ref(), [](Graph& g) {
    Node s0 = RNGStateFromSeed(g, 77);
    auto [s1, a] = RandomUniform(s0, Shape(DType::Float32, {10}));  // 10 words: 3 blocks.
    auto [s2, b] = RandomUniform(s1, Shape(DType::Float32, {10}));
    auto [s3, c] = RandomUniform(s2, Shape(DType::Float64, {3}));  // 6 words: 2 blocks.
    return std::vector<Node>{s1, s2, s3, a, b};
  });
  std::vector<Tensor> out = exec.Call();
  EXPECT_EQ(out[0].ToVector<uint64_t>(), (std::vector<uint64_t>{77, 0, 3}));
  EXPECT_EQ(out[1].ToVector<uint64_t>(), (std::vector<uint64_t>{77, 0, 6}));
  EXPECT_EQ(out[2].ToVector<uint64_t>(), (std::vector<uint64_t>{77, 0, 8}));
  const std::vector<float> a = out[3].ToVector<float>(), b = out[4].ToVector<float>();
  for (float x : a) {
    for (float y : b) EXPECT_NE(x, y);
  }
  EXPECT_EQ(RNGStateFromSeedTensor(5).ToVector<uint64_t>(), (std::vector<uint64_t>{5, 0, 0}));
}

TEST(RandomTest, ErrorsNameTheFunction) {
  Graph g;
  Node bad = Const(g, std::vector<uint32_t>{1, 2, 3});
  try {
    RandomUniform(bad, Shape(DType::Float32, {2}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RandomUniform"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RandomUniform(RNGStateFromSeed(g, 1), Shape(DType::Int32, {2})), Error);
  EXPECT_THROW(RandomBernoulli(RNGStateFromSeed(g, 1), 1.5, Shape(DType::Bool, {2})), Error);
}

}  // namespace
