// Tests of convolutions, pooling, window reductions, SelectAndScatter and Interpolate
// (include/kiln/graph/conv.h): result shapes, error paths and hand-computed values on `ref`.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln::graph {
namespace {

using compute::PadAxis;
using compute::ReduceKind;
constexpr DType F32 = DType::Float32;
constexpr DType I32 = DType::Int32;

using kiln::test::Throws;

Node P(Graph& g, DType dtype, std::vector<int64_t> dims) {
  return g.Parameter(Shape(dtype, std::move(dims)));
}
Tensor F(std::vector<int64_t> dims, const std::vector<float>& v) {
  return Tensor::FromFlat(Shape(F32, dims), v);
}
std::vector<float> Run1(const std::function<Node(Node)>& fn, const Tensor& a) {
  Exec e = NewExec(compute::NewWithConfig("ref"), [fn](Node x) { return fn(x); });
  return e.Call(std::vector<Tensor>{a}).at(0).ToVector<float>();
}
std::vector<float> Run2(const std::function<Node(Node, Node)>& fn, const Tensor& a, const Tensor& b) {
  Exec e = NewExec(compute::NewWithConfig("ref"), [fn](Node x, Node y) { return fn(x, y); });
  return e.Call(std::vector<Tensor>{a, b}).at(0).ToVector<float>();
}
using Vec = std::vector<float>;

// ---- Shapes -------------------------------------------------------------------------------------

TEST(ConvTest, ConvolveShapes) {
  Graph g;
  Node x = P(g, F32, {2, 8, 8, 3}), k = P(g, F32, {3, 3, 3, 16});
  EXPECT_EQ(Convolve(x, k).Done().shape(), Shape(F32, {2, 6, 6, 16}));
  EXPECT_EQ(Convolve(x, k).PadSame().Done().shape(), Shape(F32, {2, 8, 8, 16}));
  EXPECT_EQ(Convolve(x, k).Strides(2).PadSame().Done().shape(), Shape(F32, {2, 4, 4, 16}));
  EXPECT_EQ(Convolve(x, k).Strides({2, 1}).Done().shape(), Shape(F32, {2, 3, 6, 16}));
  EXPECT_EQ(Convolve(x, k).Dilations(2).Done().shape(), Shape(F32, {2, 4, 4, 16}));
  EXPECT_EQ(Convolve(x, k).InputDilations(2).Done().shape(), Shape(F32, {2, 13, 13, 16}));
  EXPECT_EQ(Convolve(x, k).Padding({{1, 2, 0}, {0, 0, 0}}).Done().shape(), Shape(F32, {2, 9, 6, 16}));
  Node xf = P(g, F32, {2, 3, 8, 8}), kf = P(g, F32, {16, 3, 3, 3});
  EXPECT_EQ(Convolve(xf, kf).ChannelsFirst().Done().shape(), Shape(F32, {2, 16, 6, 6}));
  Node dw = P(g, F32, {3, 3, 1, 6});
  EXPECT_EQ(Convolve(x, dw).ChannelGroupCount(3).Done().shape(), Shape(F32, {2, 6, 6, 6}));
  Node x1 = P(g, F32, {1, 10, 2}), k1 = P(g, F32, {3, 2, 4});
  EXPECT_EQ(Convolve(x1, k1).Done().shape(), Shape(F32, {1, 8, 4}));
  Node x3 = P(g, F32, {1, 4, 4, 4, 2}), k3 = P(g, F32, {2, 2, 2, 2, 5});
  EXPECT_EQ(Convolve(x3, k3).Done().shape(), Shape(F32, {1, 3, 3, 3, 5}));
  Node xb = P(g, F32, {4, 5, 2}), kb = P(g, F32, {2, 2, 6});
  EXPECT_EQ(Convolve(xb, kb).BatchGroupCount(2).Done().shape(), Shape(F32, {2, 4, 6}));
}

TEST(ConvTest, PoolAndWindowShapes) {
  Graph g;
  Node x = P(g, F32, {2, 7, 7, 3});
  EXPECT_EQ(MaxPool(x).Window(2).Done().shape(), Shape(F32, {2, 3, 3, 3}));
  EXPECT_EQ(MaxPool(x).Window(2).Strides(2).PadSame().Done().shape(), Shape(F32, {2, 4, 4, 3}));
  // PadSame without strides: stride 1, the spatial size kept (GoMLX's default).
  EXPECT_EQ(MaxPool(x).Window(2).PadSame().Done().shape(), Shape(F32, {2, 7, 7, 3}));
  EXPECT_EQ(MaxPool(x).FullShape().Window(2).PadSame().Done().shape(), x.shape());
  EXPECT_EQ(MaxPool(x).FullShape().Window({1, 7, 7, 3}).Done().shape(), Shape(F32, {2, 1, 1, 1}));
  EXPECT_EQ(MaxPool(x).Window(3).PaddingPerDim({{1, 1}, {0, 2}}).Done().shape(), Shape(F32, {2, 3, 3, 3}));
  EXPECT_EQ(ConcatPool(x).Window(2).Done().shape(), Shape(F32, {2, 3, 3, 12}));
  EXPECT_EQ(ConcatPool(x).Window({2, 1}).PadSame().Done().shape(), Shape(F32, {2, 7, 7, 6}));
  EXPECT_EQ(SumPool(x).Window(3).Strides(1).Done().shape(), Shape(F32, {2, 5, 5, 3}));
  EXPECT_EQ(MeanPool(x).Window({3, 1}).Strides({1, 2}).PadSame().Done().shape(), Shape(F32, {2, 7, 4, 3}));
  Node xf = P(g, F32, {2, 3, 7});
  EXPECT_EQ(MinPool(xf).Window(2).ChannelsFirst().Done().shape(), Shape(F32, {2, 3, 3}));
  EXPECT_EQ(ReduceWindow(xf, ReduceKind::Max, {1, 1, 3}, {1, 1, 2}).shape(), Shape(F32, {2, 3, 3}));
  EXPECT_EQ(ReduceWindow(xf, ReduceKind::Sum, {1, 1, 2}, {}, {}, {}, {1, 1, 2}).shape(),
            Shape(F32, {2, 3, 12}));
  EXPECT_EQ(Interpolate(x, {14, -1}).Done().shape(), Shape(F32, {2, 14, 7, 3}));
  EXPECT_EQ(Interpolate(xf, {3}).Nearest().ChannelsFirst().Done().shape(), Shape(F32, {2, 3, 3}));
}

// ---- Errors -------------------------------------------------------------------------------------

TEST(ConvTest, ConvolveErrors) {
  Graph g;
  Node x = P(g, F32, {2, 8, 8, 3}), k = P(g, F32, {3, 3, 3, 16});
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(x, P(g, F32, {3, 3, 4, 16})).Done();
      },
      {"Convolve", "input features 3"}));
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(x, P(g, I32, {3, 3, 3, 16})).Done();
      },
      {"Convolve", "different dtypes"}));
  EXPECT_TRUE(Throws([&] { Convolve(x, P(g, F32, {3, 3, 16})).Done(); }, {"Convolve", "rank"}));
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(P(g, F32, {2, 3}), P(g, F32, {2, 3})).Done();
      },
      {"Convolve", "rank 3 to 5"}));
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(x, k).Strides({1, 2, 3}).Done();
      },
      {"Convolve", "Strides has 3 entries"}));
  EXPECT_TRUE(Throws([&] { Convolve(x, k).Strides(0).Done(); }, {"Convolve", ">= 1"}));
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(x, k).Padding({{-9, 0, 0}, {0, 0, 0}}).Done();
      },
      {"Convolve", "negative"}));
  EXPECT_TRUE(Throws([&] { Convolve(x, k).Padding({{1, 1, 0}}).Done(); }, {"Convolve", "Padding has 1"}));
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(x, P(g, F32, {3, 3, 1, 16})).ChannelGroupCount(2).Done();
      },
      {"Convolve", "feature_groups 2"}));
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(P(g, F32, {2, 8, 8, 4}), P(g, F32, {3, 3, 2, 5})).ChannelGroupCount(2).Done();
      },
      {"Convolve", "not divisible by feature_groups"}));
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(P(g, F32, {3, 8, 8, 3}), k).BatchGroupCount(2).Done();
      },
      {"Convolve", "batch 3 not divisible"}));
  EXPECT_TRUE(Throws(
      [&] {
        Convolve(P(g, F32, {2, 8, 8, 3}), P(g, F32, {3, 3, 3, 5})).BatchGroupCount(2).Done();
      },
      {"Convolve", "not divisible by batch_groups"}));
  EXPECT_TRUE(Throws([&] { Convolve(x, k).ChannelGroupCount(0).Done(); }, {"Convolve", ">= 1"}));
  compute::ConvDims bad;
  bad.input_batch = 0;
  bad.input_feature = 0;  // Repeated.
  bad.input_spatial = {1, 2};
  bad.kernel_input_feature = 2;
  bad.kernel_output_feature = 3;
  bad.kernel_spatial = {0, 1};
  bad.output_batch = 0;
  bad.output_feature = 3;
  bad.output_spatial = {1, 2};
  EXPECT_TRUE(Throws([&] { Convolve(x, k).AxesConfig(bad).Done(); }, {"Convolve", "repeated"}));
  bad.input_feature = 3;
  bad.kernel_spatial = {0, 7};
  EXPECT_TRUE(Throws([&] { Convolve(x, k).AxesConfig(bad).Done(); }, {"Convolve", "out of range"}));
  bad.kernel_spatial = {0, 1};
  EXPECT_EQ(Convolve(x, k).AxesConfig(bad).Done().shape(), Shape(F32, {2, 6, 6, 16}));
  EXPECT_TRUE(Throws(
      [&] {
        ConvGeneral(x, k, bad, {1, 1}, {}, {}, {}, 3, 3);
      },
      {"ConvGeneral", "cannot both"}));
  EXPECT_TRUE(Throws(
      [&] {
        ConvGeneral(P(g, DType::Bool, {2, 8, 8, 3}), P(g, DType::Bool, {3, 3, 3, 16}), bad);
      },
      {"ConvGeneral", "numeric"}));
}

