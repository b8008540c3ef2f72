// Tests for layers::Fnn: the variables it creates (names and shapes), defaults from the
// hyperparameters, the residual connections checked by a hand computation on the stored
// weights, dropout only while training, and a small regression that it learns.

#include "kiln/ml/fnn.h"

#include <gtest/gtest.h>

#include <any>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

/// Variable paths and dimensions of a store, the random-number state left out.
std::map<std::string, std::vector<int64_t>> VariableShapes(const model::Store& store) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const model::Variable& v : store.Variables())
    if (v.Path() != "/#rngState") out[v.Path()] = v.shape().Dimensions();
  return out;
}

Tensor Inputs(int64_t rows, int64_t cols, double phase = 0) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + phase));
  return Tensor::FromFlat(Shape(DType::Float32, {rows, cols}), v);
}

TEST(Fnn, CreatesTheNamedVariables) {
  model::Store store;
  model::Exec f = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::Fnn(scope.In("fnn"), x)
        .NumHiddenLayers(2)
        .HiddenDims(7)
        .Normalization("layer")
        .OutputDims(3)
        .Done();
  });
  EXPECT_EQ(f.Call1(Inputs(8, 5)).shape(), Shape(DType::Float32, {8, 3}));
  const std::map<std::string, std::vector<int64_t>> want = {
      {"/fnn/fnn_hidden_layer_0/weights", {5, 7}},
      {"/fnn/fnn_hidden_layer_0/biases", {7}},
      {"/fnn/fnn_hidden_layer_0/normalization/gain", {7}},
      {"/fnn/fnn_hidden_layer_0/normalization/offset", {7}},
      {"/fnn/fnn_hidden_layer_1/weights", {7, 7}},
      {"/fnn/fnn_hidden_layer_1/biases", {7}},
      {"/fnn/fnn_hidden_layer_1/normalization/gain", {7}},
      {"/fnn/fnn_hidden_layer_1/normalization/offset", {7}},
      {"/fnn/fnn_output_layer/weights", {7, 3}},
      {"/fnn/fnn_output_layer/biases", {3}},
  };
  EXPECT_EQ(VariableShapes(store), want);
}

TEST(Fnn, DefaultsComeFromHyperparameters) {
  model::Store store;
  model::Scope root = store.RootScope();
  root.SetParam("fnn_num_hidden_layers", 1);
  root.SetParam("fnn_num_hidden_nodes", 6);
  root.SetParam("fnn_normalization", "batch");
  root.SetParam("fnn_activation", "tanh");
  model::Exec f = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::Fnn(scope.In("m"), x).UseBias(false).OutputDims(2, 2).Done();
  });
  EXPECT_EQ(f.Call1(Inputs(4, 3)).shape(), Shape(DType::Float32, {4, 2, 2}));
  const std::map<std::string, std::vector<int64_t>> want = {
      {"/m/fnn_hidden_layer_0/weights", {3, 6}},
      {"/m/fnn_hidden_layer_0/normalization/gain", {6}},
      {"/m/fnn_hidden_layer_0/normalization/offset", {6}},
      {"/m/fnn_hidden_layer_0/normalization/mean", {6}},
      {"/m/fnn_hidden_layer_0/normalization/variance", {6}},
      {"/m/fnn_output_layer/weights", {6, 2, 2}},
  };
  EXPECT_EQ(VariableShapes(store), want);
  // Without hyperparameters: no hidden layer, a linear map.
  model::Store plain;
  model::Exec g = model::NewExec(compute::New(), plain, [](model::Scope scope, Node x) {
    return layers::Fnn(scope, x).OutputDims(1).Done();
  });
  g.Call(Inputs(2, 3));
  EXPECT_EQ(VariableShapes(plain),
            (std::map<std::string, std::vector<int64_t>>{{"/fnn_output_layer/weights", {3, 1}},
                                                         {"/fnn_output_layer/biases", {1}}}));
}

/// y = x·W + b for x [rows, in] and W [in, out] (row-major).
std::vector<double> Affine(const std::vector<double>& x, int64_t rows, int64_t in,
                           const std::vector<float>& w, const std::vector<float>& b, int64_t out) {
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i)
        acc += x[static_cast<size_t>(r * in + i)] * w[static_cast<size_t>(i * out + o)];
      y[static_cast<size_t>(r * out + o)] = acc;
    }
  }
  return y;
}

