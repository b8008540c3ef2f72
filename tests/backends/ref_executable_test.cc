// Tests of the reference backend's executables: memory (intermediates freed after their last use),
// donation and aliasing of buffers, bad inputs, program verification, threads and capabilities.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "backends/ref_test_util.h"
#include "core/tensor_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace ref_test;  // NOLINT
using kiln::testing::ThrowsKilnError;

// ---- Memory --------------------------------------------------------------------------------

constexpr int64_t kMiB = 1 << 20;

TEST(RefMemoryTest, ElementwiseChainKeepsFewBuffersLive) {
  const compute::BackendPtr backend = compute::NewWithConfig("ref");
  const Shape shape(DType::Float32, {kMiB / 4});
  Graph g;
  Node y = g.Parameter(shape);
  for (int i = 0; i < 20; ++i) y = g.AddOp(OpType::Exp, {y});
  std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build({y}));
  const std::vector<float> host(static_cast<size_t>(kMiB / 4), -1000.0f);
  compute::BufferPtr in = backend->BufferFromHost(0, host.data(), kMiB);
  backend->ResetPeakMemory();
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {false}, 0);
  const compute::MemoryUsage usage = backend->MemoryStats();
  EXPECT_LE(usage.peak_bytes, 3 * kMiB);  // The input and at most two values, not 20.
  EXPECT_EQ(usage.live_bytes, 2 * kMiB);  // The input and the output.
  EXPECT_EQ(usage.live_buffers, 2);
  std::vector<float> result(host.size());
  backend->BufferToHost(*out[0], result.data());
  // exp(-1000) = 0, then 1, e, e^e = 15.2, e^15.2 = 3.8e6, then inf from the sixth step on.
  EXPECT_EQ(result[0], std::numeric_limits<float>::infinity());
  out.clear();
  in.reset();
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
}

TEST(RefMemoryTest, IntermediatesAreFreedAfterTheirLastUse) {
  // Transposes cannot run in place: each step holds its operand and its result, nothing older.
  const compute::BackendPtr backend = compute::NewWithConfig("ref");
  const Shape shape(DType::Float32, {512, 512});
  Graph g;
  Node y = g.Parameter(shape);
  OpAttributes t;
  t.permutation = {1, 0};
  for (int i = 0; i < 10; ++i) y = g.AddOp(OpType::Transpose, {y}, t);
  // A value used twice, far apart, lives until its last use.
  Node x0 = g.ParameterNode(0);
  Node z = g.AddOp(OpType::Add, {y, x0});
  std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build({z}));
  compute::BufferPtr in = backend->NewSharedBuffer(0, kMiB);
  backend->ResetPeakMemory();
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {false}, 0);
  EXPECT_LE(backend->MemoryStats().peak_bytes, 3 * kMiB);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 2);
}

// ---- Donation and aliasing -----------------------------------------------------------------

struct Fixture {
  compute::BackendPtr backend = compute::NewWithConfig("ref");
  compute::BufferPtr Input(const std::vector<float>& v) {
    return backend->BufferFromHost(0, v.data(), static_cast<int64_t>(v.size() * sizeof(float)));
  }
  std::vector<float> Read(const compute::BufferPtr& b) {
    std::vector<float> v(static_cast<size_t>(b->ByteSize()) / sizeof(float));
    backend->BufferToHost(*b, v.data());
    return v;
  }
};

TEST(RefDonationTest, OutputThatIsAParameterCopiesUnlessDonated) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {4}));
  OpAttributes re;
  re.shape = Shape(DType::Float32, {2, 2});
  Node r = g.AddOp(OpType::Reshape, {x}, re);
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({x}, {true}));
  std::unique_ptr<compute::Executable> exe_reshape = f.backend->Compile(g.Build({r}, {true}));
  compute::BufferPtr in = f.Input({1, 2, 3, 4});
  for (compute::Executable* e : {exe.get(), exe_reshape.get()}) {
    std::vector<compute::BufferPtr> out = e->Execute({in}, {false}, 0);
    EXPECT_NE(out[0], in);
    EXPECT_NE(out[0]->HostData(), in->HostData());
    EXPECT_EQ(f.Read(out[0]), (std::vector<float>{1, 2, 3, 4}));
    static_cast<float*>(out[0]->HostData())[0] = 9;  // Writing the output leaves the input alone.
    EXPECT_EQ(f.Read(in)[0], 1.0f);
  }
  // Donated: the very buffer comes back.
  EXPECT_EQ(exe->Execute({in}, {true}, 0)[0], in);
  EXPECT_EQ(exe_reshape->Execute({in}, {true}, 0)[0], in);
}

