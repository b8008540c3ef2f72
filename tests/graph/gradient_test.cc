// Tests of reverse-mode autodiff (kiln/graph/gradient.h): the guide's numbers, analytical values
// of simple rules and tie conventions, errors, zeros for unconnected targets, StopGradient and
// custom gradients, higher-order derivatives, VJPs with given adjoints, and checkpointing (same
// gradients, lower peak memory, recomputed ops fenced by OptimizationBarrier).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

/// The ref backend.
compute::BackendPtr Ref() { return compute::NewWithConfig("ref"); }

/// Runs `fn` once per registered backend (a trace names the backend on failures).
using kiln::test::ForEachBackend;
/// Elementwise |actual - expected| <= tol * (1 + |expected|), with the index on failure.
template <typename T>
void ExpectClose(const std::vector<T>& actual, const std::vector<double>& expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(actual[i]), expected[i], tol * (1 + std::abs(expected[i])))
        << "element " << i;
  }
}

/// A Float64 vector tensor.
Tensor F64(const std::vector<double>& values) {
  return Tensor::FromFlat(Shape(DType::Float64, {static_cast<int64_t>(values.size())}), values);
}

// ---- Worked examples: a quadratic and a tanh MLP against hand-computed gradients -------------------

TEST(GradientTest, GuideQuadraticNumbers) {
  ForEachBackend([](const compute::BackendPtr& backend) {
    Exec exec = NewExec(backend, [](Node x, Node y) -> std::vector<Node> {
      Node loss = Add(Square(x), Mul(x, y));
      std::vector<Node> grads = Gradient(ReduceAllSum(loss), {x, y});
      return {loss, grads[0], grads[1]};
    });
    std::vector<Tensor> r = exec.Call(std::vector<float>{1, 2}, std::vector<float>{3, 4});
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].ToVector<float>(), (std::vector<float>{4, 12}));
    EXPECT_EQ(r[1].ToVector<float>(), (std::vector<float>{5, 8}));  // 2x + y
    EXPECT_EQ(r[2].ToVector<float>(), (std::vector<float>{1, 2}));  // x
  });
}

TEST(GradientTest, GuideTanhMlpShapeAndValues) {
  const std::vector<std::vector<double>> x = {{1, 2}, {3, 4}}, w = {{0.1, 0.2}, {0.3, 0.4}};
  // loss = mean_ij tanh(z_ij), z = x w: dloss/dw_kj = sum_i x_ik (1 - tanh(z_ij)^2) / 4.
  std::vector<double> expected(4, 0.0);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const double z = x[i][0] * w[0][j] + x[i][1] * w[1][j];
      const double dz = (1 - std::tanh(z) * std::tanh(z)) / 4;
      for (int k = 0; k < 2; ++k) expected[static_cast<size_t>(k * 2 + j)] += x[i][k] * dz;
    }
  }
  ForEachBackend([&](const compute::BackendPtr& backend) {
    Exec mlp = NewExec(backend, [](Node xn, Node wn) -> std::vector<Node> {
      Node loss = ReduceAllMean(Tanh(Dot(xn, wn).Product()));
      return {loss, Gradient(loss, {wn})[0]};
    });
    std::vector<Tensor> out = mlp.Call(std::vector<std::vector<float>>{{1, 2}, {3, 4}},
                                       std::vector<std::vector<float>>{{0.1f, 0.2f}, {0.3f, 0.4f}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].shape(), Shape(DType::Float32, {2, 2}));
    EXPECT_EQ(out[1].shape().ToString(), "(Float32)[2, 2]");
    ExpectClose(out[1].ToVector<float>(), expected, 1e-6);
  });
}

// ---- Analytical values of simple rules ---------------------------------------------------------

/// The gradient of sum(f(x)) at `x` (Float64) on `backend`.
std::vector<double> GradOfSum(const compute::BackendPtr& backend, Node (*f)(Node),
                              const std::vector<double>& x) {
  Exec exec = NewExec(backend, [f](Node xn) { return Gradient(ReduceAllSum(f(xn)), {xn})[0]; });
  return exec.Call1(F64(x)).ToVector<double>();
}

