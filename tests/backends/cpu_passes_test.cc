// Tests of the cpu compiler's cleanup passes run directly on Modules (backends/cpu/passes.h):
// constant folding and algebraic simplification (each rule fires on a small module, the
// resulting op list is asserted) and common subexpressions around OptimizationBarrier. Every
// program also runs on the cpu backend and on the reference backend, which must agree bit for
// bit: the rewrites are exact, IEEE signed zeros and NaN included.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/passes.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using compute::OpAttributes;
using compute::OpType;
using compute::cpu::Module;
using graph::Graph;
using graph::Node;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

const compute::BackendPtr& Cpu() {
  static const compute::BackendPtr backend = compute::NewWithConfig("cpu");
  return backend;
}
const compute::BackendPtr& Ref() {
  static const compute::BackendPtr backend = compute::NewWithConfig("ref");
  return backend;
}

/// The shapes of `inputs`.
std::vector<Shape> ShapesOf(const std::vector<Tensor>& inputs) {
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  return shapes;
}

/// The op names of `m`'s nodes, in order, space separated ("Parameter Neg").
std::string Ops(const Module& m) {
  std::vector<std::string> names;
  for (const compute::cpu::Node& n : m.nodes) names.emplace_back(compute::OpName(n.inst.op));
  return fmt::format("{}", fmt::join(names, " "));
}

/// `m` as a Program, re-checked against the shape rules.
void ExpectValid(const Module& m) {
  std::vector<compute::Instruction> insts;
  for (const compute::cpu::Node& n : m.nodes) insts.push_back(n.inst);
  compute::Program p(std::move(insts), m.outputs, m.donatable);
  EXPECT_NO_THROW(p.Verify()) << m.ToString();
}

/// The program `fn` builds for `inputs`, after dead code elimination, Simplify and dead code
/// elimination again (the cpu pipeline's order); `rewrites` gets Simplify's count.
Module Simplified(const graph::GraphFn& fn, const std::vector<Tensor>& inputs, int* rewrites = nullptr) {
  graph::Exec exec(Ref(), fn, static_cast<int>(inputs.size()));
  Module m = compute::cpu::FromProgram(*exec.ProgramFor(ShapesOf(inputs)));
  compute::cpu::EliminateDeadCode(m);
  const int n = compute::cpu::Simplify(m).count;
  if (rewrites != nullptr) *rewrites = n;
  compute::cpu::EliminateDeadCode(m);
  ExpectValid(m);
  EXPECT_EQ(compute::cpu::Simplify(m).count, 0) << "not a fixed point:\n" << m.ToString();
  return m;
}

/// Runs `fn` on `inputs` on cpu and on ref: the outputs must be bitwise equal.
void ExpectSameOnCpuAndRef(const graph::GraphFn& fn, const std::vector<Tensor>& inputs) {
  graph::Exec cpu(Cpu(), fn, static_cast<int>(inputs.size()));
  graph::Exec ref(Ref(), fn, static_cast<int>(inputs.size()));
  const std::vector<Tensor> a = cpu.Call(inputs);
  const std::vector<Tensor> b = ref.Call(inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(a[i].Equal(b[i])) << "output " << i << ": cpu " << a[i] << ", ref " << b[i];
}

/// Both checks: the simplified op list is `ops`, and cpu agrees with ref.
void ExpectSimplifiesTo(const graph::GraphFn& fn, const std::vector<Tensor>& inputs, const std::string& ops) {
  int rewrites = 0;
  const Module m = Simplified(fn, inputs, &rewrites);
  EXPECT_EQ(Ops(m), ops) << m.ToString();
  EXPECT_GT(rewrites, 0);
  ExpectSameOnCpuAndRef(fn, inputs);
}

/// Float32 values with the IEEE corner cases.
Tensor Specials() {
  return Tensor::FromValue(std::vector<std::vector<float>>{{-0.0f, 0.0f, 1.5f}, {kNaN, -kInf, -2.25f}});
}

/// A scalar constant broadcast to `x`'s shape (the frontend's form of x + 1).
Node Splat(Node x, float value) {
  return graph::BroadcastToShape(graph::Scalar(x.graph(), x.dtype(), value), x.shape());
}

/// One op through Graph::AddOp (no frontend shortcut may skip it).
Node Op(OpType op, const std::vector<Node>& operands, OpAttributes attrs = {}) {
  return operands.at(0).graph().AddOp(op, operands, std::move(attrs));
}

// ---- Constant folding --------------------------------------------------------------------------

TEST(CpuSimplify, FoldsConstantSubgraphs) {
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    Node c = graph::Const(g, std::vector<float>{1.5f, -2.0f, 3.0f});
    Node d = graph::Const(g, std::vector<float>{0.5f, 4.0f, -0.0f});
    return {p[0] + graph::Exp(c * d - d)};
  };
  ExpectSimplifiesTo(fn, {Tensor::FromValue(std::vector<float>{1, 2, 3})}, "Parameter Constant Add");
}