TEST(ConvTest, WindowErrors) {
  Graph g;
  Node x = P(g, F32, {2, 7, 7, 3});
  EXPECT_TRUE(Throws([&] { MaxPool(x).Done(); }, {"MaxPool", "no window"}));
  EXPECT_TRUE(Throws([&] { MaxPool(x).Window({2, 2, 2}).Done(); }, {"MaxPool", "Window has 3 entries"}));
  EXPECT_TRUE(Throws([&] { SumPool(x).Window(0).Done(); }, {"SumPool", ">= 1"}));
  EXPECT_TRUE(Throws([&] { MeanPool(P(g, I32, {1, 4, 1})).Window(2).Done(); }, {"MeanPool", "float"}));
  EXPECT_TRUE(Throws([&] { MinPool(P(g, F32, {4, 1})).Window(2).Done(); }, {"MinPool", "rank 3 to 5"}));
  EXPECT_TRUE(Throws(
      [&] {
        ReduceWindow(x, ReduceKind::Sum, {2, 2});
      },
      {"ReduceWindow", "one size per axis"}));
  EXPECT_TRUE(Throws(
      [&] {
        ReduceWindow(x, ReduceKind::Set, {1, 2, 2, 1});
      },
      {"ReduceWindow", "reduce_kind"}));
  EXPECT_TRUE(Throws(
      [&] {
        ReduceWindow(x, ReduceKind::Sum, {1, 2, 2, 1}, {1, 0, 1, 1});
      },
      {"strides", ">= 1"}));
  EXPECT_TRUE(Throws(
      [&] {
        ReduceWindow(x, ReduceKind::Sum, {1, 2, 2, 1}, {}, {{0, 0, 0}, {-9, 0, 0}, {}, {}});
      },
      {"ReduceWindow", "negative"}));
  Node v = P(g, F32, {4});
  EXPECT_TRUE(
      Throws([&] { SelectAndScatterMax(v, P(g, F32, {3}), {2}, {2}); }, {"SelectAndScatter", "source"}));
  EXPECT_TRUE(Throws([&] { SelectAndScatterMin(v, P(g, I32, {2}), {2}, {2}); }, {"different dtypes"}));
  EXPECT_TRUE(Throws([&] { Interpolate(x, {3}).Done(); }, {"Interpolate", "1 sizes"}));
  EXPECT_TRUE(Throws([&] { Interpolate(x, {0, 3}).Done(); }, {"Interpolate", "size 0"}));
  EXPECT_TRUE(Throws([&] { Interpolate(P(g, I32, {1, 4, 1}), {8}).Done(); }, {"Interpolate", "float"}));
}

