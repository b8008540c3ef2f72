#include "tokenizers/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/check.h"

namespace kiln::tokenizers {

struct Regex::Code {
  pcre2_code* code = nullptr;
  std::string pattern;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string PcreMessage(int error) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(error, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

Regex::Regex(std::string_view pattern, std::string_view what) : code_(std::make_shared<Code>()) {
  code_->pattern = std::string(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code_->code == nullptr)
    detail::Throw("{}: regex {}: {} at offset {}", what, pattern, PcreMessage(error), offset);
  // Without JIT support (some architectures) PCRE2's interpreter matches the same way.
  pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);
}

std::vector<std::pair<size_t, size_t>> Regex::FindAll(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), pcre2_match_data_free);
  if (md == nullptr) detail::Throw("regex {}: out of memory", code_->pattern);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    // The text was checked as UTF-8 once, before pre-tokenisation.
    const int rc =
        pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) detail::Throw("regex {}: matching failed: {}", code_->pattern, PcreMessage(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.emplace_back(b, e);
      start = e;
    } else {
      // An empty match: step over one character.
      if (b >= text.size()) break;
      start = b + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
  return out;
}

}  // namespace kiln::tokenizers
