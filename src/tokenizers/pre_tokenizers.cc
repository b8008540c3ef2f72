// The pre-tokenizers of tokenizer.json: regex and character splits with HuggingFace's split
// behaviours, GPT-2's byte-level mapping, Metaspace and BERT's word splitting.

#include <fmt/format.h>

#include <cctype>
#include <functional>

#include "tokenizers/byte_level.h"
#include "tokenizers/pattern.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

using Ranges = std::vector<std::pair<size_t, size_t>>;

/// What a split keeps of the matched delimiters (HuggingFace's SplitDelimiterBehavior).
enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior BehaviorFromJson(const io::Json& j, const Fields& f, std::string_view where, Behavior fallback) {
  const io::Json* v = f.Optional(j, "behavior");
  if (v == nullptr) return fallback;
  const std::string& b = f.AsString(*v, fmt::format("{}: \"behavior\"", where));
  if (b == "Removed") return Behavior::kRemoved;
  if (b == "Isolated") return Behavior::kIsolated;
  if (b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (b == "Contiguous") return Behavior::kContiguous;
  f.Fail(
      fmt::format("{}: behavior \"{}\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                  "Contiguous",
                  where, b));
}

/// Splits `piece` at the delimiters `matches` (sorted, disjoint) as `behavior` says, appending
/// the non-empty parts to `out`.
void SplitAt(const Piece& piece, Ranges matches, Behavior behavior, bool invert, std::vector<Piece>& out) {
  const std::string& t = piece.text;
  struct Part {
    size_t b, e;
    bool match;
  };
  std::vector<Part> parts;
  size_t last = 0;
  for (const auto& [b, e] : matches) {
    if (b > last) parts.push_back({last, b, invert});
    parts.push_back({b, e, !invert});
    last = e;
  }
  if (last < t.size()) parts.push_back({last, t.size(), invert});
  Ranges kept;
  switch (behavior) {
    case Behavior::kRemoved:
      for (const Part& p : parts)
        if (!p.match) kept.emplace_back(p.b, p.e);
      break;
    case Behavior::kIsolated:
      for (const Part& p : parts) kept.emplace_back(p.b, p.e);
      break;
    case Behavior::kContiguous:
      for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].match && i > 0 && parts[i - 1].match)
          kept.back().second = parts[i].e;
        else
          kept.emplace_back(parts[i].b, parts[i].e);
      }
      break;
    case Behavior::kMergedWithPrevious:
      for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].match && i > 0 && !parts[i - 1].match)
          kept.back().second = parts[i].e;
        else
          kept.emplace_back(parts[i].b, parts[i].e);
      }
      break;
    case Behavior::kMergedWithNext:
      for (size_t i = 0; i < parts.size(); ++i) {
        if (!parts[i].match && i > 0 && parts[i - 1].match)
          kept.back().second = parts[i].e;
        else
          kept.emplace_back(parts[i].b, parts[i].e);
      }
      break;
  }
  for (const auto& [b, e] : kept)
    if (e > b) out.push_back({t.substr(b, e - b), piece.at_start && b == 0});
}

/// The ranges of the single characters of `text` for which `pred` holds.
Ranges CharMatches(std::string_view text, const std::function<bool(char32_t)>& pred) {
  Ranges r;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i;
    if (pred(NextCodePoint(text, i))) r.emplace_back(start, i);
  }
  return r;
}

/// A pre-tokenizer that splits every piece the same way.
class Splitter : public PreTokenizer {
 public:
  void Split(std::vector<Piece>& pieces) const final {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (Piece& p : pieces) SplitOne(p, out);
    pieces = std::move(out);
  }
  virtual void SplitOne(Piece& piece, std::vector<Piece>& out) const = 0;
};