// ---- Values on ref ----------------------------------------------------------------------------------

TEST(ConvTest, ConvValues) {
  const Tensor x = F({1, 4, 1}, {1, 2, 3, 4}), k = F({2, 1, 1}, {1, 10});
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).Done(); }, x, k), (Vec{21, 32, 43}));
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).Strides(2).PadSame().Done(); }, x, k),
            (Vec{21, 43}));
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).PadSame().Done(); }, x, k), (Vec{21, 32, 43, 4}));
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).Dilations(2).Done(); }, x, k), (Vec{31, 42}));
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).InputDilations(2).Done(); }, x, k),
            (Vec{1, 20, 2, 30, 3, 40}));
  EXPECT_EQ(Run2(
                [](Node a, Node b) {
                  return Convolve(a, b).Padding({{1, 0, 0}}).Done();
                },
                x, k),
            (Vec{10, 21, 32, 43}));
  // Channels first, 2D: a 2x2 box sum over 1..9.
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).ChannelsFirst().Done(); },
                 F({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), F({1, 1, 2, 2}, {1, 1, 1, 1})),
            (Vec{12, 16, 24, 28}));
  // 3D: the sum of 1..8.
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).Done(); },
                 F({1, 2, 2, 2, 1}, {1, 2, 3, 4, 5, 6, 7, 8}), F({2, 2, 2, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1})),
            (Vec{36}));
  // Depthwise: channel c scaled by kernel[c].
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).ChannelGroupCount(2).Done(); },
                 F({1, 1, 2, 2}, {1, 2, 3, 4}), F({1, 1, 1, 2}, {2, 3})),
            (Vec{2, 6, 6, 12}));
  // Two input channels, two output features: a full matrix product per position.
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).Done(); }, F({1, 1, 2}, {3, 4}),
                 F({1, 2, 2}, {1, 2, 10, 20})),
            (Vec{43, 86}));
  // Batch groups: feature g from batch g.
  EXPECT_EQ(Run2([](Node a, Node b) { return Convolve(a, b).BatchGroupCount(2).Done(); },
                 F({2, 1, 1}, {5, 7}), F({1, 1, 2}, {1, 10})),
            (Vec{5, 70}));
}

