// Tests of the cpu backend's machinery: the buffer pool (size classes, reuse, no system
// allocation once warm), memory accounting, the arena plan, donation, options, KILN_CPU_DUMP,
// concurrent calls, control flow and outputs that alias inputs or each other.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/buffer_pool.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/plan.h"
#include "backends/cpu/simd_target.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using compute::cpu::BufferPool;
using compute::cpu::MakePlan;
using compute::cpu::MemoryPlan;
using compute::cpu::PlanRequest;

compute::BackendPtr Cpu(const std::string& config = "cpu") { return compute::NewWithConfig(config); }

/// The pool behind a cpu backend.
BufferPool& PoolOf(const compute::BackendPtr& backend) {
  auto* cpu = dynamic_cast<compute::cpu::CpuBackend*>(backend.get());
  EXPECT_NE(cpu, nullptr);
  return cpu->pool();
}

// ---- Buffer pool ------------------------------------------------------------------------------

TEST(CpuBufferPool, SizeClassesHoldTheRequestWithLittleSlack) {
  EXPECT_EQ(BufferPool::SizeClass(0), 64);
  EXPECT_EQ(BufferPool::SizeClass(1), 64);
  EXPECT_EQ(BufferPool::SizeClass(64), 64);
  EXPECT_EQ(BufferPool::SizeClass(65), 128);
  EXPECT_EQ(BufferPool::SizeClass(4096), 4096);
  EXPECT_EQ(BufferPool::SizeClass(4097), 5120);
  EXPECT_EQ(BufferPool::SizeClass(6000), 6144);
  EXPECT_EQ(BufferPool::SizeClass(8192), 8192);
  EXPECT_EQ(BufferPool::SizeClass(8193), 10240);
  EXPECT_EQ(BufferPool::SizeClass(int64_t{1} << 30), int64_t{1} << 30);
  for (int64_t bytes = 1; bytes < (int64_t{1} << 26); bytes = bytes * 5 / 4 + 7) {
    const int64_t c = BufferPool::SizeClass(bytes);
    EXPECT_GE(c, bytes);
    EXPECT_EQ(c % 64, 0) << bytes;
    if (bytes > 4096) {
      EXPECT_LE(c, bytes + bytes / 4) << bytes;
    }
    EXPECT_EQ(BufferPool::SizeClass(c), c) << "a class is its own class: " << c;
  }
}

TEST(CpuBufferPool, FreedBlocksAreReusedWithinTheirClass) {
  BufferPool pool;
  uint8_t* a = pool.Allocate(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(pool.Usage().live_bytes, 1000);
  pool.Release(a, 1000);
  EXPECT_EQ(pool.Usage().live_bytes, 0);
  EXPECT_EQ(pool.CachedBytes(), 1024);
  uint8_t* b = pool.Allocate(1010);  // Same class (1024 bytes): the same block.
  EXPECT_EQ(b, a);
  EXPECT_EQ(pool.CachedBytes(), 0);
  uint8_t* c = pool.Allocate(2000);  // Another class: a new block.
  EXPECT_NE(c, a);
  EXPECT_EQ(pool.SystemAllocations(), 2);
  pool.Release(b, 1010);
  pool.Release(c, 2000);
  for (int i = 0; i < 100; ++i) pool.Release(pool.Allocate(1000 + i % 24), 1000 + i % 24);
  EXPECT_EQ(pool.SystemAllocations(), 2);
  EXPECT_EQ(pool.Usage().peak_bytes, 2000 + 1010);
}

TEST(CpuBufferPool, BlocksBeyondTheCacheLimitGoBackToTheSystem) {
  BufferPool pool(4096);
  uint8_t* a = pool.Allocate(4096);
  uint8_t* b = pool.Allocate(4096);
  pool.Release(a, 4096);
  pool.Release(b, 4096);  // Over the limit: freed.
  EXPECT_EQ(pool.CachedBytes(), 4096);
  pool.Release(pool.Allocate(4096), 4096);
  EXPECT_EQ(pool.SystemAllocations(), 2);
}

TEST(CpuBackend, AWarmPoolStopsCallingTheSystemAllocator) {
  compute::BackendPtr backend = Cpu();
  Exec exec = NewExec(backend, [](Node x, Node y) {
    Node h = Exp(x * 2.0f + 1.0f) * y;
    return std::vector<Node>{ReduceSum(h, {1}), Tanh(h) - x};
  });
  Tensor x = Tensor::FromValue(std::vector<std::vector<float>>(64, std::vector<float>(100, 0.25f)));
  Tensor y = Tensor::FromValue(std::vector<std::vector<float>>(64, std::vector<float>(100, 2.0f)));
  for (int i = 0; i < 3; ++i) exec.Call(x, y);
  const int64_t warm = PoolOf(backend).SystemAllocations();
  for (int i = 0; i < 50; ++i) {
    std::vector<Tensor> out = exec.Call(x, y);
    ASSERT_NEAR(out[0].ToVector<float>()[0], 100 * 2 * std::exp(1.5f), 1e-2);
  }
  EXPECT_EQ(PoolOf(backend).SystemAllocations(), warm);
}

TEST(CpuBackend, LiveBytesReturnToTheBaselineWhenResultsAreDropped) {
  compute::BackendPtr backend = Cpu();
  const int64_t baseline = backend->MemoryStats().live_bytes;
  {
    Exec exec = NewExec(backend, [](Node x) { return std::vector<Node>{Sqrt(x) + 1.0, x * x, Neg(x)}; });
    std::vector<Tensor> out = exec.Call(std::vector<double>(1000, 4.0));
    EXPECT_EQ(out[0].ToVector<double>()[999], 3.0);
    EXPECT_GE(backend->MemoryStats().live_bytes, baseline + 3 * 8000);
  }
  EXPECT_EQ(backend->MemoryStats().live_bytes, baseline);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
}

// ---- Memory plan ------------------------------------------------------------------------------

/// A chain v0 -> v1 -> ... -> v{n-1}, each `bytes` long, the last alive to the end.
PlanRequest Chain(int n, int64_t bytes, bool in_place) {
  PlanRequest r;
  for (int v = 0; v < n; ++v) {
    r.bytes.push_back(bytes);
    r.last_use.push_back(v + 1 < n ? v + 1 : n);
    r.in_place.push_back(in_place && v > 0 ? std::vector<int>{v - 1} : std::vector<int>{});
  }
  return r;
}

TEST(CpuPlan, AChainNeedsAboutTwoValues) {
  const MemoryPlan plan = MakePlan(Chain(10, 1000, false));
  EXPECT_EQ(plan.size, 2 * 1024);
  EXPECT_EQ(plan.in_place, 0);
  for (int v = 0; v < 10; ++v) EXPECT_EQ(plan.offset[static_cast<size_t>(v)], v % 2 == 0 ? 0 : 1024) << v;
}

TEST(CpuPlan, InPlaceOpsReuseTheirOperandsBlock) {
  const MemoryPlan plan = MakePlan(Chain(10, 1000, true));
  EXPECT_EQ(plan.size, 1024);
  EXPECT_EQ(plan.in_place, 9);
  for (int64_t o : plan.offset) EXPECT_EQ(o, 0);
  // An operand still read later is not written over.
  PlanRequest r = Chain(3, 100, true);
  r.last_use[0] = 2;
  const MemoryPlan p = MakePlan(r);
  EXPECT_NE(p.offset[1], p.offset[0]);
  EXPECT_EQ(p.offset[2], p.offset[1]);
  EXPECT_EQ(p.in_place, 1);
}

TEST(CpuPlan, AnExtraResultTakesTheBlockOfAnOperandOfTheStepThatWritesIt) {
  // v0 and v1 are read last by step 3, whose kernel also writes v2 (placed at its own step 2):
  // v2 may take v0's block, which v0 keeps until step 3.
  PlanRequest r;
  r.bytes = {1000, 1000, 1000, 64, 64};
  r.last_use = {3, 3, 4, 5, 5};
  r.in_place = {{}, {}, {0, 1}, {}, {}};
  r.written_at = {-1, -1, 3, -1, -1};
  const MemoryPlan plan = MakePlan(r);
  EXPECT_EQ(plan.offset[2], plan.offset[0]);
  EXPECT_EQ(plan.in_place, 1);
  // v1's block is free after step 3 and no one else's: v3 (64 bytes) and v4 fit the arena of two
  // blocks, v0's still held by v2.
  EXPECT_NE(plan.offset[3], plan.offset[0]);
  EXPECT_NE(plan.offset[4], plan.offset[0]);
  // Written by its own step 2 instead, v2 cannot take a block read until step 3.
  r.written_at.clear();
  const MemoryPlan own = MakePlan(r);
  EXPECT_EQ(own.in_place, 0);
  EXPECT_NE(own.offset[2], own.offset[0]);
  EXPECT_NE(own.offset[2], own.offset[1]);
}

TEST(CpuPlan, ValuesOutsideTheArenaHaveNoOffset) {
  PlanRequest r;
  r.bytes = {-1, 256, -1, 64};
  r.last_use = {3, 3, 3, 4};
  r.in_place = {{}, {}, {}, {}};
  const MemoryPlan plan = MakePlan(r);
  EXPECT_EQ(plan.offset[0], -1);
  EXPECT_EQ(plan.offset[2], -1);
  EXPECT_EQ(plan.offset[1], 0);
  EXPECT_EQ(plan.offset[3], 256);
  EXPECT_EQ(plan.size, 320);
}

TEST(CpuPlan, LiveValuesNeverOverlap) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 40);
    PlanRequest r;
    for (int v = 0; v < n; ++v) {
      r.bytes.push_back(rng() % 5 == 0 ? -1 : static_cast<int64_t>(rng() % 3000));
      r.last_use.push_back(rng() % 6 == 0 ? n : std::min(n, v + static_cast<int>(rng() % 8)));
      std::vector<int> ip;
      if (v > 0 && rng() % 2 == 0) ip.push_back(static_cast<int>(rng() % static_cast<unsigned>(v)));
      r.in_place.push_back(ip);
    }
    const MemoryPlan plan = MakePlan(r);
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
        if (r.bytes[ua] < 0 || r.bytes[ub] < 0) continue;
        ASSERT_GE(plan.offset[ua], 0);
        ASSERT_GE(plan.offset[ub], 0);
        ASSERT_LE(plan.offset[ub] + r.bytes[ub], plan.size);
        if (r.last_use[ua] < b) continue;  // a is dead before b is written.
        // b written over a: allowed only as a's last use, by an in-place op listing a.
        const bool handover = r.last_use[ua] == b && std::find(r.in_place[ub].begin(), r.in_place[ub].end(),
                                                               a) != r.in_place[ub].end();
        const bool overlap = plan.offset[ua] < plan.offset[ub] + std::max<int64_t>(r.bytes[ub], 1) &&
                             plan.offset[ub] < plan.offset[ua] + std::max<int64_t>(r.bytes[ua], 1);
        if (overlap && !handover) {
          ADD_FAILURE() << "trial " << trial << ": values " << a << " and " << b << " overlap";
        }
        if (overlap) {
          ASSERT_EQ(plan.offset[ua], plan.offset[ub]) << "an in-place result starts at its operand";
        }
      }
    }
  }
}

