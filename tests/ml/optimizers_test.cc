// Tests for optimizers: ten steps of each against torch.optim's trajectories (fixtures made by
// tests/ml/make_optimizer_fixtures.py), schedules at chosen steps, FromStore, clipping, and the
// optimizer state kept in the store.

#include "kiln/ml/optimizers.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

const std::map<std::string, Tensor>& Fixtures() {
  return kiln::test::Fixtures("tests/ml/fixtures/optimizers.npz");
}

/// Runs 10 steps of `opt` on w0 with the fixture's gradients; returns w after each step.
std::vector<std::vector<double>> Trajectory(const optimizers::Optimizer& opt,
                                            const compute::BackendPtr& backend) {
  model::Store store;
  model::Variable w = store.RootScope().VariableWithValue("w", Fixtures().at("w0"));
  model::Exec step = model::NewExec(backend, store, [&](model::Scope scope, Node g) {
    model::Variable gs = scope.store().GlobalStep();
    Node s = gs.NodeValue(g.graph());
    opt->UpdateGraph(scope, {w}, {g}, s);
    gs.SetNodeValue(s + int64_t{1});
    return ReduceAllSum(g);
  });
  const Tensor& grads = Fixtures().at("grads");
  std::vector<double> all = grads.ToVector<double>();
  std::vector<std::vector<double>> out;
  for (int i = 0; i < 10; ++i) {
    std::vector<double> g(all.begin() + i * 12, all.begin() + (i + 1) * 12);
    step.Call(Tensor::FromFlat(Shape(DType::Float64, {3, 4}), g));
    out.push_back(store.GetVariable("/w").Value().ToVector<double>());
  }
  return out;
}

void ExpectMatchesTorch(const std::string& name, const optimizers::Optimizer& opt) {
  const std::vector<double> want = Fixtures().at(name).ToVector<double>();
  for (const compute::BackendInfo& info : compute::RegisteredBackends()) {
    std::vector<std::vector<double>> got = Trajectory(opt, compute::NewWithConfig(info.name));
    for (int s = 0; s < 10; ++s) {
      for (int j = 0; j < 12; ++j) {
        const double w = want[static_cast<size_t>(s * 12 + j)];
        EXPECT_NEAR(got[static_cast<size_t>(s)][static_cast<size_t>(j)], w, 1e-6 * std::max(1.0, std::abs(w)))
            << name << " on " << info.name << " step " << s << " element " << j;
      }
    }
  }
}

TEST(Optimizers, MatchTorchOverTenSteps) {
  using namespace optimizers;
  ExpectMatchesTorch("sgd", StochasticGradientDescent().LearningRate(0.1).Done());
  ExpectMatchesTorch("sgd_momentum", StochasticGradientDescent().LearningRate(0.05).Momentum(0.9).Done());
  ExpectMatchesTorch(
      "sgd_nesterov",
      StochasticGradientDescent().LearningRate(0.05).Momentum(0.9).Nesterov().WeightDecay(0.01).Done());
  ExpectMatchesTorch("adam", Adam().LearningRate(0.01).Done());
  ExpectMatchesTorch("adam_l2",
                     Adam().LearningRate(0.01).Betas(0.8, 0.99).Epsilon(1e-6).WeightDecay(0.1).Done());
  ExpectMatchesTorch("adamw", AdamW().LearningRate(0.01).WeightDecay(0.05).Done());
  ExpectMatchesTorch("rmsprop", RMSProp().LearningRate(0.01).Done());
  ExpectMatchesTorch("rmsprop_momentum", RMSProp().LearningRate(0.01).Momentum(0.5).Done());
  ExpectMatchesTorch("adagrad", Adagrad().LearningRate(0.1).Done());
  ExpectMatchesTorch("sgd_clip_norm",
                     StochasticGradientDescent().LearningRate(0.1).ClipGlobalNorm(1.0).Done());
  ExpectMatchesTorch("adamax", Adamax().LearningRate(0.02).Done());
  ExpectMatchesTorch("adamax_l2",
                     Adamax().LearningRate(0.02).Betas(0.8, 0.99).Epsilon(1e-6).WeightDecay(0.1).Done());
  ExpectMatchesTorch("amsgrad", Adam().LearningRate(0.01).Amsgrad().Done());
  ExpectMatchesTorch("amsgrad_w", AdamW().LearningRate(0.01).WeightDecay(0.05).Amsgrad().Done());
  // Skipping is off the path when every gradient is finite: the same trajectories.
  ExpectMatchesTorch("adam", Adam().LearningRate(0.01).SkipNonFinite().Done());
  ExpectMatchesTorch("sgd_momentum",
                     StochasticGradientDescent().LearningRate(0.05).Momentum(0.9).SkipNonFinite().Done());
  EXPECT_EQ(Adamax().Done()->Name(), "adamax");
  EXPECT_TRUE(Throws([] { Adamax().Amsgrad().Done(); }, {"adamax", "Amsgrad"}));
  EXPECT_TRUE(Throws([] { AdamW().Adamax().Done(); }, {"adamax", "decoupled"}));
}

