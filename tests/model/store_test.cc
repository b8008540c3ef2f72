// Tests for the model package: Store, Scope rules, Variables, hyperparameters, the training flag
// and model::Exec (variables in and out, in-place updates, reproducible initialisation).

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

std::vector<compute::BackendPtr> Backends() {
  std::vector<compute::BackendPtr> b;
  for (const compute::BackendInfo& info : compute::RegisteredBackends())
    b.push_back(compute::NewWithConfig(info.name));
  return b;
}

Node Dense(model::Scope scope, Node x, int64_t out) {
  Graph& g = x.graph();
  Node w = scope.VariableWithShape("weights", Shape(x.dtype(), {x.shape().Dim(1), out})).NodeValue(g);
  Node b = scope.VariableWithShape("biases", Shape(x.dtype(), {1, out})).NodeValue(g);
  return Dot(x, w).Product() + b;
}

TEST(ModelStore, CounterAndMlpAsInTheGuide) {
  for (const compute::BackendPtr& backend : Backends()) {
    model::Store store;
    model::Exec counter = model::NewExec(backend, store, [](model::Scope scope, Graph& g) {
      model::Variable c = scope.VariableWithValue("counter", int32_t(0));
      Node next = AddScalar(c.NodeValue(g), 1);
      c.SetNodeValue(next);
      return next;
    });
    for (int i = 1; i <= 3; ++i) EXPECT_EQ(counter.Call1().Item<int32_t>(), i) << backend->Name();
    EXPECT_EQ(store.GetVariable("/counter").Value().Item<int32_t>(), 3);

    model::Exec mlp = model::NewExec(backend, store, [](model::Scope scope, Node x) {
      return Dense(scope.In("layer2"), Dense(scope.In("layer1"), x, 3), 1);
    });
    Tensor y = mlp.Call1(std::vector<std::vector<float>>{{1, 2}});
    EXPECT_EQ(y.shape(), Shape(DType::Float32, {1, 1}));
    // The same value computed by hand from the stored variables.
    std::vector<float> w1 = store.GetVariable("/layer1/weights").Value().ToVector<float>();
    std::vector<float> b1 = store.GetVariable("/layer1/biases").Value().ToVector<float>();
    std::vector<float> w2 = store.GetVariable("/layer2/weights").Value().ToVector<float>();
    std::vector<float> b2 = store.GetVariable("/layer2/biases").Value().ToVector<float>();
    double out = b2[0];
    for (int j = 0; j < 3; ++j)
      out +=
          (1 * w1[static_cast<size_t>(j)] + 2 * w1[static_cast<size_t>(3 + j)] + b1[static_cast<size_t>(j)]) *
          w2[static_cast<size_t>(j)];
    EXPECT_NEAR(y.ToVector<float>()[0], out, 1e-5);
    std::vector<std::string> paths;
    for (const model::Variable& v : store.Variables()) paths.push_back(v.Path());
    EXPECT_EQ(paths, (std::vector<std::string>{"/counter", "/layer1/weights", "/layer1/biases",
                                               "/layer2/weights", "/layer2/biases", "/#rngState"}));
    EXPECT_TRUE(store.GetVariable("/layer1/weights").Trainable());
    EXPECT_FALSE(store.GetVariable("/counter").Trainable());
    EXPECT_FALSE(store.GetVariable("/#rngState").Trainable());
    EXPECT_EQ(store.NumParameters(), 1 + 6 + 3 + 3 + 1 + 3);
    EXPECT_EQ(store.ByteSize(), 4 + (6 + 3 + 3 + 1) * 4 + 3 * 8);
  }
}

