#pragma once
// Internal: integer arithmetic and parsing that raise kiln::Error instead of overflowing, for
// sizes computed from outside input (shape rules, file headers, settings).

#include <cstdint>
#include <string_view>

namespace kiln::detail {

/// a + b; a kiln::Error "<what>: a + b does not fit in int64" when it overflows.
int64_t CheckedAdd(int64_t a, int64_t b, std::string_view what);
/// a - b, checked as CheckedAdd.
int64_t CheckedSub(int64_t a, int64_t b, std::string_view what);
/// a · b, checked as CheckedAdd.
int64_t CheckedMul(int64_t a, int64_t b, std::string_view what);

/// A kiln::Error "<what>: cannot allocate a buffer of N bytes: ..." when `bytes` is negative or
/// more than the machine's physical memory (such a request can only fail, or be granted by
/// overcommit and fail later), before anything is allocated.
void CheckAllocationSize(int64_t bytes, std::string_view what);

/// The whole of `text` as a decimal int64: an optional sign ('+' or '-', once) and digits, no
/// blanks. A kiln::Error naming `what` and the text when it is not one or does not fit in int64.
int64_t ParseInt64(std::string_view text, std::string_view what);

/// The outcome of TryParseInt64.
enum class IntParse { kOk, kNotAnInteger, kOutOfRange };

/// ParseInt64 without the error: kNotAnInteger when `text` is not an integer's spelling (it may be
/// another kind of value), kOutOfRange when it is one that does not fit in int64.
IntParse TryParseInt64(std::string_view text, int64_t& out);

}  // namespace kiln::detail
