#pragma once
// Helpers shared by the test binaries.

#include <gtest/gtest.h>

#include <stdlib.h>

#include <exception>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/core/error.h"

namespace kiln::test {

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

}  // namespace kiln::test