TEST(GradientTest, UnaryRulesMatchDerivatives) {
  const std::vector<double> x = {0.25, 0.5, 1.5, 3};
  auto map = [&](double (*d)(double)) {
    std::vector<double> r;
    for (double v : x) r.push_back(d(v));
    return r;
  };
  ForEachBackend([&](const compute::BackendPtr& b) {
    ExpectClose(GradOfSum(b, Exp, x), map([](double v) { return std::exp(v); }), 1e-12);
    ExpectClose(GradOfSum(b, Log, x), map([](double v) { return 1 / v; }), 1e-12);
    ExpectClose(GradOfSum(b, Sin, x), map([](double v) { return std::cos(v); }), 1e-12);
    ExpectClose(GradOfSum(b, Tanh, x), map([](double v) { return 1 - std::tanh(v) * std::tanh(v); }), 1e-12);
  });
}

TEST(GradientTest, BinaryRulesMatchDerivatives) {
  const std::vector<double> x = {1, -2, 3}, y = {4, 0.5, -6};
  ForEachBackend([&](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node xn, Node yn) -> std::vector<Node> {
      std::vector<Node> mul = Gradient(ReduceAllSum(xn * yn), {xn, yn});
      std::vector<Node> div = Gradient(ReduceAllSum(xn / yn), {xn, yn});
      return {mul[0], mul[1], div[0], div[1]};
    });
    std::vector<Tensor> r = exec.Call(F64(x), F64(y));
    ASSERT_EQ(r.size(), 4u);
    ExpectClose(r[0].ToVector<double>(), y, 1e-12);
    ExpectClose(r[1].ToVector<double>(), x, 1e-12);
    std::vector<double> dx, dy;
    for (size_t i = 0; i < x.size(); ++i) {
      dx.push_back(1 / y[i]);
      dy.push_back(-x[i] / (y[i] * y[i]));
    }
    ExpectClose(r[2].ToVector<double>(), dx, 1e-12);
    ExpectClose(r[3].ToVector<double>(), dy, 1e-12);
  });
}

TEST(GradientTest, BroadcastingSumsBack) {
  ForEachBackend([](const compute::BackendPtr& b) {
    // x [2, 3] + row [1, 3] + column [2, 1] + scalar s: each broadcast operand gets the sum over
    // its copies.
    Exec exec = NewExec(b, [](Node x, Node row, Node column, Node s) -> std::vector<Node> {
      Node loss = ReduceAllSum((x + row + column + s) * x);
      return Gradient(loss, {x, row, column, s});
    });
    std::vector<Tensor> r = exec.Call(std::vector<std::vector<double>>{{1, 2, 3}, {4, 5, 6}},
                                      std::vector<std::vector<double>>{{10, 20, 30}},
                                      std::vector<std::vector<double>>{{100}, {200}}, 0.5);
    ASSERT_EQ(r.size(), 4u);
    // d/dx = 2x + row + column + s, d/drow_j = sum_i x_ij, d/dcolumn_i = sum_j x_ij, d/ds = sum x.
    ExpectClose(r[0].ToVector<double>(), {112.5, 124.5, 136.5, 218.5, 230.5, 242.5}, 1e-12);
    EXPECT_EQ(r[1].shape(), Shape(DType::Float64, {1, 3}));
    ExpectClose(r[1].ToVector<double>(), {5, 7, 9}, 1e-12);
    EXPECT_EQ(r[2].shape(), Shape(DType::Float64, {2, 1}));
    ExpectClose(r[2].ToVector<double>(), {6, 15}, 1e-12);
    EXPECT_EQ(r[3].shape(), Shape(DType::Float64, {}));
    EXPECT_DOUBLE_EQ(r[3].Item<double>(), 21);
  });
}

