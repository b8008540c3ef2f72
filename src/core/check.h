#pragma once
// Internal helpers for raising kiln::Error with fmt-formatted messages.

#include <fmt/format.h>

#include <string>
#include <utility>

#include "kiln/core/dtype.h"
#include "kiln/core/error.h"
#include "kiln/core/shape.h"

namespace kiln::detail {

/// Throws kiln::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void Throw(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace kiln::detail

template <>
struct fmt::formatter<kiln::DType> : fmt::formatter<std::string_view> {
  auto format(kiln::DType d, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(kiln::DTypeName(d), ctx);
  }
};

template <>
struct fmt::formatter<kiln::Shape> : fmt::formatter<std::string> {
  auto format(const kiln::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.ToString(), ctx);
  }
};