TEST(CpuSimplify, FoldsIntegerWrapLikeRef) {
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    Node c = graph::Const(g, std::vector<int32_t>{std::numeric_limits<int32_t>::max(), -7, 100});
    Node q = graph::Const(g, std::vector<int32_t>{1, 2, 3}) / graph::Const(g, std::vector<int32_t>{0, 2, -3});
    return {p[0] + (c * c + q)};
  };
  ExpectSimplifiesTo(fn, {Tensor::FromValue(std::vector<int32_t>{1, 2, 3})}, "Parameter Constant Add");
}

TEST(CpuSimplify, FoldsUpTo64KiB) {
  // 16384 float32 values are 64 KiB: folded. One more is not.
  for (int64_t n : {int64_t{16384}, int64_t{16385}}) {
    auto fn = [n](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
      Node c = graph::Iota(g, Shape(DType::Float32, {n}), 0);
      return {p[0] + graph::Neg(c)};
    };
    const std::string ops = n == 16384 ? "Parameter Constant Add" : "Parameter Iota Neg Add";
    int rewrites = 0;
    const Module m = Simplified(fn, {Tensor::FromShape(Shape(DType::Float32, {n}))}, &rewrites);
    EXPECT_EQ(Ops(m), ops) << "n = " << n;
    EXPECT_EQ(rewrites, n == 16384 ? 2 : 0);
    ExpectSameOnCpuAndRef(fn, {Tensor::FromShape(Shape(DType::Float32, {n}))});
  }
}

TEST(CpuSimplify, ScalarBroadcastStaysSymbolic) {
  // Small or large, a broadcast scalar is never materialised; ops on splats fold to a splat.
  for (int64_t n : {int64_t{4}, int64_t{100000}}) {
    auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
      Node two = Splat(p[0], 2.0f), three = Splat(p[0], 3.0f);
      return {p[0] * graph::Exp(two - three), p[0] * two};
    };
    const std::vector<Tensor> in = {Tensor::FromShape(Shape(DType::Float32, {n}))};
    const Module m = Simplified(fn, in);
    EXPECT_EQ(Ops(m), "Parameter Constant BroadcastInDim Constant BroadcastInDim Mul Mul") << m.ToString();
    // The first output multiplies by a splat of the folded scalar exp(2 - 3).
    const auto def = [&](int id) -> const compute::Instruction& {
      return m.nodes[static_cast<size_t>(id)].inst;
    };
    const compute::Instruction& splat = def(def(m.outputs[0]).operands[1]);
    ASSERT_EQ(splat.op, OpType::BroadcastInDim);
    const compute::Instruction& scalar = def(splat.operands[0]);
    ASSERT_EQ(scalar.op, OpType::Constant);
    EXPECT_TRUE(scalar.shape.IsScalar());
    EXPECT_NEAR(scalar.attrs.literal.Item<float>(), std::exp(-1.0f), 1e-6f);
    ExpectSameOnCpuAndRef(fn, in);
  }
}

