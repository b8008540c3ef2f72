#pragma once
// Internal: reading the fields of tokenizer.json objects, every error naming the file and the
// object ("FromFile <file>: pre_tokenizer Split: \"pattern\" is missing").

#include <cstdint>
#include <string>
#include <string_view>

#include "io/json.h"

namespace kiln::tokenizers {

class Fields {
 public:
  /// `reader` and `file` start every message ("FromFile <file>").
  Fields(std::string reader, std::string file) : prefix_(std::move(reader) + " " + std::move(file)) {}

  /// "<reader> <file>: <where>", to start a message raised elsewhere (a regex's).
  std::string Name(std::string_view where) const { return prefix_ + ": " + std::string(where); }
  /// kiln::Error "<reader> <file>: <what>".
  [[noreturn]] void Fail(std::string_view what) const;
  /// The member `key` of object `j`, or nullptr when it is absent or null.
  const io::Json* Optional(const io::Json& j, std::string_view key) const;
  /// The member `key`; an error naming `where` when it is absent or null.
  const io::Json& Required(const io::Json& j, std::string_view key, std::string_view where) const;
  /// `j` must be an object (an error naming `where`).
  void CheckObject(const io::Json& j, std::string_view where) const;
  /// The object's "type" string.
  std::string Type(const io::Json& j, std::string_view where) const;

  std::string String(const io::Json& j, std::string_view key, std::string_view where) const;
  std::string StringOr(const io::Json& j, std::string_view key, std::string_view where,
                       std::string fallback) const;
  bool BoolOr(const io::Json& j, std::string_view key, std::string_view where, bool fallback) const;
  int64_t IntOr(const io::Json& j, std::string_view key, std::string_view where, int64_t fallback) const;
  double NumberOr(const io::Json& j, std::string_view key, std::string_view where, double fallback) const;
  const std::vector<io::Json>& Array(const io::Json& j, std::string_view key, std::string_view where) const;

  /// Value checks on a member already found.
  const std::string& AsString(const io::Json& v, std::string_view what) const;
  const std::vector<io::Json>& AsArray(const io::Json& v, std::string_view what) const;
  int64_t AsInt(const io::Json& v, std::string_view what) const;

 private:
  std::string prefix_;
};

}  // namespace kiln::tokenizers
