// The differential test: random valid graphs (random_graph.h) run on `cpu` (inputs donated),
// on `cpu:fusion=false` and on `ref`; every output must agree with ref's: exactly for integers
// and Bool, within a few ulps (relative 1e-5 for Float32) for floats, NaN matching NaN. A
// failure prints its seed, the op sequence, the program and the inputs; rerun one graph with
// KILN_DIFFERENTIAL_SEED=<seed> KILN_DIFFERENTIAL_GRAPHS=1. The sign of zero counts (-0 and +0
// differ for Atan2 and Reciprocal); KILN_DIFFERENTIAL_SIGNED_ZERO=0 ignores it. The count
// (kDefaultGraphs) is overridden by $KILN_DIFFERENTIAL_GRAPHS (the `slow` ctest runs 300000).
// Every kDynamicEvery-th graph also runs on `cpu` with its inputs' axis 0 made dynamic (one
// dynamic compilation, specialised to the inputs; see Dynamize).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/random_graph.h"
#include "compute/shape_rules.h"
#include "kiln/kiln.h"

namespace {

using namespace kiln;

// Measured at 0.35-0.7 ms a graph on one core (three compilations and runs; OMP_NUM_THREADS=1):
// 15000 graphs take 5-10 s, leaving room for slower compilation as kernels land, the asan
// preset, and OpenMP teams spinning on a loaded machine (up to 8 ms a graph seen with 2 threads).
constexpr int kDefaultGraphs = 15000;
constexpr int kDynamicEvery = 4;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoll(v, nullptr, 10) : fallback;
}

using Bytes = std::vector<uint8_t>;

/// One backend's run of a program: the output bytes, or the error it threw.
struct RunResult {
  std::vector<Bytes> outputs;
  std::string error;
  std::string problem;  ///< A broken execution contract (aliased outputs, a modified input).
};

/// Compiles and runs `program` on `backend`; with `donate`, every input is a fresh buffer
/// given up to the execution, else the inputs must come back unchanged.
RunResult RunOn(const compute::BackendPtr& backend, const compute::Program& program,
                const std::vector<Tensor>& inputs, bool donate) {
  RunResult run;
  try {
    std::unique_ptr<compute::Executable> exe =
        backend->Compile(std::make_shared<const compute::Program>(program));
    std::vector<compute::BufferPtr> buffers;
    std::vector<Bytes> before;
    for (const Tensor& t : inputs) {
      Bytes b;
      t.ConstBytes([&](std::span<const uint8_t> s) { b.assign(s.begin(), s.end()); });
      buffers.push_back(backend->BufferFromHost(0, b.data(), static_cast<int64_t>(b.size())));
      before.push_back(std::move(b));
    }
    std::vector<Shape> shapes, out_shapes;
    for (const Tensor& t : inputs) shapes.push_back(t.shape());
    std::vector<compute::BufferPtr> out =
        exe->ExecuteWithShapes(buffers, shapes, std::vector<bool>(inputs.size(), donate), 0, out_shapes);
    for (size_t o = 0; o < out_shapes.size(); ++o) {
      const Shape& want = program.OutputShape(static_cast<int>(o));
      if (!want.IsDynamic() &&
          (out_shapes[o].dtype() != want.dtype() || out_shapes[o].Dimensions() != want.Dimensions()))
        run.problem = fmt::format("output {} has shape {}, the program says {}", o, out_shapes[o].ToString(),
                                  want.ToString());
    }
    std::set<const void*> seen;
    for (const compute::BufferPtr& b : out) {
      Bytes bytes(static_cast<size_t>(b->ByteSize()));
      backend->BufferToHost(*b, bytes.data());
      run.outputs.push_back(std::move(bytes));
      if (b->ByteSize() > 0 && !seen.insert(b->HostData()).second)
        run.problem = "two outputs share one buffer";
    }
    for (size_t i = 0; i < buffers.size() && !donate; ++i) {
      Bytes now(static_cast<size_t>(buffers[i]->ByteSize()));
      backend->BufferToHost(*buffers[i], now.data());
      if (now != before[i]) run.problem = fmt::format("input {} was modified though not donated", i);
      for (const compute::BufferPtr& b : out)
        if (b == buffers[i] || (b->ByteSize() > 0 && b->HostData() == buffers[i]->HostData()))
          run.problem = fmt::format("an output aliases input {}, which was not donated", i);
    }
  } catch (const kiln::Error& e) {
    run.error = e.message();
  }
  return run;
}

