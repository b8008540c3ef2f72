// The normalizers of tokenizer.json: Unicode normal forms, case, accents, replacements and
// BERT's cleaning, as HuggingFace's tokenizers library defines them.

#include <fmt/format.h>

#include "tokenizers/pattern.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

class NormalForms final : public Normalizer {
 public:
  explicit NormalForms(NormalForm form) : form_(form) {}
  void Normalize(std::string& text) const override { text = tokenizers::Normalize(text, form_); }

 private:
  NormalForm form_;
};

class Lowercaser final : public Normalizer {
 public:
  void Normalize(std::string& text) const override { text = Lowercase(text); }
};

/// Removes the marks left by canonical decomposition (as HuggingFace: apply NFD first).
class StripAccents final : public Normalizer {
 public:
  explicit StripAccents(bool nonspacing_only) : nonspacing_only_(nonspacing_only) {}
  void Normalize(std::string& text) const override { text = Strip(text, nonspacing_only_); }
  static std::string Strip(std::string_view text, bool nonspacing_only) {
    std::string out;
    size_t i = 0;
    while (i < text.size()) {
      const size_t start = i;
      const char32_t c = NextCodePoint(text, i);
      if (nonspacing_only ? IsNonspacingMark(c) : IsMark(c)) continue;
      out.append(text.substr(start, i - start));
    }
    return out;
  }

 private:
  bool nonspacing_only_;
};

class StripSpaces final : public Normalizer {
 public:
  StripSpaces(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(std::string& text) const override {
    size_t b = 0, e = text.size();
    if (left_) {
      while (b < e) {
        size_t i = b;
        if (!IsWhitespace(NextCodePoint(text, i))) break;
        b = i;
      }
    }
    if (right_) {
      while (e > b) {
        size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t i = start;
        if (!IsWhitespace(NextCodePoint(text, i))) break;
        e = start;
      }
    }
    text = text.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Normalize(std::string& text) const override { text = pattern_.ReplaceAll(text, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void Normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

/// BERT's cleaning: control characters dropped, whitespace made a space, CJK ideographs padded
/// with spaces, then optionally accents stripped and lower case.
class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        chinese_(handle_chinese_chars),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}
  void Normalize(std::string& text) const override {
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
      const size_t start = i;
      const char32_t c = NextCodePoint(text, i);
      if (clean_text_) {
        if (c == 0 || c == 0xFFFD || IsBertControl(c)) continue;
        if (IsWhitespace(c)) {
          out += ' ';
          continue;
        }
      }
      if (chinese_ && IsCjkIdeograph(c)) {
        out += ' ';
        out.append(text, start, i - start);
        out += ' ';
        continue;
      }
      out.append(text, start, i - start);
    }
    if (strip_accents_) out = StripAccents::Strip(tokenizers::Normalize(out, NormalForm::kNfd), true);
    if (lowercase_) out = Lowercase(out);
    text = std::move(out);
  }

 private:
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::shared_ptr<const Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void Normalize(std::string& text) const override {
    for (const auto& s : steps_) s->Normalize(text);
  }

 private:
  std::vector<std::shared_ptr<const Normalizer>> steps_;
};

}  // namespace

std::shared_ptr<const Normalizer> NormalizerFromJson(const io::Json& j, const Fields& f) {
  const std::string type = f.Type(j, "normalizer");
  const std::string where = "normalizer " + type;
  if (type == "NFC") return std::make_shared<NormalForms>(NormalForm::kNfc);
  if (type == "NFD") return std::make_shared<NormalForms>(NormalForm::kNfd);
  if (type == "NFKC") return std::make_shared<NormalForms>(NormalForm::kNfkc);
  if (type == "NFKD") return std::make_shared<NormalForms>(NormalForm::kNfkd);
  if (type == "Lowercase") return std::make_shared<Lowercaser>();
  if (type == "StripAccents") return std::make_shared<StripAccents>(false);
  if (type == "Strip")
    return std::make_shared<StripSpaces>(f.BoolOr(j, "strip_left", where, true),
                                         f.BoolOr(j, "strip_right", where, true));
  if (type == "Replace")
    return std::make_shared<ReplaceNormalizer>(Pattern(f.Required(j, "pattern", where), f, where),
                                               f.String(j, "content", where));
  if (type == "Prepend") return std::make_shared<Prepend>(f.String(j, "prepend", where));
  if (type == "BertNormalizer") {
    const bool lowercase = f.BoolOr(j, "lowercase", where, true);
    return std::make_shared<BertNormalizer>(f.BoolOr(j, "clean_text", where, true),
                                            f.BoolOr(j, "handle_chinese_chars", where, true),
                                            f.BoolOr(j, "strip_accents", where, lowercase), lowercase);
  }
  if (type == "Sequence") {
    std::vector<std::shared_ptr<const Normalizer>> steps;
    for (const io::Json& s : f.Array(j, "normalizers", where)) steps.push_back(NormalizerFromJson(s, f));
    return std::make_shared<SequenceNormalizer>(std::move(steps));
  }
  f.Fail(
      fmt::format("normalizer type \"{}\" is not supported (kiln reads NFC, NFD, NFKC, NFKD, Lowercase, "
                  "StripAccents, Strip, Replace, Prepend, BertNormalizer and Sequence)",
                  type));
}

}  // namespace kiln::tokenizers
