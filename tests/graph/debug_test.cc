// Tests for debugging a model while it runs: logged nodes and the node logger, aliases and
// their values after a run, the NaN check (graph::Exec, model::Exec and the Trainer), on each
// backend.

#include "kiln/graph/debug.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::ErrorOf;
using kiln::test::Throws;

class DebugTest : public ::testing::TestWithParam<const char*> {
 protected:
  compute::BackendPtr Backend() const { return compute::NewWithConfig(GetParam()); }
};

// Records what a node logger receives.
struct Recorder {
  std::vector<std::vector<std::string>> messages;
  std::vector<std::vector<Tensor>> values;
  NodeLogger Logger() {
    return [this](const std::vector<std::string>& m, const std::vector<Tensor>& v) {
      messages.push_back(m);
      values.push_back(v);
    };
  }
};

TEST_P(DebugTest, LoggedNodesReachTheLoggerAndResultsDoNotChange) {
  Recorder rec;
  Exec exec = NewExec(Backend(), [](Node x) {
    Node doubled = (x * 2.0f).SetLogged("doubled");
    Node sum = ReduceAllSum(doubled).SetLoggedf("sum of %d values", 3);
    return Add(doubled, sum);
  });
  exec.SetNodeLogger(rec.Logger());
  Tensor out = exec.Call1(std::vector<float>{1, 2, 3});
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{14, 16, 18}));
  ASSERT_EQ(rec.messages.size(), 1u);
  EXPECT_EQ(rec.messages[0], (std::vector<std::string>{"doubled", "sum of 3 values"}));
  ASSERT_EQ(rec.values[0].size(), 2u);
  EXPECT_EQ(rec.values[0][0].ToVector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(rec.values[0][1].Item<float>(), 12.0f);
  // Every run logs; the same compiled program serves.
  exec.Call1(std::vector<float>{0, 0, 1});
  ASSERT_EQ(rec.values.size(), 2u);
  EXPECT_EQ(rec.values[1][1].Item<float>(), 2.0f);
  EXPECT_EQ(exec.NumBuilds(), 1);
}

TEST_P(DebugTest, LoggerIsAHookAndCanBeTurnedOff) {
  Recorder rec;
  Exec exec = NewExec(Backend(), [](Node x) { return x + 1.0f; });
  exec.SetNodeLogger(rec.Logger());
  EXPECT_EQ(exec.Call1(1.0f).Item<float>(), 2.0f);
  ASSERT_EQ(rec.messages.size(), 1u);  // Called with nothing logged, as GoMLX's.
  EXPECT_TRUE(rec.messages[0].empty());
  exec.SetNodeLogger(nullptr);
  exec.Call1(1.0f);
  EXPECT_EQ(rec.messages.size(), 1u);
}

