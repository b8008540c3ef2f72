// The decoders of tokenizer.json: each step of HuggingFace's decode chain rewrites the list of
// token strings; the tokenizer joins what is left.

#include <fmt/format.h>

#include "tokenizers/byte_level.h"
#include "tokenizers/pattern.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

/// GPT-2's byte alphabet back to bytes; all tokens become one string (invalid UTF-8 as U+FFFD).
class ByteLevelDecoder final : public Decoder {
 public:
  void Decode(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) bytes += CharsToBytes(t);
    tokens.assign(1, Utf8Lossy(bytes));
  }
};

/// Runs of <0xNN> tokens back to bytes; a run that is not valid UTF-8 gives one U+FFFD per byte.
class ByteFallback final : public Decoder {
 public:
  void Decode(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t run = 0;
    const auto flush = [&] {
      if (run == 0) return;
      if (FirstInvalidUtf8(bytes) == std::string::npos) {
        out.push_back(bytes);
      } else {
        for (size_t k = 0; k < run; ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      run = 0;
    };
    for (std::string& t : tokens) {
      int value = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        unsigned v = 0;
        bool hex = true;
        for (int k = 3; k < 5; ++k) {
          const char c = t[k];
          v = v * 16 + (c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : (hex = false, 0));
        }
        if (hex) value = static_cast<int>(v);
      }
      if (value >= 0) {
        bytes += static_cast<char>(value);
        ++run;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class Fuse final : public Decoder {
 public:
  void Decode(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

/// Removes up to `start` leading and `stop` trailing copies of `content` from each token.
class Strip final : public Decoder {
 public:
  Strip(std::string content, int64_t start, int64_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void Decode(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return;
    for (std::string& t : tokens) {
      size_t b = 0, e = t.size();
      for (int64_t k = 0;
           k < start_ && e - b >= content_.size() && t.compare(b, content_.size(), content_) == 0; ++k)
        b += content_.size();
      for (int64_t k = 0; k < stop_ && e - b >= content_.size() &&
                          t.compare(e - content_.size(), content_.size(), content_) == 0;
           ++k)
        e -= content_.size();
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  int64_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) t = pattern_.ReplaceAll(t, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

/// The Metaspace replacement back to spaces; in the first token it is dropped unless the
/// pre-tokenizer never prepends one.
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t k = 0; k < t.size();) {
        if (t.compare(k, replacement_.size(), replacement_) == 0) {
          // As HuggingFace: the first token drops its replacements instead of spacing them.
          if (i != 0 || !strip_first_) out += ' ';
          k += replacement_.size();
        } else {
          out += t[k++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

/// BERT's "##" continuations joined to their word, other tokens separated by spaces, and the
/// spaces before punctuation and contractions cleaned up.
class WordPiece final : public Decoder {
 public:
  WordPiece(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (!prefix_.empty() && t.compare(0, prefix_.size(), prefix_) == 0)
          t.erase(0, prefix_.size());
        else
          t = " " + t;
      }
      if (cleanup_) t = Cleanup(t);
    }
  }
  static std::string Cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) {
      const std::string f(from), t(to);
      for (size_t at = s.find(f); at != std::string::npos; at = s.find(f, at + t.size()))
        s.replace(at, f.size(), t);
    }
    return s;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

/// The original BPE's end-of-word suffix ("</w>") back to spaces.
class BpeSuffix final : public Decoder {
 public:
  explicit BpeSuffix(std::string suffix) : suffix_(std::move(suffix)) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      const std::string with = i + 1 == tokens.size() ? "" : " ";
      for (size_t at = t.find(suffix_); !suffix_.empty() && at != std::string::npos;
           at = t.find(suffix_, at + with.size()))
        t.replace(at, suffix_.size(), with);
    }
  }

 private:
  std::string suffix_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::shared_ptr<const Decoder>> steps) : steps_(std::move(steps)) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (const auto& s : steps_) s->Decode(tokens);
  }

 private:
  std::vector<std::shared_ptr<const Decoder>> steps_;
};

}  // namespace

std::shared_ptr<const Decoder> DecoderFromJson(const io::Json& j, const Fields& f) {
  const std::string type = f.Type(j, "decoder");
  const std::string where = "decoder " + type;
  if (type == "ByteLevel") return std::make_shared<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_shared<ByteFallback>();
  if (type == "Fuse") return std::make_shared<Fuse>();
  if (type == "Strip")
    return std::make_shared<Strip>(f.String(j, "content", where), f.IntOr(j, "start", where, 0),
                                   f.IntOr(j, "stop", where, 0));
  if (type == "Replace")
    return std::make_shared<ReplaceDecoder>(Pattern(f.Required(j, "pattern", where), f, where),
                                            f.String(j, "content", where));
  if (type == "Metaspace") {
    bool strip_first = f.BoolOr(j, "add_prefix_space", where, true);
    if (const io::Json* s = f.Optional(j, "prepend_scheme"))
      strip_first = f.AsString(*s, where + ": \"prepend_scheme\"") != "never";
    return std::make_shared<MetaspaceDecoder>(f.StringOr(j, "replacement", where, "\xE2\x96\x81"),
                                              strip_first);
  }
  if (type == "WordPiece")
    return std::make_shared<WordPiece>(f.StringOr(j, "prefix", where, "##"),
                                       f.BoolOr(j, "cleanup", where, true));
  if (type == "BPEDecoder") return std::make_shared<BpeSuffix>(f.StringOr(j, "suffix", where, "</w>"));
  if (type == "Sequence") {
    std::vector<std::shared_ptr<const Decoder>> steps;
    for (const io::Json& s : f.Array(j, "decoders", where)) steps.push_back(DecoderFromJson(s, f));
    return std::make_shared<SequenceDecoder>(std::move(steps));
  }
  f.Fail(
      fmt::format("decoder type \"{}\" is not supported (kiln reads ByteLevel, ByteFallback, Fuse, Strip, "
                  "Replace, Metaspace, WordPiece, BPEDecoder and Sequence)",
                  type));
}

}  // namespace kiln::tokenizers