TEST(ConvTest, IntegerAndHalfConv) {
  Exec e = NewExec(compute::NewWithConfig("ref"), [](Node a, Node b) { return Convolve(a, b).Done(); });
  Tensor y =
      e.Call(std::vector<Tensor>{Tensor::FromFlat(Shape(I32, {1, 3, 1}), std::vector<int32_t>{1, -2, 3}),
                                 Tensor::FromFlat(Shape(I32, {2, 1, 1}), std::vector<int32_t>{4, 5})})
          .at(0);
  EXPECT_EQ(y.ToVector<int32_t>(), (std::vector<int32_t>{-6, 7}));
  // Float16 accumulates in higher precision and rounds once: 1 + u/2 + u/2 = 1 + u.
  const float u = std::ldexp(1.0f, -10);
  const Tensor h =
      e.Call(std::vector<Tensor>{
                 Tensor::FromFlat(Shape(DType::Float16, {1, 3, 1}),
                                  std::vector<float16>{float16(1.0f), float16(u / 2), float16(u / 2)}),
                 Tensor::FromFlat(Shape(DType::Float16, {3, 1, 1}),
                                  std::vector<float16>{float16(1.0f), float16(1.0f), float16(1.0f)})})
          .at(0);
  EXPECT_EQ(static_cast<float>(h.ToVector<float16>().at(0)), 1.0f + u);
}