std::vector<float> Float32s(const Tensor& t) {
  const std::vector<double> d = t.ToVector<double>();
  return std::vector<float>(d.begin(), d.end());
}

// Float32 variables take Adam's one-pass update (the kiln.adam_update composite: the cpu
// backend's kernel, the decomposition elsewhere): ten steps still follow torch.optim's trajectory,
// to Float32's precision.
TEST(Optimizers, Float32AdamMatchesTorch) {
  using namespace optimizers;
  const std::vector<std::pair<std::string, Optimizer>> cases = {
      {"adam", Adam().LearningRate(0.01).Done()},
      {"adam_l2", Adam().LearningRate(0.01).Betas(0.8, 0.99).Epsilon(1e-6).WeightDecay(0.1).Done()},
      {"adamw", AdamW().LearningRate(0.01).WeightDecay(0.05).Done()}};
  for (const auto& [name, opt] : cases) {
    const std::vector<double> want = Fixtures().at(name).ToVector<double>();
    for (const compute::BackendInfo& info : compute::RegisteredBackends()) {
      model::Store store;
      model::Variable w = store.RootScope().VariableWithValue(
          "w", Tensor::FromFlat(Shape(DType::Float32, {3, 4}), Float32s(Fixtures().at("w0"))));
      model::Exec step =
          model::NewExec(compute::NewWithConfig(info.name), store, [&](model::Scope scope, Node g) {
            model::Variable gs = scope.store().GlobalStep();
            Node s = gs.NodeValue(g.graph());
            opt->UpdateGraph(scope, {w}, {g}, s);
            gs.SetNodeValue(s + int64_t{1});
            return ReduceAllSum(g);
          });
      const std::vector<double> all = Fixtures().at("grads").ToVector<double>();
      for (int i = 0; i < 10; ++i) {
        std::vector<float> g(all.begin() + i * 12, all.begin() + (i + 1) * 12);
        step.Call(Tensor::FromFlat(Shape(DType::Float32, {3, 4}), g));
        const std::vector<float> got = w.Value().ToVector<float>();
        for (int j = 0; j < 12; ++j) {
          const double x = want[static_cast<size_t>(i * 12 + j)];
          EXPECT_NEAR(got[static_cast<size_t>(j)], x, 2e-5 * std::max(1.0, std::abs(x)))
              << name << " on " << info.name << " step " << i << " element " << j;
        }
      }
    }
  }
}

