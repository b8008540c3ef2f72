// Tests of the reference backend's reductions (sums, extremes, identities, ArgMax/ArgMin),
// contractions (DotGeneral), data movement (transpose, broadcast, slice, pad...) and leaves (Iota,
// Constant), on several dtypes.

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "backends/ref_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace ref_test;  // NOLINT

// ---- Reductions ----------------------------------------------------------------------------

Tensor Reduce(OpType op, const Tensor& x, std::vector<int64_t> axes) {
  OpAttributes attrs;
  attrs.axes = std::move(axes);
  return RunOp(op, {x}, std::move(attrs));
}

TEST(RefReduceTest, SumOverAxes) {
  // x[i, j, k] = 12 i + 4 j + k over [2, 3, 4].
  std::vector<int32_t> x(24);
  for (int32_t i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = i;
  const Tensor t = V(x, {2, 3, 4});
  Tensor r = Reduce(OpType::ReduceSum, t, {0, 2});
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {3}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{60, 92, 124}));
  r = Reduce(OpType::ReduceSum, t, {1});
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {2, 4}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{12, 15, 18, 21, 48, 51, 54, 57}));
  r = Reduce(OpType::ReduceSum, t, {0, 1, 2});
  EXPECT_EQ(r.shape(), Shape(DType::Int32));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{276}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceSum, t, {})), (std::vector<int64_t>(x.begin(), x.end())));
  const std::vector<double> xd(x.begin(), x.end());
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceSum, V(xd, {2, 3, 4}), {2, 0}), {60, 92, 124}));
  std::vector<float16> xh;
  for (int32_t v : x) xh.push_back(H(static_cast<float>(v)));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceSum, V(xh, {2, 3, 4}), {1}), {12, 15, 18, 21, 48, 51, 54, 57}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMax, V(xh, {2, 3, 4}), {0, 1}), {20, 21, 22, 23}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMin, t, {2})), (std::vector<int64_t>{0, 4, 8, 12, 16, 20}));
}

TEST(RefReduceTest, FloatsAccumulateInDoubleIntegersWrap) {
  // In float, 1e8 + 1 is 1e8 again; in double the sum is exactly 1.
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceSum, V(std::vector<float>{1e8f, 1, -1e8f}), {0}), {1}));
  // Float16 2048 + 1 rounds back to 2048; accumulated in double, 2048 + 1 + 1 = 2050 is exact.
  EXPECT_TRUE(
      SameFloats(Reduce(OpType::ReduceSum, V(std::vector<float16>{H(2048), H(1), H(1)}), {0}), {2050}));
  EXPECT_TRUE(
      SameFloats(Reduce(OpType::ReduceSum, V(std::vector<bfloat16>{B(256), B(1), B(1)}), {0}), {258}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceProduct, V(std::vector<float>{2, 3, 0.5f}), {0}), {3}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceSum, V(std::vector<int8_t>{100, 100}), {0})),
            (std::vector<int64_t>{-56}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceProduct, V(std::vector<int32_t>{65536, 65536, 3}), {0})),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceProduct, V(std::vector<uint8_t>{15, 17}), {0})),
            (std::vector<int64_t>{255}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceProduct, V(std::vector<uint16_t>{65535, 65535}), {0})),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceSum, V(std::vector<int64_t>{kMax64, 1}), {0})),
            (std::vector<int64_t>{kMin64}));
}

TEST(RefReduceTest, MaxMinPropagateNaN) {
  const float nan = static_cast<float>(kNaN);
  const Tensor x = V(std::vector<float>{1, nan, 3, -1, -5, 2}, {2, 3});
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMax, x, {1}), {kNaN, 2}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMin, x, {1}), {kNaN, -5}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMax, x, {0}), {1, kNaN, 3}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMin, V(std::vector<bfloat16>{B(2), B(nan)}), {0}), {kNaN}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMax, V(std::vector<int16_t>{-3, -7}), {0})),
            (std::vector<int64_t>{-3}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMin, V(std::vector<uint64_t>{~uint64_t{0}, 9}), {0})),
            (std::vector<int64_t>{9}));
}