TEST_P(DebugTest, DefaultNodeLoggerPrintsGoMLXsFormat) {
  Exec exec = NewExec(
      Backend(),
      [](Node x) {
        Node y = Neg(x).SetLogged("negated");
        Node z = (x * 10.0f).SetLogged("#full tens");
        return std::vector<Node>{y, z};
      },
      "printer");
  std::vector<float> many(12);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<float>(i);
  ::testing::internal::CaptureStderr();
  exec.Call(many);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("DefaultNodeLogger(Graph \"printer\"):\n"), std::string::npos) << err;
  // Abbreviated as Tensor::ToString prints, and in full after "#full ".
  EXPECT_NE(err.find("\t(Node #1) negated: [12]float32{-0, -1, -2, -3, ..., -8, -9, -10, -11}\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("\t(Node #4) tens: [12]float32{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110}\n"),
            std::string::npos)
      << err;
}

TEST(DebugMarks, SetLoggedAndAliasesOnTheGraph) {
  Graph g("marks");
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  Node y = Exp(x);
  EXPECT_FALSE(y.IsLogged());
  y.SetLogged("exp");
  EXPECT_TRUE(y.IsLogged());
  EXPECT_EQ(y.LogMessage(), "exp");
  EXPECT_EQ(g.LoggedNodes(), (std::vector<Node>{y}));
  y.SetLogged("");
  EXPECT_FALSE(y.IsLogged());
  EXPECT_TRUE(g.LoggedNodes().empty());

  // Aliases: scoped, looked up relative to the current scope or absolute.
  x.WithAlias("input");
  {
    AliasScope layer(g, "layer1");
    EXPECT_EQ(g.AliasScopePath(), "/layer1/");
    y.WithAlias("output");
    EXPECT_EQ(g.NodeByAlias("output"), y);
    EXPECT_FALSE(g.NodeByAlias("input").Ok());
    EXPECT_EQ(g.NodeByAlias("/input"), x);
    EXPECT_TRUE(Throws([&] { Neg(x).WithAlias("output"); }, {"\"/layer1/output\"", "already", "#1"}));
  }
  EXPECT_EQ(g.AliasScopePath(), "/");
  EXPECT_EQ(y.Alias(), "/layer1/output");
  EXPECT_EQ(g.NodeByAlias("layer1/output"), y);
  Node z = Neg(y).WithAlias("/abs/neg");
  EXPECT_EQ(z.Alias(), "/abs/neg");
  std::vector<std::string> aliases;
  for (const auto& [alias, node] : g.AliasedNodes()) aliases.push_back(alias);
  EXPECT_EQ(aliases, (std::vector<std::string>{"/abs/neg", "/input", "/layer1/output"}));
  EXPECT_TRUE(Throws([&] { z.WithAlias(""); }, {"empty"}));
  EXPECT_TRUE(Throws([&] { z.WithAlias("a/"); }, {"\"a/\""}));
  EXPECT_TRUE(Throws([&] { g.PushAliasScope("a/b"); }, {"\"a/b\""}));
  EXPECT_TRUE(Throws([&] { g.PopAliasScope(); }, {"PopAliasScope"}));
  EXPECT_TRUE(Throws([] { Node().SetLogged("x"); }, {"invalid"}));
  // Traces are recorded only when asked for.
  EXPECT_EQ(z.Trace(), "");
  g.SetTraced(true);
  Node traced = Neg(z);
  EXPECT_NE(traced.Trace(), "");
}

TEST_P(DebugTest, CallWithAliasesReturnsTheAliasedValues) {
  Exec exec = NewExec(Backend(), [](Node x) {
    Graph& g = x.graph();
    AliasScope scope(g, "block");
    Node h = (x * 3.0f).WithAlias("hidden");
    return Sqrt(h).WithAlias("out");
  });
  AliasedResults r = exec.CallWithAliases({Tensor::FromValue(std::vector<float>{3, 12})});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].ToVector<float>(), (std::vector<float>{3, 6}));
  ASSERT_EQ(r.aliased.size(), 2u);
  EXPECT_EQ(r.aliased.at("/block/hidden").ToVector<float>(), (std::vector<float>{9, 36}));
  EXPECT_EQ(r.aliased.at("/block/out").ToVector<float>(), (std::vector<float>{3, 6}));
  // A plain call does not return them (its own program, without the extra outputs).
  EXPECT_EQ(exec.Call(std::vector<float>{3, 12}).size(), 1u);
  EXPECT_EQ(exec.ProgramFor({Shape(DType::Float32, {2})})->Outputs().size(), 1u);
}

TEST_P(DebugTest, NanCheckNamesTheFirstOpAndWhereItWasBuilt) {
  Exec exec = NewExec(Backend(), [](Node x) {
    Node shifted = x - 1.0f;   // Finite.
    Node logs = Log(shifted);  // log(0) = -inf, log(-0.5) = NaN: the culprit.
    return logs * 2.0f;        // Non-finite too, but from a non-finite operand.
  });
  EXPECT_FALSE(exec.NanCheck());
  // Off: the NaN is returned.
  Tensor out = exec.Call1(std::vector<float>{2, 1, 0.5f});
  EXPECT_TRUE(std::isnan(out.ToVector<float>()[2]));
  exec.SetNanCheck(true);
  EXPECT_TRUE(exec.NanCheck());
  const std::string msg = ErrorOf([&] { exec.Call1(std::vector<float>{2, 1, 0.5f}); });
  EXPECT_NE(msg.find("NaN check"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Log(#"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 values (1 NaN, 1 infinite), the finite ones in [0, 0]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("operand #3 Sub: 3 values in [-0.5, 1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("was built at:"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Mul("), std::string::npos) << msg;
  // Finite inputs: the same values as without the check.
  EXPECT_EQ(exec.Call1(std::vector<float>{2, 3, 5}).ToVector<float>(),
            (std::vector<float>{0, 2 * std::log(2.0f), 2 * std::log(4.0f)}));
}

TEST_P(DebugTest, NanCheckSeesEveryFloatDType) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    SCOPED_TRACE(DTypeName(dt));
    Exec exec = NewExec(Backend(), [](Node x) { return Sqrt(x - ScalarLike(x, 1.0)); });
    exec.SetNanCheck(true);
    Tensor fine = Tensor::FromValue(std::vector<float>{1, 5, 10, 2});
    Tensor bad = Tensor::FromValue(std::vector<float>{1, 5, 0.5f, 2});
    Exec convert = NewExec(Backend(), [dt](Node x) { return ConvertDType(x, dt); });
    EXPECT_NO_THROW(exec.Call1(convert.Call1(fine)));
    EXPECT_TRUE(Throws([&] { exec.Call1(convert.Call1(bad)); }, {"Sqrt", "(1 NaN)"}));
  }
}

TEST_P(DebugTest, NanCheckBlamesNeitherInputsNorConstantsNorWhatFollowsThem) {
  const float inf = std::numeric_limits<float>::infinity();
  Exec exec = NewExec(Backend(), [inf](Node x, Node nan_input) {
    Graph& g = x.graph();
    // A -inf mask: deliberate, and a softmax of it is finite.
    Node masked = Where(Greater(x, Scalar(g, DType::Float32, 0.0f)), x,
                        BroadcastToShape(Scalar(g, DType::Float32, -inf), x.shape()));
    Node soft = Softmax(masked);
    return std::vector<Node>{soft, nan_input * 2.0f};
  });
  exec.SetNanCheck(true);
  std::vector<Tensor> out =
      exec.Call(std::vector<float>{1, -1, 2}, std::vector<float>{std::numeric_limits<float>::quiet_NaN()});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ToVector<float>()[1], 0.0f);
  EXPECT_TRUE(std::isnan(out[1].ToVector<float>()[0]));
}

