// Tests for graph::Exec: callable forms, argument conversion, the per-shape cache, thread
// safety, donation and where outputs live.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kiln/kiln.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

compute::BackendPtr Ref() { return compute::NewWithConfig("ref"); }

Node AddFn(Node a, Node b) { return Add(a, b); }

TEST(ExecTest, FunctionPointerWithNodeParameters) {
  Exec exec = NewExec(Ref(), AddFn);
  std::vector<Tensor> out = exec.Call(std::vector<float>{1, 2}, std::vector<float>{10, 20});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{11, 22}));
  EXPECT_EQ(out[0].shape(), Shape(DType::Float32, {2}));
}

TEST(ExecTest, LambdaReturningVectorAndTuple) {
  Exec vec = NewExec(Ref(), [](Node x) { return std::vector<Node>{x + x, x * x}; });
  std::vector<Tensor> out = vec.Call(3.0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].Item<double>(), 6.0);
  EXPECT_EQ(out[1].Item<double>(), 9.0);

  Exec tup = NewExec(Ref(), [](Node x, Node y) { return std::make_tuple(x - y, Neg(x)); });
  out = tup.Call(int32_t(5), int32_t(7));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].Item<int32_t>(), -2);
  EXPECT_EQ(out[1].Item<int32_t>(), -5);
}