TEST(CpuPlan, HeldValuesLiveInsideTheirHolder) {
  // v0 and v2 are computed inside v4's block (a concatenation of them); v1 and v3 live meanwhile
  // and must stay outside it; v2 is still read after v4 (by v5), which keeps v4's block alive.
  PlanRequest r;
  r.bytes = {128, 200, 64, 100, 256, 64};
  r.last_use = {4, 2, 5, 4, 5, 6};
  r.in_place = {{}, {}, {}, {}, {}, {2}};  // v5 would write over v2: not while v2 is held.
  r.within = {4, -1, 4, -1, -1, -1};
  r.within_offset = {0, 0, 128, 0, 0, 0};
  const MemoryPlan plan = MakePlan(r);
  EXPECT_EQ(plan.within, 2);
  EXPECT_EQ(plan.in_place, 0);
  EXPECT_EQ(plan.offset[0], plan.offset[4]);
  EXPECT_EQ(plan.offset[2], plan.offset[4] + 128);
  auto overlaps = [&](int a, int b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    return plan.offset[ua] < plan.offset[ub] + r.bytes[ub] && plan.offset[ub] < plan.offset[ua] + r.bytes[ua];
  };
  EXPECT_FALSE(overlaps(1, 4));
  EXPECT_FALSE(overlaps(3, 4));
  EXPECT_FALSE(overlaps(5, 4));
  EXPECT_FALSE(overlaps(5, 2));
}

TEST(CpuPlan, HeldValuesNeverOverlapOtherLiveValues) {
  // Random programs with concatenations whose operands are placed in their result: while a
  // holder's block is taken (from its first held value's step to the last use of it and of
  // everything it holds), nothing else overlaps it, and held values stay inside it.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 4 + static_cast<int>(rng() % 30);
    PlanRequest r;
    r.within.assign(static_cast<size_t>(n), -1);
    r.within_offset.assign(static_cast<size_t>(n), 0);
    for (int v = 0; v < n; ++v) {
      r.bytes.push_back(64 * static_cast<int64_t>(1 + rng() % 8));
      r.last_use.push_back(std::min(n, v + 1 + static_cast<int>(rng() % 6)));
      std::vector<int> ip;
      if (v > 0 && rng() % 2 == 0) ip.push_back(static_cast<int>(rng() % static_cast<unsigned>(v)));
      r.in_place.push_back(ip);
    }
    // A few holders, each over some earlier values not held yet (read by it: alive until then).
    for (int h = 2; h < n; ++h) {
      if (rng() % 3 != 0) continue;
      int64_t at = 0;
      for (int c = 0; c < h; ++c) {
        const auto uc = static_cast<size_t>(c);
        if (r.within[uc] >= 0 || rng() % 3 != 0) continue;
        r.within[uc] = h;
        r.within_offset[uc] = at;
        r.last_use[uc] = std::max(r.last_use[uc], h);
        at += r.bytes[uc];
      }
      r.bytes[static_cast<size_t>(h)] = std::max<int64_t>(at, 64);
    }
    const MemoryPlan plan = MakePlan(r);
    // Each value's life: [first step its block is taken, last step it is read], holders widened.
    std::vector<int> first(static_cast<size_t>(n)), last = r.last_use;
    for (int v = 0; v < n; ++v) first[static_cast<size_t>(v)] = v;
    for (int v = 0; v < n; ++v) {
      const int h = r.within[static_cast<size_t>(v)];
      if (h < 0) continue;
      first[static_cast<size_t>(h)] = std::min(first[static_cast<size_t>(h)], first[static_cast<size_t>(v)]);
      last[static_cast<size_t>(h)] = std::max(last[static_cast<size_t>(h)], last[static_cast<size_t>(v)]);
    }
    auto inside = [&](int a, int h) {  // a held, directly or not, by h.
      for (int x = r.within[static_cast<size_t>(a)]; x >= 0; x = r.within[static_cast<size_t>(x)])
        if (x == h) return true;
      return false;
    };
    for (int a = 0; a < n; ++a) {
      const auto ua = static_cast<size_t>(a);
      ASSERT_LE(plan.offset[ua] + r.bytes[ua], plan.size);
      if (r.within[ua] >= 0) {
        const auto h = static_cast<size_t>(r.within[ua]);
        EXPECT_EQ(plan.offset[ua], plan.offset[h] + r.within_offset[ua]) << "trial " << trial;
      }
      for (int b = a + 1; b < n; ++b) {
        const auto ub = static_cast<size_t>(b);
        if (inside(a, b) || inside(b, a)) continue;
        if (last[ua] < first[ub] || last[ub] < first[ua]) continue;  // Never alive together.
        // A handover: b written over a at a's last use (neither holds nor is held).
        const bool handover =
            last[ua] == b && r.within[ua] < 0 && r.within[ub] < 0 &&
            std::find(r.in_place[ub].begin(), r.in_place[ub].end(), a) != r.in_place[ub].end();
        const bool overlap = plan.offset[ua] < plan.offset[ub] + r.bytes[ub] &&
                             plan.offset[ub] < plan.offset[ua] + r.bytes[ua];
        if (overlap && !handover)
          ADD_FAILURE() << "trial " << trial << ": values " << a << " and " << b << " overlap";
      }
    }
  }
}

