// Tests for control flow (graph/control_flow.h): While, ForLoop, If, OptimizationBarrier on the
// ref backend, their programs, and the errors of ill-formed sub-programs.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

compute::BackendPtr Ref() { return compute::NewWithConfig("ref"); }

Node I32(Graph& g, int32_t v) { return Scalar(g, DType::Int32, v); }

void ExpectError(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(ControlFlowTest, WhileSumsToN) {
  // sum = 0 + 1 + ... + (n - 1), with a data-dependent trip count.
  Exec exec = NewExec(Ref(), [](Node n) {
    Graph& g = n.graph();
    std::vector<Node> r = While([](const std::vector<Node>& s) { return Less(s[0], s[2]); },
                                [](const std::vector<Node>& s) {
                                  return std::vector<Node>{s[0] + 1, s[1] + s[0], s[2]};
                                },
                                {I32(g, 0), I32(g, 0), n});
    return std::vector<Node>{r[0], r[1]};
  });
  for (int32_t n : {0, 1, 10, 100}) {
    std::vector<Tensor> out = exec.Call(n);
    EXPECT_EQ(out[0].Item<int32_t>(), n);
    EXPECT_EQ(out[1].Item<int32_t>(), n * (n - 1) / 2) << n;
  }
  EXPECT_EQ(exec.NumBuilds(), 1);
  // A negative bound: zero iterations, the state comes back unchanged.
  EXPECT_EQ(exec.Call(int32_t{-5})[1].Item<int32_t>(), 0);
}

TEST(ControlFlowTest, ForLoopFibonacci) {
  Exec exec = NewExec(Ref(), [](Graph& g) {
    std::vector<Node> r = ForLoop(10,
                                  [](Node, const std::vector<Node>& s) {
                                    return std::vector<Node>{s[1], s[0] + s[1]};
                                  },
                                  {Scalar(g, DType::Int64, 0), Scalar(g, DType::Int64, 1)});
    return r[0];
  });
  EXPECT_EQ(exec.Call1().Item<int64_t>(), 55);
  std::shared_ptr<const compute::Program> p = exec.ProgramFor({});
  const std::string text = p->ToString();
  EXPECT_NE(text.find("While{trip_count=10}"), std::string::npos) << text;
  EXPECT_NE(text.find("sub-program 1"), std::string::npos) << text;
  EXPECT_NO_THROW(p->Verify());
}

TEST(ControlFlowTest, ForLoopUsesTheIndexAndZeroTrips) {
  for (int64_t n : {0, 1, 7}) {
    Exec exec = NewExec(Ref(), [n](Node x) {
      return ForLoop(n,
                     [](Node i, const std::vector<Node>& s) {
                       return std::vector<Node>{s[0] + ConvertDType(i, DType::Float32) * OnesLike(s[0])};
                     },
                     {x})[0];
    });
    const float sum = static_cast<float>(n * (n - 1) / 2);
    EXPECT_EQ(exec.Call1(std::vector<float>{1, 2}).ToVector<float>(), (std::vector<float>{1 + sum, 2 + sum}))
        << n;
  }
}

TEST(ControlFlowTest, IfTakesEitherBranch) {
  Exec exec = NewExec(Ref(), [](Node pred, Node x, Node y) {
    return If(
        pred,
        [](const std::vector<Node>& v) {
          return std::vector<Node>{v[0] + v[1], Neg(v[0])};
        },
        [](const std::vector<Node>& v) {
          return std::vector<Node>{v[0] * v[1], v[1]};
        },
        {x, y});
  });
  std::vector<Tensor> t = exec.Call(true, std::vector<double>{2, 3}, std::vector<double>{10, 20});
  EXPECT_EQ(t[0].ToVector<double>(), (std::vector<double>{12, 23}));
  EXPECT_EQ(t[1].ToVector<double>(), (std::vector<double>{-2, -3}));
  std::vector<Tensor> f = exec.Call(false, std::vector<double>{2, 3}, std::vector<double>{10, 20});
  EXPECT_EQ(f[0].ToVector<double>(), (std::vector<double>{20, 60}));
  EXPECT_EQ(f[1].ToVector<double>(), (std::vector<double>{10, 20}));
}

TEST(ControlFlowTest, NestedLoops) {
  // sum over i < 4, j < 5 of i * j = 6 * 10 = 60, the inner loop inside the outer body.
  Exec exec = NewExec(Ref(), [](Graph& g) {
    return ForLoop(4,
                   [](Node i, const std::vector<Node>& s) {
                     std::vector<Node> inner = ForLoop(5,
                                                       [](Node j, const std::vector<Node>& t) {
                                                         return std::vector<Node>{t[0] + t[1] * j, t[1]};
                                                       },
                                                       {s[0], i});
                     return std::vector<Node>{inner[0]};
                   },
                   {I32(g, 0)})[0];
  });
  EXPECT_EQ(exec.Call1().Item<int32_t>(), 60);
}

TEST(ControlFlowTest, WhileWithIfInside) {
  // Collatz steps of 27: 111.
  Exec exec = NewExec(Ref(), [](Node x) {
    Graph& g = x.graph();
    std::vector<Node> r =
        While([](const std::vector<Node>& s) { return Greater(s[0], ScalarLike(s[0], 1)); },
              [](const std::vector<Node>& s) {
                Node even = Equal(Rem(s[0], ScalarLike(s[0], 2)), ScalarLike(s[0], 0));
                Node next = If(
                    even, [](const std::vector<Node>& v) { return std::vector<Node>{v[0] / 2}; },
                    [](const std::vector<Node>& v) { return std::vector<Node>{v[0] * 3 + 1}; }, {s[0]})[0];
                return std::vector<Node>{next, s[1] + 1};
              },
              {x, I32(g, 0)});
    return r[1];
  });
  EXPECT_EQ(exec.Call1(int64_t{27}).Item<int32_t>(), 111);
}

TEST(ControlFlowTest, OptimizationBarrierIsIdentity) {
  Exec exec = NewExec(Ref(), [](Node x, Node y) {
    std::vector<Node> b = OptimizationBarrier({x + y, x});
    return std::vector<Node>{b[0] * 2, b[1]};
  });
  std::vector<Tensor> out = exec.Call(std::vector<int32_t>{1, 2}, std::vector<int32_t>{3, 4});
  EXPECT_EQ(out[0].ToVector<int32_t>(), (std::vector<int32_t>{8, 12}));
  EXPECT_EQ(out[1].ToVector<int32_t>(), (std::vector<int32_t>{1, 2}));
}

TEST(ControlFlowTest, SameResultsWithoutSharedBuffers) {
  Exec exec = NewExec(compute::NewWithConfig("ref:shared=false"), [](Node x) {
    return ForLoop(3, [](Node, const std::vector<Node>& s) { return std::vector<Node>{s[0] * s[0]}; },
                   {x})[0];
  });
  EXPECT_EQ(exec.Call1(std::vector<int64_t>{2, 3}).ToVector<int64_t>(), (std::vector<int64_t>{256, 6561}));
}

TEST(ControlFlowTest, ConditionMustBeABoolScalar) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  ExpectError(
      [&] {
        While([](const std::vector<Node>& s) { return s[0]; }, [](const std::vector<Node>& s) { return s; },
              {x});
      },
      {"While", "condition must return one scalar Bool"});
  ExpectError(
      [&] {
        While([](const std::vector<Node>& s) { return Less(s[0], s[0]); },
              [](const std::vector<Node>& s) { return s; }, {x});
      },
      {"While", "scalar Bool", "(Bool)[2]"});
  ExpectError(
      [&] {
        If(
            x, [](const std::vector<Node>& v) { return v; }, [](const std::vector<Node>& v) { return v; },
            {x});
      },
      {"If", "predicate must be a scalar Bool"});
}

