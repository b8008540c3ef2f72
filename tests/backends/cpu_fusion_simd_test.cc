// Tests of the fused machine's SIMD forms (fused_simd.cc), on every compiled Highway target this
// machine runs: ulp-bound sweeps of each transcendental against the scalar std:: function ref
// uses, the exact ops and half roundings bit for bit with their scalar forms, and vector programs
// against the per-instruction passes bit for bit (random programs, every tail length, in place).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cost_model.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fused_eval.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/passes.h"
#include "backends/cpu_fusion_test_util.h"
#include "backends/cpu_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace fusion_test;  // NOLINT

// ---- Ulp sweeps of the SIMD transcendentals -----------------------------------------------------

/// The ulp distance of two floats (0 when both are NaN; zeros of different signs are far apart).
int64_t Ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  if (a == 0 && b == 0 && std::signbit(a) != std::signbit(b)) return std::numeric_limits<int64_t>::max();
  auto ord = [](float f) {
    const auto bits = static_cast<int64_t>(std::bit_cast<uint32_t>(f));
    return bits & 0x80000000 ? -(bits & 0x7FFFFFFF) : bits;
  };
  return std::abs(ord(a) - ord(b));
}

/// The largest ulp error of the SIMD op against `want` over [lo, hi] (about `steps` points,
/// equally spaced, plus the special values).
int64_t SweepUlps(FOp op, float (*want)(float), float lo, float hi, int steps) {
  std::vector<float> x = {0.0f, -0.0f, kNaN, kInf, -kInf, 1e-40f, -1e-40f, 1e-30f, -1e-30f, 100.0f, -100.0f};
  for (int i = 0; i <= steps; ++i)
    x.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(steps));
  std::vector<float> y(x.size());
  compute::cpu::RunFusedOpSimd(op, x.data(), nullptr, nullptr, y.data(), x.size());
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t u = Ulps(y[i], want(x[i]));
    EXPECT_LE(u, 8) << compute::cpu::FOpName(op) << "(" << x[i] << ") = " << y[i] << ", want " << want(x[i]);
    worst = std::max(worst, u);
  }
  return worst;
}

TEST(CpuFusionUlps, TranscendentalsWithinBounds) {
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    EXPECT_STREQ(compute::cpu::FusedSimdTarget(), target);
    constexpr int kSteps = 400000;
    EXPECT_LE(SweepUlps(
                  FOp::kExp, [](float v) { return std::exp(v); }, -104, 90, kSteps),
              2);
    EXPECT_LE(SweepUlps(
                  FOp::kExpm1, [](float v) { return std::expm1(v); }, -90, 90, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kExpm1, [](float v) { return std::expm1(v); }, -0.01f, 0.01f, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kLog, [](float v) { return std::log(v); }, -1, 1e6f, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kLog, [](float v) { return std::log(v); }, 0, 2, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kLog1p, [](float v) { return std::log1p(v); }, -1.5f, 1e4f, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kLog1p, [](float v) { return std::log1p(v); }, -0.01f, 0.01f, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kSin, [](float v) { return std::sin(v); }, -50000, 50000, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kCos, [](float v) { return std::cos(v); }, -50000, 50000, kSteps),
              4);
    EXPECT_LE(SweepUlps(
                  FOp::kTanh, [](float v) { return std::tanh(v); }, -20, 20, kSteps),
              4);
  });
}

TEST(CpuFusionUlps, OurLogisticAndErfWithinTwoUlps) {
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    EXPECT_STREQ(compute::cpu::FusedSimdTarget(), target);
    constexpr int kSteps = 1000000;
    auto logistic = [](float v) {
      if (v >= 0) return 1.0f / (1.0f + std::exp(-v));
      const float e = std::exp(v);
      return e / (1.0f + e);
    };
    EXPECT_LE(SweepUlps(FOp::kLogistic, logistic, -110, 110, kSteps), 2);
    EXPECT_LE(SweepUlps(FOp::kLogistic, logistic, -1, 1, kSteps), 2);
    EXPECT_LE(SweepUlps(
                  FOp::kErf, [](float v) { return std::erf(v); }, -6, 6, kSteps),
              2);
    EXPECT_LE(SweepUlps(
                  FOp::kErf, [](float v) { return std::erf(v); }, -0.01f, 0.01f, kSteps),
              2);
  });
}