TEST(GradientTest, MaxTiesGoToTheFirstElementOrOperand) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Exec reduce = NewExec(b, [](Node x) { return Gradient(ReduceAllMax(x), {x})[0]; });
    ExpectClose(reduce.Call1(F64({1, 3, 3})).ToVector<double>(), {0, 1, 0}, 0);
    Exec rows = NewExec(b, [](Node x) { return Gradient(ReduceAllSum(ReduceMax(x, {1})), {x})[0]; });
    ExpectClose(rows.Call1(std::vector<std::vector<double>>{{2, 2, 1}, {0, 5, 5}}).ToVector<double>(),
                {1, 0, 0, 0, 1, 0}, 0);
    Exec elementwise = NewExec(b, [](Node x, Node y) { return Gradient(ReduceAllSum(Max(x, y)), {x, y}); });
    std::vector<Tensor> r = elementwise.Call(F64({2, 1, 4}), F64({2, 3, 4}));
    ExpectClose(r[0].ToVector<double>(), {1, 0, 1}, 0);
    ExpectClose(r[1].ToVector<double>(), {0, 1, 0}, 0);
  });
}

// ---- Errors --------------------------------------------------------------------------------------

TEST(GradientTest, RejectsNonScalarLoss) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  EXPECT_TRUE(Throws([&] { Gradient(Square(x), {x}); }, {"Gradient", "scalar", "[2]"}));
  // The guide's form, through an Exec.
  Exec bad = NewExec(Ref(), [](Node xn) { return Gradient(Square(xn), {xn})[0]; });
  EXPECT_TRUE(Throws([&] { bad.Call(std::vector<float>{1, 2}); }, {"scalar"}));
}

TEST(GradientTest, RejectsNonFloatLoss) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Int32, {2}));
  EXPECT_TRUE(Throws([&] { Gradient(ReduceAllSum(x), {x}); }, {"Gradient", "float", "Int32"}));
}

TEST(GradientTest, RejectsTargetOfAnotherGraph) {
  Graph g("first"), other("second");
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  Node y = other.Parameter(Shape(DType::Float32, {2}));
  EXPECT_TRUE(Throws([&] { Gradient(ReduceAllSum(x), {y}); }, {"target 0", "second", "first"}));
}

TEST(GradientTest, RejectsIntegerTargetNamingItsDType) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {3, 2}));
  Node idx = ArgMax(x, 0);
  EXPECT_TRUE(Throws([&] { Gradient(ReduceAllSum(x), {x, idx}); }, {"target 1", "Int32", "float"}));
}

TEST(GradientTest, BitcastHasNoGradient) {
  std::string why;
  EXPECT_FALSE(HasGradientRule(compute::OpType::Bitcast, &why));
  EXPECT_NE(why.find("reinterprets bits"), std::string::npos) << why;
  EXPECT_TRUE(HasGradientRule(compute::OpType::StopGradient));  // a zero rule still counts
  {
    // Float64 -> Float32 pairs (the last axis adapts): float to float, yet not differentiable.
    Graph g;
    Node x = g.Parameter(Shape(DType::Float64, {3}));
    Node y = Bitcast(x, DType::Float32);
    ASSERT_EQ(y.shape(), Shape(DType::Float32, {3, 2}));
    EXPECT_TRUE(
        Throws([&] { Gradient(ReduceAllSum(y), {x}); }, {"Bitcast", "no gradient", "reinterprets bits"}));
  }
  {
    // Same width: Float16 -> BFloat16.
    Graph g;
    Node x = g.Parameter(Shape(DType::Float16, {3}));
    Node loss = ReduceAllSum(ConvertDType(Bitcast(x, DType::BFloat16), DType::Float32));
    EXPECT_TRUE(Throws([&] { Gradient(loss, {x}); }, {"Bitcast"}));
  }
  {
    // Through an integer (Float32 -> Int32 -> Float32) nothing flows: no float path, zeros.
    Exec exec = NewExec(Ref(), [](Node x) {
      Node back = Bitcast(Bitcast(x, DType::Int32), DType::Float32);
      return Gradient(ReduceAllSum(back * x), {x})[0];
    });
    ExpectClose(exec.Call1(std::vector<float>{1, 2}).ToVector<float>(), {1, 2}, 0);
  }
}

// ---- Connectivity, StopGradient, custom gradients -------------------------------------------