TEST(CpuBackend, ProfileTimesStepsWithSeveralResults) {
  // A While loop's step returns a tuple (as the optimizers' update kernels do): its time is its
  // own row of the KILN_CPU_PROFILE table, `tuple of 2`, not part of "outside the kernels".
  setenv("KILN_CPU_PROFILE", "1", 1);
  compute::BackendPtr backend = Cpu("cpu:threads=1");
  unsetenv("KILN_CPU_PROFILE");
  ::testing::internal::CaptureStderr();
  {
    Exec exec = NewExec(backend, [](Node x) {
      Node i = Scalar(x.graph(), DType::Int32, 0);
      return While([](const std::vector<Node>& s) { return Less(s[0], ScalarLike(s[0], 200)); },
                   [](const std::vector<Node>& s) {
                     return std::vector<Node>{s[0] + ScalarLike(s[0], 1), Sqrt(Exp(s[1]) + 1.0f)};
                   },
                   {i, x})[1];
    });
    const std::vector<float> got = exec.Call1(std::vector<float>(1 << 16, 0.5f)).ToVector<float>();
    EXPECT_GT(got[0], 1.0f);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(err.find("KILN_CPU_PROFILE: 1 executions"), std::string::npos) << err;
  const size_t row = err.find("tuple of 2");
  ASSERT_NE(row, std::string::npos) << err;
  // The share column (the second) of the row holding `at`: "  ms  share%  ...".
  const auto share_of = [&err](size_t at) {
    std::istringstream line(err.substr(err.rfind('\n', at) + 1));
    std::string ms, share;
    line >> ms >> share;
    return std::stod(share);
  };
  // The loop's row holds nearly all of the execution.
  EXPECT_GT(share_of(row), 80.0) << err;
  const size_t outside = err.find("outside the kernels");
  ASSERT_NE(outside, std::string::npos) << err;
  EXPECT_LT(share_of(outside), 20.0) << err;
}

TEST(CpuPlan, AnExecutablesChainTakesAboutOneValueOfArena) {
  // Ten unfused elementwise ops over 1000 floats: each written over its operand, the last one
  // into the output buffer, so the arena holds about one value (4000 bytes), not ten.
  setenv("KILN_CPU_DUMP", "1", 1);
  compute::BackendPtr backend = Cpu("cpu:fusion=false");
  unsetenv("KILN_CPU_DUMP");
  Exec exec = NewExec(backend, [](Node x) {
    Node y = Exp(x);
    for (int i = 0; i < 4; ++i) y = Sqrt(Tanh(y) + 2.0f);
    return Neg(y);
  });
  ::testing::internal::CaptureStderr();
  Tensor out = exec.Call1(std::vector<float>(1000, 0.5f));
  const std::string err = ::testing::internal::GetCapturedStderr();
  const size_t at = err.find(" steps, arena ");
  ASSERT_NE(at, std::string::npos) << err;
  const int64_t arena = std::stoll(err.substr(at + 14));
  EXPECT_GT(arena, 0) << err;
  EXPECT_LE(arena, 2 * 4032) << err;
  EXPECT_NE(err.find("written in place"), std::string::npos) << err;
  EXPECT_LT(out.ToVector<float>()[999], -1.0f);
}

TEST(CpuPlan, ContiguousSlicesAreViewsIntoTheirOperand) {
  // Rows 1..2 of t, and the element block [1, 2, :] of r (one row of a 3-d value): views with no
  // kernel. t's only other reader is an elementwise op that could write over it in place: the
  // view's later read keeps t alive (t * 2 must not overwrite it first). A strided and an inner
  // slice (of x) are copies.
  setenv("KILN_CPU_DUMP", "1", 1);
  compute::BackendPtr backend = Cpu("cpu:fusion=false");
  unsetenv("KILN_CPU_DUMP");
  Exec exec = NewExec(backend, [](Node x) {
    Node t = Exp(x);                                       // [4, 6]
    Node rows = Slice(t, {AxisRange(1, 3), AxisRange()});  // a view
    Node doubled = t * 2.0f;                               // t's other reader
    Node r = Reshape(doubled, {2, 2, 6});
    Node block = Slice(r, {AxisElem(1), AxisRange(1, 2), AxisRange()});  // a view: [1, 1, 6]
    Node strided = Slice(x, {AxisRange(0, 4).Stride(2), AxisRange()});   // a copy
    Node inner = Slice(x, {AxisRange(), AxisRange(1, 3)});               // a copy
    return std::vector<Node>{rows + 1.0f, block, strided, inner};
  });
  std::vector<float> in(24);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.1f * static_cast<float>(i);
  ::testing::internal::CaptureStderr();
  std::vector<Tensor> out = exec.Call(Tensor::FromFlat(Shape(DType::Float32, {4, 6}), in));
  const std::string err = ::testing::internal::GetCapturedStderr();
  int kernels = 0;
  for (size_t at = err.find("kernel ref"); at != std::string::npos; at = err.find("kernel ref", at + 1))
    ++kernels;
  // The kernels (reference ones with fusion off): Exp, Mul, Add, the two broadcast constants and
  // the two copied slices.
  EXPECT_EQ(kernels, 7) << err;
  auto e = [&](size_t i) { return std::exp(in[i]); };
  const std::vector<float> rows = out[0].ToVector<float>(), block = out[1].ToVector<float>(),
                           strided = out[2].ToVector<float>(), inner = out[3].ToVector<float>();
  ASSERT_EQ(rows.size(), 12u);
  for (size_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(rows[i], e(6 + i) + 1.0f) << i;
  ASSERT_EQ(block.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(block[i], 2.0f * e(18 + i)) << i;
  ASSERT_EQ(strided.size(), 12u);
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(strided[6 + i], in[12 + i]) << i;
  ASSERT_EQ(inner.size(), 8u);
  EXPECT_FLOAT_EQ(inner[7], in[20]);
}

TEST(CpuPlan, ConcatenatedResultsAreComputedInTheirPlace) {
  // Results of kernels that a concatenation joins whole, each starting 64-byte aligned in it,
  // are computed where the concatenation holds them (its copy finds them there): a (through a
  // reshape), c and b; y (a parameter) and d (at byte 808) are copied. a is read again after the
  // concatenation by an elementwise op that could otherwise write over it. Every value is ref's.
  auto fn = [](Node x, Node y) {
    Node a = Reshape(Reshape(x, {8, 8}) * 2.0f, {64});
    Node c = x - 3.0f;
    Node b = y + 1.0f;
    Node d = Neg(x);
    Node cat = Concatenate({a, c, b, y, d}, 0);  // 64 + 64 + 37 + 37 + 64 floats.
    Node late = a * ReduceAllSum(cat);
    return std::vector<Node>{cat + 0.5f, late,
                             Concatenate({Reshape(cat, {1, 266}), Reshape(late, {1, 64})}, 1)};
  };
  std::vector<float> xs(64), ys(37);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.25f * static_cast<float>(i) - 3.0f;
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = 0.5f * static_cast<float>(i % 7) - 1.0f;
  const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {64}), xs),
               y = Tensor::FromFlat(Shape(DType::Float32, {37}), ys);
  const std::vector<Tensor> want = NewExec(compute::NewWithConfig("ref"), fn).Call(x, y);
  for (const char* config : {"cpu:fusion=false", "cpu"}) {
    SCOPED_TRACE(config);
    setenv("KILN_CPU_DUMP", "1", 1);
    compute::BackendPtr backend = Cpu(config);
    unsetenv("KILN_CPU_DUMP");
    ::testing::internal::CaptureStderr();
    const std::vector<Tensor> got = NewExec(backend, fn).Call(x, y);
    const std::string err = ::testing::internal::GetCapturedStderr();
    const size_t at = err.find(" concatenated in place");
    ASSERT_NE(at, std::string::npos) << err;
    const size_t from = err.rfind(", ", at);
    const int held = std::stoi(err.substr(from + 2, at - from - 2));
    if (std::string(config) == "cpu:fusion=false") {
      EXPECT_EQ(held, 3) << err;
    } else {
      EXPECT_GE(held, 2) << err;
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_EQ(got[k].ToVector<float>(), want[k].ToVector<float>()) << k;
  }
}

// ---- Donation ---------------------------------------------------------------------------------

TEST(CpuDonation, ADonatedInputsBufferHoldsTheOutput) {
  compute::BackendPtr backend = Cpu();
  Exec exec = NewExec(backend, [](Node x) { return x * 2.0f + 1.0f; });
  Tensor in = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {1000}));
  in.MutableFlatData<float>([](std::span<float> f) {
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i);
  });
  const void* data = in.DeviceBuffer(backend, 0)->HostData();
  Tensor out = exec.Call1(Donate(in));
  EXPECT_FALSE(in.Ok());
  EXPECT_EQ(out.DeviceBuffer(backend, 0)->HostData(), data);
  EXPECT_EQ(out.ToVector<float>()[999], 1999.0f);
}

