// Crash and disk-full safety of everything kiln writes: a write that runs out of space (a
// file-size limit, RLIMIT_FSIZE, stands for a full disk) is a kiln::Error that leaves the
// previous file as it was and no temporary behind; a checkpoint save killed with SIGKILL at
// random moments always leaves a loadable, consistent checkpoint, the newest complete one.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kiln/io/gguf.h"
#include "kiln/io/image.h"
#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"
#include "kiln/model/checkpoint.h"
#include "test_util.h"

namespace {

using kiln::test::TempDir;
using kiln::test::Throws;
namespace fs = std::filesystem;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Sets the soft file-size limit of this process to `bytes` while it lives (SIGXFSZ ignored,
/// so that a write past the limit fails with EFBIG instead of killing the process).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  sighandler_t old_handler_{};
};

kiln::Tensor Floats(int64_t n, float v) {
  return kiln::Tensor::FromFlat(kiln::Shape(kiln::DType::Float32, {n}),
                                std::vector<float>(static_cast<size_t>(n), v));
}

/// Images of `side` x `side` RGB with varied pixels (so that compression cannot hide the size).
kiln::Tensor Image(int64_t side) {
  std::vector<uint8_t> px(static_cast<size_t>(side * side * 3));
  std::mt19937 rng(1);
  for (uint8_t& p : px) p = static_cast<uint8_t>(rng());
  return kiln::Tensor::FromFlat(kiln::Shape(kiln::DType::Uint8, {side, side, 3}), px);
}

TEST(CrashSafety, AFullDiskLeavesEveryPreviousFileIntact) {
  TempDir dir;
  // Each writer: a small file first, then one past the limit.
  struct Writer {
    std::string file;
    std::function<void(const std::string&, bool big)> write;
  };
  const std::vector<Writer> writers = {
      {"a.npy", [](const std::string& p, bool big) { kiln::io::WriteNpy(p, Floats(big ? 1 << 20 : 4, 1)); }},
      {"a.npz",
       [](const std::string& p, bool big) {
         kiln::io::WriteNpz(p, {{"x", Floats(big ? 1 << 20 : 4, 1)}}, false);
       }},
      {"a.safetensors",
       [](const std::string& p, bool big) {
         kiln::io::WriteSafetensors(p, {{"x", Floats(big ? 1 << 20 : 4, 1)}});
       }},
      {"a.png", [](const std::string& p, bool big) { kiln::io::WriteImage(p, Image(big ? 1024 : 4)); }},
      {"a.jpg", [](const std::string& p, bool big) { kiln::io::WriteImage(p, Image(big ? 1024 : 4), 100); }},
      {"a.gguf",
       [](const std::string& p, bool big) {
         kiln::io::GgufFile f;
         f.tensors.push_back(kiln::io::ToGgufTensor("w", Floats(big ? 1 << 20 : 256, 1).Reshape({-1, 256}),
                                                    kiln::nn::GGMLType::F32));
         kiln::io::WriteGguf(p, f);
       }},
  };
  for (const Writer& w : writers) {
    SCOPED_TRACE(w.file);
    const std::string path = dir / w.file;
    w.write(path, false);
    const std::string before = ReadBytes(path);
    ASSERT_FALSE(before.empty());
    {
      const FileSizeLimit limit(256 << 10);
      EXPECT_TRUE(Throws([&] { w.write(path, true); }, {path}));
    }
    EXPECT_EQ(ReadBytes(path), before);
  }
  // Nothing but the files themselves: no temporaries left behind.
  int64_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, static_cast<int64_t>(writers.size()));
}

TEST(CrashSafety, ACheckpointSaveOnAFullDiskIsAnErrorAndTheLastOneLoads) {
  TempDir dir;
  kiln::model::Store store;
  kiln::model::Variable v = store.RootScope().VariableWithValue("w", Floats(1 << 20, 1));
  kiln::checkpoint::Handler h = kiln::checkpoint::Build(store).Dir(dir.str()).Keep(2).Done();
  const std::string first = h.Save();
  v.SetValue(Floats(1 << 20, 2));
  {
    const FileSizeLimit limit(1 << 20);  // The weights take 4 MiB.
    EXPECT_TRUE(Throws([&] { h.Save(); }, {}));
  }
  EXPECT_EQ(h.ListCheckpoints(), std::vector<std::string>{first});
  kiln::model::Store fresh;
  kiln::checkpoint::Build(fresh).Dir(dir.str()).Done();
  EXPECT_EQ(fresh.GetVariable("/w").Value().ToVector<float>()[12345], 1.0f);
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST(CrashSafety, ACheckpointSaveKilledAtRandomMomentsLeavesTheNewestCompleteOne) {
  TempDir dir;
  // A first checkpoint (every value 1), timed with a load: the kills below fall at random within
  // a few loads and saves (so the test adapts to how busy the machine is).
  const auto start = std::chrono::steady_clock::now();
  {
    kiln::model::Store s;
    s.RootScope().VariableWithValue("w", Floats(1 << 20, 1));
    kiln::checkpoint::Build(s).Dir(dir.str()).Keep(2).Done().Save();
    kiln::model::Store r;
    kiln::checkpoint::Build(r).Dir(dir.str()).Keep(2).Done();
  }
  const auto cycle =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  std::mt19937 rng(7);
  float last = 1;  // The value of the newest checkpoint loaded so far.
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // Saves checkpoints of the 4 MiB variable, each filled with its save count.
      kiln::model::Store s;
      kiln::checkpoint::Handler h = kiln::checkpoint::Build(s).Dir(dir.str()).Keep(2).Done();
      kiln::model::Variable w = s.GetVariable("/w");
      for (float value = w.Value().ToVector<float>()[0] + 1;; value += 1) {
        w.SetValue(Floats(1 << 20, value));
        h.Save();
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % (4 * cycle.count() + 1)));
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "round " << round;
    kiln::model::Store r;
    kiln::checkpoint::Build(r).Dir(dir.str()).Keep(2).Done();
    const std::vector<float> w = r.GetVariable("/w").Value().ToVector<float>();
    // Consistent (one save's values throughout) and never older than one loaded before.
    ASSERT_EQ(std::count(w.begin(), w.end(), w[0]), static_cast<int64_t>(w.size())) << "round " << round;
    EXPECT_GE(w[0], last) << "round " << round;
    last = w[0];
  }
  EXPECT_GT(last, 1.0f) << "no save completed in 20 rounds";
}

}  // namespace