TEST(ModelStore, DefaultInitializerZerosAndHeUniform) {
  model::Store store;
  model::Scope root = store.RootScope();
  model::Variable bias = root.VariableWithShape("bias", Shape(DType::Float32, {5}));
  model::Variable row = root.VariableWithShape("row", Shape(DType::Float32, {1, 4000}));
  model::Variable w = root.VariableWithShape("w", Shape(DType::Float64, {30, 20, 10}));
  model::Variable n = root.VariableWithShape("n", Shape(DType::Int32, {3, 3}));
  for (float v : bias.Value().ToVector<float>()) EXPECT_EQ(v, 0);
  for (int32_t v : n.Value().ToVector<int32_t>()) EXPECT_EQ(v, 0);
  // [1, n]: fan-in 1, limit sqrt(6): random, inside the limit, spread over it.
  std::vector<float> r = row.Value().ToVector<float>();
  float lo = 0, hi = 0;
  for (float v : r) {
    EXPECT_LE(std::abs(v), std::sqrt(6.0f));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_LT(lo, -2.0f);
  EXPECT_GT(hi, 2.0f);
  const double limit = std::sqrt(6.0 / 600.0);
  double sum2 = 0;
  std::vector<double> wv = w.Value().ToVector<double>();
  for (double v : wv) {
    EXPECT_LE(std::abs(v), limit);
    sum2 += v * v;
  }
  // Uniform(-l, l) has variance l^2 / 3.
  EXPECT_NEAR(sum2 / static_cast<double>(wv.size()), limit * limit / 3, limit * limit / 30);
}

TEST(ModelStore, OneSeedReproducesTheModel) {
  auto build = [](uint64_t seed) {
    model::Store store;
    store.SetRNGStateFromSeed(seed);
    model::Exec mlp = model::NewExec(compute::New(), store,
                                     [](model::Scope scope, Node x) { return Dense(scope.In("a"), x, 4); });
    mlp.Call1(std::vector<std::vector<float>>{{1, 2, 3}});
    return store.GetVariable("/a/weights").Value().ToVector<float>();
  };
  EXPECT_EQ(build(7), build(7));
  EXPECT_NE(build(7), build(8));
}

TEST(ModelScope, InSharedAtRules) {
  model::Store store;
  model::Exec twice = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    Node a = Dense(scope.In("dense"), x, 2);
    Node b = Dense(scope.Shared("dense"), x, 2);  // Same variables.
    Node c = Dense(scope.At("dense"), x, 2);
    return std::vector<Node>{a, b, c};
  });
  std::vector<Tensor> r = twice.Call(std::vector<std::vector<float>>{{1, 2}});
  EXPECT_TRUE(r[0].Equal(r[1]));
  EXPECT_TRUE(r[0].Equal(r[2]));
  EXPECT_EQ(store.Variables().size(), 3u);  // weights, biases, rng state.

  model::Exec bad = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    Node a = Dense(scope.In("dense"), x, 2);
    return Dense(scope.In("dense"), a, 2);
  });
  EXPECT_TRUE(Throws(
      [&] {
        bad.Call(std::vector<std::vector<float>>{{1, 2}});
      },
      {"Scope::In(\"dense\")", "/dense", "already entered", "Shared(\"dense\")"}));
  // Outside a build In acts as At.
  model::Scope root = store.RootScope();
  EXPECT_EQ(root.In("x").Path(), "/x");
  EXPECT_EQ(root.In("x").In("y").Path(), "/x/y");
  EXPECT_EQ(root.In("x").Path(), "/x");
  EXPECT_TRUE(Throws([&] { root.In("a/b"); }, {"contains '/'"}));
}

TEST(ModelExec, RebuildForAnotherShapeReusesTheVariables) {
  model::Store store;
  model::Exec f = model::NewExec(compute::New(), store,
                                 [](model::Scope scope, Node x) { return Dense(scope.In("d"), x, 2); });
  Tensor one = f.Call1(std::vector<std::vector<float>>{{1, 2}});
  Tensor two = f.Call1(std::vector<std::vector<float>>{{1, 2}, {1, 2}});
  EXPECT_EQ(f.NumBuilds(), 2);
  EXPECT_EQ(store.Variables().size(), 3u);
  std::vector<float> a = one.ToVector<float>(), b = two.ToVector<float>();
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[3]);
  // A second Exec (inference after training) sees the same variables.
  model::Exec g = model::NewExec(compute::New(), store,
                                 [](model::Scope scope, Node x) { return Dense(scope.In("d"), x, 2); });
  EXPECT_TRUE(g.Call1(std::vector<std::vector<float>>{{1, 2}}).Equal(one));
  // InspectVariable finds without creating.
  EXPECT_TRUE(store.RootScope().In("d").InspectVariable("weights").Ok());
  EXPECT_FALSE(store.RootScope().In("d").InspectVariable("nothing").Ok());
  EXPECT_EQ(store.Variables().size(), 3u);
}

TEST(ModelExec, UpdatesInPlaceWithFlatMemory) {
  for (const compute::BackendPtr& backend : Backends()) {
    model::Store store;
    store.RootScope().VariableWithValue("w", Tensor::FromScalarAndDimensions<float>(1.0f, {256, 256}));
    model::Exec step = model::NewExec(backend, store, [](model::Scope scope, Graph& g) {
      model::Variable w = scope.VariableWithShape("w", Shape(DType::Float32, {256, 256}));
      w.SetNodeValue(w.NodeValue(g) * 0.5f + 1.0f);
      return ReduceAllSum(w.NodeValue(g));
    });
    step.Call();
    step.Call();
    const int64_t live = backend->MemoryStats().live_bytes;
    backend->ResetPeakMemory();
    step.Call();
    const int64_t one_step_peak = backend->MemoryStats().peak_bytes;
    const uint8_t* before = nullptr;
    store.GetVariable("/w").Value().ConstBytes([&](std::span<const uint8_t> b) { before = b.data(); });
    for (int i = 0; i < 1000; ++i) step.Call();
    // Flat: nothing accumulates over the steps.
    EXPECT_EQ(backend->MemoryStats().live_bytes, live) << backend->Name();
    EXPECT_EQ(backend->MemoryStats().peak_bytes, one_step_peak) << backend->Name();
    if (backend->Name() == "cpu") {
      // cpu writes the new value into the donated buffer: the variable never moves.
      const uint8_t* after = nullptr;
      store.GetVariable("/w").Value().ConstBytes([&](std::span<const uint8_t> b) { after = b.data(); });
      EXPECT_EQ(before, after);
    }
    // w -> w/2 + 1 converges to 2.
    for (float v : store.GetVariable("/w").Value().ToVector<float>()) EXPECT_EQ(v, 2.0f);
  }
}