TEST(CpuDonation, WithoutDonationTheInputIsUntouched) {
  compute::BackendPtr backend = Cpu();
  Exec exec = NewExec(backend, [](Node x) { return x * 2.0f + 1.0f; });
  Tensor in = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {1000}));
  in.MutableFlatData<float>([](std::span<float> f) { f[7] = 3; });
  const void* data = in.DeviceBuffer(backend, 0)->HostData();
  Tensor out = exec.Call1(in);
  EXPECT_TRUE(in.Ok());
  EXPECT_NE(out.DeviceBuffer(backend, 0)->HostData(), data);
  EXPECT_EQ(in.ToVector<float>()[7], 3.0f);
  EXPECT_EQ(out.ToVector<float>()[7], 7.0f);
  EXPECT_EQ(out.ToVector<float>()[0], 1.0f);
}

TEST(CpuDonation, ABufferAlsoPassedAsAnotherInputIsCopied) {
  compute::BackendPtr backend = Cpu();
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {4}));
  Node y = g.Parameter(Shape(DType::Float32, {4}));
  std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build({x * 2.0f + y}, {true, true}));
  const std::vector<float> values = {1, 2, 3, 4};
  for (const std::vector<bool>& donated : {std::vector<bool>{true, false}, std::vector<bool>{true, true}}) {
    compute::BufferPtr in = backend->BufferFromHost(0, values.data(), 16);
    std::vector<compute::BufferPtr> out = exe->Execute({in, in}, donated, 0);
    EXPECT_NE(out[0]->HostData(), in->HostData());
    std::vector<float> got(4), kept(4);
    backend->BufferToHost(*out[0], got.data());
    backend->BufferToHost(*in, kept.data());
    EXPECT_EQ(got, (std::vector<float>{3, 6, 9, 12}));
    EXPECT_EQ(kept, values);
  }
}

TEST(CpuDonation, AnInputReadAfterTheOutputIsWrittenIsNotReused) {
  // out0 = x + 1 could take x's buffer, but out1 = x * 3 reads x afterwards.
  compute::BackendPtr backend = Cpu();
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {4}));
  std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build({x + 1.0f, Sqrt(x) * 3.0f}, {true}));
  const std::vector<float> values = {1, 4, 9, 16};
  compute::BufferPtr in = backend->BufferFromHost(0, values.data(), 16);
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {true}, 0);
  std::vector<float> a(4), b(4);
  backend->BufferToHost(*out[0], a.data());
  backend->BufferToHost(*out[1], b.data());
  EXPECT_EQ(a, (std::vector<float>{2, 5, 10, 17}));
  EXPECT_EQ(b, (std::vector<float>{3, 6, 9, 12}));
}

// ---- Host tensors taken over (Backend::AdoptHostMemory) -------------------------------------

// The address of a tensor's host bytes.
const void* HostAddress(const Tensor& t) {
  const void* at = nullptr;
  t.ConstBytes([&](std::span<const uint8_t> b) { at = b.data(); });
  return at;
}

TEST(CpuAdoption, AHostTensorsMemoryBecomesItsBufferWithoutACopy) {
  compute::BackendPtr backend = Cpu();
  const int64_t live = backend->MemoryStats().live_bytes;
  Tensor t = Tensor::FromValue(std::vector<float>{1, 2, 3, 4, 5});
  const void* host = HostAddress(t);
  EXPECT_FALSE(t.IsShared());
  compute::BufferPtr buffer = t.DeviceBuffer(backend, 0);
  EXPECT_EQ(buffer->HostData(), host);  // The same memory: nothing copied.
  EXPECT_EQ(buffer->ByteSize(), 20);
  EXPECT_TRUE(t.IsShared());
  EXPECT_TRUE(t.HasLocal());
  EXPECT_EQ(HostAddress(t), host);
  EXPECT_EQ(t.DeviceBuffer(backend, 0), buffer);
  EXPECT_EQ(backend->MemoryStats().live_bytes, live + 20);  // Now the backend's memory.
  // A host write is the buffer's: the next execution reads it.
  t.MutableFlatData<float>([](std::span<float> f) { f[4] = 50; });
  Exec exec = NewExec(backend, [](Node x) { return x * 2.0f; });
  EXPECT_EQ(exec.Call1(t).ToVector<float>(), (std::vector<float>{2, 4, 6, 8, 100}));
  EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 50}));
  buffer.reset();
  t = Tensor();
  EXPECT_EQ(backend->MemoryStats().live_bytes, live);  // Freed with the last handle.
}