TEST(ControlFlowTest, BodyMustKeepTheStateShapes) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  ExpectError(
      [&] {
        While(
            [](const std::vector<Node>& s) { return Less(ReduceAllMax(s[0]), ScalarLike(s[0], 1.0)); },
            [](const std::vector<Node>& s) { return std::vector<Node>{ConvertDType(s[0], DType::Float64)}; },
            {x});
      },
      {"While", "body must return the state's shapes", "Float64"});
  ExpectError(
      [&] {
        If(
            Scalar(g, DType::Bool, true), [](const std::vector<Node>& v) { return v; },
            [](const std::vector<Node>& v) {
              return std::vector<Node>{Reshape(v[0], {2, 1})};
            },
            {x});
      },
      {"If", "branches return different shapes"});
}

TEST(ControlFlowTest, ParentNodesCannotBeCaptured) {
  Graph g("outer");
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  Node k = g.Parameter(Shape(DType::Float32, {2}));
  ExpectError(
      [&] {
        ForLoop(3, [&](Node, const std::vector<Node>& s) { return std::vector<Node>{Add(s[0], k)}; }, {x});
      },
      {"ForLoop body", "Add", "outer", "state"});
  ExpectError([&] { ForLoop(3, [&](Node, const std::vector<Node>&) { return std::vector<Node>{k}; }, {x}); },
              {"ForLoop body", "not a node of the sub-program"});
}

