#include "tokenizers/pattern.h"

#include <fmt/format.h>

namespace kiln::tokenizers {

Pattern::Pattern(const io::Json& j, const Fields& f, std::string_view where) {
  f.CheckObject(j, fmt::format("{}: \"pattern\"", where));
  if (const io::Json* s = f.Optional(j, "String")) {
    literal_ = f.AsString(*s, fmt::format("{}: pattern \"String\"", where));
  } else if (const io::Json* r = f.Optional(j, "Regex")) {
    regex_.emplace(f.AsString(*r, fmt::format("{}: pattern \"Regex\"", where)), f.Name(where));
  } else {
    f.Fail(fmt::format("{}: \"pattern\" has neither \"String\" nor \"Regex\"", where));
  }
}

std::vector<std::pair<size_t, size_t>> Pattern::FindAll(std::string_view text) const {
  if (regex_) return regex_->FindAll(text);
  std::vector<std::pair<size_t, size_t>> out;
  if (literal_.empty()) return out;
  for (size_t at = text.find(literal_); at != std::string_view::npos;
       at = text.find(literal_, at + literal_.size()))
    out.emplace_back(at, at + literal_.size());
  return out;
}

std::string Pattern::ReplaceAll(std::string_view text, std::string_view content) const {
  std::string out;
  size_t last = 0;
  for (const auto& [b, e] : FindAll(text)) {
    out.append(text.substr(last, b - last));
    out.append(content);
    last = e;
  }
  out.append(text.substr(last));
  return out;
}

}  // namespace kiln::tokenizers