/// Highway's float32 exp (hn::Exp) in scalar steps, every product and sum rounded as its vector
/// form rounds them (fused multiply-adds where it uses them), for x in [-87, 88.5].
float HighwayExp(float x) {
  const float q = std::trunc(std::fma(x, 1.442695040888963407359924681f, std::copysign(0.5f, x)));
  float r = std::fma(q, -0.693145751953125f, x);
  r = std::fma(q, -1.428606765330187045e-6f, r);
  const float r2 = r * r, r4 = r2 * r2;
  const float c0 = 0.5f, c1 = 0.166666671633720397949219f, c2 = 0.0416664853692054748535156f,
              c3 = 0.00833336077630519866943359f, c4 = 0.00139304355252534151077271f,
              c5 = 0.000198527617612853646278381f;
  const float poly =
      std::fma(r4, std::fma(c5, r, c4), std::fma(r2, std::fma(c3, r, c2), std::fma(c1, r, c0)));
  const float p = std::fma(poly, r2, r) + 1.0f;
  return std::ldexp(p, static_cast<int>(q));  // Exact: the result is a normal float.
}

TEST(CpuFusionUlps, ExpIsHighwaysBitForBitOnTheFmaTargets) {
  // The AVX-512 form (one rounding and one scaling instruction) and Highway's Exp on AVX2 give the
  // same bits wherever the result is normal, so a program's results do not depend on which of
  // the two a machine runs. EMU128 rounds its products and sums apart (the ulp sweep bounds it).
  std::vector<float> x = {-87.0f, 88.5f, 0.0f, -0.0f, 1e-30f, -1e-30f, 0.34657359f, -0.34657359f, 88.37626f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-87.0f, 88.5f), narrow(-1.0f, 1.0f);
  for (int i = 0; i < 300000; ++i) x.push_back(i % 2 == 0 ? wide(rng) : narrow(rng));
  for (float q = -125; q <= 127; ++q) {  // Around every rounding boundary of x / ln 2.
    const float edge = (q + 0.5f) * 0.69314718f;
    if (edge < -87.0f || edge > 88.5f) continue;
    for (float v = std::nextafter(edge, -100.0f), k = 0; k < 8; ++k, v = std::nextafter(v, 100.0f))
      x.push_back(v);
  }
  int fma_targets = 0;
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    if (std::string(target).rfind("AVX", 0) != 0) return;
    ++fma_targets;
    std::vector<float> y(x.size());
    compute::cpu::RunFusedOpSimd(FOp::kExp, x.data(), nullptr, nullptr, y.data(), x.size());
    int bad = 0;
    for (size_t i = 0; i < x.size() && bad < 5; ++i) {
      if (std::bit_cast<uint32_t>(y[i]) == std::bit_cast<uint32_t>(HighwayExp(x[i]))) continue;
      ++bad;
      ADD_FAILURE() << "exp(" << x[i] << ") = " << y[i] << ", Highway's form gives " << HighwayExp(x[i]);
    }
  });
  EXPECT_GE(fma_targets, 1) << "no AVX2 or AVX-512 target ran";
}