TEST(RefDonationTest, ElementwiseResultReusesTheDonatedBuffer) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {kMiB / 4}));
  Node y = g.AddOp(OpType::Neg, {g.AddOp(OpType::Exp, {x})});
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({y}, {true}));
  compute::BufferPtr in = f.Input(std::vector<float>(kMiB / 4, 0.0f));
  f.backend->ResetPeakMemory();
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {true}, 0);
  EXPECT_EQ(out[0], in);
  EXPECT_EQ(f.backend->MemoryStats().peak_bytes, kMiB);  // Nothing else was allocated.
  EXPECT_EQ(f.Read(out[0])[5], -1.0f);
  // Not donated: a new buffer, the input unchanged.
  compute::BufferPtr in2 = f.Input(std::vector<float>(kMiB / 4, 0.0f));
  out = exe->Execute({in2}, {false}, 0);
  EXPECT_NE(out[0], in2);
  EXPECT_EQ(f.Read(in2)[5], 0.0f);
}

TEST(RefDonationTest, DonationNeedsTheProgramsPermissionAndAnUnsharedBuffer) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  Node y = g.Parameter(Shape(DType::Float32, {2}));
  Node sum = g.AddOp(OpType::Add, {x, y});
  // The program does not let parameter 0 be reused: donating it changes nothing.
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({sum}, {false, false}));
  compute::BufferPtr a = f.Input({1, 2}), b = f.Input({10, 20});
  std::vector<compute::BufferPtr> out = exe->Execute({a, b}, {true, false}, 0);
  EXPECT_NE(out[0], a);
  EXPECT_EQ(f.Read(out[0]), (std::vector<float>{11, 22}));
  // The same buffer passed twice, donated once: still read as an input, so never overwritten.
  exe = f.backend->Compile(g.Build({sum}, {true, true}));
  out = exe->Execute({a, a}, {true, false}, 0);
  EXPECT_NE(out[0], a);
  EXPECT_EQ(f.Read(out[0]), (std::vector<float>{2, 4}));
  EXPECT_EQ(f.Read(a), (std::vector<float>{1, 2}));
  // A donated parameter that is output twice: once itself, once a copy.
  exe = f.backend->Compile(g.Build({x, x}, {true, true}));
  out = exe->Execute({a, b}, {true, true}, 0);
  EXPECT_EQ(out[0], a);
  EXPECT_NE(out[1], a);
  EXPECT_EQ(f.Read(out[1]), (std::vector<float>{1, 2}));
}

TEST(RefDonationTest, SpareDonatedBufferHoldsALaterResult) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2, 2}));
  OpAttributes t;
  t.permutation = {1, 0};
  Node y = g.AddOp(OpType::Transpose, {x}, t);
  Node z = g.AddOp(OpType::Transpose, {y}, t);
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({z}, {true}));
  compute::BufferPtr in = f.Input({1, 2, 3, 4});
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {true}, 0);
  EXPECT_EQ(out[0], in);  // x is dead after the first Transpose; the second one writes into it.
  EXPECT_EQ(f.Read(out[0]), (std::vector<float>{1, 2, 3, 4}));
}

// ---- Errors, threads, shared buffers -------------------------------------------------------

TEST(RefExecuteTest, BadInputsAreErrors) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {2}));
  Node y = g.Parameter(Shape(DType::Float32, {3}));
  Node s = g.AddOp(OpType::ReduceSum, {y}, [] {
    OpAttributes a;
    a.axes = {0};
    return a;
  }());
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({x, s}));
  compute::BufferPtr two = f.Input({1, 2}), three = f.Input({1, 2, 3});
  EXPECT_TRUE(ThrowsKilnError([&] { exe->Execute({two}, {false}, 0); }, {"takes 2 inputs", "given 1"}));
  EXPECT_TRUE(ThrowsKilnError(
      [&] {
        exe->Execute({two, two}, {false, false}, 0);
      },
      {"parameter 1", "8 bytes", "12"}));
  EXPECT_TRUE(ThrowsKilnError([&] { exe->Execute({two, three}, {false}, 0); }, {"donation flags"}));
  EXPECT_TRUE(ThrowsKilnError([&] { exe->Execute({two, three}, {false, false}, 1); }));
  compute::BackendPtr other = compute::NewWithConfig("ref");
  std::vector<float> v = {1, 2, 3};
  EXPECT_TRUE(ThrowsKilnError(
      [&] {
        exe->Execute({two, other->BufferFromHost(0, v.data(), 12)}, {false, false}, 0);
      },
      {"another backend"}));
  const std::vector<compute::BufferPtr> out =
      exe->Execute({two, three}, {}, 0);  // No flags: nothing donated.
  EXPECT_EQ(f.Read(out[1]), (std::vector<float>{6}));
}