TEST(ModelVariable, MixedPrecisionHandlesReadAndWriteTheFloat32Master) {
  // With "mixed_precision" = "BFloat16", a BFloat16 variable is a Float32 master read converted;
  // a BFloat16 new value is converted back, so an update of 1 + 2^-10 is kept (BFloat16 alone
  // would round it away).
  for (const compute::BackendPtr& backend : Backends()) {
    model::Store store;
    store.SetParam("mixed_precision", std::string("BFloat16"));
    model::Exec step = model::NewExec(backend, store, [](model::Scope scope, Graph& g) {
      model::Variable w = scope.VariableWithValue("w", Tensor::FromScalarAndDimensions<float>(1.0f, {4}));
      model::Variable h = scope.VariableWithShape("w", Shape(DType::BFloat16, {4}));
      EXPECT_EQ(h.dtype(), DType::Float32);
      EXPECT_EQ(h.ComputeDType(), DType::BFloat16);
      Node x = h.NodeValue(g);
      EXPECT_EQ(x.dtype(), DType::BFloat16);
      w.SetNodeValue(w.NodeValue(g) + std::ldexp(1.0f, -10));
      (void)x;
      return ReduceAllSum(ConvertDType(h.NodeValue(g), DType::Float32));
    });
    step.Call();
    step.Call();
    for (float v : store.GetVariable("/w").Value().ToVector<float>())
      EXPECT_EQ(v, 1.0f + std::ldexp(1.0f, -9));
    // A BFloat16 node written through the handle lands in the master as Float32.
    model::Exec write = model::NewExec(backend, store, [](model::Scope scope, Graph& g) {
      model::Variable h = scope.VariableWithShape("w", Shape(DType::BFloat16, {4}));
      h.SetNodeValue(h.NodeValue(g) * 2.0f);
      return Scalar(g, DType::Float32, 0);
    });
    write.Call();
    EXPECT_EQ(store.GetVariable("/w").dtype(), DType::Float32);
    for (float v : store.GetVariable("/w").Value().ToVector<float>()) EXPECT_EQ(v, 2.0f);  // bf16(1+2^-9)=1.
    // Other dtypes are untouched; a non-float ComputeAs is refused.
    EXPECT_EQ(store.RootScope().VariableWithShape("f", Shape(DType::Float32, {1})).ComputeDType(),
              DType::Invalid);
    EXPECT_TRUE(Throws([&] { store.GetVariable("/f").ComputeAs(DType::Int32); }, {"ComputeAs", "Int32"}));
  }
}