TEST(GradientTest, UnconnectedTargetGetsZeros) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node x, Node y, Node z) {
      // y reaches the loss only through ArgMax (no gradient); z not at all.
      Node loss = ReduceAllSum(x) + ReduceAllSum(ConvertDType(ArgMax(y, 0), DType::Float64));
      return Gradient(loss, {x, y, z});
    });
    std::vector<Tensor> r =
        exec.Call(F64({1, 2}), F64({3, 1, 2}),
                  Tensor::FromFlat(Shape(DType::Float64, {2, 2}), std::vector<double>{1, 2, 3, 4}));
    ASSERT_EQ(r.size(), 3u);
    ExpectClose(r[0].ToVector<double>(), {1, 1}, 0);
    ExpectClose(r[1].ToVector<double>(), {0, 0, 0}, 0);
    EXPECT_EQ(r[2].shape(), Shape(DType::Float64, {2, 2}));
    ExpectClose(r[2].ToVector<double>(), {0, 0, 0, 0}, 0);
  });
}

TEST(GradientTest, WithRespectToAnIntermediateNode) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node x) {
      Node h = x * 2.0;
      return Gradient(ReduceAllSum(Square(h)), {h, x});  // 2h = 4x, and 8x
    });
    std::vector<Tensor> r = exec.Call(F64({1, -2, 3}));
    ExpectClose(r[0].ToVector<double>(), {4, -8, 12}, 1e-12);
    ExpectClose(r[1].ToVector<double>(), {8, -16, 24}, 1e-12);
  });
}

TEST(GradientTest, StopGradientBlocks) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node x) {
      return std::vector<Node>{Gradient(ReduceAllSum(x * StopGradient(x)), {x})[0],
                               Gradient(ReduceAllSum(Sin(StopGradient(x))), {x})[0]};
    });
    std::vector<Tensor> r = exec.Call(F64({1, 2, -3}));
    ExpectClose(r[0].ToVector<double>(), {1, 2, -3}, 0);
    ExpectClose(r[1].ToVector<double>(), {0, 0, 0}, 0);
  });
}

TEST(GradientTest, CustomGradientClipsTheAdjoint) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node x, Node c) {
      Node y = IdentityWithCustomGradient(x, [](Node, Node v) { return Clip(v, -1.0, 1.0); });
      return std::vector<Node>{y, Gradient(ReduceAllSum(y * c), {x})[0]};
    });
    std::vector<Tensor> r = exec.Call(F64({1, 2, 3}), F64({-3, 0.5, 2}));
    ExpectClose(r[0].ToVector<double>(), {1, 2, 3}, 0);  // the forward value is x
    ExpectClose(r[1].ToVector<double>(), {-1, 0.5, 1}, 0);
  });
}

TEST(GradientTest, CustomGradientInsideSecondOrder) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node x) {
      // Claims the derivative of x^3 for an identity: first gradient 3x^2, second 6x.
      Node y = IdentityWithCustomGradient(x, [](Node xv, Node v) { return v * Square(xv) * 3.0; });
      Node g = Gradient(ReduceAllSum(y), {x})[0];
      Node gg = Gradient(ReduceAllSum(g), {x})[0];
      // A custom gradient applied to a first gradient: clip(d/dx sin) = clip(cos x) scaled.
      Node clipped = IdentityWithCustomGradient(Gradient(ReduceAllSum(Sin(x)), {x})[0],
                                                [](Node, Node v) { return Clip(v, -0.5, 0.5); });
      Node through = Gradient(ReduceAllSum(clipped * 4.0), {x})[0];  // -sin(x) * clip(4)
      return std::vector<Node>{g, gg, through};
    });
    std::vector<Tensor> r = exec.Call(F64({1, -2, 0.5}));
    ExpectClose(r[0].ToVector<double>(), {3, 12, 0.75}, 1e-12);
    ExpectClose(r[1].ToVector<double>(), {6, -12, 3}, 1e-12);
    ExpectClose(r[2].ToVector<double>(), {-0.5 * std::sin(1.0), -0.5 * std::sin(-2.0), -0.5 * std::sin(0.5)},
                1e-12);
  });
}

// ---- Higher order ---------------------------------------------------------------------------------