TEST(CpuFusionVector, MaxAndMinWithAnImmediateMatchTheScalarForm) {
  // Vector programs run Max and Min with an immediate operand in one x86 instruction (plus an
  // addition for Max with +0): the reference's results for NaN, zeros of either sign, infinities
  // and values equal to the immediate, in either operand order, on every target.
  using compute::cpu::FInstr;
  const float immediates[] = {0.0f, -0.0f, 1.5f, -2.0f, kInf, -kInf, kNaN, 3.4e38f};
  for (const float c : immediates) {
    std::vector<float> x = {0.0f, -0.0f, kNaN, kInf, -kInf, c, -c, 1e-40f, -1e-40f, 1.5f, -2.0f};
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    while (x.size() < 83) x.push_back(dist(rng));
    for (const FOp op : {FOp::kMax, FOp::kMin}) {
      for (const bool imm_first : {false, true}) {
        compute::cpu::FusedSpec spec;
        spec.inputs.resize(1);
        spec.out_dims = {static_cast<int64_t>(x.size())};
        spec.code.push_back(FInstr{FOp::kImm, 0, 0, 0, 0, c, -1});
        spec.code.push_back(FInstr{FOp::kInput, 1, 0, 0, 0, 0, 0});
        spec.code.push_back(FInstr{op, 2, static_cast<uint16_t>(imm_first ? 0 : 1),
                                   static_cast<uint16_t>(imm_first ? 1 : 0), 0, 0, -1});
        spec.num_regs = 3;
        spec.result = 2;
        const compute::cpu::VProgram prog = compute::cpu::MakeVProgram(spec);
        ASSERT_EQ(prog.code.size(), 1u);
        ASSERT_EQ(prog.code[0].src[imm_first ? 0 : 1], compute::cpu::VSrc::kImm);
        const std::vector<float> cs(x.size(), c);
        std::vector<float> want(x.size());
        compute::cpu::RunFusedOpScalar(op, imm_first ? cs.data() : x.data(), imm_first ? x.data() : cs.data(),
                                       nullptr, want.data(), x.size());
        compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
          std::vector<float> slots(prog.SlotFloats()), tail(prog.TailFloats()), out(x.size());
          std::vector<const float*> tail_in(1);
          const float* in[1] = {x.data()};
          compute::cpu::RunVProgramSimd(prog, in, out.data(), x.size(), slots.data(), tail.data(),
                                        tail_in.data());
          for (size_t i = 0; i < x.size(); ++i) {
            const bool same = std::bit_cast<uint32_t>(out[i]) == std::bit_cast<uint32_t>(want[i]) ||
                              (std::isnan(out[i]) && std::isnan(want[i]));
            EXPECT_TRUE(same) << target << ": " << compute::cpu::FOpName(op)
                              << (imm_first ? "(c, x)" : "(x, c)") << " with c = " << c << ", x = " << x[i]
                              << ": " << out[i] << ", want " << want[i];
          }
        });
      }
    }
  }
}

TEST(CpuFusionUlps, TrigonometricAndHyperbolicWithinBounds) {
  // Bounds: Highway's documented errors for its forms (Asin, Acos 2; Atan, Asinh, Acosh, Atanh 3;
  // Sinh 4) and, for ours, what the sweeps measure (Tan as Sin / Cos, Cosh from one Exp).
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    constexpr int kSteps = 1000000;
    struct Sweep {
      FOp op;
      float (*want)(float);
      float lo, hi;
      int64_t ulps;
    };
    const Sweep sweeps[] = {
        {FOp::kTan, [](float v) { return std::tan(v); }, -1.5f, 1.5f, 4},
        {FOp::kTan, [](float v) { return std::tan(v); }, -40000, 40000, 4},
        {FOp::kAsin, [](float v) { return std::asin(v); }, -1.5f, 1.5f, 2},
        {FOp::kAsin, [](float v) { return std::asin(v); }, -0.01f, 0.01f, 2},
        {FOp::kAcos, [](float v) { return std::acos(v); }, -1.5f, 1.5f, 2},
        {FOp::kAtan, [](float v) { return std::atan(v); }, -100, 100, 3},
        {FOp::kAtan, [](float v) { return std::atan(v); }, -1e30f, 1e30f, 3},
        {FOp::kSinh, [](float v) { return std::sinh(v); }, -95, 95, 4},
        {FOp::kSinh, [](float v) { return std::sinh(v); }, -0.01f, 0.01f, 4},
        {FOp::kCosh, [](float v) { return std::cosh(v); }, -95, 95, 3},
        {FOp::kAsinh, [](float v) { return std::asinh(v); }, -100, 100, 3},
        {FOp::kAsinh, [](float v) { return std::asinh(v); }, -3e38f, 3e38f, 3},
        {FOp::kAcosh, [](float v) { return std::acosh(v); }, 0, 100, 3},
        {FOp::kAcosh, [](float v) { return std::acosh(v); }, 1, 3e38f, 3},
        {FOp::kAtanh, [](float v) { return std::atanh(v); }, -1.5f, 1.5f, 3},
        {FOp::kAtanh, [](float v) { return std::atanh(v); }, -0.01f, 0.01f, 3},
    };
    for (const Sweep& w : sweeps) {
      EXPECT_LE(SweepUlps(w.op, w.want, w.lo, w.hi, kSteps), w.ulps)
          << compute::cpu::FOpName(w.op) << " over [" << w.lo << ", " << w.hi << "]";
    }
  });
}