TEST(CpuAdoption, ADonatedHostTensorIsUpdatedInItsOwnMemory) {
  compute::BackendPtr backend = Cpu();
  Exec exec = NewExec(backend, [](Node x) { return x * 2.0f + 1.0f; });
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  Tensor in = Tensor::FromValue(values);
  const void* host = HostAddress(in);
  Tensor out = exec.Call1(Donate(in));
  EXPECT_FALSE(in.Ok());  // Its only copy, the adopted buffer, went to the execution.
  EXPECT_EQ(HostAddress(out), host);
  EXPECT_EQ(out.ToVector<float>()[999], 1999.0f);
  EXPECT_EQ(out.ToVector<float>()[0], 1.0f);
}

TEST(CpuAdoption, ATensorOnTwoDevicesSharesWithOneAndCopiesToTheOther) {
  compute::BackendPtr backend = Cpu("cpu:devices=2");
  Tensor t = Tensor::FromValue(std::vector<int32_t>{7, 8, 9});
  const void* host = HostAddress(t);
  compute::BufferPtr on1 = t.DeviceBuffer(backend, 1);
  EXPECT_EQ(on1->HostData(), host);
  EXPECT_EQ(on1->Device(), 1);
  compute::BufferPtr on0 = t.DeviceBuffer(backend, 0);
  EXPECT_NE(on0->HostData(), host);
  std::vector<int32_t> got(3);
  backend->BufferToHost(*on0, got.data());
  EXPECT_EQ(got, (std::vector<int32_t>{7, 8, 9}));
  // Donating the copy on device 0 leaves the tensor its shared one.
  Tensor keep = t;
  EXPECT_EQ(keep.DonateBuffer(backend, 0), on0);
  EXPECT_TRUE(t.Ok());
  EXPECT_TRUE(t.IsShared());
  EXPECT_FALSE(t.IsOnDevice(backend, 0));
  EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{7, 8, 9}));
}

TEST(CpuAdoption, EmptyAndOddSizedTensorsAndTheirLimits) {
  compute::BackendPtr backend = Cpu();
  Tensor empty = Tensor::FromShape(Shape(DType::Float32, {0, 3}));
  EXPECT_EQ(empty.DeviceBuffer(backend, 0)->ByteSize(), 0);
  EXPECT_TRUE(empty.IsShared());
  // A 13-byte tensor: its host memory is padded to 64 bytes, so whole-vector kernels stay inside
  // it (the ASan preset checks).
  Tensor odd = Tensor::FromValue(std::vector<uint8_t>(13, 5));
  Exec exec = NewExec(backend, [](Node x) { return x + x; });
  EXPECT_EQ(exec.Call1(odd).ToVector<uint8_t>(), std::vector<uint8_t>(13, 10));
  EXPECT_TRUE(odd.IsShared());
  // Memory the pool's kernels could not use (not 64-byte aligned) is not taken.
  std::shared_ptr<uint8_t> block(static_cast<uint8_t*>(::operator new[](192, std::align_val_t(64))),
                                 [](uint8_t* p) { ::operator delete[](p, std::align_val_t(64)); });
  EXPECT_EQ(backend->AdoptHostMemory(0, std::shared_ptr<uint8_t>(block, block.get() + 4), 64), nullptr);
  EXPECT_EQ(backend->AdoptHostMemory(0, nullptr, 64), nullptr);
  compute::BufferPtr whole = backend->AdoptHostMemory(0, block, 128);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->HostData(), block.get());
  EXPECT_TRUE(kiln::test::Throws([&] { backend->AdoptHostMemory(2, block, 64); }, {"device 2"}));
}

TEST(CpuAdoption, TheReferenceBackendKeepsCopying) {
  for (const char* config : {"ref", "ref:shared=false"}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<float>{1, 2});
    EXPECT_NE(t.DeviceBuffer(backend, 0)->HostData(), HostAddress(t));
    EXPECT_FALSE(t.IsShared());
  }
}

TEST(CpuDonation, ADynamicUpdateSliceWritesIntoItsDonatedOperand) {
  // A key/value cache: the update goes into the donated buffer, which holds the result; the rest
  // of it is not copied. Without donation the input keeps its values.
  compute::BackendPtr backend = Cpu();
  Exec exec = NewExec(backend, [](Node cache, Node update, Node at) {
    Node zero = ScalarLike(at, 0);
    return DynamicUpdateSlice(cache, update, {zero, at});
  });
  auto make = [&] {
    Tensor t = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {4, 8}));
    t.MutableFlatData<float>([](std::span<float> f) {
      for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i);
    });
    return t;
  };
  const Tensor update =
      Tensor::FromFlat(Shape(DType::Float32, {4, 2}), std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8});
  Tensor cache = make();
  const void* data = cache.DeviceBuffer(backend, 0)->HostData();
  Tensor out = exec.Call1(Donate(cache), update, Tensor::FromScalar(int32_t{3}));
  EXPECT_EQ(out.DeviceBuffer(backend, 0)->HostData(), data);
  std::vector<float> want(32);
  for (size_t i = 0; i < 32; ++i) want[i] = static_cast<float>(i);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 2; ++c)
      want[static_cast<size_t>(r * 8 + 3 + c)] = static_cast<float>(-(r * 2 + c + 1));
  EXPECT_EQ(out.ToVector<float>(), want);
  Tensor kept = make();
  Tensor out2 = exec.Call1(kept, update, Tensor::FromScalar(int32_t{3}));
  EXPECT_EQ(out2.ToVector<float>(), want);
  EXPECT_EQ(kept.ToVector<float>()[3], 3.0f);
}

TEST(CpuDonation, AnUpdateReadFromTheOperandItselfIsNotWrittenInPlace) {
  // The update is a view of the donated operand's own rows (a contiguous slice): writing in place
  // would overwrite rows 0..1 while they are read. Rows 0..1 go to rows 1..2.
  compute::BackendPtr backend = Cpu();
  Exec exec = NewExec(backend, [](Node cache, Node at) {
    Node rows = Slice(cache, {AxisRange(0, 2), AxisRange()});
    return DynamicUpdateSlice(cache, rows, {at, ScalarLike(at, 0)});
  });
  Tensor cache = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {4, 3}));
  cache.MutableFlatData<float>([](std::span<float> f) {
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i);
  });
  Tensor out = exec.Call1(Donate(cache), Tensor::FromScalar(int32_t{1}));
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2, 3, 4, 5, 9, 10, 11}));
}

// ---- Options and dump -------------------------------------------------------------------------

TEST(CpuOptions, InvalidValuesAreErrorsNamingTheValidOnes) {
  EXPECT_TRUE(test::Throws([] { Cpu("cpu:threads=0"); }, {"threads", "at least 1"}));
  EXPECT_TRUE(test::Throws([] { Cpu("cpu:threads=100000"); }, {"threads=100000", "at most 4096"}));
  EXPECT_TRUE(test::Throws([] { Cpu("cpu:simd=foo"); }, {"simd", "foo", "auto", "scalar"}));
  EXPECT_TRUE(test::Throws([] { Cpu("cpu:serial_work=-1"); }, {"serial_work", "at least 0"}));
  EXPECT_TRUE(test::Throws([] { Cpu("cpu:team_spin=-1"); }, {"team_spin=-1", "between 0 and 1000000"}));
  EXPECT_TRUE(test::Throws([] { Cpu("cpu:team_spin=2000000"); }, {"team_spin=2000000", "microseconds"}));
  EXPECT_TRUE(test::Throws([] { Cpu("cpu:colour=red"); }, {"colour", "threads", "fusion", "simd"}));
}