TEST(GradientTest, HessianVectorProductOfTanhSquares) {
  // f(x) = sum(tanh(W x)^2): grad = W^T (2t(1 - t^2)), Hv = W^T ((2 - 6t^2)(1 - t^2) * W v).
  const std::vector<std::vector<double>> w = {
      {0.5, -0.3, 0.8}, {0.1, 0.7, -0.4}, {-0.6, 0.2, 0.9}, {0.3, 0.3, 0.3}};
  const std::vector<double> x = {0.4, -0.7, 1.1}, v = {1.5, -0.5, 0.25};
  std::vector<double> grad(3, 0), hv(3, 0);
  for (size_t i = 0; i < w.size(); ++i) {
    double z = 0, wv = 0;
    for (size_t j = 0; j < 3; ++j) {
      z += w[i][j] * x[j];
      wv += w[i][j] * v[j];
    }
    const double t = std::tanh(z);
    for (size_t j = 0; j < 3; ++j) {
      grad[j] += w[i][j] * 2 * t * (1 - t * t);
      hv[j] += w[i][j] * (2 - 6 * t * t) * (1 - t * t) * wv;
    }
  }
  ForEachBackend([&](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node wn, Node xn, Node vn) {
      Node loss = ReduceAllSum(Square(Tanh(Dot(wn, xn).Product())));
      Node g = Gradient(loss, {xn})[0];
      return std::vector<Node>{g, Gradient(ReduceAllSum(g * vn), {xn})[0]};
    });
    std::vector<Tensor> r = exec.Call(w, x, v);
    ExpectClose(r[0].ToVector<double>(), grad, 1e-12);
    ExpectClose(r[1].ToVector<double>(), hv, 1e-12);
  });
}

TEST(GradientTest, ThirdDerivativeOfFourthPower) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node x) {
      Node d1 = Gradient(ReduceAllSum(x * x * x * x), {x})[0];
      Node d2 = Gradient(ReduceAllSum(d1), {x})[0];
      Node d3 = Gradient(ReduceAllSum(d2), {x})[0];
      return std::vector<Node>{d1, d2, d3};
    });
    const std::vector<double> x = {-1.5, 0.5, 2};
    std::vector<Tensor> r = exec.Call(F64(x));
    std::vector<double> d1, d2, d3;
    for (double v : x) {
      d1.push_back(4 * v * v * v);
      d2.push_back(12 * v * v);
      d3.push_back(24 * v);
    }
    ExpectClose(r[0].ToVector<double>(), d1, 1e-12);
    ExpectClose(r[1].ToVector<double>(), d2, 1e-12);
    ExpectClose(r[2].ToVector<double>(), d3, 1e-12);
  });
}

// ---- VJP ------------------------------------------------------------------------------------------

TEST(GradientTest, VjpWithGivenAdjoints) {
  ForEachBackend([](const compute::BackendPtr& b) {
    Exec exec = NewExec(b, [](Node x, Node v) {
      Node y = x * x;  // [3]: the VJP is 2x * v
      Node s = Sin(x);
      Node one = VJP({y}, {v}, {x})[0];
      Node two = VJP({y, s}, {v, v}, {x})[0];        // (2x + cos x) * v
      Node skip = VJP({y, s}, {Node(), v}, {x})[0];  // an invalid adjoint counts as zeros
      return std::vector<Node>{one, two, skip};
    });
    const std::vector<double> x = {1, -2, 0.5}, v = {0.5, 3, -1};
    std::vector<Tensor> r = exec.Call(F64(x), F64(v));
    std::vector<double> one, two, skip;
    for (size_t i = 0; i < x.size(); ++i) {
      one.push_back(2 * x[i] * v[i]);
      two.push_back((2 * x[i] + std::cos(x[i])) * v[i]);
      skip.push_back(std::cos(x[i]) * v[i]);
    }
    ExpectClose(r[0].ToVector<double>(), one, 1e-12);
    ExpectClose(r[1].ToVector<double>(), two, 1e-12);
    ExpectClose(r[2].ToVector<double>(), skip, 1e-12);
  });
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {3}));
  Node wrong = g.Parameter(Shape(DType::Float32, {2}));
  EXPECT_TRUE(Throws([&] { VJP({x * x}, {wrong}, {x}); }, {"VJP", "adjoint 0"}));
}

// ---- Checkpointing --------------------------------------------------------------------------------

constexpr int kLayers = 64;
constexpr int kBlock = 8;
constexpr int64_t kWidth = 4096;

