#pragma once
// Internal: a small JSON value, parser and writer for the formats kiln reads and writes
// (safetensors headers, checkpoint records). The parser is strict and bounded: depth, size and
// number ranges are checked, and every error names the offset.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::io {

class Json {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Json() = default;
  static Json Bool(bool b);
  static Json Number(double v);
  /// An integer kept exactly (written without exponent; |v| < 2^63).
  static Json Int(int64_t v);
  static Json String(std::string s);
  static Json Array(std::vector<Json> items = {});
  static Json Object();
  /// An object of `members` in their order, built without a search per member (vocabularies of
  /// 100k tokens); a repeated key is a kiln::Error naming it.
  static Json Object(std::vector<std::pair<std::string, Json>> members);

  Kind kind() const { return kind_; }
  bool IsObject() const { return kind_ == Kind::kObject; }
  bool AsBool() const;
  double AsNumber() const;
  /// The number as an integer; kiln::Error unless it is integral and fits (`what` names the field).
  int64_t AsInt(const std::string& what) const;
  const std::string& AsString(const std::string& what) const;
  const std::vector<Json>& AsArray(const std::string& what) const;
  /// Object members in insertion order.
  const std::vector<std::pair<std::string, Json>>& Members(const std::string& what) const;
  /// The member `key` of an object, or nullptr.
  const Json* Find(const std::string& key) const;
  /// Adds (or replaces) a member of an object.
  Json& Set(const std::string& key, Json value);
  void Push(Json value);

  /// Compact JSON text.
  std::string Dump() const;
  /// Parses `text` (at most `max_depth` nesting); kiln::Error naming `source` and the offset.
  static Json Parse(const std::string& text, const std::string& source, int max_depth = 64);

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  bool is_int_ = false;
  int64_t int_ = 0;
  std::string string_;
  std::vector<Json> array_;
  std::vector<std::pair<std::string, Json>> object_;
};

}  // namespace kiln::io
