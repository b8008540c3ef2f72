// A small strict JSON parser and writer.

#include "io/json.h"

#include <cmath>
#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include "core/check.h"

namespace kiln::io {

Json Json::Bool(bool b) {
  Json j;
  j.kind_ = Kind::kBool;
  j.bool_ = b;
  return j;
}

Json Json::Number(double v) {
  Json j;
  j.kind_ = Kind::kNumber;
  j.number_ = v;
  return j;
}

Json Json::Int(int64_t v) {
  Json j = Number(static_cast<double>(v));
  j.is_int_ = true;
  j.int_ = v;
  return j;
}

Json Json::String(std::string s) {
  Json j;
  j.kind_ = Kind::kString;
  j.string_ = std::move(s);
  return j;
}

Json Json::Array(std::vector<Json> items) {
  Json j;
  j.kind_ = Kind::kArray;
  j.array_ = std::move(items);
  return j;
}

Json Json::Object() {
  Json j;
  j.kind_ = Kind::kObject;
  return j;
}

Json Json::Object(std::vector<std::pair<std::string, Json>> members) {
  std::unordered_set<std::string_view> seen(members.size());
  for (const auto& m : members)
    if (!seen.insert(m.first).second) detail::Throw("JSON: duplicate member \"{}\"", m.first);
  Json j = Object();
  j.object_ = std::move(members);
  return j;
}

bool Json::AsBool() const {
  if (kind_ != Kind::kBool) detail::Throw("JSON: expected a bool");
  return bool_;
}

double Json::AsNumber() const {
  if (kind_ != Kind::kNumber) detail::Throw("JSON: expected a number");
  return number_;
}

int64_t Json::AsInt(const std::string& what) const {
  if (kind_ != Kind::kNumber) detail::Throw("{}: expected an integer", what);
  if (is_int_) return int_;
  if (!std::isfinite(number_) || std::trunc(number_) != number_ || std::abs(number_) >= 9.2e18)
    detail::Throw("{}: {} is not an integer in range", what, number_);
  return static_cast<int64_t>(number_);
}

const std::string& Json::AsString(const std::string& what) const {
  if (kind_ != Kind::kString) detail::Throw("{}: expected a string", what);
  return string_;
}

const std::vector<Json>& Json::AsArray(const std::string& what) const {
  if (kind_ != Kind::kArray) detail::Throw("{}: expected an array", what);
  return array_;
}

const std::vector<std::pair<std::string, Json>>& Json::Members(const std::string& what) const {
  if (kind_ != Kind::kObject) detail::Throw("{}: expected an object", what);
  return object_;
}

const Json* Json::Find(const std::string& key) const {
  if (kind_ != Kind::kObject) return nullptr;
  for (const auto& [k, v] : object_)
    if (k == key) return &v;
  return nullptr;
}

Json& Json::Set(const std::string& key, Json value) {
  if (kind_ != Kind::kObject) detail::Throw("JSON: Set on a non-object");
  for (auto& [k, v] : object_) {
    if (k == key) {
      v = std::move(value);
      return v;
    }
  }
  object_.emplace_back(key, std::move(value));
  return object_.back().second;
}

void Json::Push(Json value) {
  if (kind_ != Kind::kArray) detail::Throw("JSON: Push on a non-array");
  array_.push_back(std::move(value));
}

namespace {

void DumpString(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void DumpTo(const Json& j, std::string& out) {
  switch (j.kind()) {
    case Json::Kind::kNull:
      out += "null";
      return;
    case Json::Kind::kBool:
      out += j.AsBool() ? "true" : "false";
      return;
    case Json::Kind::kNumber: {
      const double v = j.AsNumber();
      if (std::trunc(v) == v && std::abs(v) < 9.2e18) {
        out += fmt::format("{}", j.AsInt("number"));
      } else {
        out += fmt::format("{}", v);  // Shortest round-trip form.
      }
      return;
    }
    case Json::Kind::kString:
      DumpString(j.AsString("string"), out);
      return;
    case Json::Kind::kArray: {
      out += '[';
      bool first = true;
      for (const Json& e : j.AsArray("array")) {
        if (!first) out += ',';
        first = false;
        DumpTo(e, out);
      }
      out += ']';
      return;
    }
    case Json::Kind::kObject: {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : j.Members("object")) {
        if (!first) out += ',';
        first = false;
        DumpString(k, out);
        out += ':';
        DumpTo(v, out);
      }
      out += '}';
      return;
    }
  }
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& source, int max_depth)
      : t_(text), source_(source), max_depth_(max_depth) {}

