#pragma once
// Helpers shared by the cpu backend's compiler tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/passes.h"
#include "kiln/graph/conv.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln::test {

/// The cpu compiler's module for `program` after the pipeline's cleanups (dead code, common
/// subexpressions, Simplify, dead code), as the passes after them see it.
inline compute::cpu::Module CleanedModule(const compute::Program& program) {
  compute::cpu::Module m = compute::cpu::FromProgram(program);
  compute::cpu::EliminateDeadCode(m);
  compute::cpu::EliminateCommonSubexpressions(m);
  compute::cpu::Simplify(m);
  compute::cpu::EliminateDeadCode(m);
  return m;
}

/// Whether got and want agree within float32 accumulation error over `terms` products each (the
/// cpu backend's contractions against ref's).
inline ::testing::AssertionResult Close(const Tensor& got, const Tensor& want, int64_t terms) {
  if (got.shape() != want.shape()) return ::testing::AssertionFailure() << "shapes differ";
  const std::vector<float> g = got.ToVector<float>(), w = want.ToVector<float>();
  const double tol = 1e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1))) + 1e-6;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::abs(static_cast<double>(g[i]) - w[i]) <= tol * (1 + std::abs(static_cast<double>(w[i]))))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want " << w[i];
    }
  }
  return ::testing::AssertionSuccess();
}

/// Uniform values in [-1, 1] of the given dims (Float32), from `seed`.
inline Tensor RandomUniform(const std::vector<int64_t>& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const Shape shape(DType::Float32, dims);
  std::vector<float> v(static_cast<size_t>(shape.Size()));
  for (float& x : v) x = u(rng);
  return Tensor::FromFlat(shape, v);
}

/// Uniform values in [-1, 1] of `shape` (Float32), drawn from `rng`.
inline Tensor Random(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(shape.Size()));
  for (float& x : v) x = u(rng);
  return Tensor::FromFlat(shape, v);
}