/// Whether -0 and +0 must match ($KILN_DIFFERENTIAL_SIGNED_ZERO=0 relaxes it, to look past a
/// known sign-of-zero difference for other ones).
bool SignedZeros() {
  static const bool strict = EnvInt("KILN_DIFFERENTIAL_SIGNED_ZERO", 1) != 0;
  return strict;
}

/// Element i of a float tensor's bytes, as a double.
double FloatAt(DType d, const Bytes& b, size_t i) {
  switch (d) {
    case DType::Float32: {
      float f;
      std::memcpy(&f, &b[i * 4], 4);
      return f;
    }
    case DType::Float64: {
      double f;
      std::memcpy(&f, &b[i * 8], 8);
      return f;
    }
    case DType::Float16: {
      uint16_t h;
      std::memcpy(&h, &b[i * 2], 2);
      return static_cast<double>(static_cast<float>(float16::FromBits(h)));
    }
    default: {
      uint16_t h;
      std::memcpy(&h, &b[i * 2], 2);
      return static_cast<double>(static_cast<float>(bfloat16::FromBits(h)));
    }
  }
}

/// Relative tolerance per float dtype: a few ulps for the half types, 1e-5 for Float32.
double Tolerance(DType d) {
  switch (d) {
    case DType::Float64:
      return 1e-12;
    case DType::Float32:
      return 1e-5;
    case DType::Float16:
      return 8.0 / 1024;
    default:
      return 8.0 / 128;
  }
}

/// Per value of `program`: the relative tolerance its floats get, the loosest of the float
/// dtypes it was computed from (a Float64 converted from Float32 carries Float32's error).
std::vector<double> Tolerances(const compute::Program& program) {
  const auto& insts = program.Instructions();
  std::vector<double> tol(insts.size(), 0);
  for (size_t v = 0; v < insts.size(); ++v) {
    const compute::Instruction& inst = insts[v];
    if (IsFloat(inst.shape.dtype())) tol[v] = Tolerance(inst.shape.dtype());
    if (inst.op == compute::OpType::Constant || inst.op == compute::OpType::Parameter) tol[v] = 0;
    for (int o : inst.operands) tol[v] = std::max(tol[v], tol[static_cast<size_t>(o)]);
    // A contraction's summation order is the kernel's own (oneDNN blocks it): its cancellation
    // error is relative to the terms, not to the result; values computed from one get 1e-4.
    if (inst.op == compute::OpType::DotGeneral) tol[v] = std::max(tol[v], 1e-4);
  }
  return tol;
}

/// Empty when `got` agrees with `want` (values of `shape`) within `rtol` (floats), else the
/// first disagreement.
std::string Compare(const Shape& shape, const Bytes& want, const Bytes& got, double rtol) {
  if (want.size() != got.size()) return fmt::format("{} bytes, want {}", got.size(), want.size());
  const DType d = shape.dtype();
  if (!IsFloat(d)) {
    for (size_t i = 0; i < want.size(); ++i)
      if (want[i] != got[i]) return fmt::format("byte {} differs: {} vs ref {}", i, got[i], want[i]);
    return "";
  }
  const auto n = static_cast<size_t>(shape.Size());
  double scale = 1;
  for (size_t i = 0; i < n; ++i) {
    const double w = FloatAt(d, want, i);
    if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
  }
  for (size_t i = 0; i < n; ++i) {
    const double w = FloatAt(d, want, i), g = FloatAt(d, got, i);
    bool ok;
    if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
    } else if (!std::isfinite(w) || !std::isfinite(g)) {
      ok = w == g;
    } else if (w == 0 && g == 0 && SignedZeros()) {
      ok = std::signbit(w) == std::signbit(g);  // -0 and +0 differ for Atan2, Reciprocal...
    } else {
      ok = std::abs(w - g) <= rtol * std::max(std::abs(w), std::abs(g)) + rtol * scale;
    }
    if (!ok) return fmt::format("element {}: {} vs ref {} (tolerance {} relative)", i, g, w, rtol);
  }
  return "";
}