/// Runs three steps of `opt` over Float32 variables of `sizes` on `backend` with the same
/// gradients (special values included); returns every variable's and state's final elements.
std::vector<std::vector<float>> ThreeFloat32Steps(const optimizers::Optimizer& opt,
                                                  const compute::BackendPtr& backend,
                                                  const std::vector<int64_t>& sizes) {
  model::Store store;
  std::vector<model::Variable> vars;
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<float> w0(static_cast<size_t>(sizes[k]));
    for (size_t i = 0; i < w0.size(); ++i) w0[i] = std::sin(0.37f * static_cast<float>(i + k)) * 2.0f;
    vars.push_back(store.RootScope().VariableWithValue(
        "w" + std::to_string(k), Tensor::FromFlat(Shape(DType::Float32, {sizes[k]}), w0)));
  }
  model::Exec step = model::NewExec(backend, store, [&](model::Scope scope, const std::vector<Node>& grads) {
    model::Variable gs = scope.store().GlobalStep();
    Node s = gs.NodeValue(grads[0].graph());
    opt->UpdateGraph(scope, vars, grads, s);
    gs.SetNodeValue(s + int64_t{1});
    return std::vector<Node>{ReduceAllSum(grads[0])};
  });
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, 1e-40f, -3e-39f, 1e30f, -1e-20f, 7.5f, nan, inf, -inf};
  for (int t = 0; t < 3; ++t) {
    std::vector<Tensor> grads;
    for (size_t k = 0; k < sizes.size(); ++k) {
      std::vector<float> g(static_cast<size_t>(sizes[k]));
      for (size_t i = 0; i < g.size(); ++i) {
        g[i] = std::cos(0.11f * static_cast<float>(i * (t + 2))) * 0.3f;
        if (i % 97 == 5) g[i] = specials[(i / 97 + static_cast<size_t>(t)) % 10];
      }
      grads.push_back(Tensor::FromFlat(Shape(DType::Float32, {sizes[k]}), g));
    }
    step.Call(grads);
  }
  std::vector<std::vector<float>> out;
  for (const model::Variable& v : store.Variables()) {
    if (v.Value().dtype() == DType::Float32) out.push_back(v.Value().ToVector<float>());
  }
  return out;
}

// The cpu backend's kernel for Adam's update rounds every operation as the decomposition the other
// backends run does: the same bits, NaN and infinities included, at sizes with a partial last
// vector and large enough to split across the team.
TEST(Optimizers, AdamsCpuKernelGivesTheDecompositionsBits) {
  using namespace optimizers;
  setenv("KILN_CPU_DUMP", "1", 1);
  compute::BackendPtr cpu = compute::NewWithConfig("cpu:threads=2");
  unsetenv("KILN_CPU_DUMP");
  const std::vector<int64_t> sizes = {37, 1000, 200003};
  for (const Optimizer& opt :
       {Adam().LearningRate(0.01).Done(),
        Adam().LearningRate(0.01).Betas(0.8, 0.99).Epsilon(1e-6).WeightDecay(0.1).Done(),
        AdamW().LearningRate(0.02).WeightDecay(0.05).Done()}) {
    ::testing::internal::CaptureStderr();
    const std::vector<std::vector<float>> got = ThreeFloat32Steps(opt, cpu, sizes);
    const std::string dump = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(dump.find("kernel adam_update"), std::string::npos) << dump.substr(0, 2000);
    EXPECT_EQ(dump.find("kiln.adam_update (decomposition)"), std::string::npos);
    const std::vector<std::vector<float>> want = ThreeFloat32Steps(opt, compute::NewWithConfig("ref"), sizes);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(got.size(), 9u);  // Per size: the weights, m and v.
    int nans = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].size(), want[k].size());
      for (size_t i = 0; i < got[k].size(); ++i) {
        if (std::isnan(want[k][i])) {
          ++nans;
          ASSERT_TRUE(std::isnan(got[k][i])) << opt->Name() << " array " << k << " element " << i;
          continue;
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(got[k][i]), std::bit_cast<uint32_t>(want[k][i]))
            << opt->Name() << " array " << k << " element " << i << ": " << got[k][i] << " vs " << want[k][i];
      }
    }
    EXPECT_GT(nans, 0);  // The special gradients reached the results.
  }
}

