// kiln::Error: capturing the stack when an error is made, and the lazily built what() text.
// Symbolisation (addresses to names and file:line) lives in error_stack.cc.

#include "kiln/core/error.h"

#include <execinfo.h>
#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/core/tensor.h"

namespace kiln {

namespace {

// Whether new Errors capture the stack. Relaxed is enough: it is a setting, not a synchronisation.
std::atomic<bool> g_capture_stack{true};

// Deepest stack kept. Errors are thrown from user code a few frames below main or a thread entry,
// so this is plenty; deeper (recursive) stacks keep their innermost frames.
constexpr int kMaxFrames = 64;

}  // namespace

struct Error::State {
  std::string message;
  std::vector<void*> frames;  // Return addresses, innermost first (the constructor's own dropped).

  // Built on the first what() or StackTrace(), then read only; `once` orders the two.
  std::once_flag once;
  std::string stack;
  std::string what;

  void Build() noexcept {
    try {
      stack = frames.empty() ? std::string() : SymbolizeFrames(frames);
      what = stack.empty() ? message : message + "\n" + stack;
    } catch (...) {
      // Out of memory (or a symbolisation failure): what() falls back to the bare message.
      stack.clear();
      what.clear();
    }
  }
};

Error::Error(std::string message) : std::runtime_error(message), state_(std::make_shared<State>()) {
  if (g_capture_stack.load(std::memory_order_relaxed)) {
    // backtrace() only walks the stack and records return addresses: cheap enough for every throw.
    // Names are looked up later, and only if someone prints the error.
    void* buffer[kMaxFrames + 1];
    const int count = backtrace(buffer, kMaxFrames + 1);
    // buffer[0] is the return address into this constructor (backtrace itself leaves no frame);
    // the frames of interest start at whoever made the Error.
    if (count > 1) state_->frames.assign(buffer + 1, buffer + count);
  }
  state_->message = std::move(message);
}

namespace {
// A moved-from Error has no State; its accessors answer as for an empty message with no stack.
const std::string kEmpty;
const std::vector<void*> kNoFrames;
}  // namespace

const std::string& Error::message() const noexcept { return state_ ? state_->message : kEmpty; }

const char* Error::what() const noexcept {
  if (!state_) return std::runtime_error::what();
  try {
    std::call_once(state_->once, [this] { state_->Build(); });
  } catch (...) {
    // std::call_once reports failures of the underlying once primitive as std::system_error.
    return std::runtime_error::what();
  }
  return state_->what.empty() ? std::runtime_error::what() : state_->what.c_str();
}

std::string Error::StackTrace() const {
  if (!state_) return {};
  std::call_once(state_->once, [this] { state_->Build(); });
  return state_->stack;
}

const std::vector<void*>& Error::Frames() const noexcept { return state_ ? state_->frames : kNoFrames; }

void SetErrorStackCapture(bool enabled) { g_capture_stack.store(enabled, std::memory_order_relaxed); }

bool ErrorStackCapture() { return g_capture_stack.load(std::memory_order_relaxed); }

namespace detail {

void ThrowError(const std::string& message) { throw Error(message); }

void ThrowUnsupportedDispatch(DType dtype) {
  if (IsStorageOnly(dtype)) {
    throw Error(fmt::format("DispatchDType: dtype {} has no C++ element type (it is a storage-only dtype)",
                            DTypeName(dtype)));
  }
  if (IsComplex(dtype)) {
    throw Error(fmt::format("DispatchDType: {} is a complex dtype, which real-valued code does not take",
                            DTypeName(dtype)));
  }
  throw Error(fmt::format("DispatchDType: dtype {} (value {}) has no C++ element type", DTypeName(dtype),
                          static_cast<int>(dtype)));
}

}  // namespace detail

}  // namespace kiln