TEST(CpuSimplify, MovementOfSplatIsSplat) {
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    Node s = graph::BroadcastToDims(graph::Scalar(g, DType::Float32, 5.0f), {3, 2});
    OpAttributes t;
    t.permutation = {1, 0};
    OpAttributes r;
    r.shape = Shape(DType::Float32, {6});
    return {p[0] + Op(OpType::Reshape, {Op(OpType::Transpose, {s}, t)}, r)};
  };
  ExpectSimplifiesTo(fn, {Specials().Reshape({6})}, "Parameter Constant BroadcastInDim Add");
}

TEST(CpuSimplify, PackedSplatsAreMaterialised) {
  // No kernel broadcasts a packed dtype: a conversion of a splat to Int4 folds to an array.
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    return {graph::OnesLike(p[0]), graph::ZerosLike(p[1])};
  };
  const std::vector<Tensor> in = {Tensor::FromShape(Shape(DType::Int4, {3})),
                                  Tensor::FromShape(Shape(DType::Uint2, {2, 5}))};
  ExpectSimplifiesTo(fn, in, "Parameter Parameter Constant Constant");
}

TEST(CpuSimplify, BroadcastOfArrayStaysSymbolic) {
  for (int64_t rows : {int64_t{2}, int64_t{100}}) {
    auto fn = [rows](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
      std::vector<float> v(1000);
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
      return {p[0] + graph::BroadcastPrefix(graph::Const(g, v), {rows})};
    };
    // Small or large, the repeated rows are not materialised: the fused add reads the vector.
    const std::vector<Tensor> in = {Tensor::FromShape(Shape(DType::Float32, {rows, 1000}))};
    const Module m = Simplified(fn, in);
    EXPECT_EQ(Ops(m), "Parameter Constant BroadcastInDim Add");
    ExpectSameOnCpuAndRef(fn, in);
  }
}

TEST(CpuSimplify, BroadcastMeetingAFullConstantFolds) {
  // bcast(c) + d with d a constant of the result's shape: folded to one constant (nothing to sink).
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    std::vector<float> c(8), d(4 * 8);
    for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i);
    for (size_t i = 0; i < d.size(); ++i) d[i] = 0.5f * static_cast<float>(i);
    Node full = graph::Reshape(graph::Const(g, d), {4, 8});
    return {p[0] * (graph::BroadcastPrefix(graph::Const(g, c), {4}) + full)};
  };
  const std::vector<Tensor> in = {Tensor::FromShape(Shape(DType::Float32, {4, 8}))};
  EXPECT_EQ(Ops(Simplified(fn, in)), "Parameter Constant Mul");
  ExpectSameOnCpuAndRef(fn, in);
}

TEST(CpuSimplify, ElementwiseOpsOfBroadcastsRunAtTheOperandsSize) {
  // (bcast(c) + 1) * bcast(d) folds to bcast(a constant of c's size); Sqrt(bcast(q)) of a
  // parameter q runs on q's 1000 elements, then broadcasts.
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    std::vector<float> c(1000), d(1000);
    for (size_t i = 0; i < c.size(); ++i) {
      c[i] = static_cast<float>(i) * 0.5f;
      d[i] = 1.0f / static_cast<float>(i + 1);
    }
    Node folded = (graph::BroadcastPrefix(graph::Const(g, c), {8}) + 1.0f) *
                  graph::BroadcastPrefix(graph::Const(g, d), {8});
    return {p[0] * folded + graph::Sqrt(graph::BroadcastPrefix(p[1], {8}))};
  };
  const std::vector<Tensor> in = {Tensor::FromShape(Shape(DType::Float32, {8, 1000})),
                                  Tensor::FromShape(Shape(DType::Float32, {1000}))};
  const Module m = Simplified(fn, in);
  EXPECT_EQ(Ops(m), "Parameter Parameter Constant BroadcastInDim Sqrt BroadcastInDim Mul Add")
      << m.ToString();
  for (const compute::cpu::Node& n : m.nodes)
    if (n.inst.op == compute::OpType::Constant || n.inst.op == compute::OpType::Sqrt) {
      EXPECT_EQ(n.inst.shape.Dimensions(), std::vector<int64_t>{1000}) << m.ToString();
    }
  ExpectSameOnCpuAndRef(fn, in);
}