TEST(ExecTest, GraphOnlyFunction) {
  Exec exec = NewExec(Ref(), [](Graph& g) { return Iota(g, Shape(DType::Int64, {4}), 0); });
  EXPECT_EQ(exec.Call1().ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(ExecTest, VariadicInputsAndTensorListCall) {
  Exec sum = NewExec(Ref(), [](const std::vector<Node>& xs) {
    Node total = xs.at(0);
    for (size_t i = 1; i < xs.size(); ++i) total = total + xs[i];
    return total;
  });
  EXPECT_EQ(sum.Call1(1.0f, 2.0f, 3.0f).Item<float>(), 6.0f);
  std::vector<Tensor> inputs = {Tensor::FromScalar(1.5), Tensor::FromScalar(2.5)};
  EXPECT_EQ(sum.Call1(inputs).Item<double>(), 4.0);  // A lone vector<Tensor> is the input list.
  EXPECT_EQ(sum.Call(inputs).size(), 1u);
}

TEST(ExecTest, AcceptsTensorsScalarsAndNestedVectors) {
  Exec exec = NewExec(Ref(), AddFn);
  Tensor a = Tensor::FromValue(std::vector<std::vector<int32_t>>{{1, 2}, {3, 4}});
  Tensor out = exec.Call1(a, std::vector<std::vector<int32_t>>{{10, 20}, {30, 40}});
  EXPECT_EQ(out.Value<std::vector<std::vector<int32_t>>>(),
            (std::vector<std::vector<int32_t>>{{11, 22}, {33, 44}}));
  EXPECT_EQ(exec.Call1(int64_t(2), int64_t(3)).Item<int64_t>(), 5);
}

TEST(ExecTest, WrongInputCountAndCall1OutputCount) {
  Exec exec = NewExec(Ref(), AddFn);
  EXPECT_THROW(exec.Call(1.0), kiln::Error);
  EXPECT_THROW(exec.Call(1.0, 2.0, 3.0), kiln::Error);
  Exec two = NewExec(Ref(), [](Node x) { return std::vector<Node>{x, x}; });
  try {
    two.Call1(1.0);
    FAIL() << "Call1 on two outputs did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(e.message().find("exactly one output"), std::string::npos) << e.message();
  }
}

TEST(ExecTest, CachesPerInputShapes) {
  int builds = 0;
  Exec exec = NewExec(Ref(), [&builds](Node a, Node b) {
    ++builds;
    return Add(a, b);
  });
  exec.Call(1.0, 2.0);
  exec.Call(3.0, 4.0);
  EXPECT_EQ(builds, 1);
  exec.Call(std::vector<double>{1, 2}, std::vector<double>{3, 4});
  EXPECT_EQ(builds, 2);
  exec.Call(std::vector<float>{1, 2}, std::vector<float>{3, 4});  // Another dtype: another build.
  EXPECT_EQ(builds, 3);
  exec.Call(5.0, 6.0);
  EXPECT_EQ(builds, 3);
  EXPECT_EQ(exec.NumBuilds(), 3);
}

TEST(ExecTest, CacheIsBoundedLeastRecentlyUsed) {
  int builds = 0;
  Exec exec = NewExec(Ref(), [&builds](Node x) {
    ++builds;
    return x * 2;
  });
  exec.SetMaxCacheSize(2);
  exec.Call(std::vector<float>{1});        // A
  exec.Call(std::vector<float>{1, 2});     // B
  exec.Call(std::vector<float>{1});        // A again: hit, A most recent.
  exec.Call(std::vector<float>{1, 2, 3});  // C evicts B.
  EXPECT_EQ(builds, 3);
  exec.Call(std::vector<float>{1});  // A still cached.
  EXPECT_EQ(builds, 3);
  exec.Call(std::vector<float>{1, 2});  // B was evicted: builds again.
  EXPECT_EQ(builds, 4);
  EXPECT_THROW(exec.SetMaxCacheSize(0), kiln::Error);
}

TEST(ExecTest, FailedBuildIsNotCached) {
  int builds = 0;
  Exec exec = NewExec(Ref(), [&builds](Node a, Node b) {
    ++builds;
    return Add(a, b);
  });
  EXPECT_THROW(exec.Call(int32_t(1), 1.0f), kiln::Error);
  EXPECT_THROW(exec.Call(int32_t(1), 1.0f), kiln::Error);
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(exec.Call1(int32_t(1), int32_t(2)).Item<int32_t>(), 3);
}

TEST(ExecTest, BuildErrorsCarryTheMessageAndTheUsersStack) {
  Exec exec = NewExec(Ref(), AddFn);
  try {
    exec.Call(int32_t(1), 1.0f);
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.message(), "cannot broadcast Int32 and Float32 for \"Add\": they have different dtypes");
    const std::string what = e.what();
    // The stack below the message reaches the user's code that made the call.
    EXPECT_NE(what.find("BuildErrorsCarryTheMessageAndTheUsersStack"), std::string::npos) << what;
  }
}

TEST(ExecTest, ScalarThatTheIntegerDTypeCannotHoldIsAnError) {
  Exec exec = NewExec(Ref(), [](Node x) { return x * 0.5; });
  EXPECT_THROW(exec.Call(int32_t(3)), kiln::Error);
  EXPECT_EQ(exec.Call1(4.0f).Item<float>(), 2.0f);
}

TEST(ExecTest, SafeFromSeveralThreads) {
  Exec exec = NewExec(Ref(), [](Node x, Node y) { return ReduceAllSum(x * y); });
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const int n = 1 + (i + t) % 5;  // Several shapes, built concurrently.
        std::vector<float> x(static_cast<size_t>(n), float(t + 1)), y(static_cast<size_t>(n), 2.0f);
        const float got = exec.Call1(x, y).Item<float>();
        if (got != float(n * (t + 1) * 2)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(exec.NumBuilds(), 5);
}

TEST(ExecTest, OutputNeverAliasesANonDonatedInput) {
  for (const char* config : {"ref", "ref:shared=false"}) {
    SCOPED_TRACE(config);
    Exec exec = NewExec(compute::NewWithConfig(config), [](Node x) { return x; });
    Tensor in = Tensor::FromValue(std::vector<float>{1, 2, 3});
    Tensor out = exec.Call1(in);
    out.MutableFlatData<float>([](std::span<float> f) { f[0] = 100; });
    EXPECT_EQ(in.ToVector<float>(), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{100, 2, 3}));
  }
}

TEST(ExecTest, DonationOfASharedBufferInvalidatesEveryHandle) {
  compute::BackendPtr backend = Ref();
  Exec exec = NewExec(backend, [](Node x) { return x + 1; });
  Tensor in = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {4}));
  Tensor copy = in;
  Tensor out = exec.Call1(Donate(in));
  EXPECT_FALSE(in.Ok());
  EXPECT_FALSE(copy.Ok());
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_THROW(exec.Call(in), kiln::Error);  // A donated tensor cannot be used again.
}