TEST(RefReduceTest, EmptyReductionsGiveTheIdentity) {
  const auto empty = [](DType d) { return Tensor::FromShape(Shape(d, {0, 2})); };
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceSum, empty(DType::Float32), {0}), {0, 0}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceProduct, empty(DType::Float64), {0}), {1, 1}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMax, empty(DType::Float16), {0}), {-kInf, -kInf}));
  EXPECT_TRUE(SameFloats(Reduce(OpType::ReduceMin, empty(DType::BFloat16), {0}), {kInf, kInf}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMax, empty(DType::Int32), {0})),
            (std::vector<int64_t>{kMin32, kMin32}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMin, empty(DType::Int32), {0})),
            (std::vector<int64_t>{kMax32, kMax32}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMax, empty(DType::Uint8), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceMin, empty(DType::Uint8), {0})), (std::vector<int64_t>{255, 255}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceSum, empty(DType::Int64), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceProduct, empty(DType::Int8), {0})), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalAnd, empty(DType::Bool), {0})), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalOr, empty(DType::Bool), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalXor, empty(DType::Bool), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseAnd, empty(DType::Int16), {0})), (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseAnd, empty(DType::Uint32), {0})),
            (std::vector<int64_t>{0xFFFFFFFF, 0xFFFFFFFF}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseOr, empty(DType::Uint32), {0})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseXor, empty(DType::Int8), {0})), (std::vector<int64_t>{0, 0}));
}

TEST(RefReduceTest, LogicalAndBitwise) {
  const Tensor b = V(std::vector<bool>{true, true, false, true, true, true}, {2, 3});
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalAnd, b, {1})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalOr, b, {1})), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceLogicalXor, b, {1})), (std::vector<int64_t>{0, 1}));
  const Tensor u = V(std::vector<uint8_t>{0xF0, 0x3C, 0x0F});
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseAnd, u, {0})), (std::vector<int64_t>{0x00}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseOr, u, {0})), (std::vector<int64_t>{0xFF}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseXor, u, {0})), (std::vector<int64_t>{0xC3}));
  EXPECT_EQ(Ints(Reduce(OpType::ReduceBitwiseOr, V(std::vector<int64_t>{kMin64, 1}), {0})),
            (std::vector<int64_t>{kMin64 + 1}));
}

Tensor Arg(OpType op, const Tensor& x, int64_t axis, DType dtype) {
  OpAttributes attrs;
  attrs.axis = axis;
  attrs.dtype = dtype;
  return RunOp(op, {x}, std::move(attrs));
}

TEST(RefReduceTest, ArgMaxArgMin) {
  const float nan = static_cast<float>(kNaN);
  // Ties give the first index; NaN counts as both the max and the min, the first NaN winning.
  const Tensor x = V(std::vector<float>{1, 3, 3, 0, 2, nan, 5, nan}, {2, 4});
  Tensor r = Arg(OpType::ArgMax, x, 1, DType::Int32);
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMin, x, 1, DType::Int64)), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMin, V(std::vector<double>{2, 1, 1}), 0, DType::Uint8)),
            (std::vector<int64_t>{1}));
  const Tensor y = V(std::vector<int8_t>{1, 5, 4, 5, 4, -1}, {3, 2});
  r = Arg(OpType::ArgMax, y, 0, DType::Int16);
  EXPECT_EQ(r.shape(), Shape(DType::Int16, {2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMin, y, 0, DType::Uint64)), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMax, V(std::vector<float16>{H(1), H(nan), H(5)}), 0, DType::Int32)),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMin, V(std::vector<bfloat16>{B(1), B(-5), B(nan)}), 0, DType::Int32)),
            (std::vector<int64_t>{2}));
  EXPECT_EQ(Ints(Arg(OpType::ArgMax, V(std::vector<uint32_t>{7, 4000000000u, 4000000000u}), 0, DType::Int8)),
            (std::vector<int64_t>{1}));
  // An empty axis gives index 0 without touching the empty operand, whose buffer may be null (a
  // graph_run_fuzz finding: pointer arithmetic on that null buffer).
  const Tensor empty = Tensor::FromBytes(Shape(DType::Float32, {2, 0, 2}), std::vector<uint8_t>{});
  EXPECT_EQ(Ints(Arg(OpType::ArgMax, empty, 1, DType::Int32)), (std::vector<int64_t>{0, 0, 0, 0}));
  for (const char* b : {"ref", "cpu"}) {
    graph::Exec sliced = graph::NewExec(compute::NewWithConfig(b), [](graph::Node in) {
      graph::Node e = graph::Slice(in, {graph::AxisRange(), graph::AxisRange(0, 0)});
      return std::vector<graph::Node>{graph::ArgMax(e, 1, DType::Int32),
                                      graph::ArgMin(graph::Neg(e), 1, DType::Int32)};
    });
    for (const Tensor& t : sliced.Call(Tensor::FromShape(Shape(DType::Float32, {2, 3, 2}))))
      EXPECT_EQ(Ints(t), (std::vector<int64_t>{0, 0, 0, 0})) << b;
  }
}

