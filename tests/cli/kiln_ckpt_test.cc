// Tests for the kiln-ckpt command (cli/kiln_ckpt.cc) and the checkpoint reading API under it
// (checkpoint::List, checkpoint::Read): listing, the variables table with its statistics, printing
// a variable, diffs, and what a user sees for a missing folder, an unknown variable or a damaged
// checkpoint.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
namespace fs = std::filesystem;
using kiln::test::TempDir;

struct Result {
  int status = -1;
  std::string out;  // Standard output and error together.
};

Result Ckpt(const std::string& args) {
  Result r;
  FILE* p = popen((std::string(KILN_CKPT_BIN) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int w = pclose(p);
  r.status = WIFEXITED(w) ? WEXITSTATUS(w) : -1;
  return r;
}

bool Has(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

// Two checkpoints of a small store: step 10, then step 20 after changing one weight, dropping a
// NaN into another variable and changing the learning rate.
struct Fixture {
  TempDir dir;
  std::string first, second;

  Fixture() {
    model::Store store;
    model::Scope root = store.RootScope();
    root.In("dense").VariableWithValue("weights",
                                       Tensor::FromValue(std::vector<std::vector<float>>{{1, -2}, {3, 4}}));
    root.In("dense").VariableWithValue("bias", Tensor::FromValue(std::vector<float>{0.5f, -0.5f}));
    model::Variable counts =
        root.VariableWithValue("counts", Tensor::FromValue(std::vector<int32_t>{7, 1, 4}));
    counts.SetTrainable(false);
    model::Variable step = root.VariableWithValue("global_step", Tensor::FromValue(int64_t{10}));
    root.SetParam("learning_rate", 0.01);
    checkpoint::Handler h = checkpoint::Build(store).Dir(dir.str()).Done();
    first = h.Save();
    store.GetVariable("/dense/weights")
        .SetValue(Tensor::FromValue(std::vector<std::vector<float>>{{1, -2}, {3, 4.5f}}));
    store.GetVariable("/dense/bias")
        .SetValue(Tensor::FromValue(std::vector<float>{std::numeric_limits<float>::quiet_NaN(), -0.5f}));
    step.SetValue(Tensor::FromValue(int64_t{20}));
    root.SetParam("learning_rate", 0.001);
    second = h.Save();
  }
};

TEST(CheckpointRead, ListsAndReadsWithoutAStore) {
  Fixture f;
  const std::vector<std::string> names = checkpoint::List(f.dir.str());
  ASSERT_EQ(names, (std::vector<std::string>{f.first, f.second}));
  const checkpoint::Contents c = checkpoint::Read(f.dir.str(), f.second);
  EXPECT_EQ(c.name, f.second);
  EXPECT_EQ(c.seq, 1);
  EXPECT_EQ(c.step, 20);
  ASSERT_EQ(c.variables.size(), 4u);
  const checkpoint::SavedVariable* w = c.Find("/dense/weights");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->value.ToVector<float>(), (std::vector<float>{1, -2, 3, 4.5f}));
  EXPECT_TRUE(w->trainable);
  ASSERT_NE(c.Find("/counts"), nullptr);
  EXPECT_FALSE(c.Find("/counts")->trainable);
  EXPECT_EQ(c.Find("/nothing"), nullptr);
  ASSERT_EQ(c.params.size(), 1u);
  EXPECT_EQ(c.params[0].scope, "/");
  EXPECT_EQ(c.params[0].key, "learning_rate");
  EXPECT_EQ(std::get<double>(c.params[0].value), 0.001);
  EXPECT_TRUE(test::Throws([&] { checkpoint::Read(f.dir.str(), "checkpoint-n0000009-step-00000000"); },
                           {"checkpoint-n0000009-step-00000000.json"}));
}

TEST(KilnCkpt, ListsTheCheckpoints) {
  Fixture f;
  const Result r = Ckpt("list " + f.dir.str());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, ": 2 checkpoints")) << r.out;
  EXPECT_TRUE(Has(r.out, f.first)) << r.out;
  EXPECT_TRUE(Has(r.out, f.second)) << r.out;
  // The second row holds seq 1 and step 20.
  const std::string row = r.out.substr(r.out.find("\n", r.out.find(f.first)) + 1);
  EXPECT_TRUE(Has(row.substr(0, 40), " 1 ")) << row;
  EXPECT_TRUE(Has(row.substr(0, 40), " 20 ")) << row;
}

