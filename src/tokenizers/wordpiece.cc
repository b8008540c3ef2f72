// WordPiece (BERT): each word is split greedily into the longest tokens of the vocabulary, the
// ones after the first spelled with the continuing-subword prefix ("##"); a word that cannot be
// split is the unknown token.

#include <fmt/format.h>

#include "tokenizers/models.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

class WordPiece final : public Model {
 public:
  WordPiece(const io::Json& j, const Fields& f) {
    const std::string where = "model WordPiece";
    vocab_ = Vocabulary(VocabFromJson(f.Required(j, "vocab", where), f, where + ": \"vocab\""), f, where);
    unk_token_ = f.StringOr(j, "unk_token", where, "[UNK]");
    unk_id_ = vocab_.Find(unk_token_);
    if (unk_id_ < 0) f.Fail(fmt::format("{}: unk_token \"{}\" is not in the vocabulary", where, unk_token_));
    prefix_ = f.StringOr(j, "continuing_subword_prefix", where, "##");
    max_chars_ = f.IntOr(j, "max_input_chars_per_word", where, 100);
  }

  void Tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    if (word.empty()) return;
    std::vector<size_t> bounds;  // character boundaries
    for (size_t i = 0; i < word.size(); i += Utf8SequenceLength(static_cast<unsigned char>(word[i])))
      bounds.push_back(i);
    bounds.push_back(word.size());
    if (static_cast<int64_t>(bounds.size()) - 1 > max_chars_) {
      out.push_back(unk_id_);
      return;
    }
    std::vector<int32_t> pieces;
    size_t start = 0;  // index into bounds
    std::string candidate;
    while (start + 1 < bounds.size()) {
      int32_t found = -1;
      size_t end = bounds.size() - 1;
      for (; end > start; --end) {
        candidate.assign(start > 0 ? prefix_ : std::string());
        candidate.append(word.substr(bounds[start], bounds[end] - bounds[start]));
        found = vocab_.Find(candidate);
        if (found >= 0) break;
      }
      if (found < 0) {
        out.push_back(unk_id_);
        return;
      }
      pieces.push_back(found);
      start = end;
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }

  std::optional<int32_t> TokenToId(std::string_view token) const override { return vocab_.TokenToId(token); }
  const std::string* IdToToken(int32_t id) const override { return vocab_.IdToToken(id); }
  int32_t Size() const override { return vocab_.Size(); }
  std::optional<std::string> UnkToken() const override { return unk_token_; }
  std::string ToJson() const override {
    std::string o = "{\"type\":\"WordPiece\",\"unk_token\":" + JsonString(unk_token_) +
                    ",\"continuing_subword_prefix\":" + JsonString(prefix_) +
                    ",\"max_input_chars_per_word\":" + std::to_string(max_chars_) + ",\"vocab\":";
    return o + vocab_.ToJson() + "}";
  }

 private:
  Vocabulary vocab_;
  std::string unk_token_, prefix_;
  int32_t unk_id_ = 0;
  int64_t max_chars_ = 100;
};

}  // namespace

std::shared_ptr<const Model> WordPieceFromJson(const io::Json& j, const Fields& f) {
  return std::make_shared<WordPiece>(j, f);
}

}  // namespace kiln::tokenizers
