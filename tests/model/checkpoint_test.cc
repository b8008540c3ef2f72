// Tests for checkpoints (model/checkpoint.h): round trips of every dtype and of hyperparameters,
// Keep, TakeMean, resuming the global step, exclusions, damaged files, and a process killed at
// each point of the commit protocol.

#include "kiln/model/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::test::TempDir;

using namespace kiln;
namespace fs = std::filesystem;
using kiln::test::Throws;

Tensor Pattern(DType dtype, std::vector<int64_t> dims, int salt) {
  Tensor t = Tensor::FromShape(Shape(dtype, dims));
  t.MutableBytes([&](std::span<uint8_t> b) {
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = dtype == DType::Bool ? static_cast<uint8_t>((i + static_cast<size_t>(salt)) % 2)
                                  : static_cast<uint8_t>(i * 29 + static_cast<size_t>(salt) * 7 + 3);
  });
  return t;
}

TEST(Checkpoint, RoundTripsEveryDTypeAndTheHyperparameters) {
  TempDir dir;
  model::Store a;
  model::Scope root = a.RootScope();
  for (DType d : kAllDTypes)
    root.In("all").VariableWithValue(std::string(DTypeName(d)), Pattern(d, {2, 3}, 1));
  root.In("all").InspectVariable("Float32").SetTrainable(false);
  root.SetParam("learning_rate", 0.001);
  root.In("dense").SetParam("units", 64);
  root.SetParam("optimizer", "adam");
  root.SetParam("use_bias", true);
  root.SetParam("dims", std::vector<int64_t>{3, 4});
  checkpoint::Handler h = checkpoint::Build(a).Dir(dir.str()).Done();
  const std::string name = h.Save();
  EXPECT_EQ(name, "checkpoint-n0000000-step-00000000");
  EXPECT_TRUE(fs::exists(dir / (name + ".safetensors")));
  EXPECT_TRUE(fs::exists(dir / (name + ".json")));

  model::Store b;
  checkpoint::Build(b).Dir(dir.str()).Done();  // Loads at once.
  ASSERT_EQ(b.Variables().size(), a.Variables().size());
  for (const model::Variable& v : a.Variables()) {
    model::Variable w = b.GetVariable(v.Path());
    EXPECT_EQ(w.shape(), v.shape()) << v.Path();
    EXPECT_TRUE(w.Value().Equal(v.Value())) << v.Path();
    EXPECT_EQ(w.Trainable(), v.Trainable()) << v.Path();
  }
  EXPECT_EQ(model::GetParamOr(b.RootScope(), "learning_rate", 0.0), 0.001);
  EXPECT_EQ(model::GetParamOr(b.RootScope().In("dense"), "units", 0), 64);
  EXPECT_EQ(model::GetParamOr(b.RootScope(), "optimizer", ""), "adam");
  EXPECT_EQ(model::GetParamOr(b.RootScope(), "use_bias", false), true);
  EXPECT_EQ(model::GetParamOr(b.RootScope(), "dims", std::vector<int64_t>{}), (std::vector<int64_t>{3, 4}));
  // A later VariableWithValue for a loaded path returns it, ignoring the initial value.
  model::Variable f =
      b.RootScope().In("all").VariableWithValue("Float64", Pattern(DType::Float64, {2, 3}, 9));
  EXPECT_TRUE(f.Value().Equal(Pattern(DType::Float64, {2, 3}, 1)));
}

TEST(Checkpoint, KeepDeletesTheOldestAndSequenceNumbersIncrease) {
  TempDir dir;
  model::Store s;
  model::Variable v = s.RootScope().VariableWithValue("x", 1.0f);
  checkpoint::Handler h = checkpoint::Build(s).Dir(dir.str()).Keep(2).Done();
  for (int i = 0; i < 4; ++i) {
    v.SetValue(Tensor::FromScalar<float>(static_cast<float>(i)));
    h.Save();
  }
  EXPECT_EQ(h.ListCheckpoints(), (std::vector<std::string>{"checkpoint-n0000002-step-00000000",
                                                           "checkpoint-n0000003-step-00000000"}));
  int files = 0;
  for (const auto& f : fs::directory_iterator(dir.str())) files += f.is_regular_file();
  EXPECT_EQ(files, 4);
  model::Store t;
  checkpoint::Build(t).Dir(dir.str()).Done();
  EXPECT_EQ(t.GetVariable("/x").Value().Item<float>(), 3.0f);
}

TEST(Checkpoint, TakeMeanAveragesTheNewestFloatVariables) {
  TempDir dir;
  model::Store s;
  model::Variable x = s.RootScope().VariableWithValue("x", std::vector<float>{0, 10});
  model::Variable n = s.RootScope().VariableWithValue("n", int32_t(0));
  checkpoint::Handler h = checkpoint::Build(s).Dir(dir.str()).Done();
  for (int i = 1; i <= 3; ++i) {
    x.SetValue(Tensor::FromValue(std::vector<float>{static_cast<float>(i), static_cast<float>(10 * i)}));
    n.SetValue(Tensor::FromScalar<int32_t>(i));
    h.Save();
  }
  model::Store m;
  checkpoint::Build(m).Dir(dir.str()).TakeMean(2).Done();
  EXPECT_EQ(m.GetVariable("/x").Value().ToVector<float>(), (std::vector<float>{2.5f, 25.0f}));
  EXPECT_EQ(m.GetVariable("/n").Value().Item<int32_t>(), 3);  // Non-float: the newest.
  model::Store all;
  checkpoint::Build(all).Dir(dir.str()).Average(10).Done();  // Fewer exist: all of them.
  EXPECT_EQ(all.GetVariable("/x").Value().ToVector<float>(), (std::vector<float>{2.0f, 20.0f}));
}