TEST(CpuFusionUlps, ExactOpsMatchScalarForm) {
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    EXPECT_STREQ(compute::cpu::FusedSimdTarget(), target);
    std::vector<float> a = {-0.0f,       0.0f,       kNaN,       kInf,     -kInf,    1.5f,     2.5f,
                            -2.5f,       0.5f,       1e-40f,     3.3f,     -1e38f,   65519.0f, 1.00390625f,
                            1.01171875f, 3.4e38f,    -7.0f,      65520.0f, 2.98e-8f, 5.96e-8f, 8.9e-8f,
                            6.1e-5f,     1.0004883f, 1.0014648f, 0.1f,     -3.14159f};
    std::vector<float> b(a.rbegin(), a.rend());
    std::vector<float> c(a.size(), 0.0f);
    for (size_t i = 0; i < c.size(); i += 2) c[i] = 1.0f;
    for (int k = static_cast<int>(FOp::kNeg); k <= static_cast<int>(FOp::kWhere); ++k) {
      const auto op = static_cast<FOp>(k);
      if (FOpTranscendental(op)) continue;  // Swept above.
      const float* x = op == FOp::kWhere ? c.data() : a.data();
      const float* y = op == FOp::kWhere ? a.data() : b.data();
      const float* z = b.data();
      std::vector<float> simd(a.size()), scalar(a.size());
      compute::cpu::RunFusedOpSimd(op, x, y, z, simd.data(), a.size());
      compute::cpu::RunFusedOpScalar(op, x, y, z, scalar.data(), a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(std::bit_cast<uint32_t>(simd[i]) == std::bit_cast<uint32_t>(scalar[i]) ||
                      (std::isnan(simd[i]) && std::isnan(scalar[i])),
                  true)
            << compute::cpu::FOpName(op) << " at " << i << ": simd " << simd[i] << ", scalar " << scalar[i];
      }
    }
  });
}

TEST(CpuFusionUlps, HalfRoundingMatchesKilnHalfTypes) {
  // Random bit patterns (all exponents, subnormals, ties) through the SIMD roundings.
  std::mt19937 rng(13);
  std::vector<float> x(200000);
  for (float& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  for (size_t i = 0; i < 1000; ++i) x[i] = static_cast<float>(i) * 0.5f + 2048.0f;  // Ties in Float16.
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    for (FOp op : {FOp::kRoundF16, FOp::kRoundBF16}) {
      std::vector<float> simd(x.size()), scalar(x.size());
      compute::cpu::RunFusedOpSimd(op, x.data(), nullptr, nullptr, simd.data(), x.size());
      compute::cpu::RunFusedOpScalar(op, x.data(), nullptr, nullptr, scalar.data(), x.size());
      int bad = 0;
      for (size_t i = 0; i < x.size() && bad < 5; ++i) {
        if (std::isnan(simd[i]) && std::isnan(scalar[i])) continue;
        if (std::bit_cast<uint32_t>(simd[i]) != std::bit_cast<uint32_t>(scalar[i])) {
          ++bad;
          ADD_FAILURE() << compute::cpu::FOpName(op) << "(" << x[i] << "): simd " << simd[i] << ", scalar "
                        << scalar[i];
        }
      }
    }
  });
}