TEST(RefExecuteTest, SubProgramsAreRejected) {
  Graph inner;
  Node p = inner.Parameter(Shape(DType::Float32));
  std::shared_ptr<const compute::Program> body = inner.Build({p});
  std::vector<compute::Instruction> insts;
  OpAttributes pa;
  pa.index = 0;
  pa.shape = Shape(DType::Float32, {2});
  insts.push_back(compute::Instruction{OpType::Parameter, {}, pa, pa.shape, {}});
  insts.push_back(compute::Instruction{OpType::Neg, {0}, {}, pa.shape, {body}});
  auto program =
      std::make_shared<const compute::Program>(std::move(insts), std::vector<int>{1}, std::vector<bool>{});
  EXPECT_TRUE(ThrowsKilnError([&] { Ref()->Compile(program); }, {"#1", "Neg", "sub-programs"}));
}

TEST(RefExecuteTest, CompileVerifiesTheProgram) {
  std::vector<compute::Instruction> insts;
  OpAttributes pa;
  pa.index = 0;
  pa.shape = Shape(DType::Float32, {2});
  insts.push_back(compute::Instruction{OpType::Parameter, {}, pa, pa.shape, {}});
  insts.push_back(
      compute::Instruction{OpType::Neg, {0}, {}, Shape(DType::Float32, {3}), {}});  // Wrong shape.
  auto program =
      std::make_shared<const compute::Program>(std::move(insts), std::vector<int>{1}, std::vector<bool>{});
  EXPECT_TRUE(ThrowsKilnError([&] { Ref()->Compile(program); }, {"Verify", "#1"}));
  EXPECT_TRUE(ThrowsKilnError([&] { Ref()->Compile(nullptr); }, {"null"}));
}

TEST(RefExecuteTest, ConcurrentExecutions) {
  Fixture f;
  Graph g;
  Node x = g.Parameter(Shape(DType::Int64, {1000}));
  OpAttributes a;
  a.axes = {0};
  Node s = g.AddOp(OpType::ReduceSum, {g.AddOp(OpType::Mul, {x, g.AddOp(OpType::Neg, {x})})}, a);
  std::unique_ptr<compute::Executable> exe = f.backend->Compile(g.Build({s}, {true}));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 50; ++iter) {
        const int64_t k = t * 100 + iter;
        const std::vector<int64_t> v(1000, k);
        compute::BufferPtr in = f.backend->BufferFromHost(0, v.data(), 8000);
        const std::vector<compute::BufferPtr> out = exe->Execute({in}, {iter % 2 == 0}, 0);
        int64_t got = 0;
        f.backend->BufferToHost(*out[0], &got);
        if (got != -1000 * k * k) ++failures[static_cast<size_t>(t)];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(f.backend->MemoryStats().live_bytes, 0);
}

TEST(RefExecuteTest, OutputsAreBackendBuffersSharedWithTensors) {
  for (const char* config : {"ref", "ref:shared=false"}) {
    SCOPED_TRACE(config);
    const compute::BackendPtr backend = compute::NewWithConfig(config);
    Graph g;
    Node x = g.Parameter(Shape(DType::Float32, {3}));
    Node y = g.AddOp(OpType::Add, {x, x});
    const std::shared_ptr<const compute::Program> program = g.Build({y});
    const std::vector<Tensor> out = RunProgram(backend, program, {V(std::vector<float>{1, 2, 3})});
    EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{2, 4, 6}));
    EXPECT_EQ(out[0].IsShared(), backend->HasSharedBuffers());
    compute::BufferPtr buffer = out[0].DeviceBuffer(backend, 0);
    EXPECT_EQ(buffer->backend(), backend.get());
    EXPECT_EQ(buffer->HostData() != nullptr, backend->HasSharedBuffers());
  }
}

TEST(RefExecuteTest, CapabilitiesCoverEveryOpAndDType) {
  const compute::BackendCapabilities& caps = Ref()->Capabilities();
  EXPECT_EQ(caps.ops.size(), static_cast<size_t>(compute::kNumOps));
  // Packed dtypes too: ref runs the storage ops, the only ones their shape rules accept.
  for (DType d : kAllDTypes) EXPECT_TRUE(caps.HasDType(d)) << DTypeName(d);
  EXPECT_EQ(caps.dynamic_shapes, compute::DynamicShapes::Native);
  EXPECT_EQ(compute::NewWithConfig("ref:dynamic=false")->Capabilities().dynamic_shapes,
            compute::DynamicShapes::None);
}

}  // namespace
}  // namespace kiln