TEST(Checkpoint, ResumesTheGlobalStepAndHonoursExclusions) {
  TempDir dir;
  model::Store s;
  s.GlobalStep().SetValue(Tensor::FromScalar<int64_t>(500));
  s.RootScope().In("opt").VariableWithValue("m", std::vector<float>{1, 2});
  s.RootScope().VariableWithValue("w", std::vector<float>{3, 4});
  s.SetParam("learning_rate", 0.1);
  s.SetParam("batch", 32);
  const std::string name = checkpoint::Build(s).Dir(dir.str()).Done().Save();
  EXPECT_EQ(name, "checkpoint-n0000000-step-00000500");
  model::Store r;
  r.SetParam("learning_rate", 0.5);
  r.SetParam("batch", 8);
  checkpoint::Build(r).Dir(dir.str()).ExcludeParams({"learning_rate"}).ExcludeVars("/opt/*").Done();
  EXPECT_EQ(r.GetVariable("/global_step").Value().Item<int64_t>(), 500);
  EXPECT_FALSE(r.FindVariable("/opt/m").Ok());
  EXPECT_TRUE(r.FindVariable("/w").Ok());
  EXPECT_EQ(model::GetParamOr(r.RootScope(), "learning_rate", 0.0), 0.5);
  EXPECT_EQ(model::GetParamOr(r.RootScope(), "batch", 0), 32);
  EXPECT_TRUE(checkpoint::MatchesPattern("/opt/adam/m", "/opt/*"));
  EXPECT_TRUE(checkpoint::MatchesPattern("/a/b", "*b"));
  EXPECT_FALSE(checkpoint::MatchesPattern("/w", "/opt/*"));
}

TEST(Checkpoint, MismatchesAndDamageAreErrors) {
  TempDir dir;
  model::Store s;
  s.RootScope().VariableWithValue("w", std::vector<float>{1, 2, 3, 4});
  const std::string name = checkpoint::Build(s).Dir(dir.str()).Done().Save();
  model::Store other;
  other.RootScope().VariableWithValue("w", std::vector<float>{1, 2});
  EXPECT_TRUE(Throws([&] { checkpoint::Build(other).Dir(dir.str()).Done(); }, {"\"/w\"", "[4]", "[2]"}));
  // Flip a byte of the tensor data: the checksum names the file and the tensor.
  const std::string weights = dir / (name + ".safetensors");
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-3, std::ios::end);
    char c = 0;
    f.read(&c, 1);
    f.seekp(-3, std::ios::end);
    c = static_cast<char>(c ^ 0x40);
    f.write(&c, 1);
  }
  model::Store fresh;
  EXPECT_TRUE(
      Throws([&] { checkpoint::Build(fresh).Dir(dir.str()).Done(); }, {weights, "\"/w\"", "damaged"}));
  // Truncated: the size in the record no longer matches.
  fs::resize_file(weights, fs::file_size(weights) - 4);
  EXPECT_TRUE(Throws([&] { checkpoint::Build(fresh).Dir(dir.str()).Done(); }, {weights, "bytes"}));
  TempDir empty;
  EXPECT_TRUE(Throws([&] { checkpoint::Build(fresh).Dir(empty.str()).Done().Load(); }, {"no checkpoint"}));
  EXPECT_TRUE(Throws([&] { checkpoint::Build(fresh).Done(); }, {"Dir"}));
}

// A child process saves a second checkpoint and is killed (SIGKILL) at `point`; the folder must
// then load either the first checkpoint or the second, intact.
void KillDuringSave(const std::string& point, bool expect_new) {
  TempDir dir;
  {
    model::Store s;
    s.RootScope().VariableWithValue("w", std::vector<float>{1, 1, 1});
    checkpoint::Build(s).Dir(dir.str()).Keep(1).Done().Save();
  }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    model::Store s;
    checkpoint::Handler h = checkpoint::Build(s).Dir(dir.str()).Keep(1).Done();
    s.GetVariable("/w").SetValue(Tensor::FromValue(std::vector<float>{2, 2, 2}));
    h.SetProtocolHook([&](std::string_view p) {
      if (p == point) raise(SIGKILL);
    });
    h.Save();
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << point << ": the child was not killed";
  model::Store r;
  checkpoint::Handler h = checkpoint::Build(r).Dir(dir.str()).Keep(1).Done();
  EXPECT_EQ(r.GetVariable("/w").Value().ToVector<float>(),
            (expect_new ? std::vector<float>{2, 2, 2} : std::vector<float>{1, 1, 1}))
      << point;
  // Saving again after the crash works and numbers keep increasing.
  const std::string next = h.Save();
  EXPECT_EQ(next.rfind("checkpoint-n0000002", 0), 0u) << point << ": " << next;
  EXPECT_EQ(h.ListCheckpoints().back(), next);
}

TEST(Checkpoint, AKilledSaveLeavesALoadableCheckpoint) {
  KillDuringSave("weights written", false);
  KillDuringSave("record written", false);
  KillDuringSave("weights renamed", false);
  KillDuringSave("record renamed", true);
  KillDuringSave("folder synced", true);
  KillDuringSave("old record deleted", true);
  KillDuringSave("old weights deleted", true);
}

}  // namespace