TEST(ConvTest, InterpolateIsAContraction) {
  Graph g;
  Node y = Interpolate(P(g, F32, {1, 4, 4, 2}), {8, 8}).Done();
  EXPECT_EQ(y.shape(), Shape(F32, {1, 8, 8, 2}));
  int dots = 0;
  for (int id = 0; id < g.NumNodes(); ++id)
    dots += g.instruction(id).op == compute::OpType::DotGeneral ? 1 : 0;
  EXPECT_EQ(dots, 2);
}

TEST(ConvTest, PoolValues) {
  Vec v16;
  for (int i = 1; i <= 16; ++i) v16.push_back(static_cast<float>(i));
  const Tensor x = F({1, 4, 4, 1}, v16);
  EXPECT_EQ(Run1([](Node a) { return MaxPool(a).Window(2).Done(); }, x), (Vec{6, 8, 14, 16}));
  EXPECT_EQ(Run1([](Node a) { return MinPool(a).Window(2).Done(); }, x), (Vec{1, 3, 9, 11}));
  EXPECT_EQ(Run1([](Node a) { return SumPool(a).Window(2).Done(); }, x), (Vec{14, 22, 46, 54}));
  EXPECT_EQ(Run1([](Node a) { return MeanPool(a).Window({4, 2}).Done(); }, x), (Vec{7.5, 9.5}));
  const Tensor x3 = F({1, 3, 1}, {1, 2, 3});
  EXPECT_EQ(Run1([](Node a) { return MeanPool(a).Window(2).Strides(1).PadSame().Done(); }, x3),
            (Vec{1.5, 2.5, 3}));
  EXPECT_EQ(Run1([](Node a) { return SumPool(a).Window(2).Strides(1).PadSame().Done(); }, x3),
            (Vec{3, 5, 3}));
  EXPECT_EQ(Run1([](Node a) { return MaxPool(a).Window(2).Strides(2).PadSame().Done(); },
                 F({1, 3, 1}, {-5, -6, -7})),
            (Vec{-5, -7}));
  EXPECT_EQ(Run1([](Node a) { return MaxPool(a).Window(2).PadSame().Done(); }, F({1, 3, 1}, {-5, -6, -7})),
            (Vec{-5, -6, -7}));
  // Explicit padding (max pads with -inf); FullShape pools the batch and channels too.
  EXPECT_EQ(Run1(
                [](Node a) {
                  return MaxPool(a).Window(2).PaddingPerDim({{1, 0}}).Done();
                },
                F({1, 3, 1}, {-5, -6, -7})),
            (Vec{-5, -6}));
  EXPECT_EQ(Run1(
                [](Node a) {
                  return MaxPool(a).FullShape().Window({1, 3, 1}).Done();
                },
                F({1, 3, 1}, {-5, 6, -7})),
            (Vec{6}));
  // Window dilation and base dilation.
  EXPECT_EQ(
      Run1([](Node a) { return ReduceWindow(a, ReduceKind::Sum, {2}, {}, {}, {2}); }, F({4}, {1, 2, 3, 4})),
      (Vec{4, 6}));
  EXPECT_EQ(Run1([](Node a) { return ReduceWindow(a, ReduceKind::Product, {2}, {}, {}, {}, {2}); },
                 F({3}, {1, 2, 3})),
            (Vec{1, 2, 2, 3}));
  const float inf = INFINITY;
  EXPECT_EQ(Run1(
                [](Node a) {
                  return ReduceWindow(a, ReduceKind::Max, {2}, {}, {{2, 0, 0}});
                },
                F({2}, {1, 2})),
            (Vec{-inf, 1, 2}));
}

