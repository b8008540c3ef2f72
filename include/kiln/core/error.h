#pragma once
/// @file
/// kiln::Error: the one exception type kiln throws, with the stack of where it was thrown.

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

/// The exception kiln throws for bad input and misuse. `what()` holds the message on its first
/// line and, below it, the stack of the call that failed (frames inside kiln dropped; function
/// names always, file:line when the program carries debug information, i.e. was built with -g).
/// The stack is captured cheaply when thrown and symbolised only when first printed.
class Error : public std::runtime_error {
 public:
  /// An error with `message` (one line, no trailing newline), capturing the caller's stack unless
  /// SetErrorStackCapture(false) turned capture off.
  explicit Error(std::string message);

  /// The message alone, without the stack.
  const std::string& message() const noexcept;
  /// The message followed by the symbolised stack.
  const char* what() const noexcept override;
  /// The symbolised stack alone, one frame per line ("  at function (file:line)").
  std::string StackTrace() const;
  /// The raw return addresses captured when the error was made (innermost first).
  const std::vector<void*>& Frames() const noexcept;

 private:
  struct State;  // Shared by copies: message, raw frames, the lazily built text.
  // Turns raw return addresses into StackTrace()'s text (defined in src/core/error_stack.cc).
  static std::string SymbolizeFrames(const std::vector<void*>& frames);
  std::shared_ptr<State> state_;
};

/// Controls whether new Errors capture the stack (on by default; a program that throws and
/// catches Errors in a hot loop may turn it off).
void SetErrorStackCapture(bool enabled);
/// Whether new Errors capture the stack (SetErrorStackCapture's last setting; true by default).
bool ErrorStackCapture();

}  // namespace kiln
