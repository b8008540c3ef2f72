// Tests of the cpu compiler's channels-last layout pass (backends/cpu/layout.cc): channels-first
// convolutions run on NHWC values, the ops between them follow, and transposes appear only where
// a value must be NCHW (the program's outputs, ops that do not follow); results against the
// reference backend and against the cpu backend without the optimising passes.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/passes.h"
#include "backends/cpu_test_util.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

using compute::OpType;
using compute::cpu::Module;
using graph::Graph;
using graph::Node;
using kiln::test::CountOps;
using kiln::test::ExpectCpuMatchesRefAndPlain;
using kiln::test::RandomUniform;

/// The module after the cleanups, the layout pass and the cleanups again (as the compiler runs
/// them); `convs` gets the pass's count.
Module Laid(const compute::Program& program, int* convs = nullptr) {
  Module m = kiln::test::CleanedModule(program);
  const int n = compute::cpu::ConvolutionsChannelsLast(m).count;
  if (convs != nullptr) *convs = n;
  compute::cpu::Simplify(m);
  compute::cpu::EliminateDeadCode(m);
  return m;
}

/// conv(x, k) on NCHW with a [1, C, 1, 1] bias, as imported models write it.
Node ConvFirst(Node x, Node k, Node b) { return graph::Convolve(x, k).ChannelsFirst().PadSame().Done() + b; }

TEST(CpuLayout, ConsecutiveConvolutionsPassNhwcValues) {
  // conv -> relu -> conv -> residual add -> max pool -> mean over H, W: one transpose, of the
  // input; the [N, C] mean needs none.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3, 12, 12}));
  Node k1 = g.Parameter(Shape(DType::Float32, {8, 3, 3, 3}));
  Node b1 = g.Parameter(Shape(DType::Float32, {1, 8, 1, 1}));
  Node k2 = g.Parameter(Shape(DType::Float32, {8, 8, 3, 3}));
  Node b2 = g.Parameter(Shape(DType::Float32, {1, 8, 1, 1}));
  Node h = graph::MaxScalar(ConvFirst(x, k1, b1), 0.0f);
  Node r = ConvFirst(h, k2, b2) + h;
  Node pooled = graph::MaxPool(r).ChannelsFirst().Window(2).Done();
  auto program = g.Build({graph::ReduceMean(pooled, {2, 3})});
  int convs = 0;
  const Module m = Laid(*program, &convs);
  EXPECT_EQ(convs, 2);
  EXPECT_EQ(CountOps(m, OpType::Transpose), 1) << m.ToString();
  for (const compute::cpu::Node& n : m.nodes) {
    if (n.inst.op == OpType::ConvGeneral) {
      EXPECT_EQ(n.inst.attrs.conv.input_feature, 3) << m.ToString();
    }
  }
  ExpectCpuMatchesRefAndPlain(
      program,
      {RandomUniform({2, 3, 12, 12}, 1), RandomUniform({8, 3, 3, 3}, 2), RandomUniform({1, 8, 1, 1}, 3),
       RandomUniform({8, 8, 3, 3}, 4), RandomUniform({1, 8, 1, 1}, 5)},
      72);
}

TEST(CpuLayout, ValueNeededInNchwIsTransposedOnce) {
  // The convolution's result is an output and is reshaped: both read one transpose back.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3, 8, 8}));
  Node k = g.Parameter(Shape(DType::Float32, {4, 3, 3, 3}));
  Node y = graph::Convolve(x, k).ChannelsFirst().PadSame().Done();
  auto program = g.Build({y, graph::Reshape(y, {2, 4 * 8 * 8})});
  const Module m = Laid(*program);
  EXPECT_EQ(CountOps(m, OpType::Transpose), 2) << m.ToString();  // The input's, and the result's.
  ExpectCpuMatchesRefAndPlain(program, {RandomUniform({2, 3, 8, 8}, 6), RandomUniform({4, 3, 3, 3}, 7)}, 27);
}

TEST(CpuLayout, ReductionsGiveNchwOrderedResults) {
  // Over the batch the kept axes (C, H, W) come out of NHWC as (H, W, C): transposed back.
  // Over the channels, (N, H, W) either way.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3, 6, 5}));
  Node k = g.Parameter(Shape(DType::Float32, {4, 3, 3, 3}));
  Node y = graph::Convolve(x, k).ChannelsFirst().PadSame().Done();
  auto program = g.Build({graph::ReduceSum(y, {0}), graph::ReduceMax(y, {1}), graph::ReduceSum(y, {0, 2})});
  const Module m = Laid(*program);
  EXPECT_EQ(CountOps(m, OpType::ConvGeneral), 1);
  // The input's, and those of the sums over the batch ((H, W, C)) and over N and H ((W, C)).
  EXPECT_EQ(CountOps(m, OpType::Transpose), 3) << m.ToString();
  ExpectCpuMatchesRefAndPlain(program, {RandomUniform({2, 3, 6, 5}, 8), RandomUniform({4, 3, 3, 3}, 9)}, 27);
}