TEST(ConvTest, SelectAndScatterValues) {
  EXPECT_EQ(Run2([](Node a, Node s) { return SelectAndScatterMax(a, s, {2}, {2}); }, F({4}, {1, 3, 2, 5}),
                 F({2}, {10, 20})),
            (Vec{0, 10, 0, 20}));
  EXPECT_EQ(Run2([](Node a, Node s) { return SelectAndScatterMax(a, s, {2}, {1}); }, F({3}, {1, 3, 2}),
                 F({2}, {1, 2})),
            (Vec{0, 3, 0}));
  EXPECT_EQ(Run2([](Node a, Node s) { return SelectAndScatterMin(a, s, {2}, {1}); }, F({3}, {1, 3, 2}),
                 F({2}, {1, 2})),
            (Vec{1, 0, 2}));
  // Ties: the first wins; NaN is selected.
  EXPECT_EQ(
      Run2([](Node a, Node s) { return SelectAndScatterMax(a, s, {3}); }, F({3}, {4, 4, 1}), F({1}, {7})),
      (Vec{7, 0, 0}));
  EXPECT_EQ(
      Run2([](Node a, Node s) { return SelectAndScatterMax(a, s, {3}); }, F({3}, {1, NAN, 5}), F({1}, {7})),
      (Vec{0, 7, 0}));
  // Padding is never selected.
  EXPECT_EQ(Run2(
                [](Node a, Node s) {
                  return SelectAndScatterMax(a, s, {2}, {2}, {{1, 0, 0}});
                },
                F({3}, {-1, -2, -3}), F({2}, {1, 2})),
            (Vec{1, 2, 0}));
}

TEST(ConvTest, InterpolateValues) {
  const Tensor x = F({1, 2, 1}, {0, 10});
  auto run = [&](const std::function<Node(Node)>& fn) { return Run1(fn, x); };
  EXPECT_EQ(run([](Node a) { return Interpolate(a, {4}).Done(); }), (Vec{0, 2.5, 7.5, 10}));
  EXPECT_EQ(run([](Node a) { return Interpolate(a, {4}).HalfPixelCenters(false).Done(); }),
            (Vec{0, 5, 10, 10}));
  EXPECT_EQ(run([](Node a) { return Interpolate(a, {4}).Nearest().Done(); }), (Vec{0, 0, 10, 10}));
  EXPECT_EQ(run([](Node a) { return Interpolate(a, {3}).Nearest().AlignCorners(true).Done(); }),
            (Vec{0, 10, 10}));
  const Vec ac = run([](Node a) { return Interpolate(a, {4}).AlignCorners(true).Done(); });
  ASSERT_EQ(ac.size(), 4u);
  EXPECT_FLOAT_EQ(ac[1], 10.0f / 3);
  EXPECT_FLOAT_EQ(ac[2], 20.0f / 3);
  EXPECT_EQ(Run1([](Node a) { return Interpolate(a, {2}).Done(); }, F({1, 4, 1}, {0, 1, 2, 3})),
            (Vec{0.5, 2.5}));
  // 2D, channels first: rows then columns.
  EXPECT_EQ(Run1(
                [](Node a) {
                  return Interpolate(a, {2, 4}).Nearest().ChannelsFirst().Done();
                },
                F({1, 1, 1, 2}, {1, 2})),
            (Vec{1, 1, 2, 2, 1, 1, 2, 2}));
}

TEST(ConvTest, EmptyWindowResultWithAHugeAxisAllocatesNothing) {
  // [0, 3] padded by 2e9 on axis 1: the result [0, 2000000003] is empty, and compiling it must
  // not size anything by the huge axis alone (a graph_run_fuzz finding: the ref backend's window
  // taps allocated 2e9 lists).
  for (const char* backend : {"ref", "cpu"}) {
    SCOPED_TRACE(backend);
    Exec e = NewExec(compute::NewWithConfig(backend), [](Node x) {
      return ReduceWindow(x, compute::ReduceKind::Max, {1, 1}, {1, 1}, {{0, 0, 0}, {0, 2000000000, 0}});
    });
    Tensor out = e.Call1(Tensor::FromShape(Shape(F32, {0, 3})));
    EXPECT_EQ(out.shape(), Shape(F32, {0, 2000000003}));
    EXPECT_EQ(out.Size(), 0);
  }
}

}  // namespace
}  // namespace kiln::graph