/// A failure report: seed, op sequence, program and inputs.
/// The program with axis 0 of each input of rank >= 1 and size > 1 made dynamic (named by its
/// size, so equal sizes share a name) and every shape re-inferred, sub-programs of While and If
/// given their operands' shapes (`given`: the parameters' shapes of a sub-program); the
/// attributes keep their static sizes, which the run-time specialisation then checks. Null when
/// a rule needs the axis static.
std::shared_ptr<const compute::Program> Dynamize(const compute::Program& program,
                                                 const std::vector<Shape>* given = nullptr) {
  std::vector<compute::Instruction> insts;
  try {
    for (const compute::Instruction& inst : program.Instructions()) {
      compute::Instruction d = inst;
      std::vector<Shape> operands;
      for (int o : inst.operands) operands.push_back(insts[static_cast<size_t>(o)].shape);
      if (inst.op == compute::OpType::Parameter) {
        const Shape& s = inst.shape;
        if (given != nullptr) {
          d.attrs.shape = (*given)[static_cast<size_t>(inst.attrs.index)];
        } else if (s.Rank() >= 1 && s.Dim(0) > 1) {
          std::vector<int64_t> dims = s.Dimensions();
          std::vector<std::string> names(dims.size());
          names[0] = fmt::format("n{}", dims[0]);
          dims[0] = Shape::kDynamic;
          d.attrs.shape = Shape::MakeDynamic(s.dtype(), dims, names);
        }
        d.shape = d.attrs.shape;
      } else if (inst.IsTuple()) {
        const size_t skip = inst.op == compute::OpType::If ? 1 : 0;
        const std::vector<Shape> values(operands.begin() + static_cast<long>(skip), operands.end());
        for (auto& sub : d.subprograms) {
          if (!sub) continue;
          sub = Dynamize(*sub, &values);
          if (!sub) return nullptr;
        }
        d.tuple_shapes = compute::InferTupleShapes(inst.op, operands, inst.attrs, d.subprograms);
      } else if (inst.op == compute::OpType::GetTupleElement) {
        d.shape = compute::InferTupleElementShape(insts[static_cast<size_t>(inst.operands[0])].tuple_shapes,
                                                  inst.attrs);
      } else {
        if (inst.op == compute::OpType::BroadcastInDim) {
          // The static program broadcasts a size-1 axis there; once dynamic it would not
          // broadcast (dynamic axes never do), so the program only runs with that axis static.
          const Shape& was = program.Instructions()[static_cast<size_t>(inst.operands[0])].shape;
          for (size_t k = 0; k < inst.attrs.axes.size(); ++k) {
            const int axis = static_cast<int>(k);
            if (was.Dim(axis) == 1 && inst.shape.Dim(static_cast<int>(inst.attrs.axes[k])) != 1 &&
                operands[0].Dim(axis) == Shape::kDynamic)
              return nullptr;
          }
        }
        d.shape = compute::InferShape(inst.op, operands, inst.attrs);
      }
      insts.push_back(std::move(d));
    }
    return std::make_shared<const compute::Program>(std::move(insts), program.Outputs(), program.Donatable());
  } catch (const kiln::Error&) {
    return nullptr;
  }
}

