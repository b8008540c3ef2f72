// Tests of the cpu backend's program team (backends/cpu/team.h): every part of a job runs once,
// on the lead or a spinning helper, helpers wake after sleeping, errors reach the lead, SplitAcrossTeam and
// the matmul's row blocks use the team, whole programs on a team agree with ref and with the same
// program without a team, give the same bits on every run and when several threads run them at
// once, and programs with a kernel that spreads its work over threads of its own run without a
// team.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/cpu/team.h"
#include "backends/cpu/team_split.h"
#include "backends/cpu_test_util.h"
#include "kiln/graph/gradient.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

using compute::cpu::ProgramTeam;
using compute::cpu::RunOnTeam;
using compute::cpu::SplitAcrossTeam;
using graph::Node;
using kiln::test::Close;
using kiln::test::RandomUniform;

TEST(CpuTeam, RunsEveryPartOnceOnWhicheverThreadClaimsIt) {
  const std::thread::id lead = std::this_thread::get_id();
  int size = 0, jobs = 0;
  std::vector<int> runs(2, 0);
  int on_helper = 0, wrong_count = 0;
  RunOnTeam(2, [&] {
    ProgramTeam* team = ProgramTeam::Current();
    ASSERT_NE(team, nullptr);
    size = team->size();
    // At least 2000 jobs, and more until the helper has run a part (on a loaded machine the lead
    // may claim every part of many jobs before the helper gets a core).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int j = 0; j < 2000 || (on_helper == 0 && std::chrono::steady_clock::now() < deadline);
         ++j, ++jobs) {
      std::atomic<int> helper_parts{0};
      team->Run([&](int part, int count) {
        if (count != 2) ++wrong_count;
        ++runs[static_cast<size_t>(part)];  // Parts touch only their own slot.
        if (std::this_thread::get_id() != lead) ++helper_parts;
        // Long enough for a spinning helper to claim the other part first.
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
        while (std::chrono::steady_clock::now() < until) {
        }
        // Inside a part the thread leads no team.
        if (ProgramTeam::Current() != nullptr || !ProgramTeam::InPart()) ++wrong_count;
      });
      on_helper += helper_parts.load();
    }
  });
  EXPECT_EQ(ProgramTeam::Current(), nullptr);  // Only inside RunOnTeam.
  EXPECT_FALSE(ProgramTeam::InPart());
  ASSERT_EQ(size, 2);
  EXPECT_EQ(runs[0], jobs);
  EXPECT_EQ(runs[1], jobs);
  EXPECT_EQ(wrong_count, 0);
  // The helper spins between jobs, so it takes a share of them.
  EXPECT_GT(on_helper, 0);
}

TEST(CpuTeam, WaitingThreadsWakeAfterSleeping) {
  // Gaps far longer than the spinning (200 us) put the other thread to sleep between jobs.
  std::vector<int> seen;
  RunOnTeam(2, [&] {
    ProgramTeam* team = ProgramTeam::Current();
    ASSERT_NE(team, nullptr);
    for (int j = 0; j < 4; ++j) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::atomic<int> parts{0};
      team->Run([&](int, int) { ++parts; });
      seen.push_back(parts.load());
    }
  });
  EXPECT_EQ(seen, std::vector<int>(4, 2));
}