TEST(KilnCkpt, VariablesWithStatistics) {
  Fixture f;
  const Result r = Ckpt("vars " + f.dir.str());  // The folder: its newest checkpoint.
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, f.second + " (step 20): 4 variables, 10 values")) << r.out;
  auto line = [&](const std::string& path) {
    const size_t at = r.out.find("\n" + path + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  // weights {1, -2, 3, 4.5}: min -2, mean 1.625, max 4.5.
  EXPECT_TRUE(Has(line("/dense/weights"), "Float32")) << r.out;
  EXPECT_TRUE(Has(line("/dense/weights"), "[2, 2]")) << r.out;
  EXPECT_TRUE(Has(line("/dense/weights"), "yes")) << r.out;
  EXPECT_TRUE(Has(line("/dense/weights"), " -2 ")) << r.out;
  EXPECT_TRUE(Has(line("/dense/weights"), " 1.625 ")) << r.out;
  EXPECT_TRUE(Has(line("/dense/weights"), " 4.5 ")) << r.out;
  // bias {NaN, -0.5}: statistics of the finite values, and one non-finite.
  EXPECT_TRUE(line("/dense/bias").ends_with(" 1")) << r.out;
  EXPECT_TRUE(Has(line("/dense/bias"), " -0.5 ")) << r.out;
  // counts {7, 1, 4}: Int32, not trainable, mean 4.
  EXPECT_TRUE(Has(line("/counts"), "Int32")) << r.out;
  EXPECT_TRUE(Has(line("/counts"), " no ")) << r.out;
  EXPECT_TRUE(Has(line("/counts"), " 1 ")) << r.out;
  EXPECT_TRUE(Has(line("/counts"), " 4 ")) << r.out;
  EXPECT_TRUE(Has(line("/counts"), " 7 ")) << r.out;
  EXPECT_TRUE(Has(r.out, "/ learning_rate = 0.001")) << r.out;

  // The older checkpoint, by its record's file name.
  const Result old = Ckpt("vars " + (f.dir / (f.first + ".json")));
  EXPECT_EQ(old.status, 0) << old.out;
  EXPECT_TRUE(Has(old.out, "(step 10)")) << old.out;
  EXPECT_TRUE(Has(old.out, "/ learning_rate = 0.01")) << old.out;

  // The bare folder: the list, then the newest checkpoint's table.
  const Result both = Ckpt(f.dir.str());
  EXPECT_EQ(both.status, 0) << both.out;
  EXPECT_TRUE(Has(both.out, ": 2 checkpoints")) << both.out;
  EXPECT_TRUE(Has(both.out, "(step 20): 4 variables")) << both.out;
}

TEST(KilnCkpt, ShowsOneVariable) {
  Fixture f;
  const Result r = Ckpt("show " + (f.dir / f.first) + " /dense/weights");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "[2][2]float32{{1, -2}, {3, 4}}")) << r.out;
  const Result all = Ckpt("show " + f.dir.str() + " /counts --all");
  EXPECT_EQ(all.status, 0) << all.out;
  EXPECT_TRUE(Has(all.out, "\n0 7\n1 1\n2 4\n")) << all.out;
  const Result missing = Ckpt("show " + f.dir.str() + " /dense/kernel");
  EXPECT_EQ(missing.status, 2) << missing.out;
  EXPECT_TRUE(Has(missing.out, "no variable \"/dense/kernel\"")) << missing.out;
  EXPECT_TRUE(Has(missing.out, "/dense/weights")) << missing.out;  // What it has instead.
}