/// A uniform integer in [lo, hi].
inline int64_t Pick(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// How many nodes of `m` compute `op`.
inline int CountOps(const compute::cpu::Module& m, compute::OpType op) {
  return static_cast<int>(std::count_if(m.nodes.begin(), m.nodes.end(),
                                        [&](const compute::cpu::Node& n) { return n.inst.op == op; }));
}

/// Runs `program` on cpu (two threads), on ref and on cpu with `fusion=false` (no optimising
/// passes): the cpu results must be Close to both over `terms` products.
inline void ExpectCpuMatchesRefAndPlain(const std::shared_ptr<const compute::Program>& program,
                                        const std::vector<Tensor>& inputs, int64_t terms) {
  const std::vector<Tensor> want = RunProgram(Backend("ref"), program, inputs);
  const std::vector<Tensor> got = RunProgram(Backend("cpu:threads=2,serial_work=0"), program, inputs);
  const std::vector<Tensor> plain =
      RunProgram(Backend("cpu:threads=2,fusion=false,serial_work=0"), program, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(Close(got[i], want[i], terms)) << "output " << i << " vs ref";
    EXPECT_TRUE(Close(got[i], plain[i], terms)) << "output " << i << " vs fusion=false";
  }
}

/// A program compiled by a fresh cpu backend with KILN_CPU_DUMP on, and what its compiler printed.
struct Dumped {
  compute::BackendPtr backend;
  std::unique_ptr<compute::Executable> exe;
  std::string dump;
};

/// Compiles `program` on a fresh backend of `config` with KILN_CPU_DUMP on.
inline Dumped CompileDumped(const std::string& config,
                            const std::shared_ptr<const compute::Program>& program) {
  setenv("KILN_CPU_DUMP", "1", 1);
  Dumped d;
  d.backend = compute::NewWithConfig(config);
  unsetenv("KILN_CPU_DUMP");
  ::testing::internal::CaptureStderr();
  d.exe = d.backend->Compile(program);
  d.dump = ::testing::internal::GetCapturedStderr();
  return d;
}

/// Runs `program` on a fresh backend of `config` with KILN_CPU_DUMP on; `dump` gets what its
/// compiler printed.
inline std::vector<Tensor> RunDumped(const std::shared_ptr<const compute::Program>& program,
                                     const std::vector<Tensor>& inputs, std::string& dump,
                                     const std::string& config = "cpu:threads=2") {
  setenv("KILN_CPU_DUMP", "1", 1);
  const compute::BackendPtr cpu = compute::NewWithConfig(config);
  unsetenv("KILN_CPU_DUMP");
  ::testing::internal::CaptureStderr();
  std::vector<Tensor> got = RunProgram(cpu, program, inputs);
  dump = ::testing::internal::GetCapturedStderr();
  return got;
}

/// The kernel `backend` (a cpu one) picks for each `op` instruction of `program`, in program order.
inline std::vector<std::string> KernelNames(const compute::BackendPtr& backend,
                                            const compute::Program& program, compute::OpType op) {
  auto* cpu = dynamic_cast<compute::cpu::CpuBackend*>(backend.get());
  EXPECT_NE(cpu, nullptr);
  std::vector<std::string> names;
  const std::vector<compute::Instruction>& insts = program.Instructions();
  for (const compute::Instruction& inst : insts) {
    if (inst.op != op) continue;
    std::vector<Shape> operands;
    for (int o : inst.operands) operands.push_back(insts[static_cast<size_t>(o)].shape);
    compute::cpu::Node node{inst, nullptr};
    names.push_back(compute::cpu::ChooseKernel(*cpu, cpu->options().threads, node, operands).name);
  }
  return names;
}

/// KernelNames of the ConvGeneral instructions.
inline std::vector<std::string> ConvKernels(const compute::BackendPtr& backend,
                                            const compute::Program& program) {
  return KernelNames(backend, program, compute::OpType::ConvGeneral);
}

/// A convolution (PadSame) of an x and a kernel of the given dims, with a stride, a dilation,
/// feature groups and channels first or last: the variants kernel-choice tests try.
struct ConvVariant {
  std::vector<int64_t> x, k;
  int64_t stride = 1, dilation = 1, groups = 1;
  bool channels_first = false;

  /// The convolution of parameters x and k (returned in `kernel`) in `g`.
  graph::Node Build(graph::Graph& g, graph::Node* kernel = nullptr) const {
    graph::Node xn = g.Parameter(Shape(DType::Float32, x)), kn = g.Parameter(Shape(DType::Float32, k));
    if (kernel != nullptr) *kernel = kn;
    graph::ConvBuilder b = graph::Convolve(xn, kn);
    b.PadSame().Strides(stride).Dilations(dilation).ChannelGroupCount(groups);
    if (channels_first) b.ChannelsFirst();
    return b.Done();
  }
  std::string ToString() const {
    return Shape(DType::Float32, x).ToString() + " by " + Shape(DType::Float32, k).ToString();
  }
};

/// Checks a convolution's gradient against central differences: L = sum(w * Convolve(x, k)
/// .PadSame()) (channels last) is linear in x and in k, so central differences of L in Float64 on
/// ref give its derivatives up to rounding. `xkw`: x, k and w (Float32); `grad`: the gradient of L
/// for xkw[operand], as computed under test; at `samples` elements drawn from `rng` it must be
/// within 1e-4 (1 + |numeric|) of the difference quotient.
inline void ExpectConvGradientMatchesCentralDifferences(const std::vector<Tensor>& xkw, size_t operand,
                                                        const Tensor& grad, int samples, std::mt19937& rng,
                                                        const std::string& what) {
  const auto wide = [](const Tensor& t) { return Shape(DType::Float64, t.shape().Dimensions()); };
  graph::Graph g;
  graph::Node x = g.Parameter(wide(xkw[0])), k = g.Parameter(wide(xkw[1])), w = g.Parameter(wide(xkw[2]));
  const std::shared_ptr<const compute::Program> loss =
      g.Build({graph::ReduceAllSum(graph::Convolve(x, k).PadSame().Done() * w)});
  std::vector<std::vector<double>> values;
  for (const Tensor& t : xkw) {
    const std::vector<float> f = t.ToVector<float>();
    values.emplace_back(f.begin(), f.end());
  }
  const auto loss_at = [&](const std::vector<std::vector<double>>& v) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < v.size(); ++i) in.push_back(Tensor::FromFlat(wide(xkw[i]), v[i]));
    return RunProgram(Backend("ref"), loss, in)[0].Item<double>();
  };
  const std::vector<float> got = grad.ToVector<float>();
  const double eps = 1e-3;
  for (int sample = 0; sample < samples; ++sample) {
    const size_t j = static_cast<size_t>(Pick(rng, 0, static_cast<int64_t>(got.size()) - 1));
    std::vector<std::vector<double>> plus = values, minus = values;
    plus[operand][j] += eps;
    minus[operand][j] -= eps;
    const double numeric = (loss_at(plus) - loss_at(minus)) / (2 * eps);
    EXPECT_NEAR(got[j], numeric, 1e-4 * (1 + std::abs(numeric))) << what << "[" << j << "]";
  }
}

/// How many times `text` occurs in `s`.
inline size_t Occurrences(const std::string& s, const std::string& text) {
  size_t n = 0;
  for (size_t at = s.find(text); at != std::string::npos; at = s.find(text, at + 1)) ++n;
  return n;
}

/// Runs `exe` (compiled by `backend` from a program of one input and one output of `shape`) from 3
/// threads at once, 12 calls each over `inputs` in turn: every result must be Close to
/// `want[i]` (the output for inputs[i]) over `terms` products.
inline void ExpectConcurrentCallsMatch(compute::Executable& exe, const compute::BackendPtr& backend,
                                       const Shape& shape, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& want, int64_t terms) {
  std::vector<std::thread> threads;
  std::vector<int> failures(3, 0);
  for (size_t t = 0; t < failures.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const size_t which = (t + static_cast<size_t>(i)) % inputs.size();
        std::vector<compute::BufferPtr> out =
            exe.Execute({inputs[which].DeviceBuffer(backend, 0)}, std::vector<bool>(1, false), 0);
        if (!Close(Tensor::FromBuffer(backend, 0, shape, out[0]), want[which], terms)) ++failures[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace kiln::test