// ---- Data movement -------------------------------------------------------------------------

TEST(RefMovementTest, TransposeBroadcastReshape) {
  std::vector<int32_t> x(24);
  for (int32_t i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = i;
  OpAttributes t;
  t.permutation = {2, 0, 1};
  // Output [4, 2, 3]: out[a, b, c] = in[b, c, a] = 12 b + 4 c + a.
  const std::vector<int64_t> want = {0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                                     2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23};
  Tensor r = RunOp(OpType::Transpose, {V(x, {2, 3, 4})}, t);
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {4, 2, 3}));
  EXPECT_EQ(Ints(r), want);
  std::vector<float16> xh;
  for (int32_t v : x) xh.push_back(H(static_cast<float>(v)));
  EXPECT_TRUE(SameFloats(RunOp(OpType::Transpose, {V(xh, {2, 3, 4})}, t),
                         std::vector<double>(want.begin(), want.end())));

  OpAttributes b;
  b.shape = Shape(DType::Float32, {2, 3});
  b.axes = {1};
  EXPECT_TRUE(
      SameFloats(RunOp(OpType::BroadcastInDim, {V(std::vector<float>{1, 2, 3})}, b), {1, 2, 3, 1, 2, 3}));
  b.axes = {0, 1};
  EXPECT_TRUE(SameFloats(RunOp(OpType::BroadcastInDim, {V(std::vector<float>{1, 2}, {2, 1})}, b),
                         {1, 1, 1, 2, 2, 2}));
  b.shape = Shape(DType::Int64, {3, 2});
  b.axes = {0};
  EXPECT_EQ(Ints(RunOp(OpType::BroadcastInDim, {V(std::vector<int64_t>{1, 2, 3})}, b)),
            (std::vector<int64_t>{1, 1, 2, 2, 3, 3}));
  b.shape = Shape(DType::Bool, {2, 2});
  b.axes = {};
  EXPECT_EQ(Ints(RunOp(OpType::BroadcastInDim, {Tensor::FromScalar(true)}, b)),
            (std::vector<int64_t>{1, 1, 1, 1}));

  OpAttributes re;
  re.shape = Shape(DType::Uint16, {3, 2});
  r = RunOp(OpType::Reshape, {V(std::vector<uint16_t>{1, 2, 3, 4, 5, 6}, {2, 3})}, re);
  EXPECT_EQ(r.shape(), re.shape);
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(RefMovementTest, SliceReverseConcatenate) {
  OpAttributes s;
  s.starts = {1};
  s.limits = {10};
  s.strides = {3};
  EXPECT_EQ(Ints(RunOp(OpType::Slice, {V(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}, s)),
            (std::vector<int64_t>{1, 4, 7}));
  s.starts = {1, 0};
  s.limits = {3, 4};
  s.strides = {1, 2};
  // Rows 1 and 2, columns 0 and 2 of [[0..3], [4..7], [8..11]].
  const std::vector<double> m = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_TRUE(SameFloats(RunOp(OpType::Slice, {V(m, {3, 4})}, s), {4, 6, 8, 10}));

  OpAttributes r;
  r.axes = {1};
  const std::vector<int16_t> x = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(Ints(RunOp(OpType::Reverse, {V(x, {2, 3})}, r)), (std::vector<int64_t>{3, 2, 1, 6, 5, 4}));
  r.axes = {0, 1};
  EXPECT_EQ(Ints(RunOp(OpType::Reverse, {V(x, {2, 3})}, r)), (std::vector<int64_t>{6, 5, 4, 3, 2, 1}));
  r.axes = {0};
  EXPECT_TRUE(SameFloats(RunOp(OpType::Reverse, {V(std::vector<bfloat16>{B(1), B(2), B(3)})}, r), {3, 2, 1}));

  OpAttributes c;
  c.axis = 0;
  const Tensor a = V(std::vector<uint8_t>{1, 2}, {1, 2});
  const Tensor b = V(std::vector<uint8_t>{3, 4, 5, 6}, {2, 2});
  const Tensor e = Tensor::FromShape(Shape(DType::Uint8, {0, 2}));
  Tensor out = RunOp(OpType::Concatenate, {a, e, b, a}, c);
  EXPECT_EQ(out.shape(), Shape(DType::Uint8, {4, 2}));
  EXPECT_EQ(Ints(out), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 1, 2}));
  c.axis = 1;
  out = RunOp(OpType::Concatenate,
              {V(std::vector<double>{1, 2}, {2, 1}), V(std::vector<double>{3, 4, 5, 6}, {2, 2})}, c);
  EXPECT_EQ(out.shape(), Shape(DType::Float64, {2, 3}));
  EXPECT_TRUE(SameFloats(out, {1, 3, 4, 2, 5, 6}));
}

