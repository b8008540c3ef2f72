#pragma once
// Helpers shared by the test binaries.

#include <gtest/gtest.h>

#include <stdio.h>
#include <stdlib.h>

#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/compute/backend.h"
#include "kiln/compute/program.h"
#include "kiln/core/error.h"
#include "kiln/core/tensor.h"
#include "kiln/io/npy.h"

namespace kiln::test {

/// The message of the kiln::Error `fn` throws ("" and a test failure if it throws none).
inline std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const kiln::Error& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

/// Success when `fn` throws a kiln::Error whose message contains every one of `parts`.
inline ::testing::AssertionResult Throws(const std::function<void()>& fn,
                                         const std::vector<std::string>& parts = {}) {
  try {
    fn();
  } catch (const kiln::Error& e) {
    for (const auto& p : parts) {
      if (e.message().find(p) == std::string::npos) {
        return ::testing::AssertionFailure() << "message \"" << e.message() << "\" lacks \"" << p << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-kiln exception: " << e.what();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw a non-std exception";
  }
  return ::testing::AssertionFailure() << "did not throw";
}

/// The standard output of the shell `command`; when it fails, that output after "FAILED: " (so
/// a comparison with the expected output fails showing it).
inline std::string StdoutOf(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return "FAILED: popen";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  return pclose(p) == 0 ? out : "FAILED: " + out;
}

/// A fresh temporary directory, removed with its content when the object goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln_test.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The path of `name` inside the directory.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// Runs `fn` once on every registered backend (cpu, ref, ...), tracing the backend's name.
inline void ForEachBackend(const std::function<void(const compute::BackendPtr&)>& fn) {
  for (const compute::BackendInfo& info : compute::RegisteredBackends()) {
    SCOPED_TRACE("backend " + info.name);
    fn(compute::NewWithConfig(info.name));
  }
}

/// A Float32 tensor of `dims` with values drawn from N(mean, stddev²) by a generator seeded
/// with `seed` (the same values on every run).
inline Tensor NormalTensor(const std::vector<int64_t>& dims, uint32_t seed, float stddev = 1,
                           float mean = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, stddev);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return Tensor::FromFlat(Shape(DType::Float32, dims), v);
}

/// The backend `config` names ("cpu:threads=2", "ref"...), created once per config and shared.
inline const compute::BackendPtr& Backend(const std::string& config) {
  static std::mutex mu;
  static std::map<std::string, compute::BackendPtr> backends;
  std::lock_guard lock(mu);
  compute::BackendPtr& b = backends[config];
  if (!b) b = compute::NewWithConfig(config);
  return b;
}

/// Compiles `program` on `backend`, runs it on `inputs` (none donated) and wraps the outputs.
inline std::vector<Tensor> RunProgram(const compute::BackendPtr& backend,
                                      const std::shared_ptr<const compute::Program>& program,
                                      const std::vector<Tensor>& inputs) {
  std::unique_ptr<compute::Executable> exe = backend->Compile(program);
  std::vector<compute::BufferPtr> buffers;
  for (const Tensor& t : inputs) buffers.push_back(t.DeviceBuffer(backend, 0));
  std::vector<compute::BufferPtr> out = exe->Execute(buffers, std::vector<bool>(inputs.size(), false), 0);
  std::vector<Tensor> results;
  for (size_t i = 0; i < out.size(); ++i)
    results.push_back(Tensor::FromBuffer(backend, 0, program->OutputShape(static_cast<int>(i)), out[i]));
  return results;
}

/// The arrays of a committed .npz fixture, `path` relative to the source tree (found through the
/// environment variable KILN_TEST_SOURCE_DIR, else the working directory); read once per path.
inline const std::map<std::string, Tensor>& Fixtures(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::map<std::string, Tensor>> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(path);
  if (it == cache.end()) {
    const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
    it = cache.emplace(path, io::ReadNpz(std::string(src ? src : ".") + "/" + path)).first;
  }
  return it->second;
}

}  // namespace kiln::test