/// 64 layers of x = tanh(x * w_i + b), loss = sum(x); checkpoints every 8 layers when asked.
/// Returns the gradients with respect to x, w and b.
std::vector<Node> DeepChainGradients(Node x0, Node w, Node b, bool checkpoint) {
  Node x = x0;
  for (int i = 0; i < kLayers; ++i) {
    if (checkpoint && i % kBlock == 0) x = Checkpoint(x);
    Node wi = Reshape(Slice(w, {AxisElem(i)}), {});
    x = Tanh(x * wi + b);
  }
  if (checkpoint) x = StopCheckpoint(x);
  return Gradient(ReduceAllSum(x), {x0, w, b});
}

/// Inputs of the deep chain: x in [-1, 1], weights near 1, small biases.
std::vector<Tensor> DeepChainInputs() {
  std::vector<float> x(kWidth), w(kLayers), b(kWidth);
  for (int64_t i = 0; i < kWidth; ++i) {
    x[static_cast<size_t>(i)] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
    b[static_cast<size_t>(i)] = static_cast<float>(0.1 * std::cos(0.11 * static_cast<double>(i)));
  }
  for (int i = 0; i < kLayers; ++i) w[static_cast<size_t>(i)] = static_cast<float>(0.9 + 0.2 * std::sin(i));
  return {Tensor::FromFlat(Shape(DType::Float32, {kWidth}), x),
          Tensor::FromFlat(Shape(DType::Float32, {kLayers}), w),
          Tensor::FromFlat(Shape(DType::Float32, {kWidth}), b)};
}

/// How many instructions of `op` a program holds.
int CountOps(const compute::Program& program, compute::OpType op) {
  int n = 0;
  for (const compute::Instruction& inst : program.Instructions()) n += inst.op == op ? 1 : 0;
  return n;
}

/// Runs the deep chain's gradients once to compile, then again measuring the peak bytes.
std::vector<Tensor> RunDeepChain(const compute::BackendPtr& backend, Exec& exec, int64_t* peak) {
  const std::vector<Tensor> inputs = DeepChainInputs();
  exec.Call(inputs);
  backend->ResetPeakMemory();
  std::vector<Tensor> out = exec.Call(inputs);
  *peak = backend->MemoryStats().peak_bytes;
  return out;
}

TEST(GradientTest, CheckpointingGivesTheSameGradientsWithLessMemory) {
  ForEachBackend([](const compute::BackendPtr& backend) {
    Exec plain = NewExec(backend, [](Node x, Node w, Node b) { return DeepChainGradients(x, w, b, false); });
    Exec ckpt = NewExec(backend, [](Node x, Node w, Node b) { return DeepChainGradients(x, w, b, true); });
    int64_t plain_peak = 0, ckpt_peak = 0;
    std::vector<Tensor> a = RunDeepChain(backend, plain, &plain_peak);
    std::vector<Tensor> c = RunDeepChain(backend, ckpt, &ckpt_peak);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(c.size(), 3u);
    for (size_t i = 0; i < a.size(); ++i) {
      std::vector<double> expected;
      for (float v : a[i].ToVector<float>()) expected.push_back(v);
      ExpectClose(c[i].ToVector<float>(), expected, 1e-6);
    }
    std::cout << backend->Name() << ": deep chain peak memory " << plain_peak
              << " bytes without checkpoints, " << ckpt_peak << " with\n";
    // Measured on ref and cpu: about a quarter (the blocks' intermediates and broadcast weights
    // recomputed).
    EXPECT_LE(ckpt_peak, plain_peak * 35 / 100) << backend->Name();

    const std::vector<Shape> shapes = {Shape(DType::Float32, {kWidth}), Shape(DType::Float32, {kLayers}),
                                       Shape(DType::Float32, {kWidth})};
    std::shared_ptr<const compute::Program> p = plain.ProgramFor(shapes), q = ckpt.ProgramFor(shapes);
    EXPECT_EQ(CountOps(*p, compute::OpType::OptimizationBarrier), 0);
    EXPECT_GT(CountOps(*q, compute::OpType::OptimizationBarrier), kLayers / kBlock);
    EXPECT_EQ(CountOps(*p, compute::OpType::Tanh), kLayers);
    EXPECT_GT(CountOps(*q, compute::OpType::Tanh), kLayers);  // the blocks recomputed
  });
}

}  // namespace