TEST(RefMovementTest, PadWithInteriorAndCropping) {
  OpAttributes p;
  // Axis 0: low 1, interior 1 -> rows [fill, x0, fill, x1]. Axis 1: low -1 crops column 0,
  // interior 1 and high 2 -> [x1, fill, x2] shifted: columns [fill, x1, fill, x2, fill, fill].
  p.padding = {compute::PadAxis{1, 0, 1}, compute::PadAxis{-1, 2, 1}};
  const Tensor x = V(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = RunOp(OpType::Pad, {x, Tensor::FromScalar(0.5f)}, p);
  EXPECT_EQ(r.shape(), Shape(DType::Float32, {4, 6}));
  const double f = 0.5;
  EXPECT_TRUE(SameFloats(r, {f, f, f, f, f, f, f, 2, f, 3, f, f, f, f, f, f, f, f, f, 5, f, 6, f, f}));
  p.padding = {compute::PadAxis{-2, -1, 0}};
  EXPECT_EQ(
      Ints(RunOp(OpType::Pad, {V(std::vector<int8_t>{1, 2, 3, 4, 5}), Tensor::FromScalar(int8_t{0})}, p)),
      (std::vector<int64_t>{3, 4}));
  p.padding = {compute::PadAxis{2, 1, 2}};
  EXPECT_EQ(Ints(RunOp(OpType::Pad, {V(std::vector<bool>{true, true}), Tensor::FromScalar(false)}, p)),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 1, 0}));
  // Cropping more than the data leaves only fill.
  p.padding = {compute::PadAxis{-3, 2, 0}};
  EXPECT_EQ(Ints(RunOp(OpType::Pad, {V(std::vector<int64_t>{1, 2}), Tensor::FromScalar(int64_t{9})}, p)),
            (std::vector<int64_t>{9}));
}

// ---- Contractions ---------------------------------------------------------------------------

Tensor Dot(const Tensor& a, const Tensor& b, std::vector<int64_t> lc, std::vector<int64_t> rc,
           std::vector<int64_t> lb = {}, std::vector<int64_t> rb = {}) {
  OpAttributes attrs;
  attrs.lhs_contracting = std::move(lc);
  attrs.rhs_contracting = std::move(rc);
  attrs.lhs_batch = std::move(lb);
  attrs.rhs_batch = std::move(rb);
  return RunOp(OpType::DotGeneral, {a, b}, std::move(attrs));
}

TEST(RefDotTest, MatmulBatchAndGeneralAxes) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  Tensor r = Dot(V(a, {2, 3}), V(b, {3, 2}), {1}, {0});
  EXPECT_EQ(r.shape(), Shape(DType::Float32, {2, 2}));
  EXPECT_TRUE(SameFloats(r, {58, 64, 139, 154}));
  std::vector<bfloat16> ab, bb;
  for (float f : a) ab.push_back(B(f));
  for (float f : b) bb.push_back(B(f));
  EXPECT_TRUE(SameFloats(Dot(V(ab, {2, 3}), V(bb, {3, 2}), {1}, {0}), {58, 64, 139, 154}));
  // Contracting the first axes: a^T (3x2 viewed as [3, 2]) . b ([3, 2]) = [[89, 98], [116, 128]].
  EXPECT_TRUE(SameFloats(
      Dot(V(a, {3, 2}), V(b, {3, 2}), {0}, {0}),
      {1 * 7 + 3 * 9 + 5 * 11, 1 * 8 + 3 * 10 + 5 * 12, 2 * 7 + 4 * 9 + 6 * 11, 2 * 8 + 4 * 10 + 6 * 12}));
  // lhs [k=3, b=2], rhs [b=2, k=3, n=2]: out[b, n] = sum_k lhs[k, b] * rhs[b, k, n].
  const std::vector<int32_t> l = {1, 2, 3, 4, 5, 6};
  const std::vector<int32_t> rr = {1, 0, 0, 1, 1, 1, 2, 1, 1, 2, 0, 0};
  r = Dot(V(l, {3, 2}), V(rr, {2, 3, 2}), {0}, {1}, {1}, {0});
  EXPECT_EQ(r.shape(), Shape(DType::Int32, {2, 2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{6, 8, 8, 10}));
  // Batch, then lhs free, then rhs free: [2] x [2, 1, 2] -> out[b, m, n] with no contraction.
  r = Dot(V(std::vector<int64_t>{2, 3}), V(std::vector<int64_t>{1, 10, 100, 1000}, {2, 1, 2}), {}, {}, {0},
          {0});
  EXPECT_EQ(r.shape(), Shape(DType::Int64, {2, 1, 2}));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{2, 20, 300, 3000}));
  // Outer product, and a contraction over an empty axis (sum of nothing: 0).
  EXPECT_EQ(Ints(Dot(V(std::vector<int16_t>{1, 2}), V(std::vector<int16_t>{3, 4, 5}), {}, {})),
            (std::vector<int64_t>{3, 4, 5, 6, 8, 10}));
  EXPECT_TRUE(SameFloats(Dot(Tensor::FromShape(Shape(DType::Float64, {2, 0})),
                             Tensor::FromShape(Shape(DType::Float64, {0})), {1}, {0}),
                         {0, 0}));
}