TEST(CpuLayout, ConcatenationPadAndSliceFollowTheLayout) {
  // Two convolutions concatenated along the channels, padded, sliced and convolved again: no
  // transposes but the input's and the output's.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3, 8, 8}));
  Node k1 = g.Parameter(Shape(DType::Float32, {4, 3, 3, 3}));
  Node k2 = g.Parameter(Shape(DType::Float32, {5, 3, 1, 1}));
  Node k3 = g.Parameter(Shape(DType::Float32, {6, 9, 3, 3}));
  Node a = graph::Convolve(x, k1).ChannelsFirst().PadSame().Done();
  Node b = graph::Convolve(x, k2).ChannelsFirst().Done();
  Node c = graph::Concatenate({a, b}, 1);
  Node zero = graph::ScalarLike(c, 0.0);
  Node padded = graph::Pad(c, zero, {{0, 0, 0}, {0, 0, 0}, {1, 2, 0}, {2, 1, 0}});
  Node sliced = graph::Slice(padded, {graph::AxisRange(), graph::AxisRange(),
                                      graph::AxisRange(0, 9).Stride(2), graph::AxisRange(1, 10)});
  auto program = g.Build({graph::Convolve(sliced, k3).ChannelsFirst().PadSame().Done()});
  int convs = 0;
  const Module m = Laid(*program, &convs);
  EXPECT_EQ(convs, 3);
  EXPECT_EQ(CountOps(m, OpType::Transpose), 2) << m.ToString();
  ExpectCpuMatchesRefAndPlain(program,
                              {RandomUniform({2, 3, 8, 8}, 10), RandomUniform({4, 3, 3, 3}, 11),
                               RandomUniform({5, 3, 1, 1}, 12), RandomUniform({6, 9, 3, 3}, 13)},
                              81);
}

TEST(CpuLayout, UpsamplingBetweenConvolutionsStaysNhwc) {
  // A nearest-neighbour 2x upsampling written as BroadcastInDim to [N, C, H, 2, W, 2] and a Reshape
  // (as imported Resize nodes build it), added to a convolution of a larger input, convolved
  // again: transposes only for the two inputs and the output.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3, 5, 6}));
  Node big = g.Parameter(Shape(DType::Float32, {2, 3, 10, 12}));
  Node k1 = g.Parameter(Shape(DType::Float32, {4, 3, 3, 3}));
  Node k2 = g.Parameter(Shape(DType::Float32, {4, 4, 3, 3}));
  Node a = graph::Convolve(x, k1).ChannelsFirst().PadSame().Done();
  Node up = graph::Reshape(graph::BroadcastToDims(graph::Reshape(a, {2, 4, 5, 1, 6, 1}), {2, 4, 5, 2, 6, 2}),
                           {2, 4, 10, 12});
  Node b = graph::Convolve(big, k1).ChannelsFirst().PadSame().Done();
  auto program = g.Build({graph::Convolve(up + b, k2).ChannelsFirst().PadSame().Done()});
  const Module m = Laid(*program);
  EXPECT_EQ(CountOps(m, OpType::Transpose), 3) << m.ToString();
  ExpectCpuMatchesRefAndPlain(program,
                              {RandomUniform({2, 3, 5, 6}, 14), RandomUniform({2, 3, 10, 12}, 15),
                               RandomUniform({4, 3, 3, 3}, 16), RandomUniform({4, 4, 3, 3}, 17)},
                              36);
}

TEST(CpuLayout, TransposeOfAHeldValueMovesNothing) {
  // The model transposes the NCHW result to NHWC itself: that is how the value is held already.
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 3, 6, 6}));
  Node k = g.Parameter(Shape(DType::Float32, {4, 3, 3, 3}));
  Node y = graph::Convolve(x, k).ChannelsFirst().PadSame().Done();
  auto program =
      g.Build({graph::TransposeAllAxes(y, {0, 2, 3, 1}), graph::TransposeAllAxes(y, {0, 3, 2, 1})});
  const Module m = Laid(*program);
  // The input's, and one for the second output (NWHC).
  EXPECT_EQ(CountOps(m, OpType::Transpose), 2) << m.ToString();
  ExpectCpuMatchesRefAndPlain(program, {RandomUniform({2, 3, 6, 6}, 18), RandomUniform({4, 3, 3, 3}, 19)},
                              27);
}

TEST(CpuLayout, ChannelsLastConvolutionsAreLeftAlone) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 8, 8, 3}));
  Node k = g.Parameter(Shape(DType::Float32, {3, 3, 3, 4}));
  auto program = g.Build({graph::MaxScalar(graph::Convolve(x, k).PadSame().Done(), 0.0f)});
  int convs = -1;
  const Module m = Laid(*program, &convs);
  EXPECT_EQ(convs, 0);
  EXPECT_EQ(CountOps(m, OpType::Transpose), 0) << m.ToString();
}

}  // namespace
}  // namespace kiln