  Json Document() {
    Json v = Value(0);
    Space();
    if (i_ != t_.size()) Fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    detail::Throw("{}: invalid JSON at offset {}: {}", source_, i_, what);
  }
  void Space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void Expect(char c) {
    if (!Eat(c)) Fail(fmt::format("expected '{}'", c));
  }
  bool Word(const char* w) {
    const std::string_view sv(w);
    if (t_.compare(i_, sv.size(), sv) == 0) {
      i_ += sv.size();
      return true;
    }
    return false;
  }

  Json Value(int depth) {
    if (depth > max_depth_) Fail("nested too deeply");
    Space();
    if (i_ >= t_.size()) Fail("unexpected end");
    const char c = t_[i_];
    if (c == '{') return ObjectValue(depth);
    if (c == '[') return ArrayValue(depth);
    if (c == '"') return Json::String(StringValue());
    if (Word("true")) return Json::Bool(true);
    if (Word("false")) return Json::Bool(false);
    if (Word("null")) return Json();
    return NumberValue();
  }

  Json ObjectValue(int depth) {
    ++i_;
    if (Eat('}')) return Json::Object();
    // Keys are checked for repeats with a hash set: a vocabulary object holds 100k members.
    std::vector<std::pair<std::string, Json>> members;
    std::unordered_set<std::string> seen;
    do {
      Space();
      if (i_ >= t_.size() || t_[i_] != '"') Fail("expected a member name");
      std::string key = StringValue();
      if (!seen.insert(key).second) Fail(fmt::format("duplicate member \"{}\"", key));
      Expect(':');
      Json value = Value(depth + 1);
      members.emplace_back(std::move(key), std::move(value));
    } while (Eat(','));
    Expect('}');
    return Json::Object(std::move(members));
  }

  Json ArrayValue(int depth) {
    ++i_;
    Json a = Json::Array();
    if (Eat(']')) return a;
    do {
      a.Push(Value(depth + 1));
    } while (Eat(','));
    Expect(']');
    return a;
  }

  std::string StringValue() {
    ++i_;  // Opening quote.
    std::string s;
    while (true) {
      if (i_ >= t_.size()) Fail("unterminated string");
      const char c = t_[i_++];
      if (c == '"') return s;
      if (static_cast<unsigned char>(c) < 0x20) Fail("control character in a string");
      if (c != '\\') {
        s += c;
        continue;
      }
      if (i_ >= t_.size()) Fail("unterminated escape");
      const char e = t_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          s += e;
          break;
        case 'n':
          s += '\n';
          break;
        case 't':
          s += '\t';
          break;
        case 'r':
          s += '\r';
          break;
        case 'b':
          s += '\b';
          break;
        case 'f':
          s += '\f';
          break;
        case 'u': {
          if (i_ + 4 > t_.size()) Fail("short \\u escape");
          const std::string hex = t_.substr(i_, 4);
          char* end = nullptr;
          const long cp = std::strtol(hex.c_str(), &end, 16);
          if (end != hex.c_str() + 4) Fail("bad \\u escape");
          i_ += 4;
          // UTF-8 encoding of the code point (surrogate pairs are kept as two code points).
          if (cp < 0x80) {
            s += static_cast<char>(cp);
          } else if (cp < 0x800) {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            s += static_cast<char>(0xE0 | (cp >> 12));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            s += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          Fail("bad escape");
      }
    }
  }

  Json NumberValue() {
    const size_t start = i_;
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    bool digits = false, integral = true;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c >= '0' && c <= '9') {
        digits = true;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        integral = false;
      } else {
        break;
      }
      ++i_;
    }
    if (!digits) Fail("expected a value");
    const std::string text = t_.substr(start, i_ - start);
    if (integral && text.size() <= 18) return Json::Int(std::strtoll(text.c_str(), nullptr, 10));
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(v)) Fail(fmt::format("bad number \"{}\"", text));
    return Json::Number(v);
  }

  const std::string& t_;
  const std::string& source_;
  const int max_depth_;
  size_t i_ = 0;
};

}  // namespace

std::string Json::Dump() const {
  std::string out;
  DumpTo(*this, out);
  return out;
}

Json Json::Parse(const std::string& text, const std::string& source, int max_depth) {
  return Parser(text, source, max_depth).Document();
}

}  // namespace kiln::io
