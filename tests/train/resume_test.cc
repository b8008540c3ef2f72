// Kill-and-resume of the main job (examples/fashion_mnist, the MLP in 160 small steps):
// a run killed with SIGKILL after its first checkpoint restarts from the newest checkpoint's
// global step and finishes; and a run stopped halfway and resumed ends where an uninterrupted
// run does.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

extern char** environ;

namespace {

using kiln::test::TempDir;
namespace fs = std::filesystem;

/// Starts the main job with `args`, its stdout and stderr going to `log`; returns its pid.
pid_t Start(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> all = {KILN_FASHION_MNIST_BIN};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "posix_spawn " << argv[0];
  return rc == 0 ? pid : -1;
}

std::string Read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs the main job to its end; returns its output (a failed exit fails the test).
std::string RunToEnd(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = Start(args, log);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string out = Read(log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "fashion_mnist failed:\n" << out;
  return out;
}

/// The first match of `re`'s group 1 in `text`, or "" (a failed expectation).
std::string Find(const std::string& text, const std::string& re) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex(re))) return m[1].str();
  ADD_FAILURE() << "no match for " << re << " in:\n" << text;
  return "";
}

/// The committed checkpoints (their JSON records) in `dir`, by name.
std::vector<std::string> Checkpoints(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.starts_with("checkpoint-") && n.ends_with(".json")) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// Common flags: the MLP, small batches, two threads, a fixed seed, files in `dir`.
std::vector<std::string> Flags(const TempDir& dir, int steps, const std::string& ckpt) {
  return {"--model=mlp",
          "--batch=64",
          "--steps=" + std::to_string(steps),
          "--ckpt=" + dir / ckpt,
          "--ckpt_every=20",
          "--eval_every=0",
          "--backend=cpu:threads=2",
          "--seed=3",
          "--plot=" + dir / (ckpt + ".html")};
}

TEST(Resume, KilledRunRestartsFromItsLastCheckpoint) {
  TempDir dir;
  const int total = 160;
  const std::string ckpt = dir / "ckpt";
  const pid_t pid = Start(Flags(dir, total, "ckpt"), dir / "first.log");
  ASSERT_GT(pid, 0);
  // Waits for the first committed checkpoint (its record), then kills without warning.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (Checkpoints(ckpt).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string first = Read(dir / "first.log");
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the first run was not killed mid-training:\n"
      << first;
  ASSERT_FALSE(Checkpoints(ckpt).empty());
  EXPECT_EQ(first.find("test accuracy"), std::string::npos);

  // The newest checkpoint at restart is where the second run must go on from.
  const std::vector<std::string> saved = Checkpoints(ckpt);
  const int64_t saved_step = std::stoll(Find(saved.back(), "-step-0*([0-9]+)\\.json$"));
  EXPECT_GT(saved_step, 0);
  EXPECT_LT(saved_step, total);
  EXPECT_EQ(saved_step % 20, 0);

  const std::string second = RunToEnd(Flags(dir, total, "ckpt"), dir / "second.log");
  EXPECT_EQ(std::stoll(Find(second, "resuming from checkpoint-n[0-9]+-step-[0-9]+ at global step ([0-9]+)")),
            saved_step);
  // Its first progress line is past the resumed step, its last at the total.
  const int64_t first_progress = std::stoll(Find(second, "\nstep ([0-9]+)/160 "));
  EXPECT_GT(first_progress, saved_step);
  EXPECT_NE(second.find("\nstep 160/160 (100%)"), std::string::npos) << second;
  const float acc = std::stof(Find(second, "test accuracy: ([0-9.]+)"));
  EXPECT_GT(acc, 0.6f);
  EXPECT_NE(Checkpoints(ckpt).back().find("-step-00000160.json"), std::string::npos);
}

TEST(Resume, ResumedRunEndsLikeAnUninterruptedOne) {
  TempDir dir;
  const std::string whole = RunToEnd(Flags(dir, 60, "whole"), dir / "whole.log");
  const std::string half = RunToEnd(Flags(dir, 30, "parts"), dir / "half.log");
  EXPECT_NE(half.find("test accuracy"), std::string::npos);
  const std::string rest = RunToEnd(Flags(dir, 60, "parts"), dir / "rest.log");
  EXPECT_NE(rest.find("at global step 30\n"), std::string::npos) << rest;
  const float whole_loss = std::stof(Find(whole, "test loss: ([0-9.]+)"));
  const float whole_acc = std::stof(Find(whole, "test accuracy: ([0-9.]+)"));
  const float resumed_loss = std::stof(Find(rest, "test loss: ([0-9.]+)"));
  const float resumed_acc = std::stof(Find(rest, "test accuracy: ([0-9.]+)"));
  // The resumed run restores the weights, the optimizer's state and the random-number state, and
  // skips the batches already seen: it trains on the same data as the uninterrupted run.
  // Same backend and thread count: the two end alike (to one test example in 10000).
  EXPECT_NEAR(resumed_loss, whole_loss, 1e-4 * whole_loss);
  EXPECT_NEAR(resumed_acc, whole_acc, 1e-4);
  EXPECT_GT(whole_acc, 0.6f);
}

}  // namespace