TEST(CpuOptions, SwitchesAreAppliedAndComputeTheSame) {
  for (const char* config :
       {"cpu:fusion=false", "cpu:simd=scalar", "cpu:threads=1", "cpu:threads=2,fusion=true",
        "cpu:serial_work=0", "cpu:threads=2,team_spin=0", "cpu:threads=2,team_spin=5000"}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = Cpu(config);
    EXPECT_EQ(backend->Name(), "cpu");
    Exec exec = NewExec(backend, [](Node x) { return Exp(x * 2.0f + 1.0f) - x; });
    EXPECT_NEAR(exec.Call1(std::vector<float>{0.5f, -0.5f}).ToVector<float>()[0], std::exp(2.0f) - 0.5f,
                1e-5);
  }
  EXPECT_NE(Cpu("cpu:fusion=false")->Description().find("fusion off"), std::string::npos);
  EXPECT_NE(Cpu("cpu:simd=scalar")->Description().find("scalar"), std::string::npos);
  EXPECT_NE(Cpu("cpu:threads=1")->Description().find("1 thread"), std::string::npos);
  EXPECT_NE(Cpu("cpu:threads=3")->Description().find("3 threads"), std::string::npos);
  EXPECT_NE(Cpu("cpu:team_spin=0")->Description().find("helpers spin 0 us"), std::string::npos);
  EXPECT_EQ(Cpu("cpu:team_spin=200")->Description().find("spin"), std::string::npos);
}

TEST(CpuOptions, DumpPrintsTheOptimisedProgram) {
  setenv("KILN_CPU_DUMP", "1", 1);
  compute::BackendPtr backend = Cpu();
  unsetenv("KILN_CPU_DUMP");
  Exec exec = NewExec(backend, [](Node x) { return Tanh(x * 3.0f) + x; });
  ::testing::internal::CaptureStderr();
  Tensor out = exec.Call1(std::vector<float>{0, 1});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("KILN_CPU_DUMP"), std::string::npos) << err;
  EXPECT_NE(err.find("Tanh"), std::string::npos) << err;
  EXPECT_NE(err.find("outputs:"), std::string::npos) << err;
  EXPECT_NE(err.find("steps"), std::string::npos) << err;
  EXPECT_EQ(out.ToVector<float>()[0], 0.0f);
  // Without the variable: silent.
  Exec quiet = NewExec(Cpu(), [](Node x) { return Tanh(x * 3.0f) + x; });
  ::testing::internal::CaptureStderr();
  quiet.Call1(std::vector<float>{0, 1});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// ---- Threads ----------------------------------------------------------------------------------

/// The cpu compiler's module of the program `fn` builds for inputs of `shapes`.
compute::cpu::Module ModuleOf(const std::vector<Shape>& shapes,
                              const std::function<Node(std::vector<Node>)>& fn) {
  Graph g;
  std::vector<Node> params;
  for (const Shape& s : shapes) params.push_back(g.Parameter(s));
  return compute::cpu::FromProgram(*g.Build({fn(params)}));
}

TEST(CpuThreads, ProgramWorkCountsMultiplyAddsAndElements) {
  using compute::cpu::ProgramWork;
  // [64, 128] x [128, 32]: 64 * 32 results of 128 multiply-adds.
  EXPECT_EQ(ProgramWork(ModuleOf({Shape(DType::Float32, {64, 128}), Shape(DType::Float32, {128, 32})},
                                 [](std::vector<Node> p) { return MatMul(p[0], p[1]); }))
                .work,
            64 * 32 * 128);
  // A 5x5 convolution of one image 28x28x3 into 8 channels, same size: 28*28*8 results of
  // 5*5*3 multiply-adds.
  EXPECT_EQ(ProgramWork(ModuleOf({Shape(DType::Float32, {1, 28, 28, 3}), Shape(DType::Float32, {5, 5, 3, 8})},
                                 [](std::vector<Node> p) { return Convolve(p[0], p[1]).PadSame().Done(); }))
                .work,
            28 * 28 * 8 * 5 * 5 * 3);
  // An elementwise op counts its elements; a reduction the elements it reads.
  EXPECT_EQ(ProgramWork(ModuleOf({Shape(DType::Float32, {100, 10})},
                                 [](std::vector<Node> p) { return ReduceSum(Neg(p[0]), {1}); }))
                .work,
            1000 + 1000);
  // Sizeable kernels: those of at least kSizeableKernelWork.
  const compute::cpu::ProgramLoad two =
      ProgramWork(ModuleOf({Shape(DType::Float32, {512, 1024}), Shape(DType::Float32, {1024, 8})},
                           [](std::vector<Node> p) { return MatMul(Neg(p[0]), p[1]); }));
  EXPECT_EQ(two.work, 512 * 1024 + 512 * 1024 * 8);
  EXPECT_EQ(two.sizeable, 2);
}

TEST(CpuThreads, SmallProgramsRunOnTheCallingThreadLargeOnesOnTheTeam) {
  using compute::cpu::kSmallProgramWork;
  using compute::cpu::ProgramThreads;
  auto matmul = [](int64_t m) {
    return ModuleOf({Shape(DType::Float32, {m, 256}), Shape(DType::Float32, {256, 256})},
                    [](std::vector<Node> p) { return MatMul(p[0], p[1]); });
  };
  const int64_t rows = kSmallProgramWork / (256 * 256);  // the first size at the threshold
  EXPECT_EQ(ProgramThreads(matmul(rows - 1), 2), 1);
  EXPECT_EQ(ProgramThreads(matmul(rows), 2), 2);
  EXPECT_EQ(ProgramThreads(matmul(4 * rows), 4), 4);
  EXPECT_EQ(ProgramThreads(matmul(4 * rows), 1), 1);
  // The threshold counts per sizeable kernel: two products of 3/4 of it each run serially
  // together, one of 3/2 of it does not.
  auto two_matmuls = [](int64_t m) {
    return ModuleOf({Shape(DType::Float32, {m, 256}), Shape(DType::Float32, {256, 256})},
                    [](std::vector<Node> p) { return MatMul(MatMul(p[0], p[1]), p[1]); });
  };
  EXPECT_EQ(ProgramThreads(two_matmuls(rows * 3 / 4), 2), 1);
  EXPECT_EQ(ProgramThreads(matmul(rows * 3 / 2), 2), 2);
  EXPECT_EQ(ProgramThreads(two_matmuls(rows * 5 / 4), 2), 2);
  // serial_work moves the threshold; 0 turns it off.
  EXPECT_EQ(ProgramThreads(matmul(rows), 2, kSmallProgramWork * 2), 1);
  EXPECT_EQ(ProgramThreads(matmul(1), 2, 0), 2);
  // The dump says which; both compute the same.
  for (int64_t m : {int64_t{1}, rows - 1, rows}) {
    setenv("KILN_CPU_DUMP", "1", 1);
    compute::BackendPtr backend =
        Cpu(m == 1 ? "cpu:threads=2,serial_work=0"
                   : fmt::format("cpu:threads=2,serial_work={}", kSmallProgramWork));
    unsetenv("KILN_CPU_DUMP");
    Exec exec = NewExec(backend, [](Node a, Node b) { return MatMul(a, b); });
    std::vector<float> a(static_cast<size_t>(m * 256), 0.5f), b(256 * 256, 0.25f);
    ::testing::internal::CaptureStderr();
    Tensor out = exec.Call1(Tensor::FromFlat(Shape(DType::Float32, {m, 256}), a),
                            Tensor::FromFlat(Shape(DType::Float32, {256, 256}), b));
    const std::string err = ::testing::internal::GetCapturedStderr();
    // (A matrix-vector product splits its contraction over a team, a large product its rows:
    // team.h.)
    const char* want = m < rows && m > 1 ? "1 thread (a small program)\n" : "2 threads on a team of 2\n";
    EXPECT_NE(err.find(want), std::string::npos) << err;
    const std::vector<float> v = out.ToVector<float>();
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 32.0f; }));
  }
}