TEST(ModelExec, AUserHandleIsCopiedNotDonated) {
  model::Store store;
  model::Exec inc = model::NewExec(compute::New(), store, [](model::Scope scope, Graph& g) {
    model::Variable c = scope.VariableWithValue("c", std::vector<float>{1, 2});
    c.SetNodeValue(c.NodeValue(g) + 1.0f);
    return c.NodeValue(g);
  });
  inc.Call();
  Tensor held = store.GetVariable("/c").Value();  // A user handle on the current value.
  inc.Call();
  ASSERT_TRUE(held.Ok());
  EXPECT_EQ(held.ToVector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(store.GetVariable("/c").Value().ToVector<float>(), (std::vector<float>{3, 4}));
}

TEST(ModelVariable, ErrorsNameWhatWasWrong) {
  model::Store store;
  model::Scope root = store.RootScope();
  root.VariableWithShape("v", Shape(DType::Float32, {2}));
  EXPECT_TRUE(Throws([&] { root.VariableWithShape("v", Shape(DType::Float32, {3})); },
                     {"\"/v\"", "(Float32)[2]", "(Float32)[3]"}));
  EXPECT_TRUE(Throws([&] { root.VariableWithValue("v", std::vector<double>{1, 2}); }, {"\"/v\"", "Float64"}));
  EXPECT_TRUE(Throws([&] { store.GetVariable("/missing"); }, {"no variable \"/missing\""}));
  model::Variable n = root.VariableWithValue("n", int64_t(3));
  EXPECT_FALSE(n.Trainable());
  EXPECT_TRUE(Throws([&] { n.SetTrainable(true); }, {"\"/n\"", "Int64", "cannot be trainable"}));
  EXPECT_TRUE(Throws([&] { n.SetValue(Tensor::FromScalar<int32_t>(1)); }, {"\"/n\"", "SetValue"}));
  Graph g;
  EXPECT_TRUE(Throws([&] { n.SetNodeValue(Scalar(g, DType::Float32, 1)); }, {"\"/n\"", "SetNodeValue"}));
  store.DeleteVariable("/n");
  EXPECT_FALSE(store.FindVariable("/n").Ok());
  EXPECT_TRUE(Throws([&] { store.DeleteVariable("/n"); }, {"/n"}));
  EXPECT_EQ(store.GlobalStep().Value().Item<int64_t>(), 0);
  EXPECT_EQ(store.GlobalStep().Path(), "/global_step");
}

TEST(ModelParams, TypesInheritanceAndConversions) {
  model::Store store;
  model::Scope root = store.RootScope();
  root.SetParam("learning_rate", 0.01);
  root.SetParam("layers", 3);
  root.SetParam("optimizer", "adam");  // A string literal stays a string.
  root.SetParam("use_bias", true);
  root.SetParam("dims", std::vector<int>{64, 32});
  model::Scope sub = root.In("block").In("dense");
  sub.SetParam("learning_rate", 0.5);
  EXPECT_EQ(model::GetParamOr(root.In("other"), "learning_rate", 0.1), 0.01);
  EXPECT_EQ(model::GetParamOr(sub, "learning_rate", 0.1), 0.5);
  EXPECT_EQ(model::GetParamOr(root.In("block"), "learning_rate", 0.1), 0.01);
  EXPECT_EQ(model::GetParamOr(sub, "layers", 0.0), 3.0);  // integer -> float
  EXPECT_TRUE(
      Throws([&] { model::GetParamOr(sub, "learning_rate", 1); }, {"\"learning_rate\"", "not integral"}));
  EXPECT_EQ(model::GetParamOr(sub, "missing", 7), 7);
  EXPECT_EQ(model::GetParamOr(sub, "optimizer", "sgd"), std::string("adam"));
  EXPECT_EQ(model::GetParamOr(sub, "use_bias", false), true);
  EXPECT_EQ(model::GetParamOr(sub, "dims", std::vector<int64_t>{}), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(model::GetRootParamOr(sub, "learning_rate", 0.1), 0.01);
  EXPECT_TRUE(
      Throws([&] { model::GetParamOr(sub, "optimizer", 1.0); }, {"\"optimizer\"", "string", "float"}));
  EXPECT_EQ(std::get<std::string>(*store.GetParamAt("/", "optimizer")), "adam");
  EXPECT_EQ(store.Params().size(), 6u);
}

TEST(ModelTraining, FlagPerGraph) {
  model::Store store;
  bool seen_training = true, seen_hook = false;
  model::Exec f = model::NewExec(compute::New(), store, [&](model::Scope scope, Node x) {
    seen_training = model::IsTraining(scope);
    return x;
  });
  f.Call1(1.0f);
  EXPECT_FALSE(seen_training);
  model::Exec t = model::NewExec(compute::New(), store, [&](model::Scope scope, Node x) {
    seen_hook = model::IsTraining(scope);
    return x;
  });
  t.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  t.Call1(1.0f);
  EXPECT_TRUE(seen_hook);
  EXPECT_FALSE(model::IsTraining(store.RootScope()));
}

TEST(ModelParams, ParseSettingsAndSummary) {
  model::Store store;
  model::ParseSettings(store, "learning_rate=0.01;batch=32;use_bias=false;optimizer=sgd; /layer1/units=64");
  EXPECT_EQ(std::get<double>(*store.GetParamAt("/", "learning_rate")), 0.01);
  EXPECT_EQ(std::get<int64_t>(*store.GetParamAt("/", "batch")), 32);
  EXPECT_EQ(std::get<bool>(*store.GetParamAt("/", "use_bias")), false);
  EXPECT_EQ(std::get<std::string>(*store.GetParamAt("/", "optimizer")), "sgd");
  EXPECT_EQ(model::GetParamOr(store.RootScope().In("layer1"), "units", 0), 64);
  EXPECT_TRUE(Throws([&] { model::ParseSettings(store, "a=1;broken"); }, {"\"broken\"", "key=value"}));
  store.RootScope().VariableWithValue("w", std::vector<float>{1, 2, 3});
  store.RootScope().VariableWithValue("n", int32_t(1));
  EXPECT_EQ(model::Summary(store), "2 variables, 4 parameters (0.00 MiB), 3 trainable");
}

}  // namespace