TEST(Fnn, ResidualAddsEachHiddenLayersInput) {
  for (bool residual : {true, false}) {
    SCOPED_TRACE(residual ? "residual" : "plain");
    model::Store store;
    model::Exec f = model::NewExec(compute::New(), store, [residual](model::Scope scope, Node x) {
      return layers::Fnn(scope, x)
          .NumHiddenLayers(2)
          .HiddenDims(4)
          .Activation("relu")
          .Residual(residual)
          .OutputDims(2)
          .Done();
    });
    const Tensor x = Inputs(3, 4, 0.3);
    f.Call(x);  // creates the variables
    // Non-zero biases, so that they count.
    for (const std::string layer : {"/fnn_hidden_layer_0", "/fnn_hidden_layer_1"})
      store.GetVariable(layer + "/biases")
          .SetValue(Tensor::FromValue(std::vector<float>{0.1f, -0.2f, 0.3f, 0.05f}));
    store.GetVariable("/fnn_output_layer/biases")
        .SetValue(Tensor::FromValue(std::vector<float>{0.5f, -0.5f}));
    std::vector<float> y = f.Call1(x).ToVector<float>();

    std::vector<float> xf = x.ToVector<float>();
    std::vector<double> h(xf.begin(), xf.end());
    for (const std::string layer : {"/fnn_hidden_layer_0", "/fnn_hidden_layer_1"}) {
      std::vector<double> z = Affine(h, 3, 4, store.GetVariable(layer + "/weights").Value().ToVector<float>(),
                                     store.GetVariable(layer + "/biases").Value().ToVector<float>(), 4);
      for (size_t i = 0; i < z.size(); ++i) z[i] = std::max(z[i], 0.0) + (residual ? h[i] : 0.0);
      h = z;
    }
    std::vector<double> want =
        Affine(h, 3, 4, store.GetVariable("/fnn_output_layer/weights").Value().ToVector<float>(),
               store.GetVariable("/fnn_output_layer/biases").Value().ToVector<float>(), 2);
    ASSERT_EQ(y.size(), want.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  }
}

TEST(Fnn, DropoutOnlyWhileTraining) {
  model::Store store;
  auto fn = [](model::Scope scope, Node x) {
    return layers::Fnn(scope, x).NumHiddenLayers(1).HiddenDims(64).Dropout(0.5).OutputDims(1).Done();
  };
  model::Exec infer = model::NewExec(compute::New(), store, fn);
  model::Exec train = model::NewExec(compute::New(), store, fn);
  train.OnNewGraph([](Graph& g) { model::SetTraining(g, true); });
  const Tensor x = Inputs(16, 3);
  EXPECT_TRUE(infer.Call1(x).Equal(infer.Call1(x)));
  std::vector<float> a = train.Call1(x).ToVector<float>(), b = train.Call1(x).ToVector<float>();
  EXPECT_NE(a, b);  // other units dropped at each step
  EXPECT_NE(a, infer.Call1(x).ToVector<float>());
}

TEST(Fnn, LearnsASmallRegression) {
  // y = sin(2·x0) + x1·x2 on 256 points of [-1, 1]^3.
  const int64_t n = 256;
  std::vector<float> xs(static_cast<size_t>(n * 3)), ys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float* p = &xs[static_cast<size_t>(i * 3)];
    for (int k = 0; k < 3; ++k)
      p[k] = static_cast<float>(std::sin(1.1 * static_cast<double>(i * 3 + k) + 0.5));
    ys[static_cast<size_t>(i)] = std::sin(2 * p[0]) + p[1] * p[2];
  }
  model::Store store;
  train::ModelFn model = [](model::Scope scope, const std::any&, std::vector<Node> in) {
    return std::vector<Node>{layers::Fnn(scope.In("fnn"), in[0])
                                 .NumHiddenLayers(2)
                                 .HiddenDims(32)
                                 .Activation("gelu")
                                 .Normalization("layer")
                                 .Residual(true)
                                 .OutputDims(1)
                                 .Done()};
  };
  train::Trainer trainer(compute::New(), store, model, losses::MeanSquaredError,
                         optimizers::Adam().LearningRate(0.02).Done(), {}, {});
  auto step = [&] {
    return trainer
        .TrainStep({}, {Tensor::FromFlat(Shape(DType::Float32, {n, 3}), xs)},
                   {Tensor::FromFlat(Shape(DType::Float32, {n, 1}), ys)})[0]
        .Item<float>();
  };
  const float first = step();
  float last = first;
  for (int i = 0; i < 50; ++i) last = step();
  EXPECT_GT(first, 0.1f);
  EXPECT_LT(last, 0.01f * first) << "first loss " << first;
}

TEST(Fnn, BadSettingsAreErrors) {
  model::Store store;
  model::Exec no_output = model::NewExec(
      compute::New(), store, [](model::Scope scope, Node x) { return layers::Fnn(scope.In("a"), x).Done(); });
  EXPECT_TRUE(Throws([&] { no_output.Call(Inputs(2, 2)); }, {"layers::Fnn(/a)", "OutputDims"}));
  model::Exec bad_norm = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::Fnn(scope.In("b"), x).Normalization("group").OutputDims(1).Done();
  });
  EXPECT_TRUE(Throws([&] { bad_norm.Call(Inputs(2, 2)); }, {"layers::Fnn(/b)", "\"group\""}));
  model::Exec bad_act = model::NewExec(compute::New(), store, [](model::Scope scope, Node x) {
    return layers::Fnn(scope.In("c"), x).NumHiddenLayers(1).Activation("nope").OutputDims(1).Done();
  });
  EXPECT_TRUE(Throws([&] { bad_act.Call(Inputs(2, 2)); }, {"nope"}));
}

}  // namespace
