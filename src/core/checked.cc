// Checked integer arithmetic and parsing (checked.h).

#include "core/checked.h"

#include <unistd.h>

#include <charconv>
#include <limits>

#include "core/check.h"

namespace kiln::detail {

int64_t CheckedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) Throw("{}: {} + {} does not fit in int64", what, a, b);
  return out;
}

int64_t CheckedSub(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) Throw("{}: {} - {} does not fit in int64", what, a, b);
  return out;
}

int64_t CheckedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) Throw("{}: {} * {} does not fit in int64", what, a, b);
  return out;
}

void CheckAllocationSize(int64_t bytes, std::string_view what) {
  if (bytes < 0) Throw("{}: cannot allocate a buffer of {} bytes", what, bytes);
  static const int64_t memory = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : std::numeric_limits<int64_t>::max();
  }();
  if (bytes > memory)
    Throw("{}: cannot allocate a buffer of {} bytes: more than this machine's {} bytes of memory", what,
          bytes, memory);
}

IntParse TryParseInt64(std::string_view text, int64_t& out) {
  std::string_view digits = text;
  // from_chars takes a '-' but no '+'; one sign at most either way.
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  if (digits.empty() || digits.front() == '+' || (digits.front() == '-' && text.front() == '+'))
    return IntParse::kNotAnInteger;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, out);
  if (ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
    return IntParse::kNotAnInteger;
  return ec == std::errc::result_out_of_range ? IntParse::kOutOfRange : IntParse::kOk;
}

int64_t ParseInt64(std::string_view text, std::string_view what) {
  int64_t out = 0;
  switch (TryParseInt64(text, out)) {
    case IntParse::kOk:
      return out;
    case IntParse::kOutOfRange:
      Throw("{}: {} does not fit in int64", what, text);
    case IntParse::kNotAnInteger:
      break;
  }
  Throw("{}: \"{}\" is not an integer", what, text);
}

}  // namespace kiln::detail