/// A random program over inputs in registers 0 and 1 and immediates in 2 and 3: `ops`
/// instructions drawn from every compute op, reading any written register and writing a new
/// register or over an old one (so values die, live on in slots, or get overwritten); the result
/// is the last written register or, one time in three, an earlier value still alive at the end.
compute::cpu::FusedSpec RandomProgram(std::mt19937& rng, int ops) {
  using compute::cpu::FInstr;
  compute::cpu::FusedSpec spec;
  spec.inputs.resize(2);
  spec.out_dims = {1};
  spec.code.push_back(FInstr{FOp::kImm, 2, 0, 0, 0, 0.5f, -1});
  spec.code.push_back(FInstr{FOp::kImm, 3, 0, 0, 0, -1.25f, -1});
  spec.code.push_back(FInstr{FOp::kInput, 0, 0, 0, 0, 0, 0});
  spec.code.push_back(FInstr{FOp::kInput, 1, 0, 0, 0, 0, 1});
  const int first = static_cast<int>(FOp::kNeg), last = static_cast<int>(FOp::kWhere);
  uint16_t regs = 4;
  std::vector<int> writer(16, -1);  // Per register: the op that last wrote it (-1: not an op).
  for (int k = 0; k < ops; ++k) {
    FInstr ins;
    ins.op = static_cast<FOp>(first + static_cast<int>(rng() % static_cast<uint32_t>(last - first + 1)));
    ins.a = static_cast<uint16_t>(rng() % regs);
    ins.b = static_cast<uint16_t>(rng() % regs);
    ins.c = static_cast<uint16_t>(rng() % regs);
    // Mostly a chain on the previous result, as real groups are.
    if (k > 0 && rng() % 3 != 0) ins.a = spec.code.back().dst;
    // A new register, or over an op's register or an input (never over an immediate).
    if (regs == 4 || (regs < 12 && rng() % 2 == 0)) {
      ins.dst = regs++;
    } else {
      const auto pick = static_cast<uint16_t>(rng() % (regs - 2));
      ins.dst = pick < 2 ? pick : static_cast<uint16_t>(pick + 2);
    }
    writer[ins.dst] = k;
    spec.code.push_back(ins);
  }
  spec.num_regs = regs;
  spec.result = spec.code.back().dst;
  if (rng() % 3 == 0) {
    std::vector<uint16_t> alive;
    for (uint16_t r = 0; r < regs; ++r)
      if (writer[r] >= 0) alive.push_back(r);
    spec.result = alive[rng() % alive.size()];
  }
  return spec;
}

/// `spec` run one SIMD pass per instruction over whole registers (the per-instruction evaluator).
std::vector<float> RunByPasses(const compute::cpu::FusedSpec& spec, const std::vector<float>& x,
                               const std::vector<float>& y) {
  const size_t n = x.size();
  std::vector<std::vector<float>> r(static_cast<size_t>(spec.num_regs), std::vector<float>(n));
  for (const compute::cpu::FInstr& ins : spec.code) {
    if (ins.op == FOp::kImm) {
      r[ins.dst].assign(n, ins.imm);
    } else if (ins.op == FOp::kInput) {
      r[ins.dst] = ins.input == 0 ? x : y;
    } else {
      std::vector<float> out(n);
      compute::cpu::RunFusedOpSimd(ins.op, r[ins.a].data(), r[ins.b].data(), r[ins.c].data(), out.data(), n);
      r[ins.dst] = out;
    }
  }
  return r[static_cast<size_t>(spec.result)];
}

bool SameBits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

