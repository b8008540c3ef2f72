// Tests of kiln::Error: message, what(), the captured and symbolised stack, thread safety.
// core_tests is compiled with -g, so the stack must carry this file's name and line numbers.

#include "kiln/core/error.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kiln/core/dtype.h"

namespace {

// The line of the throw in ThrowFromHelper, which its stack frame must point at.
std::atomic<int> g_helper_throw_line{0};

// Not inlined, so that it has a frame of its own in the stack.
[[gnu::noinline]] void ThrowFromHelper(const std::string& message) {
  g_helper_throw_line = __LINE__ + 1;
  throw kiln::Error(message);
}

// A function template whose demangled name starts with its return type, a kiln type: it is user
// code all the same and must stay in the stack.
template <typename T>
[[gnu::noinline]] kiln::DType ThrowFromTemplate(T value) {
  if (value >= T{}) throw kiln::Error("from template");
  return kiln::DType::Invalid;
}

kiln::Error CatchFromHelper(const std::string& message) {
  try {
    ThrowFromHelper(message);
  } catch (const kiln::Error& e) {
    return e;
  }
  ADD_FAILURE() << "ThrowFromHelper did not throw";
  return kiln::Error("unreachable");
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// True when `frame` ends with "FILE:LINE)" (FILE its path's last part).
bool EndsWithFileLine(const std::string& frame, const std::string& file) {
  const size_t colon = frame.rfind(':');
  if (colon == std::string::npos || colon + 2 >= frame.size() || frame.back() != ')') return false;
  const std::string line = frame.substr(colon + 1, frame.size() - colon - 2);
  return frame.substr(0, colon).ends_with("/" + file) &&
         line.find_first_not_of("0123456789") == std::string::npos;
}

// Restores the capture setting when a test that changes it ends, whatever happens.
class StackCaptureGuard {
 public:
  StackCaptureGuard() : saved_(kiln::ErrorStackCapture()) {}
  ~StackCaptureGuard() { kiln::SetErrorStackCapture(saved_); }
  StackCaptureGuard(const StackCaptureGuard&) = delete;
  StackCaptureGuard& operator=(const StackCaptureGuard&) = delete;

 private:
  bool saved_;
};

TEST(ErrorTest, MessageIsTheMessage) {
  kiln::Error error("something went wrong");
  EXPECT_EQ(error.message(), "something went wrong");
}

TEST(ErrorTest, IsARuntimeError) {
  try {
    ThrowFromHelper("as runtime_error");
    FAIL() << "did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("as runtime_error\n", 0), 0u) << e.what();
  }
}

TEST(ErrorTest, WhatIsMessageNewlineStack) {
  ASSERT_TRUE(kiln::ErrorStackCapture()) << "stack capture is on by default";
  const kiln::Error error = CatchFromHelper("bad input");
  const std::string what = error.what();
  ASSERT_EQ(what.rfind("bad input\n", 0), 0u) << what;
  EXPECT_EQ(what, "bad input\n" + error.StackTrace());
  // Built once and cached: the same buffer every time.
  EXPECT_EQ(error.what(), error.what());
}

TEST(ErrorTest, StackNamesTheThrowingFunctionWithFileAndLine) {
  const kiln::Error error = CatchFromHelper("from helper");
  EXPECT_FALSE(error.Frames().empty());
  const std::string stack = error.StackTrace();
  const std::vector<std::string> lines = Lines(stack);
  ASSERT_FALSE(lines.empty());
  for (const std::string& line : lines) EXPECT_EQ(line.rfind("  at ", 0), 0u) << line;
  // The innermost frame is the helper, at the line of its throw (this file was built with -g).
  EXPECT_NE(lines[0].find("ThrowFromHelper"), std::string::npos) << stack;
  EXPECT_NE(lines[0].find("error_test.cc:" + std::to_string(g_helper_throw_line.load()) + ")"),
            std::string::npos)
      << stack;
  // Its caller is named too, with a line number.
  ASSERT_GE(lines.size(), 2u) << stack;
  EXPECT_NE(lines[1].find("CatchFromHelper"), std::string::npos) << stack;
  EXPECT_TRUE(EndsWithFileLine(lines[1], "error_test.cc")) << stack;
  // The stack stops at main: no C runtime start-up frames below it.
  EXPECT_EQ(lines.back().rfind("  at main", 0), 0u) << stack;
  EXPECT_EQ(stack.find("__libc_start"), std::string::npos) << stack;
}

// Errors thrown inside kiln show the stack from the user's call into kiln outwards.
void ExpectNoKilnFrames(const kiln::Error& error, const std::string& test_body) {
  const std::string stack = error.StackTrace();
  const std::vector<std::string> lines = Lines(stack);
  ASSERT_FALSE(lines.empty()) << error.what();
  for (const std::string& line : lines) EXPECT_EQ(line.rfind("  at kiln::", 0), std::string::npos) << stack;
  EXPECT_NE(lines[0].find(test_body), std::string::npos) << stack;
  EXPECT_NE(lines[0].find("error_test.cc:"), std::string::npos) << stack;
}

TEST(ErrorTest, KilnFramesAreDroppedFromLibraryErrors) {
  try {
    kiln::DTypeFromName("nonsense");
    FAIL() << "DTypeFromName(\"nonsense\") did not throw";
  } catch (const kiln::Error& e) {
    ExpectNoKilnFrames(e, "ErrorTest_KilnFramesAreDroppedFromLibraryErrors_Test::TestBody");
  }
}

TEST(ErrorTest, KilnFramesAreDroppedFromKilnTemplates) {
  // DispatchDType is a kiln template instantiated here, throwing through a kiln function.
  try {
    kiln::DispatchDType(kiln::DType::Int4, [](auto) {});
    FAIL() << "DispatchDType(Int4) did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.message(), "DispatchDType: dtype Int4 has no C++ element type (it is a storage-only dtype)");
    ExpectNoKilnFrames(e, "ErrorTest_KilnFramesAreDroppedFromKilnTemplates_Test::TestBody");
  }
}

TEST(ErrorTest, UserTemplatesReturningKilnTypesAreKept) {
  try {
    ThrowFromTemplate(3);
    FAIL() << "ThrowFromTemplate did not throw";
  } catch (const kiln::Error& e) {
    const std::vector<std::string> lines = Lines(e.StackTrace());
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines[0].find("ThrowFromTemplate<int>"), std::string::npos) << e.what();
  }
}

TEST(ErrorTest, CaptureCanBeTurnedOff) {
  StackCaptureGuard guard;
  kiln::SetErrorStackCapture(false);
  EXPECT_FALSE(kiln::ErrorStackCapture());
  const kiln::Error error = CatchFromHelper("no stack");
  EXPECT_TRUE(error.Frames().empty());
  EXPECT_EQ(error.StackTrace(), "");
  EXPECT_STREQ(error.what(), "no stack");

  kiln::SetErrorStackCapture(true);
  EXPECT_TRUE(kiln::ErrorStackCapture());
  EXPECT_FALSE(CatchFromHelper("stack again").Frames().empty());
}

TEST(ErrorTest, CopiesShareTheMessageAndStack) {
  const kiln::Error original = CatchFromHelper("shared");
  const kiln::Error copy = original;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(&copy.message(), &original.message());
  EXPECT_EQ(copy.message(), "shared");
  EXPECT_EQ(copy.Frames(), original.Frames());
  const char* what = original.what();
  EXPECT_EQ(copy.what(), what) << "the symbolised text is built once for all copies";
}

TEST(ErrorTest, WhatFromManyThreadsAtOnce) {
  const kiln::Error error = CatchFromHelper("concurrent");
  constexpr int kThreads = 8;
  std::vector<const char*> results(kThreads, nullptr);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // Start together, so that the first what() calls race to build the text.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      results[i] = error.what();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const char* result : results) {
    ASSERT_NE(result, nullptr);
    EXPECT_EQ(result, results[0]);
  }
  EXPECT_EQ(std::string(results[0]), "concurrent\n" + error.StackTrace());
}

TEST(ErrorTest, DifferentErrorsSymbolisedConcurrently) {
  constexpr int kThreads = 4;
  std::vector<std::string> stacks(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&stacks, i] { stacks[i] = CatchFromHelper("thread " + std::to_string(i)).what(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(stacks[i].rfind("thread " + std::to_string(i) + "\n", 0), 0u) << stacks[i];
    EXPECT_NE(stacks[i].find("ThrowFromHelper"), std::string::npos) << stacks[i];
  }
}

}  // namespace
