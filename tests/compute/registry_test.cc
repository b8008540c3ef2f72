// Tests of the backend registry (compute::New, NewWithConfig, RegisteredBackends), the ref
// backend's buffers, and kiln::Version.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

// Runs `fn`, expecting a kiln::Error whose message contains every one of `parts`.
::testing::AssertionResult ThrowsKilnError(const std::function<void()>& fn,
                                           const std::vector<std::string>& parts = {}) {
  try {
    fn();
  } catch (const kiln::Error& e) {
    for (const auto& p : parts) {
      if (e.message().find(p) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "kiln::Error message \"" << e.message() << "\" lacks \"" << p << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-kiln exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// Sets (or unsets, for nullopt) an environment variable for the scope, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(RegistryTest, RegisteredBackendsListsRef) {
  const std::vector<compute::BackendInfo> backends = compute::RegisteredBackends();
  ASSERT_FALSE(backends.empty());
  auto ref = std::find_if(backends.begin(), backends.end(), [](const auto& b) { return b.name == "ref"; });
  ASSERT_NE(ref, backends.end());
  EXPECT_FALSE(ref->description.empty());
  EXPECT_TRUE(ref->options.contains("shared"));
  EXPECT_FALSE(ref->options.at("shared").empty());
  // Names are unique.
  for (size_t i = 0; i < backends.size(); ++i) {
    for (size_t j = i + 1; j < backends.size(); ++j) EXPECT_NE(backends[i].name, backends[j].name);
  }
}

TEST(RegistryTest, NewWithoutEnvironmentIsTheBestBackend) {
  ScopedEnv env("KILN_BACKEND", std::nullopt);
  compute::BackendPtr backend = compute::New();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Name(), compute::RegisteredBackends().front().name);
  ScopedEnv empty("KILN_BACKEND", std::string());
  EXPECT_EQ(compute::New()->Name(), compute::RegisteredBackends().front().name);
}

TEST(RegistryTest, NewHonoursKilnBackend) {
  {
    ScopedEnv env("KILN_BACKEND", std::string("ref:shared=false"));
    compute::BackendPtr backend = compute::New();
    EXPECT_EQ(backend->Name(), "ref");
    EXPECT_FALSE(backend->HasSharedBuffers());
  }
  {
    ScopedEnv env("KILN_BACKEND", std::string("ref"));
    compute::BackendPtr backend = compute::New();
    EXPECT_EQ(backend->Name(), "ref");
    EXPECT_TRUE(backend->HasSharedBuffers());
  }
  {
    ScopedEnv env("KILN_BACKEND", std::string("no-such-backend"));
    EXPECT_TRUE(ThrowsKilnError([] { compute::New(); }, {"no-such-backend", "ref"}));
  }
}

TEST(RegistryTest, ScopedEnvRestores) {
  setenv("KILN_REGISTRY_TEST_VAR", "before", 1);
  {
    ScopedEnv env("KILN_REGISTRY_TEST_VAR", std::string("during"));
    EXPECT_STREQ(std::getenv("KILN_REGISTRY_TEST_VAR"), "during");
  }
  EXPECT_STREQ(std::getenv("KILN_REGISTRY_TEST_VAR"), "before");
  unsetenv("KILN_REGISTRY_TEST_VAR");
}

TEST(RegistryTest, NewWithConfigRef) {
  compute::BackendPtr backend = compute::NewWithConfig("ref");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Name(), "ref");
  EXPECT_TRUE(backend->HasSharedBuffers());
  EXPECT_EQ(backend->NumDevices(), 1);
  EXPECT_NE(backend->Description().find("ref"), std::string::npos);
  EXPECT_EQ(backend->Description().find("shared=false"), std::string::npos);
}

TEST(RegistryTest, NewWithConfigRefNotShared) {
  compute::BackendPtr backend = compute::NewWithConfig("ref:shared=false");
  EXPECT_EQ(backend->Name(), "ref");
  EXPECT_FALSE(backend->HasSharedBuffers());
  EXPECT_EQ(backend->NumDevices(), 1);
  EXPECT_NE(backend->Description().find("shared=false"), std::string::npos);
}

TEST(RegistryTest, BooleanOptionSpellings) {
  EXPECT_TRUE(compute::NewWithConfig("ref:shared=true")->HasSharedBuffers());
  EXPECT_TRUE(compute::NewWithConfig("ref:shared=1")->HasSharedBuffers());
  EXPECT_TRUE(compute::NewWithConfig("ref:shared")->HasSharedBuffers());
  EXPECT_FALSE(compute::NewWithConfig("ref:shared=0")->HasSharedBuffers());
  EXPECT_TRUE(compute::NewWithConfig("ref:")->HasSharedBuffers());
}

TEST(RegistryTest, EachCallMakesANewBackend) {
  compute::BackendPtr a = compute::NewWithConfig("ref");
  compute::BackendPtr b = compute::NewWithConfig("ref");
  EXPECT_NE(a, b);
}

TEST(RegistryTest, UnknownBackendListsTheValidOnes) {
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig("nope"); }, {"nope", "ref"}));
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig("nope:shared=false"); }, {"nope", "ref"}));
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig(""); }, {"ref"}));
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig(":shared=false"); }, {"ref"}));
}