std::string Describe(uint64_t seed, const kiln::test::RandomGraph& rg) {
  std::string s =
      fmt::format("seed {} (rerun: KILN_DIFFERENTIAL_SEED={} KILN_DIFFERENTIAL_GRAPHS=1)\nops:", seed, seed);
  for (const std::string& st : rg.steps) s += " " + st;
  s += "\nprogram:\n" + rg.program->ToString() + "\ninputs:\n";
  for (size_t i = 0; i < rg.inputs.size(); ++i) s += fmt::format("  {}: {}\n", i, rg.inputs[i].ToString());
  return s;
}

TEST(Differential, RandomGraphsAgreeWithRef) {
  const compute::BackendPtr ref = compute::NewWithConfig("ref");
  std::vector<std::pair<std::string, bool>> configs = {{"cpu:serial_work=0", true},
                                                       {"cpu:fusion=false", false}};
  for (const compute::BackendInfo& info : compute::RegisteredBackends())  // Each other SIMD target.
    for (const std::string& v : info.variants) configs.emplace_back(v + ",serial_work=0", false);
  std::vector<compute::BackendPtr> backends;
  for (const auto& [config, donate] : configs) backends.push_back(compute::NewWithConfig(config));
  const int64_t count = EnvInt("KILN_DIFFERENTIAL_GRAPHS", kDefaultGraphs);
  const auto first = static_cast<uint64_t>(EnvInt("KILN_DIFFERENTIAL_SEED", 1));
  int failures = 0, skipped = 0;
  int64_t ran = 0, dynamic_ran = 0, dynamic_static_only = 0;
  const compute::BackendPtr cpu = compute::NewWithConfig("cpu");
  const auto start = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < count && failures < 5; ++k) {
    const uint64_t seed = first + static_cast<uint64_t>(k);
    const kiln::test::RandomGraph rg = kiln::test::MakeRandomGraph(seed);
    ++ran;
    const compute::Program& program = *rg.program;
    const std::vector<double> tolerances = Tolerances(program);
    const RunResult want = RunOn(ref, program, rg.inputs, false);
    if (!want.error.empty()) {
      ++skipped;  // Valid but not runnable on ref (none expected): not the cpu backend's concern.
      continue;
    }
    for (size_t b = 0; b < backends.size(); ++b) {
      const RunResult got = RunOn(backends[b], program, rg.inputs, configs[b].second);
      std::string what = !got.error.empty() ? "threw: " + got.error : got.problem;
      for (size_t o = 0; what.empty() && o < got.outputs.size(); ++o) {
        const std::string diff =
            Compare(program.OutputShape(static_cast<int>(o)), want.outputs[o], got.outputs[o],
                    tolerances[static_cast<size_t>(program.Outputs()[o])]);
        if (!diff.empty())
          what =
              fmt::format("output {} {}: {}", o, program.OutputShape(static_cast<int>(o)).ToString(), diff);
      }
      if (!what.empty()) {
        ++failures;
        ADD_FAILURE() << configs[b].first << " disagrees with ref: " << what << "\n" << Describe(seed, rg);
        break;
      }
    }
    if (k % kDynamicEvery != 0) continue;
    const std::shared_ptr<const compute::Program> dynamic = Dynamize(program);
    if (!dynamic || !compute::IsDynamic(*dynamic)) {
      dynamic_static_only += dynamic ? 0 : 1;
      continue;
    }
    ++dynamic_ran;
    const RunResult got = RunOn(cpu, *dynamic, rg.inputs, false);
    std::string what = !got.error.empty() ? "threw: " + got.error : got.problem;
    for (size_t o = 0; what.empty() && o < got.outputs.size(); ++o) {
      const std::string diff = Compare(program.OutputShape(static_cast<int>(o)), want.outputs[o],
                                       got.outputs[o], tolerances[static_cast<size_t>(program.Outputs()[o])]);
      if (!diff.empty()) what = fmt::format("output {}: {}", o, diff);
    }
    if (!what.empty()) {
      ++failures;
      ADD_FAILURE() << "cpu with a dynamic axis 0 disagrees with ref: " << what << "\ndynamic program:\n"
                    << dynamic->ToString() << "\n"
                    << Describe(seed, rg);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "differential: %lld graphs from seed %llu in %.1f s (%d skipped, ref could not run them); %lld with a "
      "dynamic axis 0 (%lld with an axis that must be static)\n",
      static_cast<long long>(ran), static_cast<unsigned long long>(first), seconds, skipped,
      static_cast<long long>(dynamic_ran), static_cast<long long>(dynamic_static_only));
  // Most graphs run with a dynamic axis 0 (the others have tuple ops or need the axis static).
  if (count >= 100) {
    EXPECT_GT(dynamic_ran, count / (4 * kDynamicEvery));
  }
  EXPECT_LT(skipped, std::max<int64_t>(1, count / 100)) << "ref rejects too many generated graphs";
}