TEST(CpuThreads, TheGatesFollowOpenMPsWaitPolicy) {
  // Sleeping threads (PASSIVE, or no spinning) make every parallel region a wake-up: the high
  // threshold; a spinning team (the default policy, ACTIVE) the low one.
  using compute::cpu::DefaultSerialWork;
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const std::string saved_policy = policy == nullptr ? "" : policy, saved_spin = spin == nullptr ? "" : spin;
  unsetenv("GOMP_SPINCOUNT");
  setenv("OMP_WAIT_POLICY", "passive", 1);
  EXPECT_EQ(DefaultSerialWork(), compute::cpu::kSmallProgramWork);
  EXPECT_EQ(compute::cpu::SingleThreadMacs(), compute::cpu::kSingleThreadMacs);
  setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  EXPECT_EQ(DefaultSerialWork(), compute::cpu::kSpinningProgramWork);
  EXPECT_EQ(compute::cpu::SingleThreadMacs(), compute::cpu::kSpinningSingleThreadMacs);
  EXPECT_LT(compute::cpu::kSpinningSingleThreadMacs, compute::cpu::kSingleThreadMacs);
  unsetenv("OMP_WAIT_POLICY");
  EXPECT_EQ(DefaultSerialWork(), compute::cpu::kSpinningProgramWork);
  setenv("GOMP_SPINCOUNT", "0", 1);
  EXPECT_EQ(DefaultSerialWork(), compute::cpu::kSmallProgramWork);
  EXPECT_LT(compute::cpu::kSpinningProgramWork, compute::cpu::kSmallProgramWork);
  auto restore = [](const char* name, const char* had, const std::string& value) {
    if (had == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value.c_str(), 1);
    }
  };
  restore("OMP_WAIT_POLICY", policy, saved_policy);
  restore("GOMP_SPINCOUNT", spin, saved_spin);
}

// ---- Execution --------------------------------------------------------------------------------

TEST(CpuBackend, ConcurrentCallsOnOneExecutableEachGetTheirOwnArena) {
  compute::BackendPtr backend = Cpu();
  Exec exec = NewExec(backend, [](Node x) {
    Node a = x * 2.0f;
    Node b = Exp(a * 0.0f) + a;            // 1 + 2x, through several arena values.
    return ReduceSum(b * x - x * x, {0});  // Σ (x + x²) over the rows.
  });
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const float v = static_cast<float>(t * 100 + i) / 64;
        Tensor x = Tensor::FromValue(std::vector<std::vector<float>>(32, std::vector<float>(16, v)));
        std::vector<float> got = exec.Call1(x).ToVector<float>();
        const float want = 32 * (v + v * v);
        for (float g : got)
          if (std::abs(g - want) > 1e-5f * std::max(1.0f, want)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CpuBackend, WhileAndIfRun) {
  Exec exec = NewExec(Cpu(), [](Node n, Node x) {
    Graph& g = n.graph();
    std::vector<Node> r = While([](const std::vector<Node>& s) { return Less(s[0], s[2]); },
                                [](const std::vector<Node>& s) {
                                  return std::vector<Node>{s[0] + 1, s[1] + s[0], s[2], s[3] * 2.0f};
                                },
                                {Scalar(g, DType::Int32, 0), Scalar(g, DType::Int32, 0), n, x});
    Node big = Greater(r[1], Scalar(g, DType::Int32, 10));
    std::vector<Node> chosen = If(
        big, [](const std::vector<Node>& v) { return std::vector<Node>{v[0] + 1.0f}; },
        [](const std::vector<Node>& v) { return std::vector<Node>{Neg(v[0])}; }, {r[3]});
    return std::vector<Node>{r[1], chosen[0]};
  });
  for (int32_t n : {0, 3, 10}) {
    std::vector<Tensor> out = exec.Call(n, std::vector<float>{1, 2});
    const int32_t sum = n * (n - 1) / 2;
    EXPECT_EQ(out[0].Item<int32_t>(), sum);
    const float scale = static_cast<float>(1 << n);
    EXPECT_EQ(out[1].ToVector<float>(), sum > 10 ? (std::vector<float>{scale + 1, 2 * scale + 1})
                                                 : (std::vector<float>{-scale, -2 * scale}));
  }
  // A loop that runs zero times returns copies of its operands.
  Exec zero = NewExec(Cpu(), [](Node x) {
    return While([](const std::vector<Node>& s) { return Less(ReduceAllSum(s[0]), ScalarLike(s[0], 0)); },
                 [](const std::vector<Node>& s) { return std::vector<Node>{s[0] * 2.0f}; }, {x})[0];
  });
  Tensor in = Tensor::FromValue(std::vector<float>{1, 2});
  Tensor out = zero.Call1(in);
  out.MutableFlatData<float>([](std::span<float> f) { f[0] = 100; });
  EXPECT_EQ(in.ToVector<float>(), (std::vector<float>{1, 2}));
}

TEST(CpuBackend, OutputsThatAliasInputsOrEachOtherAreSeparateBuffers) {
  compute::BackendPtr backend = Cpu();
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {3}));
  Node d = x * 2.0f;
  std::unique_ptr<compute::Executable> exe =
      backend->Compile(g.Build({x, d, d, Reshape(x, {3, 1}), OptimizationBarrier(d)}));
  const std::vector<float> values = {1, 2, 3};
  compute::BufferPtr in = backend->BufferFromHost(0, values.data(), 12);
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {false}, 0);
  ASSERT_EQ(out.size(), 5u);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_NE(out[i]->HostData(), in->HostData()) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(out[i]->HostData(), out[j]->HostData()) << i << " " << j;
  }
  static_cast<float*>(out[1]->HostData())[0] = -1;
  static_cast<float*>(out[0]->HostData())[0] = -1;
  std::vector<float> v(3);
  backend->BufferToHost(*out[2], v.data());
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  backend->BufferToHost(*out[4], v.data());
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  backend->BufferToHost(*out[3], v.data());
  EXPECT_EQ(v, values);
  backend->BufferToHost(*in, v.data());
  EXPECT_EQ(v, values);
}