/// Values of `dims` varying with their index and `seed`.
Tensor Varied(const std::vector<int64_t>& dims, int seed) {
  const Shape shape(DType::Float32, dims);
  std::vector<float> v(static_cast<size_t>(shape.Size()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(0.7f * static_cast<float>(i) + static_cast<float>(seed));
  return Tensor::FromFlat(shape, v);
}

/// Runs `fn` on cpu and on ref: the outputs agree to float32 rounding of short sums.
void ExpectCloseOnCpuAndRef(const graph::GraphFn& fn, const std::vector<Tensor>& inputs) {
  graph::Exec cpu(Cpu(), fn, static_cast<int>(inputs.size()));
  graph::Exec ref(Ref(), fn, static_cast<int>(inputs.size()));
  const std::vector<Tensor> a = cpu.Call(inputs), b = ref.Call(inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<double> x = a[i].ToDoubles(), y = b[i].ToDoubles();
    ASSERT_EQ(x.size(), y.size());
    for (size_t k = 0; k < x.size(); ++k) EXPECT_NEAR(x[k], y[k], 1e-5) << "output " << i << " element " << k;
  }
}

TEST(CpuSimplify, TransposedDotOperandIsReadInPlace) {
  // Attention's scores q·kᵀ with kᵀ a transpose of k's last two axes: the product reads k.
  // A transpose that would reorder the result's free axes stays.
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    Node kt = graph::TransposeAllAxes(p[1], {0, 2, 1});        // [2, 5, 4]
    return {graph::DotGeneral(p[0], {2}, {0}, kt, {1}, {0})};  // [2, 3, 5] x [2, 5, 4] -> [2, 3, 4]
  };
  const std::vector<Tensor> in = {Varied({2, 3, 5}, 1), Varied({2, 4, 5}, 2)};
  const Module m = Simplified(fn, in);
  EXPECT_EQ(Ops(m), "Parameter Parameter DotGeneral") << m.ToString();
  ExpectCloseOnCpuAndRef(fn, in);
  auto swapped = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    // Free axes 1 and 2 of [2, 3, 4, 6] swapped: the result's order depends on the transpose.
    Node t = graph::TransposeAllAxes(p[1], {0, 3, 2, 1});  // [2, 6, 4, 3]
    return {graph::DotGeneral(p[0], {1}, {0}, t, {1}, {0})};
  };
  const std::vector<Tensor> in2 = {Varied({2, 6}, 3), Varied({2, 3, 4, 6}, 4)};
  EXPECT_EQ(Ops(Simplified(swapped, in2)), "Parameter Parameter Transpose DotGeneral");
  ExpectCloseOnCpuAndRef(swapped, in2);
}

TEST(CpuSimplify, DoesNotFoldThroughOptimizationBarrier) {
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    Node c = graph::Const(g, std::vector<float>{1, 2, 3});
    Node fenced = graph::OptimizationBarrier({graph::Neg(p[0]), c})[1];
    Node x = graph::OptimizationBarrier(graph::Neg(p[0]));
    return {graph::Neg(fenced) + graph::Neg(x)};
  };
  const std::vector<Tensor> in = {Tensor::FromValue(std::vector<float>{-0.0f, 2, kNaN})};
  int rewrites = 0;
  const Module m = Simplified(fn, in, &rewrites);
  EXPECT_EQ(rewrites, 0) << m.ToString();
  EXPECT_EQ(Ops(m),
            "Parameter Constant Neg OptimizationBarrier GetTupleElement Neg OptimizationBarrier "
            "GetTupleElement Neg Neg Add");
  ExpectSameOnCpuAndRef(fn, in);
}