TEST(ControlFlowTest, TupleValuesAreReadThroughGetTupleElement) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Int32, {}));
  std::vector<Node> r = OptimizationBarrier({x, x});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].op(), compute::OpType::GetTupleElement);
  const int tuple = r[0].operands()[0].id();
  EXPECT_TRUE(g.instruction(tuple).IsTuple());
  EXPECT_FALSE(g.instruction(tuple).shape.Ok());
  // A tuple used directly is an error.
  ExpectError([&] { Neg(g.NodeAt(tuple)); }, {"Neg"});
  compute::OpAttributes at;
  at.index = 2;
  ExpectError([&] { g.AddOp(compute::OpType::GetTupleElement, {g.NodeAt(tuple)}, at); },
              {"GetTupleElement", "index 2 out of range"});
  ExpectError([&] { g.AddOp(compute::OpType::While, {x}); }, {"While", "AddTupleOp"});
}

TEST(ControlFlowTest, VerifyChecksSubprogramSignatures) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Int32, {}));
  std::shared_ptr<const compute::Program> p =
      g.Build(ForLoop(2, [](Node, const std::vector<Node>& s) { return s; }, {x}));
  EXPECT_NO_THROW(p->Verify());
  std::vector<compute::Instruction> insts = p->Instructions();
  int swapped = 0;
  for (compute::Instruction& inst : insts) {
    if (inst.op != compute::OpType::While) continue;
    std::swap(inst.subprograms[0], inst.subprograms[1]);  // The body as the condition.
    ++swapped;
  }
  ASSERT_EQ(swapped, 1);
  const compute::Program bad(insts, p->Outputs(), {});
  ExpectError([&] { bad.Verify(); }, {"Verify", "While", "condition must return one scalar Bool"});
  EXPECT_NE(bad.ToString().find("sub-program 0"), std::string::npos);
}

TEST(ControlFlowTest, GradientThroughDataDependentWhileNamesWhile) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {3}));
  // Doubles x until a counter reaches 4: the trip count is decided by the condition at run time.
  std::vector<Node> r = While([](const std::vector<Node>& s) { return Less(s[0], ScalarLike(s[0], 4)); },
                              [](const std::vector<Node>& s) {
                                return std::vector<Node>{s[0] + 1, s[1] * 2.0f};
                              },
                              {I32(g, 0), x});
  ExpectError([&] { Gradient(ReduceAllSum(r[1]), {x}); }, {"While", "ForLoop"});
  // The same loop as a ForLoop (a static trip count) is differentiable: d/dx sum(16 x) = 16.
  Exec exec = NewExec(Ref(), [](Node p) {
    std::vector<Node> s =
        ForLoop(4, [](Node, const std::vector<Node>& v) { return std::vector<Node>{v[0] * 2.0f}; }, {p});
    return Gradient(ReduceAllSum(s[0]), {p})[0];
  });
  Tensor grad = exec.Call1(Tensor::FromFlat(Shape(DType::Float32, {3}), std::vector<float>{1, 2, 3}));
  EXPECT_EQ(grad.ToVector<float>(), (std::vector<float>{16, 16, 16}));
}

TEST(ControlFlowTest, CustomGradientInsideASubprogramIsRejected) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {3}));
  ExpectError(
      [&] {
        ForLoop(2,
                [](Node, const std::vector<Node>& v) {
                  return std::vector<Node>{IdentityWithCustomGradient(v[0], [](Node, Node a) { return a; })};
                },
                {x});
      },
      {"ForLoop body", "IdentityWithCustomGradient inside a sub-program"});
}

TEST(ControlFlowTest, ErrorsInsideBodiesCarryNoCaptureHint) {
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {3}));
  try {
    ForLoop(2,
            [](Node, const std::vector<Node>& v) {
              return std::vector<Node>{Reshape(v[0], {2, 2})};
            },
            {x});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ForLoop body"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("sees only its parameters"), std::string::npos) << e.what();
  }
}

}  // namespace