class SplitPattern final : public Splitter {
 public:
  SplitPattern(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void SplitOne(Piece& piece, std::vector<Piece>& out) const override {
    SplitAt(piece, pattern_.FindAll(piece.text), behavior_, invert_, out);
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

class SplitChars final : public Splitter {
 public:
  SplitChars(std::function<bool(char32_t)> pred, Behavior behavior)
      : pred_(std::move(pred)), behavior_(behavior) {}
  void SplitOne(Piece& piece, std::vector<Piece>& out) const override {
    SplitAt(piece, CharMatches(piece.text, pred_), behavior_, false, out);
  }

 private:
  std::function<bool(char32_t)> pred_;
  Behavior behavior_;
};

/// `\w+|[^\w\s]+`: words and runs of symbols, whitespace dropped.
class Whitespace final : public Splitter {
 public:
  Whitespace() : regex_(R"(\w+|[^\w\s]+)", "pre_tokenizer Whitespace") {}
  void SplitOne(Piece& piece, std::vector<Piece>& out) const override {
    for (const auto& [b, e] : regex_.FindAll(piece.text))
      out.push_back({piece.text.substr(b, e - b), piece.at_start && b == 0});
  }

 private:
  Regex regex_;
};

class ByteLevel final : public Splitter {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, std::optional<Regex> regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex), regex_(std::move(regex)) {}
  void SplitOne(Piece& piece, std::vector<Piece>& out) const override {
    if (add_prefix_space_ && (piece.text.empty() || piece.text[0] != ' ')) piece.text.insert(0, " ");
    if (!use_regex_) {
      out.push_back({BytesToChars(piece.text), piece.at_start});
      return;
    }
    for (const auto& [b, e] : regex_->FindAll(piece.text))
      out.push_back({BytesToChars(std::string_view(piece.text).substr(b, e - b)), piece.at_start && b == 0});
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::optional<Regex> regex_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class Metaspace final : public Splitter {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void SplitOne(Piece& piece, std::vector<Piece>& out) const override {
    std::string t;
    for (const char c : piece.text) {
      if (c == ' ')
        t += replacement_;
      else
        t += c;
    }
    const bool starts = t.compare(0, replacement_.size(), replacement_) == 0;
    if (!starts &&
        (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && piece.at_start)))
      t.insert(0, replacement_);
    Piece p{std::move(t), piece.at_start};
    if (!split_) {
      out.push_back(std::move(p));
      return;
    }
    Ranges matches;
    for (size_t at = p.text.find(replacement_); at != std::string::npos;
         at = p.text.find(replacement_, at + replacement_.size()))
      matches.emplace_back(at, at + replacement_.size());
    SplitAt(p, matches, Behavior::kMergedWithNext, false, out);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::shared_ptr<const PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void Split(std::vector<Piece>& pieces) const override {
    for (const auto& s : steps_) s->Split(pieces);
  }

 private:
  std::vector<std::shared_ptr<const PreTokenizer>> steps_;
};

}  // namespace

std::shared_ptr<const PreTokenizer> PreTokenizerFromJson(const io::Json& j, const Fields& f) {
  const std::string type = f.Type(j, "pre_tokenizer");
  const std::string where = "pre_tokenizer " + type;
  if (type == "ByteLevel") {
    const bool use_regex = f.BoolOr(j, "use_regex", where, true);
    std::optional<Regex> regex;
    if (use_regex) regex.emplace(kGpt2Pattern, where);
    return std::make_shared<ByteLevel>(f.BoolOr(j, "add_prefix_space", where, true), use_regex,
                                       std::move(regex));
  }
  if (type == "Split")
    return std::make_shared<SplitPattern>(Pattern(f.Required(j, "pattern", where), f, where),
                                          BehaviorFromJson(j, f, where, Behavior::kIsolated),
                                          f.BoolOr(j, "invert", where, false));
  if (type == "Whitespace") return std::make_shared<Whitespace>();
  if (type == "WhitespaceSplit") return std::make_shared<SplitChars>(IsWhitespace, Behavior::kRemoved);
  if (type == "Punctuation")
    return std::make_shared<SplitChars>(IsPunctuation, BehaviorFromJson(j, f, where, Behavior::kIsolated));
  if (type == "Digits")
    return std::make_shared<SplitChars>(IsNumeric, f.BoolOr(j, "individual_digits", where, false)
                                                       ? Behavior::kIsolated
                                                       : Behavior::kContiguous);
  if (type == "CharDelimiterSplit") {
    const std::string d = f.String(j, "delimiter", where);
    size_t i = 0;
    if (d.empty() || (NextCodePoint(d, i), i != d.size()))
      f.Fail(where + ": \"delimiter\" is not one character");
    size_t k = 0;
    const char32_t c = NextCodePoint(d, k);
    return std::make_shared<SplitChars>([c](char32_t x) { return x == c; }, Behavior::kRemoved);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::shared_ptr<const PreTokenizer>> steps;
    steps.push_back(std::make_shared<SplitChars>(IsWhitespace, Behavior::kRemoved));
    steps.push_back(std::make_shared<SplitChars>(
        [](char32_t c) { return (c < 0x80 && std::ispunct(static_cast<int>(c))) || IsPunctuation(c); },
        Behavior::kIsolated));
    return std::make_shared<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "Metaspace") {
    const std::string replacement = f.StringOr(j, "replacement", where, "\xE2\x96\x81");
    PrependScheme scheme =
        f.BoolOr(j, "add_prefix_space", where, true) ? PrependScheme::kAlways : PrependScheme::kNever;
    if (const io::Json* s = f.Optional(j, "prepend_scheme")) {
      const std::string& v = f.AsString(*s, where + ": \"prepend_scheme\"");
      if (v == "always")
        scheme = PrependScheme::kAlways;
      else if (v == "first")
        scheme = PrependScheme::kFirst;
      else if (v == "never")
        scheme = PrependScheme::kNever;
      else
        f.Fail(fmt::format("{}: prepend_scheme \"{}\" is not always, first or never", where, v));
    }
    if (replacement.empty()) f.Fail(where + ": \"replacement\" is empty");
    return std::make_shared<Metaspace>(replacement, scheme, f.BoolOr(j, "split", where, true));
  }
  if (type == "Sequence") {
    std::vector<std::shared_ptr<const PreTokenizer>> steps;
    for (const io::Json& s : f.Array(j, "pretokenizers", where)) steps.push_back(PreTokenizerFromJson(s, f));
    return std::make_shared<SequencePreTokenizer>(std::move(steps));
  }
  f.Fail(
      fmt::format("pre_tokenizer type \"{}\" is not supported (kiln reads ByteLevel, Split, Whitespace, "
                  "WhitespaceSplit, Punctuation, Digits, CharDelimiterSplit, BertPreTokenizer, Metaspace and "
                  "Sequence)",
                  type));
}

}  // namespace kiln::tokenizers