// optimizers::AdamUpdate, for graphs that keep their own state: torch's first step from zero
// moments moves each weight by the learning rate against its gradient's sign (Float32 through the
// Composite, Float64 as graph ops), and operands that do not fit are errors naming them.
TEST(Optimizers, AdamUpdateOfOneTensor) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const compute::BackendInfo& info : compute::RegisteredBackends()) {
      Exec exec = NewExec(compute::NewWithConfig(info.name), [](Node w, Node g) {
        Node zeros = ZerosLike(w);
        return optimizers::AdamUpdate(w, g, zeros, zeros, ScalarLike(w, 0.1 / (1 - 0.9)),
                                      ScalarLike(w, std::sqrt(1 - 0.999)));
      });
      const std::vector<double> w = {1, -2, 3}, g = {0.5, -4, 1e-3};
      const Shape s(dtype, {3});
      auto tensor = [&](const std::vector<double>& x) {
        return dtype == DType::Float32 ? Tensor::FromFlat(s, std::vector<float>(x.begin(), x.end()))
                                       : Tensor::FromFlat(s, x);
      };
      const std::vector<Tensor> r = exec.Call(tensor(w), tensor(g));
      ASSERT_EQ(r.size(), 3u);
      auto values = [&](const Tensor& t) {
        if (dtype == DType::Float64) return t.ToVector<double>();
        const std::vector<float> f = t.ToVector<float>();
        return std::vector<double>(f.begin(), f.end());
      };
      const std::vector<double> m = values(r[0]), v = values(r[1]), w1 = values(r[2]);
      for (size_t i = 0; i < 3; ++i) {
        const double tol = dtype == DType::Float32 ? 1e-5 : 1e-9;
        EXPECT_NEAR(m[i], 0.1 * g[i], tol * std::abs(g[i])) << info.name << " " << i;
        EXPECT_NEAR(v[i], 0.001 * g[i] * g[i], tol * g[i] * g[i]) << info.name << " " << i;
        // 1e-8 against |g| = 1e-3 shifts the step by 1e-5 of it.
        EXPECT_NEAR(w1[i], w[i] - 0.1 * (g[i] > 0 ? 1 : -1), 2e-5) << info.name << " " << i;
      }
    }
  }
  Graph g;
  Node w = g.Parameter(Shape(DType::Float32, {4}));
  Node x = g.Parameter(Shape(DType::Float32, {3}));
  Node one = ScalarLike(w, 1.0);
  EXPECT_TRUE(Throws([&] { optimizers::AdamUpdate(w, x, w, w, one, one); }, {"AdamUpdate", "one shape"}));
  EXPECT_TRUE(Throws([&] { optimizers::AdamUpdate(w, w, w, w, w, one); }, {"AdamUpdate", "scalars", "[4]"}));
  EXPECT_TRUE(Throws([&] { optimizers::AdamUpdate(w, w, w, w, one, ConvertDType(one, DType::Float64)); },
                     {"AdamUpdate", "Float32 scalars"}));
}

