#pragma once
// Helpers shared by the Tensor tests: raw bytes of a tensor, bitwise comparison of elements
// (float16/bfloat16 have no operator==), and checks on kiln::Error messages.

#include <gtest/gtest.h>

#include "test_util.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

/// The raw bytes of `t` (read through ConstBytes).
inline std::vector<uint8_t> BytesOf(const Tensor& t) {
  std::vector<uint8_t> out;
  t.ConstBytes([&](std::span<const uint8_t> b) { out.assign(b.begin(), b.end()); });
  return out;
}

/// The little-endian bytes of `values` as the test computes them (bool as one 0/1 byte).
template <typename T>
std::vector<uint8_t> BytesOfValues(const std::vector<T>& values) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      out.push_back(values[i] ? 1 : 0);
    } else {
      const T v = values[i];
      uint8_t raw[sizeof(T)];
      std::memcpy(raw, &v, sizeof(T));
      out.insert(out.end(), raw, raw + sizeof(T));
    }
  }
  return out;
}

/// Bitwise equality of two elements (so float16 and bfloat16 compare too).
template <typename T>
bool SameElement(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a == b;
  } else {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  }
}

/// Element-wise bitwise equality of two flat vectors.
template <typename T>
::testing::AssertionResult SameFlat(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!SameElement<T>(got[i], want[i]))
      return ::testing::AssertionFailure() << "element " << i << " differs";
  }
  return ::testing::AssertionSuccess();
}

/// Runs `fn`, expecting a kiln::Error whose message contains every one of `parts`.
inline ::testing::AssertionResult ThrowsKilnError(const std::function<void()>& fn,
                                                  const std::vector<std::string>& parts = {}) {
  return kiln::test::Throws(fn, parts);
}

}  // namespace kiln::testing
