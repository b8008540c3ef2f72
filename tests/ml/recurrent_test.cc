// Tests for layers::LSTM and layers::GRU: outputs, final states and gradients equal to PyTorch's
// nn.LSTM / nn.GRU given the same weights (tests/ml/fixtures/recurrent.npz, made by
// make_recurrent_fixtures.py), forward and bidirectional, full and with lengths, on each backend;
// gradients checked against finite differences too; initialisation and errors.

#include "kiln/ml/recurrent.h"

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
using layers::RecurrentBuilder;

const Tensor& Fix(const std::string& name) {
  return kiln::test::Fixtures("tests/ml/fixtures/recurrent.npz").at(name);
}

void ExpectNear(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape().Dimensions(), want.shape().Dimensions()) << what;
  const std::vector<double> a = got.ToDoubles(), b = want.ToDoubles();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << " element " << i;
}

struct Case {
  std::string kind;  // "lstm" or "gru"
  bool bidirectional, masked;
  std::string Name() const {
    return kind + (bidirectional ? "_bi" : "_uni") + (masked ? "_masked" : "_full");
  }
};

class RecurrentTest : public ::testing::TestWithParam<const char*> {
 protected:
  compute::BackendPtr Backend() const { return compute::NewWithConfig(GetParam()); }
};