TEST(RegistryTest, UnknownOptionListsTheValidOnes) {
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig("ref:bogus=1"); }, {"bogus", "shared"}));
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig("ref:shared=false,bogus"); }, {"bogus", "shared"}));
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig("ref:threads=2"); }, {"threads", "shared"}));
}

TEST(RegistryTest, BadOptionValue) {
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig("ref:shared=maybe"); }, {"maybe"}));
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig("ref:shared=2"); }));
  EXPECT_TRUE(ThrowsKilnError([] { compute::NewWithConfig("ref:shared=yes"); }));
}

TEST(RegistryTest, RefBuffers) {
  for (const char* config : {"ref", "ref:shared=false"}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    const bool shared = backend->HasSharedBuffers();
    const std::vector<int32_t> values = {1, -2, 3};
    compute::BufferPtr buffer = backend->BufferFromHost(0, values.data(), 12);
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(buffer->ByteSize(), 12);
    EXPECT_EQ(buffer->Device(), 0);
    EXPECT_EQ(buffer->backend(), backend.get());
    EXPECT_EQ(buffer->HostData() != nullptr, shared);
    std::vector<int32_t> back(3);
    backend->BufferToHost(*buffer, back.data());
    EXPECT_EQ(back, values);
    EXPECT_EQ(backend->MemoryStats().live_bytes, 12);
    EXPECT_EQ(backend->MemoryStats().live_buffers, 1);

    compute::BufferPtr empty = backend->BufferFromHost(0, nullptr, 0);
    EXPECT_EQ(empty->ByteSize(), 0);
    backend->BufferToHost(*empty, nullptr);
    EXPECT_EQ(backend->MemoryStats().live_buffers, 2);

    EXPECT_TRUE(ThrowsKilnError([&] { backend->BufferFromHost(1, values.data(), 12); }, {"ref"}));
    EXPECT_TRUE(ThrowsKilnError([&] { backend->BufferFromHost(-1, values.data(), 12); }, {"ref"}));
    EXPECT_TRUE(ThrowsKilnError([&] { backend->BufferFromHost(0, values.data(), -1); }));
    // A buffer of another backend instance.
    compute::BackendPtr other = compute::NewWithConfig(config);
    EXPECT_TRUE(ThrowsKilnError([&] { other->BufferToHost(*buffer, back.data()); }));

    if (shared) {
      compute::BufferPtr s = backend->NewSharedBuffer(0, 16);
      ASSERT_NE(s->HostData(), nullptr);
      const auto* bytes = static_cast<const uint8_t*>(s->HostData());
      EXPECT_TRUE(std::all_of(bytes, bytes + 16, [](uint8_t b) { return b == 0; }));
      EXPECT_EQ(backend->MemoryStats().live_bytes, 28);
      EXPECT_TRUE(ThrowsKilnError([&] { backend->NewSharedBuffer(1, 16); }, {"ref"}));
      EXPECT_TRUE(ThrowsKilnError([&] { backend->NewSharedBuffer(0, -5); }));
    } else {
      EXPECT_TRUE(ThrowsKilnError([&] { backend->NewSharedBuffer(0, 16); }, {"ref"}));
    }
    buffer.reset();
    empty.reset();
    EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
    EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
  }
}

TEST(RegistryTest, CheckDevice) {
  compute::BackendPtr backend = compute::NewWithConfig("ref");
  EXPECT_NO_THROW(backend->CheckDevice(0));
  EXPECT_TRUE(ThrowsKilnError([&] { backend->CheckDevice(1); }, {"ref", "1"}));
  EXPECT_TRUE(ThrowsKilnError([&] { backend->CheckDevice(-1); }, {"ref", "-1"}));
}

TEST(RegistryTest, Version) {
  const std::string v = kiln::Version();
  EXPECT_FALSE(v.empty());
  EXPECT_TRUE(std::regex_match(v, std::regex(R"(\d+\.\d+\.\d+)"))) << v;
}

}  // namespace
}  // namespace kiln