TEST_P(DebugTest, NanCheckComesFromTheEnvironment) {
  ASSERT_EQ(setenv("KILN_NAN_CHECK", "1", 1), 0);
  EXPECT_TRUE(NanCheckFromEnvironment());
  Exec exec = NewExec(Backend(), [](Node x) { return Sqrt(x); });
  model::Store store;
  model::Exec mexec(
      Backend(), store, [](model::Scope, Graph&, const std::vector<Node>& x) { return x; }, -1);
  ASSERT_EQ(unsetenv("KILN_NAN_CHECK"), 0);
  EXPECT_FALSE(NanCheckFromEnvironment());
  EXPECT_TRUE(exec.NanCheck());
  EXPECT_TRUE(mexec.NanCheck());
  EXPECT_TRUE(Throws([&] { exec.Call1(-1.0f); }, {"Sqrt"}));
}

TEST_P(DebugTest, ModelExecLogsAndKeepsVariablesWhenTheCheckFires) {
  model::Store store;
  model::Exec step(
      Backend(), store,
      [](model::Scope scope, Graph& g, const std::vector<Node>& in) {
        model::Variable v = scope.VariableWithValue("v", 4.0f);
        Node next = Div(v.NodeValue(g), in[0]).SetLogged("next v");
        v.SetNodeValue(next);
        return std::vector<Node>{next};
      },
      1);
  Recorder rec;
  step.SetNodeLogger(rec.Logger()).SetNanCheck(true);
  EXPECT_EQ(step.Call1(2.0f).Item<float>(), 2.0f);
  ASSERT_EQ(rec.values.size(), 1u);
  EXPECT_EQ(rec.values[0][0].Item<float>(), 2.0f);
  EXPECT_TRUE(Throws([&] { step.Call1(0.0f); }, {"NaN check", "Div(#1, #0)", "1 values (1 infinite)",
                                                 "operand #0 Parameter: 1 values in [0, 0]"}));
  EXPECT_EQ(rec.values.size(), 2u);  // Logged before the check.
  EXPECT_EQ(store.GetVariable("/v").Value().Item<float>(), 2.0f);
  EXPECT_EQ(step.Call1(2.0f).Item<float>(), 1.0f);
  EXPECT_EQ(store.GetVariable("/v").Value().Item<float>(), 1.0f);
}

TEST_P(DebugTest, TrainerLogsDuringTrainingAndChecksTheGradients) {
  // A model whose loss is finite but whose gradient is not: d/dw sqrt(w * 0) at w*0 = 0.
  model::Store store;
  auto model = [](model::Scope scope, const std::any&, std::vector<Node> in) {
    Graph& g = in[0].graph();
    model::Variable w = scope.VariableWithValue("w", 1.0f);
    Node pred = Sqrt(Mul(in[0], w.NodeValue(g))).SetLogged("prediction");
    return std::vector<Node>{pred};
  };
  train::Trainer trainer(Backend(), store, model, losses::MeanSquaredError,
                         optimizers::StochasticGradientDescent().LearningRate(0.1).Done(), {}, {});
  Recorder rec;
  trainer.SetNodeLogger(rec.Logger());
  auto batch = [](float x) {
    return std::vector<Tensor>{Tensor::FromValue(std::vector<std::vector<float>>{{x}})};
  };
  trainer.TrainStep(std::any(), batch(4.0f), batch(1.0f));
  ASSERT_FALSE(rec.values.empty());
  EXPECT_EQ(rec.messages.back(), (std::vector<std::string>{"prediction"}));
  EXPECT_FLOAT_EQ(rec.values.back()[0].ToVector<float>()[0], 2.0f);
  const float w = store.GetVariable("/w").Value().Item<float>();
  trainer.SetNanCheck(true);
  EXPECT_TRUE(
      Throws([&] { trainer.TrainStep(std::any(), batch(0.0f), batch(1.0f)); }, {"NaN check", "train step"}));
  EXPECT_EQ(store.GetVariable("/w").Value().Item<float>(), w);
}

INSTANTIATE_TEST_SUITE_P(Backends, DebugTest, ::testing::Values("ref", "cpu"));

}  // namespace