// The weight names of a case, as torch names them.
std::vector<std::string> WeightNames(const Case& c) {
  std::vector<std::string> names;
  for (const char* suffix : {"_l0", "_l0_reverse"}) {
    if (std::string(suffix) == "_l0_reverse" && !c.bidirectional) continue;
    for (const char* w : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"})
      names.push_back(w + std::string(suffix));
  }
  return names;
}

TEST_P(RecurrentTest, MatchesPyTorchValuesAndGradients) {
  for (const Case& c : {Case{"lstm", false, false}, Case{"lstm", true, false}, Case{"lstm", false, true},
                        Case{"lstm", true, true}, Case{"gru", false, false}, Case{"gru", true, false},
                        Case{"gru", false, true}, Case{"gru", true, true}}) {
    SCOPED_TRACE(c.Name());
    const std::string p = c.Name() + "/";
    const std::vector<std::string> names = WeightNames(c);
    model::Store store;
    for (const std::string& n : names) store.RootScope().In("rnn").VariableWithValue(n, Fix(p + n));
    const bool lstm = c.kind == "lstm";
    model::Exec exec(
        Backend(), store,
        [&](model::Scope scope, Graph& g, const std::vector<Node>& in) {
          Node x = in[0];
          model::Scope rnn = scope.In("rnn");
          RecurrentBuilder b = lstm ? layers::LSTM(rnn, x, 6) : layers::GRU(rnn, x, 6);
          if (c.bidirectional) b.Bidirectional();
          if (c.masked) b.Lengths(in[1]);
          layers::RnnResult r = b.Done();
          Node loss = ReduceAllSum(r.outputs * in[2]) + ReduceAllSum(r.last_hidden * in[3]);
          std::vector<Node> wrt{x};
          for (const std::string& n : names) wrt.push_back(rnn.InspectVariable(n).NodeValue(g));
          std::vector<Node> out{r.outputs, r.last_hidden, lstm ? r.last_cell : r.last_hidden};
          for (Node grad : Gradient(loss, wrt)) out.push_back(grad);
          return out;
        },
        -1);
    std::vector<Tensor> got = exec.Call({Fix(p + "x"), Fix(p + "lengths"), Fix(p + "r"), Fix(p + "rh")});
    ASSERT_EQ(got.size(), 4 + names.size());
    ExpectNear(got[0], Fix(p + "outputs"), 1e-10, "outputs");
    ExpectNear(got[1], Fix(p + "h_n"), 1e-10, "h_n");
    if (lstm) ExpectNear(got[2], Fix(p + "c_n"), 1e-10, "c_n");
    ExpectNear(got[3], Fix(p + "grad_x"), 1e-9, "gradient of x");
    for (size_t i = 0; i < names.size(); ++i)
      ExpectNear(got[4 + i], Fix(p + "grad_" + names[i]), 1e-9, "gradient of " + names[i]);
  }
}

TEST_P(RecurrentTest, GradientsMatchFiniteDifferences) {
  // A bidirectional masked case in float64: d loss / d x by central differences at a few entries.
  for (const char* kind : {"lstm", "gru"}) {
    SCOPED_TRACE(kind);
    const std::string p = std::string(kind) + "_bi_masked/";
    model::Store store;
    for (const std::string& n : WeightNames({kind, true, true}))
      store.RootScope().In("rnn").VariableWithValue(n, Fix(p + n));
    auto build = [kind](model::Scope scope, Node x, Node lengths, Node r) {
      RecurrentBuilder b = std::string(kind) == "lstm" ? layers::LSTM(scope.In("rnn"), x, 6)
                                                       : layers::GRU(scope.In("rnn"), x, 6);
      return ReduceAllSum(b.Bidirectional().Lengths(lengths).Done().outputs * r);
    };
    model::Exec loss(
        Backend(), store,
        [&](model::Scope scope, Graph&, const std::vector<Node>& in) {
          return std::vector<Node>{build(scope, in[0], in[1], in[2])};
        },
        -1);
    model::Exec grad(
        Backend(), store,
        [&](model::Scope scope, Graph&, const std::vector<Node>& in) {
          return std::vector<Node>{Gradient(build(scope, in[0], in[1], in[2]), {in[0]})[0]};
        },
        -1);
    const Tensor& x = Fix(p + "x");
    const Tensor lengths = Fix(p + "lengths"), r = Fix(p + "r");
    const std::vector<double> analytic = grad.Call({x, lengths, r})[0].ToDoubles();
    std::vector<double> xs = x.ToDoubles();
    for (size_t i : {size_t{0}, size_t{7}, size_t{22}, size_t{30}, size_t{41}, size_t{59}}) {
      const double eps = 1e-6;
      std::vector<double> plus = xs, minus = xs;
      plus[i] += eps;
      minus[i] -= eps;
      const double lp = loss.Call({Tensor::FromFlat(x.shape(), plus), lengths, r})[0].Item<double>();
      const double lm = loss.Call({Tensor::FromFlat(x.shape(), minus), lengths, r})[0].Item<double>();
      EXPECT_NEAR(analytic[i], (lp - lm) / (2 * eps), 1e-7) << "x element " << i;
    }
    // Example 1 has length 2: its steps 2.. give no output and get no gradient.
    for (size_t t = 2; t < 5; ++t)
      for (size_t f = 0; f < 4; ++f) EXPECT_EQ(analytic[(1 * 5 + t) * 4 + f], 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RecurrentTest, ::testing::Values("ref", "cpu"));

TEST(Recurrent, InitialisationStatesAndErrors) {
  model::Store store;
  model::Exec exec(
      compute::New(), store,
      [](model::Scope scope, Graph& g, const std::vector<Node>& in) {
        Node h0 = Ones(g, Shape(DType::Float32, {1, 2, 8}));
        layers::RnnResult r = layers::LSTM(scope.In("lstm"), in[0], 8).InitialState(h0, h0).Done();
        layers::RnnResult q = layers::GRU(scope.In("gru"), in[0], 8)
                                  .Direction(layers::RnnDirection::kReverse)
                                  .UseBias(false)
                                  .Done();
        return std::vector<Node>{r.outputs, r.last_hidden, q.outputs, q.last_hidden};
      },
      -1);
  Tensor x = Tensor::FromScalarAndDimensions<float>(0.5f, {2, 3, 5});
  std::vector<Tensor> out = exec.Call({x});
  EXPECT_EQ(out[0].shape(), Shape(DType::Float32, {2, 3, 8}));
  EXPECT_EQ(out[1].shape(), Shape(DType::Float32, {1, 2, 8}));
  // The last hidden state is the last step's output (forward) or the first step's (reverse).
  const std::vector<float> y = out[0].ToVector<float>(), hn = out[1].ToVector<float>();
  for (int b = 0; b < 2; ++b)
    for (int k = 0; k < 8; ++k)
      EXPECT_EQ(hn[static_cast<size_t>(b * 8 + k)], y[static_cast<size_t>((b * 3 + 2) * 8 + k)]);
  const std::vector<float> q = out[2].ToVector<float>(), qn = out[3].ToVector<float>();
  for (int b = 0; b < 2; ++b)
    for (int k = 0; k < 8; ++k)
      EXPECT_EQ(qn[static_cast<size_t>(b * 8 + k)], q[static_cast<size_t>((b * 3 + 0) * 8 + k)]);
  // PyTorch's initialisation: uniform in ±1/sqrt(hidden); no biases with UseBias(false).
  EXPECT_EQ(store.GetVariable("/lstm/weight_ih_l0").shape(), Shape(DType::Float32, {32, 5}));
  EXPECT_EQ(store.GetVariable("/lstm/weight_hh_l0").shape(), Shape(DType::Float32, {32, 8}));
  EXPECT_EQ(store.GetVariable("/gru/weight_hh_l0_reverse").shape(), Shape(DType::Float32, {24, 8}));
  EXPECT_FALSE(store.FindVariable("/gru/bias_ih_l0_reverse").Ok());
  double lo = 1, hi = -1;
  for (double w : store.GetVariable("/lstm/weight_hh_l0").Value().ToDoubles()) {
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
  EXPECT_GE(lo, -1 / std::sqrt(8.0));
  EXPECT_LE(hi, 1 / std::sqrt(8.0));
  EXPECT_LT(lo, -0.25);
  EXPECT_GT(hi, 0.25);

  Graph g;
  model::Scope scope = store.RootScope();
  Node x3 = g.Parameter(Shape(DType::Float32, {2, 3, 5}));
  EXPECT_TRUE(Throws(
      [&] {
        layers::LSTM(scope, g.Parameter(Shape(DType::Float32, {2, 3})), 4).Done();
      },
      {"layers::LSTM", "[batch, seq, features]"}));
  EXPECT_TRUE(Throws([&] { layers::GRU(scope, x3, 0).Done(); }, {"layers::GRU", "hidden size 0"}));
  EXPECT_TRUE(Throws([&] { layers::GRU(scope, x3, 4).InitialState(x3).Done(); }, {"initial state h0"}));
  EXPECT_TRUE(
      Throws([&] { layers::LSTM(scope, x3, 4).Lengths(g.Parameter(Shape(DType::Float32, {2}))).Done(); },
             {"lengths"}));
}

}  // namespace