TEST(CpuFusionVector, ProgramsMatchPerInstructionPassesBitForBit) {
  // Lengths around the vector widths (4, 8, 16 lanes) and blocks of four vectors, so every tail
  // path runs; programs of 1 to 24 instructions; on every compiled target.
  const size_t sizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 100, 257, 1000, 1024};
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    std::mt19937 rng(21);
    for (int ops : {1, 2, 3, 5, 8, 13, 24}) {
      for (int trial = 0; trial < 12; ++trial) {
        const compute::cpu::FusedSpec spec = RandomProgram(rng, ops);
        const compute::cpu::VProgram prog = compute::cpu::MakeVProgram(spec);
        ASSERT_FALSE(prog.code.empty());
        ASSERT_EQ(prog.code.size(), static_cast<size_t>(ops));
        for (size_t n : sizes) {
          std::vector<float> x(n), y(n);
          std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
          for (size_t i = 0; i < n; ++i) {
            x[i] = dist(rng);
            y[i] = i % 5 == 0 ? 0.0f : dist(rng);  // Zeros for the predicates and Where.
          }
          const std::vector<float> want = RunByPasses(spec, x, y);
          std::vector<float> slots(prog.SlotFloats()), tail(prog.TailFloats()), out(n);
          std::vector<const float*> tail_in(2);
          const float* in[2] = {x.data(), y.data()};
          compute::cpu::RunVProgramSimd(prog, in, out.data(), n, slots.data(), tail.data(), tail_in.data());
          // In place: the result written over the first input.
          std::vector<float> inplace = x;
          const float* in2[2] = {inplace.data(), y.data()};
          compute::cpu::RunVProgramSimd(prog, in2, inplace.data(), n, slots.data(), tail.data(),
                                        tail_in.data());
          int bad = 0;
          for (size_t i = 0; i < n && bad < 3; ++i) {
            if (SameBits(out[i], want[i]) && SameBits(inplace[i], want[i])) continue;
            ++bad;
            ADD_FAILURE() << "ops " << ops << " trial " << trial << " n " << n << " at " << i << ": vector "
                          << out[i] << ", in place " << inplace[i] << ", passes " << want[i] << "\n"
                          << spec.ToString();
          }
        }
      }
    }
  });
}

TEST(CpuFusionVector, ResultsThatAreNotComputedKeepThePasses) {
  // A group that only converts its input has no compute instruction: no vector program.
  compute::cpu::FusedSpec spec;
  spec.inputs.resize(1);
  spec.code.push_back(compute::cpu::FInstr{FOp::kInput, 0, 0, 0, 0, 0, 0});
  spec.num_regs = 1;
  EXPECT_TRUE(compute::cpu::MakeVProgram(spec).code.empty());
  // The result is the input although an op ran: the same.
  spec.code.push_back(compute::cpu::FInstr{FOp::kNeg, 1, 0, 0, 0, 0, -1});
  spec.num_regs = 2;
  EXPECT_TRUE(compute::cpu::MakeVProgram(spec).code.empty());
  // Values read again later are saved to their slot; the one read next stays the accumulator.
  spec.result = 1;
  spec.code.push_back(compute::cpu::FInstr{FOp::kExp, 2, 1, 0, 0, 0, -1});
  spec.code.push_back(compute::cpu::FInstr{FOp::kMul, 1, 2, 1, 0, 0, -1});
  spec.num_regs = 3;
  const compute::cpu::VProgram prog = compute::cpu::MakeVProgram(spec);
  ASSERT_EQ(prog.code.size(), 3u);
  EXPECT_EQ(prog.code[0].src[0], compute::cpu::VSrc::kInput);
  EXPECT_EQ(prog.code[0].save, 1);
  EXPECT_EQ(prog.code[1].src[0], compute::cpu::VSrc::kAcc);
  EXPECT_EQ(prog.code[1].save, -1);
  EXPECT_EQ(prog.code[2].src[0], compute::cpu::VSrc::kAcc);
  EXPECT_EQ(prog.code[2].src[1], compute::cpu::VSrc::kSlot);
  EXPECT_EQ(prog.result_src, compute::cpu::VSrc::kAcc);
}