TEST(ExecTest, DonationOnADiscreteDeviceKeepsTheHostCopy) {
  compute::BackendPtr backend = compute::NewWithConfig("ref:shared=false");
  Exec exec = NewExec(backend, [](Node x) { return x * 3; });
  Tensor in = Tensor::FromValue(std::vector<int32_t>{1, 2});
  Tensor out = exec.Call1(DonateTensorBuffer(in, backend, 0));
  EXPECT_TRUE(in.Ok());
  EXPECT_TRUE(in.HasLocal());
  EXPECT_FALSE(in.IsOnDevice(backend, 0));
  EXPECT_FALSE(in.IsMarkedForDonation());
  EXPECT_EQ(out.ToVector<int32_t>(), (std::vector<int32_t>{3, 6}));
}

TEST(ExecTest, OutputsStayOnTheDeviceUntilRead) {
  compute::BackendPtr backend = compute::NewWithConfig("ref:shared=false");
  Exec exec = NewExec(backend, [](Node x) { return Sqrt(x); });
  Tensor out = exec.Call1(std::vector<double>{4, 9});
  EXPECT_FALSE(out.HasLocal());
  EXPECT_TRUE(out.IsOnDevice(backend, 0));
  EXPECT_EQ(out.ToVector<double>(), (std::vector<double>{2, 3}));
  EXPECT_TRUE(out.HasLocal());

  // On a backend sharing host memory the output is its own host copy: nothing to copy.
  Exec shared = NewExec(Ref(), [](Node x) { return Sqrt(x); });
  Tensor s = shared.Call1(std::vector<double>{16});
  EXPECT_TRUE(s.IsShared());
  EXPECT_TRUE(s.HasLocal());
}

TEST(ExecTest, OutputsFeedTheNextCallWithoutLeavingTheDevice) {
  compute::BackendPtr backend = compute::NewWithConfig("ref:shared=false");
  Exec exec = NewExec(backend, [](Node x) { return x + 1; });
  Tensor t = exec.Call1(std::vector<int64_t>{0, 10});
  for (int i = 0; i < 5; ++i) t = exec.Call1(t);
  EXPECT_FALSE(t.HasLocal());
  EXPECT_EQ(t.ToVector<int64_t>(), (std::vector<int64_t>{6, 16}));
}

TEST(ExecTest, WithDynamicAxesChecksInputsAndAxisNames) {
  Exec exec = NewExec(Ref(), AddFn);
  EXPECT_THROW(exec.WithDynamicAxes({{"batch"}, {"batch"}, {"batch"}}), kiln::Error);  // 3 lists, 2 inputs.
  exec.WithDynamicAxes({{"batch"}, {"batch"}});
  try {
    exec.Call(std::vector<float>{1, 2}, std::vector<float>{1, 2, 3});
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(e.message().find("\"batch\" has size 3 at input 1 axis 0, but 2 at input 0 axis 0"),
              std::string::npos)
        << e.message();
  }
  try {
    exec.Call(std::vector<std::vector<float>>{{1}}, std::vector<float>{1});
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(
        e.message().find("input 0 has shape (Float32)[1, 1] (rank 2), but WithDynamicAxes names 1 axes"),
        std::string::npos)
        << e.message();
  }
}

TEST(ExecTest, ProgramForShowsTheCompiledProgram) {
  Exec exec = NewExec(Ref(), [](Node x) { return Exp(x) + 1.0f; });
  auto program = exec.ProgramFor({Shape(DType::Float32, {3})});
  const std::string text = program->ToString();
  EXPECT_NE(text.find("Exp"), std::string::npos) << text;
  EXPECT_NE(text.find("Add"), std::string::npos) << text;
  EXPECT_EQ(program->Parameters().size(), 1u);
  EXPECT_EQ(program->OutputShape(0), Shape(DType::Float32, {3}));
}

}  // namespace