TEST(CpuTeam, ErrorsReachTheLeadAndTheTeamGoesOn) {
  std::string message;
  int after = 0;
  RunOnTeam(2, [&] {
    ProgramTeam* team = ProgramTeam::Current();
    ASSERT_NE(team, nullptr);
    try {
      team->Run([](int id, int) {
        if (id == 1) throw std::runtime_error("part 1 failed");
      });
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    std::atomic<int> parts{0};
    team->Run([&](int, int) { ++parts; });
    after = parts.load();
  });
  EXPECT_EQ(message, "part 1 failed");
  EXPECT_EQ(after, 2);
  // An error on the lead leaves RunOnTeam, after the others are released.
  EXPECT_THROW(RunOnTeam(2, [] { throw std::invalid_argument("lead failed"); }), std::invalid_argument);
  EXPECT_EQ(ProgramTeam::Current(), nullptr);
}

/// Threads of this process (/proc/self/task).
int ProcessThreads() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

TEST(CpuTeam, HelpersStayBetweenExecutionsAndLeaveWithTheirLead) {
  const int before = ProcessThreads();
  std::set<std::thread::id> helpers;
  int alive = 0;
  std::thread caller([&] {
    const std::thread::id lead = std::this_thread::get_id();
    std::mutex mu;
    for (int call = 0; call < 2; ++call) {
      RunOnTeam(2, [&] {
        // Jobs until the helper has run a part of this execution (at least 200; on a loaded
        // machine the lead may claim every part of many jobs before the helper gets a core).
        bool served = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (int j = 0; j < 200 || (!served && std::chrono::steady_clock::now() < deadline); ++j) {
          ProgramTeam::Current()->Run([&](int, int) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
            while (std::chrono::steady_clock::now() < until) {
            }
            const std::lock_guard<std::mutex> lock(mu);
            if (std::this_thread::get_id() != lead) {
              helpers.insert(std::this_thread::get_id());
              served = true;
            }
          });
        }
      });
    }
    alive = ProcessThreads();
  });
  caller.join();
  // One helper served both executions; it was running beside its lead, and left with it.
  EXPECT_EQ(helpers.size(), 1u);
  EXPECT_EQ(alive, before + 2);
  EXPECT_EQ(ProcessThreads(), before);
}