TEST(CpuBackend, AdamsKernelWritesOverTheDonatedVariables) {
  // optimizers::AdamUpdate's kernel takes the buffers of donated parameters that no later step
  // reads and returns them as m', v' and w'; w is read again below when `keep_w`, so w' gets a
  // buffer of its own; undonated inputs are never written.
  compute::BackendPtr backend = Cpu();
  const std::vector<float> w0 = {1, -2, 3, 0.5f}, g0 = {0.5f, -4, 0.25f, 0}, z(4, 0.0f);
  for (bool keep_w : {false, true}) {
    for (bool donate : {true, false}) {
      SCOPED_TRACE(std::string(keep_w ? "w read later, " : "") + (donate ? "donated" : "not donated"));
      Graph g;
      std::vector<Node> p;
      for (int i = 0; i < 4; ++i) p.push_back(g.Parameter(Shape(DType::Float32, {4})));
      // Step 1 at lr 1: step_size = 1 / (1 - 0.9).
      std::vector<Node> r = optimizers::AdamUpdate(p[0], p[1], p[2], p[3], ScalarLike(p[0], 10.0),
                                                   ScalarLike(p[0], std::sqrt(1 - 0.999)));
      if (keep_w) r.push_back(p[0] * r[2]);
      std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build(r, std::vector<bool>(4, true)));
      std::vector<compute::BufferPtr> in = {
          backend->BufferFromHost(0, w0.data(), 16), backend->BufferFromHost(0, g0.data(), 16),
          backend->BufferFromHost(0, z.data(), 16), backend->BufferFromHost(0, z.data(), 16)};
      const std::vector<void*> before = {in[0]->HostData(), in[1]->HostData(), in[2]->HostData(),
                                         in[3]->HostData()};
      std::vector<compute::BufferPtr> out = exe->Execute(in, std::vector<bool>(4, donate), 0);
      ASSERT_EQ(out.size(), keep_w ? 4u : 3u);
      EXPECT_EQ(out[0]->HostData() == before[2], donate);             // m'
      EXPECT_EQ(out[1]->HostData() == before[3], donate);             // v'
      EXPECT_EQ(out[2]->HostData() == before[0], donate && !keep_w);  // w'
      for (const auto& o : out) EXPECT_NE(o->HostData(), before[1]);  // g is not written.
      // From zero moments each weight moves by lr against its gradient's sign (none for g = 0).
      const std::vector<float> want = {0, -1, 2, 0.5f}, product = {0, 2, 6, 0.25f};
      std::vector<float> w1(4), v(4);
      backend->BufferToHost(*out[2], w1.data());
      for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(w1[i], want[i], 1e-5f) << i;
      if (!donate) {
        backend->BufferToHost(*in[0], v.data());
        EXPECT_EQ(v, w0);
      }
      if (keep_w) {
        backend->BufferToHost(*out[3], v.data());
        for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(v[i], product[i], 1e-5f) << i;
      }
    }
  }
}

TEST(CpuBackend, OutputsOfOneTupleResultAreSeparateBuffers) {
  // A Composite's result (here its decomposition's) is a buffer of its own, handed to the first
  // output that reads it; the same result output again, or through a view, is a copy.
  compute::BackendPtr backend = Cpu();
  Graph g;
  Node x = g.Parameter(Shape(DType::Float32, {3}));
  Node r = graph::Composite("test.double", {}, {x},
                            [](const std::vector<Node>& p) { return std::vector<Node>{p[0] * 2.0f}; })[0];
  std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build({r, r, Reshape(r, {3, 1}), x}));
  const std::vector<float> values = {1, 2, 3};
  compute::BufferPtr in = backend->BufferFromHost(0, values.data(), 12);
  const int64_t live = backend->MemoryStats().live_buffers;
  std::vector<compute::BufferPtr> out = exe->Execute({in}, {false}, 0);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(backend->MemoryStats().live_buffers, live + 4);  // No tuple buffer left over.
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_NE(out[i]->HostData(), in->HostData()) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(out[i]->HostData(), out[j]->HostData()) << i << " " << j;
  }
  static_cast<float*>(out[0]->HostData())[0] = -1;
  std::vector<float> v(3);
  backend->BufferToHost(*out[1], v.data());
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  backend->BufferToHost(*out[2], v.data());
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  backend->BufferToHost(*out[0], v.data());
  EXPECT_EQ(v, (std::vector<float>{-1, 4, 6}));
}

}  // namespace

namespace {

using kiln::compute::cpu::SimdTargets;

// A chain the fused SIMD kernels run (exp, tanh, multiply-add) over 1000 elements.
std::vector<float> RunChain(const kiln::compute::BackendPtr& backend, const kiln::Tensor& x) {
  kiln::graph::Exec exec = kiln::graph::NewExec(
      backend, [](kiln::graph::Node v) { return kiln::graph::Tanh(kiln::graph::Exp(v * 0.5f)) * v + 1.0f; });
  return exec.Call(x)[0].ToVector<float>();
}

TEST(CpuSimdTarget, EachTargetTheCpuRunsGivesTheSameResults) {
  const std::vector<kiln::compute::cpu::SimdTarget> targets = SimdTargets();
  ASSERT_FALSE(targets.empty());
  const kiln::Tensor x = kiln::test::NormalTensor({1000}, 3);
  const std::vector<float> want = RunChain(kiln::compute::NewWithConfig("ref"), x);
  for (const auto& t : targets) {
    SCOPED_TRACE(t.name);
    const kiln::compute::BackendPtr backend = kiln::compute::NewWithConfig("cpu:simd=" + t.name);
    EXPECT_NE(backend->Description().find("SIMD target " + t.name), std::string::npos)
        << backend->Description();
    const std::vector<float> got = RunChain(backend, x);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::abs(want[i]))) << i;
  }
  // The variants the conformance and differential suites run: every target but the best.
  for (const kiln::compute::BackendInfo& info : kiln::compute::RegisteredBackends()) {
    if (info.name != "cpu") continue;
    EXPECT_EQ(info.variants.size(), targets.size() - 1);
    for (size_t i = 1; i < targets.size(); ++i)
      EXPECT_EQ(info.variants[i - 1], "cpu:simd=" + targets[i].name);
  }
}

TEST(CpuSimdTarget, UnknownOrUnsupportedTargetsAreErrorsNamingTheCpusTargets) {
  EXPECT_TRUE(kiln::test::Throws([] { kiln::compute::NewWithConfig("cpu:simd=avx9"); },
                                 {"simd=avx9", SimdTargets().front().name}));
}

TEST(CpuSimdTarget, BackendsOfDifferentTargetsRunConcurrently) {
  const std::vector<kiln::compute::cpu::SimdTarget> targets = SimdTargets();
  const kiln::Tensor x = kiln::test::NormalTensor({1000}, 4);
  const std::vector<float> want = RunChain(kiln::compute::NewWithConfig("ref"), x);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      const std::string config =
          k % 2 == 0 ? "cpu" : "cpu:simd=" + targets[static_cast<size_t>(k) % targets.size()].name;
      const kiln::compute::BackendPtr backend = kiln::compute::NewWithConfig(config);
      for (int i = 0; i < 20; ++i) {
        const std::vector<float> got = RunChain(backend, x);
        for (size_t j = 0; j < want.size(); ++j)
          if (std::abs(got[j] - want[j]) > 1e-5f * (1 + std::abs(want[j]))) ++bad;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  // Afterwards the kernels are back on the best target.
  std::string now = kiln::compute::cpu::FusedSimdTarget();
  std::transform(now.begin(), now.end(), now.begin(), [](unsigned char c) { return std::tolower(c); });
  EXPECT_EQ(now == "scalar" ? "hwy_scalar" : now, targets.front().name);
}

}  // namespace