TEST(KilnCkpt, DiffsTwoCheckpoints) {
  Fixture f;
  const Result same = Ckpt("diff " + (f.dir / f.second) + " " + f.dir.str());
  EXPECT_EQ(same.status, 0) << same.out;
  EXPECT_TRUE(Has(same.out, "0 differences, 4 variables equal")) << same.out;

  const Result r = Ckpt("diff " + (f.dir / f.first) + " " + (f.dir / (f.second + ".safetensors")));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "/dense/weights (Float32)[2, 2]: 1 of 4 differ, max |a-b| 0.5, mean |a-b| 0.125"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "/dense/bias (Float32)[2]: 1 of 2 differ")) << r.out;
  EXPECT_TRUE(Has(r.out, "NaN on one side only")) << r.out;
  EXPECT_TRUE(Has(r.out, "/global_step (Int64): 1 of 1 differ, max |a-b| 10")) << r.out;
  EXPECT_TRUE(Has(r.out, "hyperparameter / learning_rate: 0.01 in A, 0.001 in B")) << r.out;
  EXPECT_TRUE(Has(r.out, "4 differences, 1 variable equal")) << r.out;

  // A variable only in one of them, and one whose shape changed.
  TempDir other;
  model::Store s;
  s.RootScope().In("dense").VariableWithValue("weights", Tensor::FromValue(std::vector<float>{1, 2, 3}));
  s.RootScope().VariableWithValue("extra", Tensor::FromValue(1.0f));
  checkpoint::Build(s).Dir(other.str()).Done().Save();
  const Result d = Ckpt("diff " + f.dir.str() + " " + other.str());
  EXPECT_EQ(d.status, 1) << d.out;
  EXPECT_TRUE(Has(d.out, "shape:     /dense/weights (Float32)[2, 2] in A, (Float32)[3] in B")) << d.out;
  EXPECT_TRUE(Has(d.out, "only in A: /counts")) << d.out;
  EXPECT_TRUE(Has(d.out, "only in B: /extra")) << d.out;
  EXPECT_TRUE(Has(d.out, "only in A: hyperparameter / learning_rate = 0.001")) << d.out;
}

TEST(KilnCkpt, BadInputIsAClearErrorWithStatus2) {
  Fixture f;
  TempDir empty;
  Result r = Ckpt("list " + (f.dir / "nowhere"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(Has(r.out, "nowhere is not a folder")) << r.out;
  r = Ckpt("vars " + empty.str());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(Has(r.out, "no checkpoint in folder " + empty.str())) << r.out;
  r = Ckpt("vars " + (f.dir / "checkpoint-n9"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(Has(r.out, "neither a checkpoint folder nor a checkpoint")) << r.out;
  r = Ckpt("frobnicate");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(Has(r.out, "unknown command \"frobnicate\"")) << r.out;
  EXPECT_TRUE(Has(r.out, "usage: kiln-ckpt")) << r.out;
  r = Ckpt("diff " + f.dir.str());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(Has(r.out, "expected 2 arguments")) << r.out;
  EXPECT_EQ(Ckpt("--help").status, 0);

  // One flipped byte in the newest weights: named as damaged, with the tensor.
  const std::string weights = f.dir / (f.second + ".safetensors");
  std::fstream io(weights, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(-1, std::ios::end);
  char last = 0;
  io.read(&last, 1);
  io.seekp(-1, std::ios::end);
  last = static_cast<char>(last ^ 0x5a);
  io.write(&last, 1);
  io.close();
  r = Ckpt("vars " + f.dir.str());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(Has(r.out, "is damaged")) << r.out;
  EXPECT_TRUE(Has(r.out, weights)) << r.out;
}

}  // namespace