TEST(CpuFusionVector, ChainsOfEveryLengthAndTailMatchRef) {
  // Whole executables: fused groups of 1 to 20 ops over lengths that leave every kind of tail,
  // against ref (the exact chain bit for bit, the random ones within the transcendental bound).
  for (int64_t n : {1, 5, 16, 17, 63, 65, 130, 1023, 1025, 2051}) {
    SCOPED_TRACE(fmt::format("n {}", n));
    const Tensor a = Random({n}, -3, 3, 31), b = Random({n}, -3, 3, 32);
    auto exact = [](Graph&, const std::vector<Node>& p) {
      Node r = (p[0] * p[1] + p[0]) / (graph::Abs(p[1]) + 1.0f) - graph::Max(p[0], p[1]) * 0.1f;
      return std::vector<Node>{r, graph::Where(graph::LessOrEqual(r, p[0]), graph::Floor(r), p[1] * r)};
    };
    ExpectMatchesRef("cpu", exact, {a, b}, 0);
    for (int ops : {1, 4, 20}) {
      auto fn = [ops](Graph&, const std::vector<Node>& p) { return RandomChain(p, DType::Float32, 5, ops); };
      ExpectMatchesRef("cpu", fn, {a, b}, 2, 1e-5);
      ExpectMatchesRef("cpu:fusion=false", fn, {a, b}, 0);
    }
  }
}

TEST(CpuFusionVector, EveryTargetRunsWholeGraphsLikeRef) {
  // Vector programs on AVX3, one pass per instruction elsewhere: whole executables on each target
  // this machine runs, with tails, broadcasts and half types.
  const Tensor a = Random({7, 37}, -3, 3, 41), b = Random({7, 37}, -3, 3, 42),
               col = Random({7, 1}, -1, 1, 43);
  compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
    SCOPED_TRACE(target);
    auto exact = [](Graph&, const std::vector<Node>& p) {
      Node r = (p[0] * p[1] + p[0]) / (graph::Abs(p[1]) + 1.0f) - graph::Max(p[0], p[1]) * 0.1f + p[2];
      return std::vector<Node>{r, graph::ConvertDType(r * 3.0f, DType::BFloat16)};
    };
    ExpectMatchesRef("cpu", exact, {a, b, col}, 0);
    for (DType dtype : {DType::Float32, DType::Float16}) {
      for (uint32_t seed = 0; seed < 4; ++seed) {
        auto fn = [dtype, seed](Graph&, const std::vector<Node>& p) {
          return RandomChain(p, dtype, seed, 10);
        };
        ExpectMatchesRef("cpu", fn, {a, b}, 2, 1e-5);
      }
    }
  });
}

TEST(CpuFusionVector, ColumnSumsOfWholeRowsAddLikeOneRowAtATime) {
  // AddRowsIntoSimd keeps column sums in registers over the rows: the same doubles as adding each
  // row in turn (exact: a double holds the sum of float32 terms of this range exactly), for widths
  // of vector blocks, single vectors and scalar tails, on every target.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (size_t cols : {1, 7, 16, 24, 32, 48, 64, 100, 512}) {
    const size_t rows = 37;
    std::vector<float> v(rows * cols);
    for (float& x : v) x = std::ldexp(std::round(dist(rng) * 256), -8);  // Exactly summable.
    std::vector<double> want(cols);
    for (size_t j = 0; j < cols; ++j) want[j] = 0.5 * static_cast<double>(j);
    for (size_t k = 0; k < rows; ++k)
      for (size_t j = 0; j < cols; ++j) want[j] += static_cast<double>(v[k * cols + j]);
    compute::cpu::ForEachFusedSimdTarget([&](const char* target) {
      SCOPED_TRACE(fmt::format("{} columns on {}", cols, target));
      std::vector<double> acc(cols);
      for (size_t j = 0; j < cols; ++j) acc[j] = 0.5 * static_cast<double>(j);
      compute::cpu::AddRowsIntoSimd(acc.data(), v.data(), rows, cols);
      EXPECT_EQ(acc, want);
      // None of the rows: the sums stay.
      compute::cpu::AddRowsIntoSimd(acc.data(), v.data(), 0, cols);
      EXPECT_EQ(acc, want);
    });
  }
}

TEST(CpuFusionUlps, SeveralTargetsAreTested) {
  int targets = 0;
  compute::cpu::ForEachFusedSimdTarget([&](const char*) { ++targets; });
  EXPECT_GE(targets, 2) << "the best SIMD target and the portable fallback";
  EXPECT_STRNE(compute::cpu::FusedSimdTarget(), "");
}

}  // namespace
}  // namespace kiln