/// The scheduler state of thread `tid` of this process ('R' running or runnable, 'S' asleep...).
char ThreadState(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

/// Runs jobs on a team of 2 whose helpers spin `spin_micros`, and returns the helper's thread id
/// (from a part it ran) and its state `after` the last job, read on the lead.
std::pair<pid_t, char> HelperStateAfterJobs(int spin_micros, std::chrono::milliseconds after) {
  pid_t helper = 0;
  char state = '?';
  std::thread caller([&] {
    const pid_t lead = gettid();
    std::atomic<pid_t> seen{0};
    RunOnTeam(
        2,
        [&] {
          // Jobs until the helper runs a part (on a loaded machine the lead may claim every
          // part of many jobs before the helper gets a core).
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (seen.load() == 0 && std::chrono::steady_clock::now() < deadline) {
            ProgramTeam::Current()->Run([&](int, int) {
              const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
              while (std::chrono::steady_clock::now() < until) {
              }
              if (gettid() != lead) seen.store(gettid());
            });
          }
        },
        spin_micros);
    helper = seen.load();
    if (helper == 0) return;
    // A sleeping helper is in state S at once; a spinning one stays R. Poll for a while so that
    // a helper the lead's core kept from running yet still reaches its sleep.
    const auto until = std::chrono::steady_clock::now() + after;
    do {
      state = ThreadState(helper);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } while (state != 'S' && std::chrono::steady_clock::now() < until);
  });
  caller.join();
  return {helper, state};
}

TEST(CpuTeam, HelpersSpinAsLongAsTheTeamSpinSaysThenSleep) {
  // team_spin=0: the helper sleeps right after its part.
  const auto [sleeper, asleep] = HelperStateAfterJobs(0, std::chrono::milliseconds(2000));
  ASSERT_NE(sleeper, 0) << "the helper ran no part";
  EXPECT_EQ(asleep, 'S');
  // A one-second spin keeps it running (R) through the 300 ms the lead watches it.
  const auto [spinner, awake] =
      HelperStateAfterJobs(kiln::compute::cpu::kMaxTeamSpinMicros, std::chrono::milliseconds(300));
  ASSERT_NE(spinner, 0) << "the helper ran no part";
  EXPECT_EQ(awake, 'R');
}

TEST(CpuTeam, AChildOfForkStartsTeamsOfItsOwn) {
  // The parent's helpers do not exist in a child of fork(): the lead runs every part of its jobs
  // itself instead of waiting for them. (The child leaves through _exit: the helpers' thread
  // data, unreachable there, would count as leaks under LeakSanitizer.)
  RunOnTeam(2, [] { ProgramTeam::Current()->Run([](int, int) {}); });
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<int> parts{0};
    RunOnTeam(2, [&] { ProgramTeam::Current()->Run([&](int, int) { ++parts; }); });
    _exit(parts.load() == 2 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CpuTeam, SplitAcrossTeamRunsItsRangesOnTheTeam) {
  std::vector<int> covered_by(100, 0);
  std::vector<std::pair<int64_t, int64_t>> ranges(2, {-1, -1});
  std::atomic<int> nested_calls{0}, nested_units{0};
  RunOnTeam(2, [&] {
    SplitAcrossTeam(100, 2, true, [&](int64_t first, int64_t last) {
      ranges[first == 0 ? 0 : 1] = {first, last};
      for (int64_t i = first; i < last; ++i) ++covered_by[static_cast<size_t>(i)];
      // Inside a part a split runs in place, as one range.
      SplitAcrossTeam(10, 2, true, [&](int64_t f, int64_t l) {
        ++nested_calls;
        nested_units += static_cast<int>(l - f);
      });
    });
  });
  EXPECT_EQ(covered_by, std::vector<int>(100, 1));
  EXPECT_EQ(ranges[0], std::make_pair(int64_t{0}, int64_t{50}));
  EXPECT_EQ(ranges[1], std::make_pair(int64_t{50}, int64_t{100}));
  EXPECT_EQ(nested_calls.load(), 2);
  EXPECT_EQ(nested_units.load(), 20);
  // Outside a team it covers the range as before.
  std::atomic<int> covered{0};
  SplitAcrossTeam(100, 2, true,
                  [&](int64_t first, int64_t last) { covered += static_cast<int>(last - first); });
  EXPECT_EQ(covered.load(), 100);
}

using Fn = std::function<std::vector<Node>(const std::vector<Node>&)>;

Node Relu(Node x) { return graph::MaxScalar(x, 0.0f); }

/// The steps summary of `fn`'s program compiled on `config` (KILN_CPU_DUMP), and its results.
std::string DumpOf(const std::string& config, const Fn& fn, const std::vector<Tensor>& inputs,
                   std::vector<Tensor>* results) {
  setenv("KILN_CPU_DUMP", "1", 1);
  compute::BackendPtr backend = compute::NewWithConfig(config);
  unsetenv("KILN_CPU_DUMP");
  graph::Exec exec = graph::NewExec(backend, fn);
  ::testing::internal::CaptureStderr();
  *results = exec.Call(inputs);
  return ::testing::internal::GetCapturedStderr();
}

TEST(CpuTeam, ProductsSplitIntoRowBlocksAgreeWithRef) {
  // The forms a dense layer's step uses: a plain product with a bias and ReLU (the primitive's
  // bias and the loop after it), an input gradient (right side transposed), weight gradients
  // (left side transposed: sgemm), and an odd row count (blocks of 18 and 19 rows).
  struct Form {
    std::string name;
    std::vector<int64_t> a, b;
    Fn fn;
    int64_t terms;
  };
  // a·b contracting lhs axes `lc` with rhs axes `rc`.
  const auto contract = [](std::vector<int> lc, std::vector<int> rc) -> Fn {
    return [lc, rc](const std::vector<Node>& p) {
      return std::vector<Node>{graph::DotGeneral(p[0], lc, {}, p[1], rc, {})};
    };
  };
  const std::vector<Form> forms = {
      {"dense",
       {96, 200},
       {200, 64},
       [](const std::vector<Node>& p) { return std::vector<Node>{Relu(graph::MatMul(p[0], p[1]) + 0.25f)}; },
       200},
      {"input gradient", {96, 64}, {200, 64}, contract({1}, {1}), 64},
      {"weight gradient", {96, 200}, {96, 64}, contract({0}, {0}), 96},
      {"odd rows",
       {37, 300},
       {300, 90},
       [](const std::vector<Node>& p) { return std::vector<Node>{graph::MatMul(p[0], p[1])}; },
       300},
  };
  for (const Form& f : forms) {
    SCOPED_TRACE(f.name);
    // The form twice, on x and on 2x: a team takes programs of two or more sizeable kernels.
    const Fn twice = [&f](const std::vector<Node>& p) {
      return std::vector<Node>{f.fn(p)[0], f.fn({p[0] * 2.0f, p[1]})[0]};
    };
    const std::vector<Tensor> in = {RandomUniform(f.a, 1), RandomUniform(f.b, 2)};
    std::vector<Tensor> team, plain;
    const std::string dump = DumpOf("cpu:threads=2,serial_work=0", twice, in, &team);
    DumpOf("cpu:threads=2,serial_work=0,team=false", twice, in, &plain);
    EXPECT_NE(dump.find("on a team of 2"), std::string::npos) << dump;
    // (The input gradient, its right side transposed, splits its result's columns.)
    EXPECT_NE(dump.find(f.name == "input gradient" ? "(2 column blocks)" : "(2 row blocks)"),
              std::string::npos)
        << dump;
    const std::vector<Tensor> want = graph::NewExec(kiln::test::Backend("ref"), twice).Call(in);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_TRUE(Close(team[k], want[k], f.terms)) << k;
      EXPECT_TRUE(Close(plain[k], want[k], f.terms)) << k;
    }
  }
  // A program of one sizeable kernel runs it on a team too (its helpers spin between calls, where
  // the kernel's own OpenMP region would wake a sleeping thread each time), with ref's values.
  std::vector<Tensor> one;
  const std::vector<Tensor> one_in = {RandomUniform(forms[0].a, 1), RandomUniform(forms[0].b, 2)};
  const std::string dump = DumpOf("cpu:threads=2,serial_work=0", forms[0].fn, one_in, &one);
  EXPECT_NE(dump.find("on a team of 2"), std::string::npos) << dump;
  EXPECT_NE(dump.find("(2 row blocks)"), std::string::npos) << dump;
  EXPECT_TRUE(
      Close(one[0], graph::NewExec(kiln::test::Backend("ref"), forms[0].fn).Call(one_in)[0], forms[0].terms));
}

TEST(CpuTeam, SmallProgramsSplitMatrixVectorProductsIntoContractionBlocks) {
  // A dense network at batch 1 and 5 is a small program (its kernels run on the calling thread),
  // but its larger products split their contraction over a team: on a team of 2, the same bits
  // every run, within float32 error of ref and of the same program without a team. An input
  // gradient (right side transposed) and a weight gradient (left side transposed) of a few rows
  // split too.
  struct Form {
    std::string name;
    std::vector<std::vector<int64_t>> shapes;
    Fn fn;
    size_t blocks;  ///< Products split into contraction blocks.
    int64_t terms;
  };
  const Fn dense = [](const std::vector<Node>& p) {
    Node h = Relu(graph::MatMul(p[0], p[1]) + graph::Reshape(p[2], {1, 256}));
    return std::vector<Node>{graph::MatMul(h, p[3])};
  };
  const std::vector<int64_t> w1 = {300, 256}, b1 = {256}, w2 = {256, 300};
  const std::vector<Form> forms = {
      {"batch 1", {{1, 300}, w1, b1, w2}, dense, 2, 300},
      {"batch 5", {{5, 300}, w1, b1, w2}, dense, 2, 300},
      {"input gradient (right side transposed)",
       {{3, 300}, {256, 300}},
       [](const std::vector<Node>& p) {
         return std::vector<Node>{graph::DotGeneral(p[0], {1}, {}, p[1], {1}, {})};
       },
       1,
       300},
      {"weight gradient",
       {{300, 3}, {300, 256}},
       [](const std::vector<Node>& p) {
         return std::vector<Node>{graph::DotGeneral(p[0], {0}, {}, p[1], {0}, {})};
       },
       1,
       300},
  };
  for (const Form& f : forms) {
    SCOPED_TRACE(f.name);
    std::vector<Tensor> in;
    for (size_t i = 0; i < f.shapes.size(); ++i)
      in.push_back(RandomUniform(f.shapes[i], static_cast<uint32_t>(20 + i)));
    std::vector<Tensor> first, second, plain;
    // serial_work as under OMP_WAIT_POLICY=PASSIVE, whatever the environment.
    const std::string dump = DumpOf("cpu:threads=2,serial_work=8388608", f.fn, in, &first);
    DumpOf("cpu:threads=2,serial_work=8388608", f.fn, in, &second);
    const std::string plain_dump = DumpOf("cpu:threads=2,serial_work=8388608,team=false", f.fn, in, &plain);
    EXPECT_NE(dump.find("(a small program) on a team of 2"), std::string::npos) << dump;
    size_t blocks = 0;
    for (size_t at = dump.find("(2 contraction blocks)"); at != std::string::npos;
         at = dump.find("(2 contraction blocks)", at + 1))
      ++blocks;
    EXPECT_EQ(blocks, f.blocks) << dump;
    EXPECT_EQ(plain_dump.find("contraction blocks"), std::string::npos) << plain_dump;
    // Without a team too, so few rows go through sgemm (faster there than oneDNN's primitive).
    EXPECT_NE(plain_dump.find("kernel dnnl.sgemm"), std::string::npos) << plain_dump;
    const std::vector<Tensor> want = graph::NewExec(kiln::test::Backend("ref"), f.fn).Call(in);
    EXPECT_EQ(first[0].ToVector<float>(), second[0].ToVector<float>());
    EXPECT_TRUE(Close(first[0], want[0], f.terms));
    EXPECT_TRUE(Close(plain[0], want[0], f.terms));
  }
}

TEST(CpuTeam, ContractionBlocksRunWholeInAProgramWithoutATeam) {
  // Beside a two-thread convolution (oneDNN's own threads) the program runs without a team, and
  // a product with contraction blocks runs as one call.
  const Fn fn = [](const std::vector<Node>& p) {
    Node c = graph::Convolve(p[0], p[1]).PadSame().Done();
    return std::vector<Node>{c, Relu(graph::MatMul(p[2], p[3]))};
  };
  const std::vector<Tensor> in = {RandomUniform({16, 28, 28, 8}, 30), RandomUniform({5, 5, 8, 16}, 31),
                                  RandomUniform({1, 512}, 32), RandomUniform({512, 512}, 33)};
  std::vector<Tensor> got;
  const std::string dump = DumpOf("cpu:threads=2,serial_work=0", fn, in, &got);
  EXPECT_NE(dump.find("(2 contraction blocks)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("on a team"), std::string::npos) << dump;
  const std::vector<Tensor> want = graph::NewExec(kiln::test::Backend("ref"), fn).Call(in);
  EXPECT_TRUE(Close(got[0], want[0], 200));
  EXPECT_TRUE(Close(got[1], want[1], 512));
}

TEST(CpuTeam, TrainingStepsOnATeamAreReproducibleAndAgreeWithoutOne) {
  // Three steps of a two-layer network's plain gradient descent: the same bits on every run,
  // and within float32 error of the same program run without a team.
  const Fn step = [](const std::vector<Node>& p) {
    Node x = p[0], w1 = p[1], w2 = p[2];
    for (int i = 0; i < 3; ++i) {
      Node h = Relu(graph::MatMul(x, w1));
      Node loss = graph::ReduceAllSum(graph::Square(graph::MatMul(h, w2))) * (1.0f / 4096.0f);
      const std::vector<Node> g = graph::Gradient(loss, {w1, w2});
      w1 = w1 - g[0] * 0.05f;
      w2 = w2 - g[1] * 0.05f;
    }
    return std::vector<Node>{w1, w2};
  };
  const std::vector<Tensor> in = {RandomUniform({128, 256}, 3), RandomUniform({256, 128}, 4),
                                  RandomUniform({128, 32}, 5)};
  std::vector<Tensor> first, second, plain;
  const std::string dump = DumpOf("cpu:threads=2,serial_work=0", step, in, &first);
  EXPECT_NE(dump.find("on a team of 2"), std::string::npos) << dump;
  DumpOf("cpu:threads=2,serial_work=0", step, in, &second);
  DumpOf("cpu:threads=2,serial_work=0,team=false", step, in, &plain);
  const std::vector<Tensor> want = graph::NewExec(kiln::test::Backend("ref"), step).Call(in);
  for (size_t k = 0; k < first.size(); ++k) {
    EXPECT_EQ(first[k].ToVector<float>(), second[k].ToVector<float>()) << k;
    EXPECT_TRUE(Close(first[k], plain[k], 256)) << k;
    EXPECT_TRUE(Close(first[k], want[k], 256)) << k;
  }
}

TEST(CpuTeam, ConcurrentExecutionsEachLeadTheirOwnTeam) {
  // Four threads run one team program at once, ten times each: every result is the one a single
  // execution gives, bit for bit (each calling thread leads a team of its own).
  const Fn dense = [](const std::vector<Node>& p) {
    Node h = Relu(graph::MatMul(p[0], p[1]));
    return std::vector<Node>{graph::MatMul(h, p[2])};
  };
  const std::vector<Tensor> in = {RandomUniform({128, 256}, 10), RandomUniform({256, 128}, 11),
                                  RandomUniform({128, 64}, 12)};
  std::vector<Tensor> alone;
  const std::string dump = DumpOf("cpu:threads=2,serial_work=0", dense, in, &alone);
  ASSERT_NE(dump.find("on a team of 2"), std::string::npos) << dump;
  graph::Exec exec = graph::NewExec(kiln::test::Backend("cpu:threads=2,serial_work=0"), dense);
  const std::vector<float> want = alone[0].ToVector<float>();
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        if (exec.Call(in)[0].ToVector<float>() != want) ++wrong;
      }
    });
  }
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CpuTeam, ProgramsWithKernelsOnThreadsOfTheirOwnRunWithoutATeam) {
  // Two-thread convolutions are oneDNN calls over OpenMP threads of their own (winograd=false:
  // the second would run as Winograd's, split through kiln): a program of two keeps today's
  // regions. With team=false no program uses a team, two products neither. (Both
  // programs have two sizeable kernels, so each would run on a team otherwise.)
  const Fn convs = [](const std::vector<Node>& p) {
    Node h = Relu(graph::Convolve(p[0], p[1]).PadSame().Done());
    return std::vector<Node>{graph::Convolve(h, p[2]).PadSame().Done()};
  };
  const std::vector<Tensor> in = {RandomUniform({16, 28, 28, 8}, 6), RandomUniform({5, 5, 8, 16}, 7),
                                  RandomUniform({5, 5, 16, 16}, 8)};
  std::vector<Tensor> got;
  std::string dump = DumpOf("cpu:threads=2,serial_work=0,winograd=false", convs, in, &got);
  EXPECT_NE(dump.find("2 threads\n"), std::string::npos) << dump;
  EXPECT_TRUE(Close(got[0], graph::NewExec(kiln::test::Backend("ref"), convs).Call(in)[0], 400));
  const Fn dense = [](const std::vector<Node>& p) {
    return std::vector<Node>{graph::MatMul(Relu(graph::MatMul(p[0], p[1])), p[2])};
  };
  const std::vector<Tensor> dense_in = {RandomUniform({128, 256}, 9), RandomUniform({256, 128}, 10),
                                        RandomUniform({128, 64}, 11)};
  ASSERT_NE(DumpOf("cpu:threads=2,serial_work=0", dense, dense_in, &got).find("on a team of 2"),
            std::string::npos);
  dump = DumpOf("cpu:threads=2,serial_work=0,team=false", dense, dense_in, &got);
  EXPECT_NE(dump.find("2 threads\n"), std::string::npos) << dump;
  EXPECT_TRUE(Close(got[0], graph::NewExec(kiln::test::Backend("ref"), dense).Call(dense_in)[0], 256));
}

}  // namespace
}  // namespace kiln