// A step whose gradients hold a NaN or an infinity, with SkipNonFinite: neither the variables nor
// the optimizer's state move, and later finite steps go on from where they were. Without it, the
// NaN reaches the weights.
TEST(Optimizers, SkipNonFiniteLeavesVariablesAndStateUnchanged) {
  for (bool skip : {true, false}) {
    for (const compute::BackendInfo& info : compute::RegisteredBackends()) {
      model::Store store;
      model::Variable a = store.RootScope().VariableWithValue("a", std::vector<double>{1, 2});
      model::Variable b = store.RootScope().VariableWithValue("b", std::vector<double>{3});
      optimizers::Optimizer opt = optimizers::Adam().LearningRate(0.1).SkipNonFinite(skip).Done();
      model::Exec step =
          model::NewExec(compute::NewWithConfig(info.name), store, [&](model::Scope scope, Node ga, Node gb) {
            model::Variable gs = scope.store().GlobalStep();
            Node s = gs.NodeValue(ga.graph());
            opt->UpdateGraph(scope, {a, b}, {ga, gb}, s);
            gs.SetNodeValue(s + int64_t{1});
            return ReduceAllSum(ga);
          });
      step.Call(std::vector<double>{1, -1}, std::vector<double>{0.5});
      const std::vector<double> a1 = a.Value().ToVector<double>(), b1 = b.Value().ToVector<double>();
      const std::vector<double> m1 = store.GetVariable("/#optimizer/adam/a/m").Value().ToVector<double>();
      // Adam's first step moves each weight by lr against the gradient's sign.
      EXPECT_NEAR(a1[0], 0.9, 1e-7) << info.name;
      EXPECT_NEAR(a1[1], 2.1, 1e-7) << info.name;
      // A NaN in b's gradient only: with skipping, a does not move either.
      step.Call(std::vector<double>{1, -1}, std::vector<double>{std::nan("")});
      if (skip) {
        EXPECT_EQ(a.Value().ToVector<double>(), a1) << info.name;
        EXPECT_EQ(b.Value().ToVector<double>(), b1) << info.name;
        EXPECT_EQ(store.GetVariable("/#optimizer/adam/a/m").Value().ToVector<double>(), m1) << info.name;
        step.Call(std::vector<double>{1, -1}, std::vector<double>{-std::numeric_limits<double>::infinity()});
        EXPECT_EQ(a.Value().ToVector<double>(), a1) << info.name;
        step.Call(std::vector<double>{1, -1}, std::vector<double>{0.5});
        EXPECT_LT(a.Value().ToVector<double>()[0], a1[0]) << info.name;
        EXPECT_TRUE(std::isfinite(b.Value().ToVector<double>()[0])) << info.name;
      } else {
        EXPECT_TRUE(std::isnan(b.Value().ToVector<double>()[0])) << info.name;
        EXPECT_LT(a.Value().ToVector<double>()[0], a1[0]) << info.name;
      }
    }
  }
}

TEST(Optimizers, StateLivesInTheStore) {
  model::Store store;
  optimizers::Optimizer adam = optimizers::Adam().Done();
  Trajectory(adam, compute::New());
  model::Store s2;
  model::Variable w = s2.RootScope().VariableWithValue("w", Fixtures().at("w0"));
  model::Exec step = model::NewExec(compute::New(), s2, [&](model::Scope scope, Node g) {
    model::Variable gs = scope.store().GlobalStep();
    Node s = gs.NodeValue(g.graph());
    adam->UpdateGraph(scope, {w}, {g}, s);
    gs.SetNodeValue(s + int64_t{1});
    return ReduceAllSum(g);
  });
  step.Call(Tensor::FromScalarAndDimensions<double>(1.0, {3, 4}));
  model::Variable m = s2.GetVariable("/#optimizer/adam/w/m");
  model::Variable v = s2.GetVariable("/#optimizer/adam/w/v");
  EXPECT_FALSE(m.Trainable());
  for (double x : m.Value().ToVector<double>()) EXPECT_NEAR(x, 0.1, 1e-15);
  for (double x : v.Value().ToVector<double>()) EXPECT_NEAR(x, 0.001, 1e-15);
  EXPECT_EQ(s2.GlobalStep().Value().Item<int64_t>(), 1);
}

std::vector<double> RatesAt(const optimizers::Schedule& s, const std::vector<int64_t>& steps) {
  Exec e = NewExec(compute::New(), [&](Node step) { return s(step, DType::Float64); });
  std::vector<double> out;
  for (int64_t st : steps) out.push_back(e.Call1(st).Item<double>());
  return out;
}