// ---- Algebraic simplification --------------------------------------------------------------------

TEST(CpuSimplify, MultiplicativeIdentities) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    Node one = Splat(p[0], 1.0f);
    return {(one * p[0]) * one / one};
  };
  ExpectSimplifiesTo(fn, {Specials()}, "Parameter");
}

TEST(CpuSimplify, MaterialisedOnesAlsoCount) {
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    return {p[0] * graph::Const(g, std::vector<float>{1, 1, 1}) / graph::Ones(g, p[0].shape())};
  };
  ExpectSimplifiesTo(fn, {Tensor::FromValue(std::vector<float>{-0.0f, kNaN, 3})}, "Parameter");
}

TEST(CpuSimplify, SubtractingPositiveZero) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    return {p[0] - Splat(p[0], 0.0f)};
  };
  ExpectSimplifiesTo(fn, {Specials()}, "Parameter");
}

TEST(CpuSimplify, SubtractingNegativeZeroIsKept) {
  // -0.0 - (-0.0) = +0.0: not the identity.
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    return {p[0] - Splat(p[0], -0.0f)};
  };
  EXPECT_EQ(Ops(Simplified(fn, {Specials()})), "Parameter Constant BroadcastInDim Sub");
  ExpectSameOnCpuAndRef(fn, {Specials()});
}

TEST(CpuSimplify, AddingNegativeZeroIsIdentity) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    Node z = Splat(p[0], -0.0f);
    return {z + (p[0] + z)};
  };
  ExpectSimplifiesTo(fn, {Specials()}, "Parameter");
}

TEST(CpuSimplify, AddingPositiveZeroIsKeptForFloats) {
  // -0.0 + 0.0 = +0.0 in IEEE: x + 0 is not x for floats.
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    return {p[0] + Splat(p[0], 0.0f), graph::Const(g, std::vector<float>{0, 0, 0}) + p[0]};
  };
  const std::vector<Tensor> in = {Tensor::FromValue(std::vector<float>{-0.0f, 1, kNaN})};
  EXPECT_EQ(Ops(Simplified(fn, in)), "Parameter Constant BroadcastInDim Add Constant Add");
  ExpectSameOnCpuAndRef(fn, in);
  graph::Exec cpu(Cpu(), fn, 1);
  const std::vector<Tensor> out = cpu.Call(in);
  EXPECT_FALSE(std::signbit(out[0].ToVector<float>()[0]));
  EXPECT_FALSE(std::signbit(out[1].ToVector<float>()[0]));
}

TEST(CpuSimplify, AddingZeroIsIdentityForIntegers) {
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    return {(graph::Zeros(g, p[0].shape()) + p[0]) - Splat(p[0], 0.0f)};
  };
  ExpectSimplifiesTo(fn, {Tensor::FromValue(std::vector<int64_t>{-1, 0, 7})}, "Parameter");
}

TEST(CpuSimplify, NegNeg) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    return {graph::Neg(graph::Neg(p[0])), graph::Neg(graph::Neg(graph::Neg(p[1])))};
  };
  ExpectSimplifiesTo(fn, {Specials(), Tensor::FromValue(std::vector<int8_t>{-128, 0, 127})},
                     "Parameter Parameter Neg");
}

TEST(CpuSimplify, TransposeOfTranspose) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    OpAttributes a, b, id;
    a.permutation = {1, 2, 0};
    b.permutation = {2, 0, 1};  // Undoes a.
    id.permutation = {0, 1, 2};
    Node back = Op(OpType::Transpose, {Op(OpType::Transpose, {p[0]}, a)}, b);
    Node twice = Op(OpType::Transpose, {Op(OpType::Transpose, {p[0]}, a)}, a);
    return {Op(OpType::Transpose, {back}, id), twice};
  };
  const Tensor x = Tensor::FromValue(std::vector<float>{0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                                        12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23})
                       .Reshape({2, 3, 4});
  const Module m = Simplified(fn, {x});
  EXPECT_EQ(Ops(m), "Parameter Transpose");
  EXPECT_EQ(m.nodes[1].inst.attrs.permutation, (std::vector<int64_t>{2, 0, 1}));
  ExpectSameOnCpuAndRef(fn, {x});
}

