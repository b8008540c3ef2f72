#pragma once
// Helpers shared by the test binaries.

#include <gtest/gtest.h>

#include <exception>
#include <functional>
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

}  // namespace kiln::test
