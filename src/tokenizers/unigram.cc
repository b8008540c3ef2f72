// Unigram: each word is split into the sequence of vocabulary pieces with the highest total
// log-probability (Viterbi); a character no piece covers is the unknown token (its score the
// lowest piece's minus 10, as SentencePiece and HuggingFace), consecutive unknowns fused, or its
// bytes as <0xNN> tokens with byte_fallback.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "tokenizers/models.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

constexpr double kUnknownPenalty = 10.0;

class Unigram final : public Model {
 public:
  Unigram(const io::Json& j, const Fields& f) {
    const std::string where = "model Unigram";
    const std::vector<io::Json>& vocab = f.Array(j, "vocab", where);
    scores_.reserve(vocab.size());
    double min_score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < vocab.size(); ++i) {
      const std::string what = fmt::format("{}: vocab entry {}", where, i);
      const auto& e = f.AsArray(vocab[i], what);
      if (e.size() != 2 || e[1].kind() != io::Json::Kind::kNumber || !std::isfinite(e[1].AsNumber()))
        f.Fail(what + " is not [piece, score]");
      const std::string& piece = f.AsString(e[0], what);
      if (!vocab_.Append(piece)) f.Fail(fmt::format("{}: piece \"{}\" appears twice", where, piece));
      scores_.push_back(e[1].AsNumber());
      min_score = std::min(min_score, e[1].AsNumber());
      max_len_ = std::max(max_len_, piece.size());
    }
    if (scores_.empty()) f.Fail(where + ": \"vocab\" is empty");
    if (const io::Json* u = f.Optional(j, "unk_id")) {
      const int64_t id = f.AsInt(*u, where + ": \"unk_id\"");
      if (id < 0 || id >= static_cast<int64_t>(scores_.size()))
        f.Fail(fmt::format("{}: unk_id {} is outside the vocabulary of {}", where, id, scores_.size()));
      unk_id_ = static_cast<int32_t>(id);
    }
    byte_fallback_ = f.BoolOr(j, "byte_fallback", where, false);
    unk_score_ = min_score - kUnknownPenalty;
    byte_ids_.fill(-1);
    if (byte_fallback_) byte_ids_ = vocab_.ByteIds();
  }

  void Tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    const size_t n = word.size();
    if (n == 0) return;
    constexpr double kNone = -std::numeric_limits<double>::infinity();
    struct Best {
      double score = kNone;
      size_t from = 0;
      int32_t id = -1;  // -1: the unknown token
    };
    std::vector<Best> best(n + 1);
    best[0].score = 0;
    std::string sub;
    for (size_t i = 0; i < n;) {
      const size_t char_len = std::min(Utf8SequenceLength(static_cast<unsigned char>(word[i])), n - i);
      if (best[i].score != kNone) {
        bool single = false;
        for (size_t len = char_len; len <= std::min(max_len_, n - i);) {
          sub.assign(word.substr(i, len));
          const int32_t id = vocab_.Find(sub);
          if (id >= 0) {
            const double s = best[i].score + scores_[id];
            if (best[i + len].score == kNone || s > best[i + len].score) best[i + len] = {s, i, id};
            single = single || len == char_len;
          }
          if (i + len >= n) break;
          len += Utf8SequenceLength(static_cast<unsigned char>(word[i + len]));
        }
        if (!single) {
          const double s = best[i].score + unk_score_;
          if (best[i + char_len].score == kNone || s > best[i + char_len].score)
            best[i + char_len] = {s, i, -1};
        }
      }
      i += char_len;
    }
    // Back from the end: (begin, end, id) of each piece.
    std::vector<std::tuple<size_t, size_t, int32_t>> path;
    for (size_t e = n; e > 0; e = best[e].from) path.emplace_back(best[e].from, e, best[e].id);
    std::reverse(path.begin(), path.end());
    bool last_unk = false;
    for (const auto& [b, e, id] : path) {
      if (id >= 0) {
        out.push_back(id);
        last_unk = false;
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (size_t k = b; k < e; ++k) all = all && byte_ids_[static_cast<unsigned char>(word[k])] >= 0;
        if (all) {
          for (size_t k = b; k < e; ++k) out.push_back(byte_ids_[static_cast<unsigned char>(word[k])]);
          last_unk = false;
          continue;
        }
      }
      if (unk_id_ >= 0 && !last_unk) out.push_back(unk_id_);
      last_unk = true;
    }
  }

  std::optional<int32_t> TokenToId(std::string_view token) const override { return vocab_.TokenToId(token); }
  const std::string* IdToToken(int32_t id) const override { return vocab_.IdToToken(id); }
  int32_t Size() const override { return vocab_.Size(); }
  std::optional<std::string> UnkToken() const override {
    if (unk_id_ < 0) return std::nullopt;
    return *vocab_.IdToToken(unk_id_);
  }
  std::string ToJson() const override {
    std::string o =
        "{\"type\":\"Unigram\",\"unk_id\":" + (unk_id_ < 0 ? std::string("null") : std::to_string(unk_id_)) +
        ",\"byte_fallback\":" + (byte_fallback_ ? "true" : "false") + ",\"vocab\":[";
    for (size_t i = 0; i < scores_.size(); ++i)
      o += (i ? ",[" : "[") + JsonString(*vocab_.IdToToken(static_cast<int32_t>(i))) + "," +
           io::Json::Number(scores_[i]).Dump() + "]";
    return o + "]}";
  }

 private:
  Vocabulary vocab_;
  std::vector<double> scores_;  // by id
  size_t max_len_ = 0;
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  double unk_score_ = 0;
  std::array<int32_t, 256> byte_ids_{};
};

}  // namespace

std::shared_ptr<const Model> UnigramFromJson(const io::Json& j, const Fields& f) {
  return std::make_shared<Unigram>(j, f);
}

}  // namespace kiln::tokenizers