TEST(CpuSimplify, ReshapeChains) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    OpAttributes flat, same, back;
    flat.shape = Shape(DType::Float32, {6});
    same.shape = Shape(DType::Float32, {2, 3});
    back.shape = Shape(DType::Float32, {3, 2});
    Node once = Op(OpType::Reshape, {Op(OpType::Reshape, {p[0]}, flat)}, back);
    Node round_trip = Op(OpType::Reshape, {Op(OpType::Reshape, {p[0]}, flat)}, same);
    return {once, round_trip, Op(OpType::Reshape, {p[0]}, same)};
  };
  const Module m = Simplified(fn, {Specials()});
  EXPECT_EQ(Ops(m), "Parameter Reshape");
  EXPECT_EQ(m.outputs, (std::vector<int>{1, 0, 0}));
  ExpectSameOnCpuAndRef(fn, {Specials()});
}

TEST(CpuSimplify, BroadcastChains) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    OpAttributes same, inner, outer;
    same.shape = Shape(DType::Float32, {3});
    same.axes = {0};
    inner.shape = Shape(DType::Float32, {2, 3});
    inner.axes = {1};
    outer.shape = Shape(DType::Float32, {4, 2, 3});
    outer.axes = {1, 2};
    return {Op(OpType::BroadcastInDim,
               {Op(OpType::BroadcastInDim, {Op(OpType::BroadcastInDim, {p[0]}, same)}, inner)}, outer)};
  };
  const Tensor x = Tensor::FromValue(std::vector<float>{-0.0f, kNaN, 2});
  const Module m = Simplified(fn, {x});
  EXPECT_EQ(Ops(m), "Parameter BroadcastInDim");
  EXPECT_EQ(m.nodes[1].inst.attrs.axes, (std::vector<int64_t>{2}));
  ExpectSameOnCpuAndRef(fn, {x});
}

TEST(CpuSimplify, BroadcastReadsThroughUnitReshape) {
  // The keep-dims form of a reduction, Reshape [2] -> [2, 1] then broadcast, broadcasts [2].
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    OpAttributes reduce, keep, bc;
    reduce.axes = {1};
    keep.shape = Shape(DType::Float32, {2, 1});
    bc.shape = Shape(DType::Float32, {2, 3});
    bc.axes = {0, 1};
    Node k = Op(OpType::Reshape, {Op(OpType::ReduceMax, {p[0]}, reduce)}, keep);
    return {p[0] - Op(OpType::BroadcastInDim, {k}, bc)};
  };
  const Module m = Simplified(fn, {Specials()});
  EXPECT_EQ(Ops(m), "Parameter ReduceMax BroadcastInDim Sub");
  EXPECT_EQ(m.nodes[2].inst.attrs.axes, (std::vector<int64_t>{0}));
  ExpectSameOnCpuAndRef(fn, {Specials()});
}

TEST(CpuSimplify, FoldedDuplicatesAreMerged) {
  // 0 * 1 folds to a splat of 0, the same as the one already there: merged into it.
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    Node zero = Splat(p[0], 0.0f), one = Splat(p[0], 1.0f);
    return {graph::Max(p[0], zero) + zero * one};
  };
  const Module m = Simplified(fn, {Specials()});
  EXPECT_EQ(Ops(m), "Parameter Constant BroadcastInDim Max Add");
  ExpectSameOnCpuAndRef(fn, {Specials()});
}