TEST(Differential, GeneratorIsReproducible) {
  for (uint64_t seed : {3u, 17u, 123456u}) {
    const kiln::test::RandomGraph a = kiln::test::MakeRandomGraph(seed);
    const kiln::test::RandomGraph b = kiln::test::MakeRandomGraph(seed);
    EXPECT_EQ(a.program->ToString(), b.program->ToString());
    ASSERT_EQ(a.inputs.size(), b.inputs.size());
    for (size_t i = 0; i < a.inputs.size(); ++i) EXPECT_TRUE(a.inputs[i].Equal(b.inputs[i]));
    EXPECT_EQ(a.steps, b.steps);
  }
  EXPECT_NE(kiln::test::MakeRandomGraph(1).program->ToString(),
            kiln::test::MakeRandomGraph(2).program->ToString());
}

TEST(Differential, GeneratorCoversOpsDTypesAndShapes) {
  std::set<compute::OpType> ops;
  std::set<DType> dtypes;
  std::set<int> ranks;
  bool zero_dim = false;
  int total_ops = 0, steps = 0, rejected = 0;
  std::map<std::string, int> names;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const kiln::test::RandomGraph rg = kiln::test::MakeRandomGraph(seed);
    for (const std::string& st : rg.steps) {
      ++steps;
      ++names[st];
      rejected += st.starts_with("(") ? 1 : 0;
    }
    for (const compute::Instruction& inst : rg.program->Instructions()) {
      ops.insert(inst.op);
      dtypes.insert(inst.shape.dtype());
      ranks.insert(inst.shape.Rank());
      for (int64_t d : inst.shape.Dimensions()) zero_dim = zero_dim || d == 0;
      ++total_ops;
    }
  }
  using compute::OpType;
  for (OpType op : {OpType::Add, OpType::Mul, OpType::Exp, OpType::Log, OpType::Where, OpType::Less,
                    OpType::DotGeneral, OpType::ConvertDType, OpType::Reshape, OpType::Transpose,
                    OpType::Slice, OpType::Concatenate, OpType::Pad, OpType::Reverse, OpType::BroadcastInDim,
                    OpType::Constant, OpType::ReduceSum, OpType::ReduceMax, OpType::ArgMax}) {
    EXPECT_TRUE(ops.count(op)) << "no " << compute::OpName(op) << " in 300 graphs";
  }
  for (DType d : {DType::Float32, DType::Float64, DType::Int32, DType::Bool, DType::Float16, DType::BFloat16})
    EXPECT_TRUE(dtypes.count(d)) << "no " << DTypeName(d) << " values in 300 graphs";
  for (int r = 0; r <= 4; ++r) EXPECT_TRUE(ranks.count(r)) << "no rank " << r;
  EXPECT_TRUE(zero_dim) << "no dimension of size 0";
  EXPECT_GT(total_ops, 300 * 10);
  // Most drawn ops are valid: the frontend rejects (or the size cap drops) few of them.
  EXPECT_LT(rejected, steps / 4) << rejected << " of " << steps << " steps rejected";
  for (const auto& [name, n] : names) std::printf("%s:%d ", name.c_str(), n);
  std::printf("\n");
}

}  // namespace