TEST(Optimizers, SchedulesAtChosenSteps) {
  using namespace optimizers;
  std::vector<double> w = RatesAt(LinearWarmup(0.1, 10), {0, 4, 9, 10, 100});
  EXPECT_NEAR(w[0], 0.01, 1e-15);
  EXPECT_NEAR(w[1], 0.05, 1e-15);
  EXPECT_NEAR(w[2], 0.1, 1e-15);
  EXPECT_NEAR(w[3], 0.1, 1e-15);
  EXPECT_NEAR(w[4], 0.1, 1e-15);
  std::vector<double> c = RatesAt(CosineDecay(1.0, 110, 10, 0.1), {0, 10, 60, 110, 500});
  EXPECT_NEAR(c[0], 0.1, 1e-12);   // warm-up: 1/10 of the rate
  EXPECT_NEAR(c[1], 1.0, 1e-12);   // start of the decay
  EXPECT_NEAR(c[2], 0.55, 1e-12);  // halfway: min + (max - min) / 2
  EXPECT_NEAR(c[3], 0.1, 1e-12);
  EXPECT_NEAR(c[4], 0.1, 1e-12);
  std::vector<double> e = RatesAt(ExponentialDecay(1.0, 0.5, 10), {0, 5, 20});
  EXPECT_NEAR(e[1], std::pow(0.5, 0.5), 1e-12);
  EXPECT_NEAR(e[2], 0.25, 1e-12);
  EXPECT_NEAR(RatesAt(ExponentialDecay(1.0, 0.5, 10, true), {15})[0], 0.5, 1e-12);
  EXPECT_TRUE(Throws([] { LinearWarmup(0.1, 0); }, {"LinearWarmup", "warmup_steps"}));
}

TEST(Optimizers, FromStoreReadsTheHyperparameters) {
  model::Store s;
  EXPECT_EQ(optimizers::FromStore(s)->Name(), "adam");
  s.SetParam("optimizer", "sgd");
  EXPECT_EQ(optimizers::FromStore(s)->Name(), "sgd");
  s.SetParam("optimizer", "adamw");
  EXPECT_EQ(optimizers::FromStore(s)->Name(), "adamw");
  s.SetParam("optimizer", "rmsprop");
  EXPECT_EQ(optimizers::FromStore(s)->Name(), "rmsprop");
  s.SetParam("optimizer", "adagrad");
  EXPECT_EQ(optimizers::FromStore(s)->Name(), "adagrad");
  s.SetParam("optimizer", "adamax");
  EXPECT_EQ(optimizers::FromStore(s)->Name(), "adamax");
  s.SetParam("optimizer", "lion");
  EXPECT_TRUE(Throws([&] { optimizers::FromStore(s); }, {"\"lion\"", "adam", "sgd"}));
  // The keys reach the update: adam with learning_rate 0.01 matches the torch fixture.
  s.SetParam("optimizer", "adam");
  s.SetParam("learning_rate", 0.01);
  ExpectMatchesTorch("adam", optimizers::FromStore(s));
  s.SetParam("adam_amsgrad", true);
  s.SetParam("clip_nan", true);
  ExpectMatchesTorch("amsgrad", optimizers::FromStore(s));
  s.SetParam("adam_amsgrad", false);
  s.SetParam("clip_nan", false);
  // Clipping by value: a gradient of 5 moves SGD by lr * 0.5.
  model::Store c;
  c.SetParam("optimizer", "sgd");
  c.SetParam("learning_rate", 1.0);
  c.SetParam("clip_step_by_value", 0.5);
  optimizers::Optimizer sgd = optimizers::FromStore(c);
  model::Variable x = c.RootScope().VariableWithValue("x", std::vector<double>{0, 0});
  model::Exec step = model::NewExec(compute::New(), c, [&](model::Scope scope, Node g) {
    sgd->UpdateGraph(scope, {x}, {g}, Scalar(g.graph(), DType::Int64, 0));
    return ReduceAllSum(g);
  });
  step.Call(std::vector<double>{5, -0.25});
  EXPECT_EQ(x.Value().ToVector<double>(), (std::vector<double>{-0.5, 0.25}));
}

}  // namespace