TEST(RefDotTest, AccumulatesInDoubleOrWraps) {
  EXPECT_TRUE(SameFloats(
      Dot(V(std::vector<float16>{H(2048), H(1), H(1)}), V(std::vector<float16>{H(1), H(1), H(1)}), {0}, {0}),
      {2050}));
  EXPECT_TRUE(
      SameFloats(Dot(V(std::vector<float>{1e8f, 1, -1e8f}), V(std::vector<float>{1, 1, 1}), {0}, {0}), {1}));
  EXPECT_EQ(Ints(Dot(V(std::vector<int8_t>{100, 100}), V(std::vector<int8_t>{1, 1}), {0}, {0})),
            (std::vector<int64_t>{-56}));
  EXPECT_EQ(Ints(Dot(V(std::vector<uint8_t>{16, 1}), V(std::vector<uint8_t>{16, 3}), {0}, {0})),
            (std::vector<int64_t>{3}));
  EXPECT_EQ(Ints(Dot(V(std::vector<uint16_t>{65535}), V(std::vector<uint16_t>{65535}), {0}, {0})),
            (std::vector<int64_t>{1}));
}

// ---- Leaves --------------------------------------------------------------------------------

Tensor Iota(const Shape& shape, int64_t axis) {
  Graph g;
  OpAttributes attrs;
  attrs.shape = shape;
  attrs.axis = axis;
  Node n = g.AddOp(OpType::Iota, {}, attrs);
  return RunProgram(Ref(), g.Build({n}), {})[0];
}

TEST(RefLeafTest, IotaAndConstant) {
  EXPECT_TRUE(SameFloats(Iota(Shape(DType::Float32, {2, 3}), 1), {0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Ints(Iota(Shape(DType::Int64, {2, 3}), 0)), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(Ints(Iota(Shape(DType::Int8, {2, 2, 2}), 1)), (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}));
  EXPECT_TRUE(SameFloats(Iota(Shape(DType::Float16, {3}), 0), {0, 1, 2}));
  const std::vector<int64_t> u8 = Ints(Iota(Shape(DType::Uint8, {300}), 0));
  EXPECT_EQ(u8[255], 255);
  EXPECT_EQ(u8[299], 43);  // Wraps: 299 - 256.
  const std::vector<double> bf = Floats(Iota(Shape(DType::BFloat16, {300}), 0));
  EXPECT_EQ(bf[257], 256);  // 8 significant bits: ties to even.
  EXPECT_EQ(bf[259], 260);

  Graph g;
  Node x = g.Parameter(Shape(DType::Float64, {2}));
  OpAttributes c;
  c.literal = V(std::vector<double>{1.5, -2});
  Node k = g.AddOp(OpType::Constant, {}, c);
  Node sum = g.AddOp(OpType::Add, {x, k});
  const std::vector<Tensor> out = RunProgram(Ref(), g.Build({sum, k}), {V(std::vector<double>{1, 1})});
  EXPECT_TRUE(SameFloats(out[0], {2.5, -1}));
  EXPECT_TRUE(SameFloats(out[1], {1.5, -2}));
}

}  // namespace
}  // namespace kiln