TEST(CpuSimplify, IdentityMovementAndConversion) {
  auto fn = [](Graph& g, const std::vector<Node>& p) -> std::vector<Node> {
    OpAttributes convert, slice, reverse, pad, concat;
    convert.dtype = DType::Float32;
    slice.starts = {0, 0};
    slice.limits = {2, 3};
    slice.strides = {1, 1};
    reverse.axes = {1};
    pad.padding = {{0, 0, 0}, {0, 0, 0}};
    concat.axis = 1;
    Node x = Op(OpType::ConvertDType, {p[0]}, convert);
    x = Op(OpType::Slice, {x}, slice);
    x = Op(OpType::Reverse, {Op(OpType::Reverse, {x}, reverse)}, reverse);
    x = Op(OpType::Pad, {x, graph::Scalar(g, DType::Float32, 7.0f)}, pad);
    x = Op(OpType::Concatenate, {x}, concat);
    return {Op(OpType::StopGradient, {x})};
  };
  ExpectSimplifiesTo(fn, {Specials()}, "Parameter");
}

TEST(CpuSimplify, ReverseOfReverseOnOtherAxes) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    OpAttributes r0, r01;
    r0.axes = {0};
    r01.axes = {0, 1};
    return {Op(OpType::Reverse, {Op(OpType::Reverse, {p[0]}, r0)}, r01)};
  };
  const Module m = Simplified(fn, {Specials()});
  EXPECT_EQ(Ops(m), "Parameter Reverse");
  EXPECT_EQ(m.nodes[1].inst.attrs.axes, (std::vector<int64_t>{1}));
  ExpectSameOnCpuAndRef(fn, {Specials()});
}

TEST(CpuSimplify, ReductionsOverNoAxes) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    return {Op(OpType::ReduceMax, {p[0]}), Op(OpType::ReduceProduct, {p[0]}), Op(OpType::ReduceSum, {p[1]}),
            Op(OpType::ReduceSum, {p[0]})};
  };
  // A float ReduceSum over nothing maps -0.0 to +0.0 (it sums from +0.0): it becomes x + 0.
  const std::vector<Tensor> in = {Specials(), Tensor::FromValue(std::vector<int32_t>{-5, 0, 9})};
  ExpectSimplifiesTo(fn, in, "Parameter Parameter Constant BroadcastInDim Add");
}

// ---- Common subexpressions and OptimizationBarrier -------------------------------------------------

TEST(CpuCse, MergesDuplicatesButNotAcrossBarrier) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    Node fenced = graph::OptimizationBarrier(p[0]);
    Node a = graph::Exp(p[0]), b = graph::Exp(p[0]), c = graph::Exp(fenced);
    return {a + b, a + c};
  };
  const std::vector<Tensor> in = {Specials()};
  graph::Exec exec(Ref(), fn, 1);
  Module m = compute::cpu::FromProgram(*exec.ProgramFor(ShapesOf(in)));
  compute::cpu::EliminateDeadCode(m);
  EXPECT_EQ(compute::cpu::EliminateCommonSubexpressions(m).count, 1) << m.ToString();  // b into a only.
  compute::cpu::EliminateDeadCode(m);
  EXPECT_EQ(Ops(m), "Parameter OptimizationBarrier GetTupleElement Exp Exp Add Add") << m.ToString();
  ExpectValid(m);
  ExpectSameOnCpuAndRef(fn, in);
}

TEST(CpuCse, BarriersThemselvesAreNeverMerged) {
  auto fn = [](Graph&, const std::vector<Node>& p) -> std::vector<Node> {
    Node a = graph::OptimizationBarrier(p[0]);
    Node b = graph::OptimizationBarrier(p[0]);
    return {graph::Neg(a) + graph::Neg(b)};
  };
  const std::vector<Tensor> in = {Specials()};
  graph::Exec exec(Ref(), fn, 1);
  Module m = compute::cpu::FromProgram(*exec.ProgramFor(ShapesOf(in)));
  EXPECT_EQ(compute::cpu::EliminateCommonSubexpressions(m).count, 0) << m.ToString();
  ExpectSameOnCpuAndRef(fn, in);
}

}  // namespace
}  // namespace kiln
