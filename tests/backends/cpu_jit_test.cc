// Tests of the compiled vector programs (backends/cpu/vprogram_jit.h): the machine code computes
// the interpreter's bits for every compiled op and operand form, Exp's lanes outside its range
// included; whole graphs give the same results with `jit=false`; kernels name the compiled form.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/fused_simd.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/simd_target.h"
#include "backends/cpu/vprogram_jit.h"
#include "backends/cpu_fusion_test_util.h"

namespace kiln {
namespace {

using compute::cpu::FOp;
using compute::cpu::VInstr;
using compute::cpu::VProgram;
using compute::cpu::VProgramJit;
using compute::cpu::VSrc;
using fusion_test::kInf;
using fusion_test::kNaN;

/// Whether this CPU runs the compiled programs (and the interpreter's AVX-512 target).
bool HasAvx512() { return __builtin_cpu_supports("avx512f") && compute::cpu::UseVProgramSimd(); }

constexpr FOp kCompiledOps[] = {FOp::kAdd,
                                FOp::kSub,
                                FOp::kMul,
                                FOp::kDiv,
                                FOp::kMax,
                                FOp::kMin,
                                FOp::kNeg,
                                FOp::kAbs,
                                FOp::kSqrt,
                                FOp::kExp,
                                FOp::kLogistic,
                                FOp::kRoundF16,
                                FOp::kRoundBF16,
                                FOp::kEqual,
                                FOp::kNotEqual,
                                FOp::kLess,
                                FOp::kGreater,
                                FOp::kLessOrEqual,
                                FOp::kGreaterOrEqual,
                                FOp::kWhere};

/// Operands op reads.
int Arity(FOp op) {
  if (op == FOp::kWhere) return 3;
  return op == FOp::kNeg || op == FOp::kAbs || op == FOp::kSqrt || op == FOp::kExp || op == FOp::kLogistic ||
                 op == FOp::kRoundF16 || op == FOp::kRoundBF16
             ? 1
             : 2;
}

/// A random program of `ops` compiled ops over three inputs: operands from the accumulator, an
/// input, a saved slot or an immediate (zeros of both signs, NaN and infinities among them), some
/// results saved to slots, the result in the accumulator or a slot.
VProgram RandomCompiledProgram(std::mt19937& rng, int ops) {
  const float imms[] = {0.0f, -0.0f, 1.0f, 0.5f, -2.5f, 3.0f, 88.0f, -90.0f, kNaN, kInf, -kInf, 1e-40f};
  VProgram p;
  p.num_inputs = 3;
  p.num_regs = 4;
  std::vector<bool> saved(4, false);
  for (int k = 0; k < ops; ++k) {
    VInstr ins;
    ins.op = kCompiledOps[rng() % std::size(kCompiledOps)];
    for (int w = 0; w < Arity(ins.op); ++w) {
      for (;;) {
        const uint32_t kind = rng() % 5;
        if (kind <= 1 && k > 0) {
          ins.src[w] = VSrc::kAcc;
        } else if (kind == 2) {
          ins.src[w] = VSrc::kInput;
          ins.idx[w] = static_cast<uint16_t>(rng() % 3);
        } else if (kind == 3) {
          const auto s = static_cast<uint16_t>(rng() % 4);
          if (!saved[s]) continue;
          ins.src[w] = VSrc::kSlot;
          ins.idx[w] = s;
        } else if (kind == 4) {
          if (w > 0 && ins.src[0] == VSrc::kImm) continue;  // Folded before it gets here.
          ins.src[w] = VSrc::kImm;
          ins.imm[w] = imms[rng() % std::size(imms)];
        } else {
          continue;
        }
        break;
      }
    }
    if (rng() % 3 == 0) {
      ins.save = static_cast<int32_t>(rng() % 4);
      saved[static_cast<size_t>(ins.save)] = true;
    }
    p.code.push_back(ins);
  }
  if (p.code.back().save >= 0 && rng() % 2 == 0) {
    p.result_src = VSrc::kSlot;
    p.result_idx = static_cast<uint16_t>(p.code.back().save);
  }
  return p;
}

/// Values for the inputs: mostly small, with Exp's range edges, overflow and underflow, zeros of
/// both signs, NaN, infinities and subnormals.
std::vector<float> Values(std::mt19937& rng, size_t n) {
  const float special[] = {-87.0f, 88.5f,    -87.0001f, 88.5001f, 100.0f,      -110.0f,     0.0f,
                           -0.0f,  kNaN,     kInf,      -kInf,    1e-41f,      -3e-39f,     1e30f,
                           -1e30f, 87.0001f, 65520.0f,  2049.0f,  1.00390625f, -1.01171875f};
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (float& x : v) {
    const uint32_t r = rng() % 97;
    x = r == 0 ? special[rng() % std::size(special)] : r < 8 ? 0.0f : dist(rng);  // Zeros for Where.
  }
  return v;
}

std::string Listing(const VProgram& p) {
  std::string s;
  for (const VInstr& ins : p.code) {
    s += fmt::format("{}(", compute::cpu::FOpName(ins.op));
    for (int w = 0; w < 3; ++w) {
      s += fmt::format("{}:{}/{} ", static_cast<int>(ins.src[w]), ins.idx[w], ins.imm[w]);
    }
    s += fmt::format(") save {}\n", ins.save);
  }
  return s + fmt::format("result {}:{}", static_cast<int>(p.result_src), p.result_idx);
}

TEST(CpuJit, ProgramsComputeTheInterpretersBits) {
  if (!HasAvx512()) {
    // Without AVX-512 nothing compiles, and the interpreter runs every program.
    VProgram p;
    p.num_inputs = 1;
    p.code.push_back(VInstr{FOp::kNeg, {VSrc::kInput, VSrc::kNone, VSrc::kNone}, {0, 0, 0}, {0, 0, 0}, -1});
    EXPECT_EQ(VProgramJit::Compile(p), nullptr);
    return;
  }
  std::mt19937 rng(7);
  for (int ops : {1, 2, 3, 6, 12, 24}) {
    for (int trial = 0; trial < 40; ++trial) {
      const VProgram prog = RandomCompiledProgram(rng, ops);
      const std::unique_ptr<VProgramJit> jit = VProgramJit::Compile(prog);
      ASSERT_NE(jit, nullptr) << Listing(prog);
      const size_t blocks = 1 + rng() % 9, n = blocks * VProgramJit::kBlock;
      std::vector<std::vector<float>> x;
      for (int k = 0; k < 3; ++k) x.push_back(Values(rng, n));
      const float* in[3] = {x[0].data(), x[1].data(), x[2].data()};
      std::vector<float> want(n), got(n), slots(prog.SlotFloats()), jit_slots(prog.SlotFloats()),
          tail(prog.TailFloats());
      std::vector<const float*> tail_in(3);
      compute::cpu::RunVProgramSimd(prog, in, want.data(), n, slots.data(), tail.data(), tail_in.data());
      jit->Run(in, got.data(), blocks, jit_slots.data());
      // In place: over the second input.
      std::vector<float> inplace = x[1];
      const float* in2[3] = {x[0].data(), inplace.data(), x[2].data()};
      jit->Run(in2, inplace.data(), blocks, jit_slots.data());
      // The same bits, NaN for NaN (which operand's NaN an add or a product passes on is the
      // compiler's choice of operand order in the interpreter).
      auto same = [](float a, float b) {
        return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
      };
      int bad = 0;
      for (size_t i = 0; i < n && bad < 3; ++i) {
        if (same(got[i], want[i]) && same(inplace[i], want[i])) continue;
        ++bad;
        ADD_FAILURE() << "at " << i << " (inputs " << x[0][i] << ", " << x[1][i] << ", " << x[2][i]
                      << "): compiled " << got[i] << ", in place " << inplace[i] << ", interpreter "
                      << want[i] << "\n"
                      << Listing(prog);
      }
    }
  }
}

TEST(CpuJit, ExpOutsideItsRangeTakesTheScalarForm) {
  // Every lane of a block in range, one lane out, all out: the compiled code's fast path, its
  // call back into the interpreter's Exp, and the values the scalar form gives there.
  VProgram p;
  p.num_inputs = 1;
  p.code.push_back(VInstr{FOp::kExp, {VSrc::kInput, VSrc::kNone, VSrc::kNone}, {0, 0, 0}, {0, 0, 0}, -1});
  const std::unique_ptr<VProgramJit> jit = VProgramJit::Compile(p);
  if (!HasAvx512()) {
    EXPECT_EQ(jit, nullptr) << "compiled without AVX-512";
    return;
  }
  ASSERT_NE(jit, nullptr);
  std::vector<float> x(3 * VProgramJit::kBlock);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -80.0f + 0.05f * static_cast<float>(i);
  x[VProgramJit::kBlock + 17] = 89.0f;  // Overflows to +inf.
  for (size_t i = 2 * VProgramJit::kBlock; i < x.size(); ++i)
    x[i] = -100.0f - static_cast<float>(i);  // Subnormal or 0.
  x[2 * VProgramJit::kBlock + 3] = kNaN;
  const float* in[1] = {x.data()};
  std::vector<float> got(x.size()), slots(p.SlotFloats() + 1);
  jit->Run(in, got.data(), 3, slots.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::exp(x[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else if (x[i] < -87.0f || x[i] > 88.5f) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want)) << "exp(" << x[i] << ")";
    } else {
      EXPECT_LE(std::fabs(got[i] - want), 2e-7f * want) << "exp(" << x[i] << ")";
    }
  }
}

TEST(CpuJit, OnlyProgramsOfCompiledOpsCompile) {
  for (int op = static_cast<int>(FOp::kNeg); op <= static_cast<int>(FOp::kWhere); ++op) {
    const bool listed = std::find(std::begin(kCompiledOps), std::end(kCompiledOps), static_cast<FOp>(op)) !=
                        std::end(kCompiledOps);
    EXPECT_EQ(VProgramJit::CompilesOp(static_cast<FOp>(op)), listed)
        << compute::cpu::FOpName(static_cast<FOp>(op));
  }
  VProgram p;
  p.num_inputs = 1;
  p.code.push_back(VInstr{FOp::kExp, {VSrc::kInput, VSrc::kNone, VSrc::kNone}, {0, 0, 0}, {0, 0, 0}, -1});
  p.code.push_back(VInstr{FOp::kTanh, {VSrc::kAcc, VSrc::kNone, VSrc::kNone}, {0, 0, 0}, {0, 0, 0}, -1});
  EXPECT_EQ(VProgramJit::Compile(p), nullptr) << "Tanh has no compiled form";
  p.code.pop_back();
  EXPECT_EQ(VProgramJit::Compile(p) != nullptr, HasAvx512());
  p.num_inputs = VProgramJit::kMaxInputs + 1;
  EXPECT_EQ(VProgramJit::Compile(p), nullptr) << "too many inputs";
}

/// The names the cpu backend `config` gives the fused kernels of `fn` over inputs of `shapes`.
std::vector<std::string> FusedKernelNames(const std::string& config, const graph::GraphFn& fn,
                                          const std::vector<Shape>& shapes) {
  std::string report;
  const compute::cpu::Module m = fusion_test::Fused(fn, shapes, &report);
  auto cpu = std::dynamic_pointer_cast<compute::cpu::CpuBackend>(compute::NewWithConfig(config));
  EXPECT_NE(cpu, nullptr);
  std::vector<std::string> names;
  for (const compute::cpu::Node& node : m.nodes) {
    if (node.fused == nullptr) continue;
    std::vector<Shape> operands;
    for (int o : node.inst.operands) operands.push_back(m.nodes[static_cast<size_t>(o)].inst.shape);
    names.push_back(compute::cpu::ChooseKernel(*cpu, cpu->options().threads, node, operands).name);
  }
  return names;
}

TEST(CpuJit, GraphsGiveTheInterpretersResults) {
  // Lengths with and without a part block (the interpreter runs the rest), a broadcast operand,
  // the benchmark chain, Max of two tensors, a fused reduction, a ReLU-gradient-like Where of a
  // comparison, Sigmoid with half-precision round trips, and a group with a Tanh (not
  // compiled: the interpreter runs it).
  auto fn = [](graph::Graph&, const std::vector<graph::Node>& p) {
    graph::Node c = fusion_test::Chain(p[0]);
    graph::Node m = graph::Max(p[0], p[1] + p[2]) / (graph::Abs(p[1]) + 1.0f);
    graph::Node s = graph::ReduceSum(graph::Exp(graph::Neg(graph::Sqrt(graph::Abs(p[0])))), {1});
    graph::Node t = graph::Tanh(p[0] * p[1]) - p[2];
    graph::Node w =
        graph::Where(graph::GreaterOrEqual(p[0], graph::ZerosLike(p[0])), p[1] * 2.0f, p[2] - p[1]);
    graph::Node h = graph::ConvertDType(graph::ConvertDType(graph::Sigmoid(p[0]) * p[1], DType::Float16),
                                        DType::Float32) +
                    graph::ConvertDType(graph::ConvertDType(p[1] * 3.0f, DType::BFloat16), DType::Float32);
    return std::vector<graph::Node>{c, m, s, t, w, h};
  };
  for (int64_t cols : {1, 63, 64, 65, 1000, 1030, 4099}) {
    SCOPED_TRACE(fmt::format("cols {}", cols));
    const Tensor a = fusion_test::Random({3, cols}, -100, 100, 1),
                 b = fusion_test::Random({3, cols}, -3, 3, 2), col = fusion_test::Random({3, 1}, -1, 1, 3);
    for (const char* config : {"cpu", "cpu:threads=2,serial_work=0"}) {
      graph::Exec compiled(compute::NewWithConfig(config), fn, 3);
      graph::Exec interpreted(
          compute::NewWithConfig(std::string(config) + (std::string(config) == "cpu" ? ":" : ",") +
                                 "jit=false"),
          fn, 3);
      const std::vector<Tensor> got = compiled.Call({a, b, col}), want = interpreted.Call({a, b, col});
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        const std::vector<float> g = got[i].ToVector<float>(), w = want[i].ToVector<float>();
        ASSERT_EQ(g.size(), w.size());
        for (size_t j = 0; j < g.size(); ++j) {
          if (std::isnan(g[j]) && std::isnan(w[j])) continue;
          ASSERT_EQ(std::bit_cast<uint32_t>(g[j]), std::bit_cast<uint32_t>(w[j]))
              << config << " output " << i << " at " << j;
        }
      }
    }
  }
  const std::vector<Shape> shapes = {Shape(DType::Float32, {3, 100}), Shape(DType::Float32, {3, 100}),
                                     Shape(DType::Float32, {3, 1})};
  const std::vector<std::string> names = FusedKernelNames("cpu", fn, shapes);
  const std::vector<std::string> off = FusedKernelNames("cpu:jit=false", fn, shapes);
  ASSERT_EQ(names.size(), off.size());
  int jit = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    jit += names[i].find(".jit") != std::string::npos;
    EXPECT_EQ(off[i].find(".jit"), std::string::npos) << off[i];
  }
  // The chain, the Max group, the reduction and the Where compile; the Tanh group does not.
  EXPECT_EQ(jit, HasAvx512() ? static_cast<int>(names.size()) - 1 : 0)
      << fmt::format("{}", fmt::join(names, ", "));
}

TEST(CpuJit, TheOptionIsCheckedAndDescribed) {
  EXPECT_NE(compute::NewWithConfig("cpu:jit=false")->Description().find("no compiled vector programs"),
            std::string::npos);
  EXPECT_EQ(compute::NewWithConfig("cpu")->Description().find("compiled"), std::string::npos);
  EXPECT_THROW(compute::NewWithConfig("cpu:jit=maybe"), Error);
  // Only the best SIMD target runs compiled programs; the others keep their own forms.
  auto fn = [](graph::Graph&, const std::vector<graph::Node>& p) {
    return std::vector<graph::Node>{fusion_test::Chain(p[0])};
  };
  const std::vector<Shape> shapes = {Shape(DType::Float32, {4, 256})};
  const std::vector<compute::cpu::SimdTarget> targets = compute::cpu::SimdTargets();
  ASSERT_FALSE(targets.empty());
  for (size_t t = 0; t < targets.size(); ++t) {
    for (const std::string& name : FusedKernelNames("cpu:simd=" + targets[t].name, fn, shapes)) {
      EXPECT_EQ(name.find(".jit") != std::string::npos, t == 0 && HasAvx512())
          << targets[t].name << ": " << name;
    }
  }
}

}  // namespace
}  // namespace kiln
