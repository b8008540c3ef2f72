// Unigram: each word is split into the sequence of vocabulary pieces with the highest total
// log-probability (Viterbi); a character no piece covers is the unknown token (its score the
// lowest piece's minus 10, as SentencePiece and HuggingFace), consecutive unknowns fused, or its
// bytes as <0xNN> tokens with byte_fallback.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>

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
    pieces_.reserve(vocab.size());
    double min_score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < vocab.size(); ++i) {
      const std::string what = fmt::format("{}: vocab entry {}", where, i);
      const auto& e = f.AsArray(vocab[i], what);
      if (e.size() != 2 || e[1].kind() != io::Json::Kind::kNumber || !std::isfinite(e[1].AsNumber()))
        f.Fail(what + " is not [piece, score]");
      const std::string& piece = f.AsString(e[0], what);
      if (!ids_.emplace(piece, static_cast<int32_t>(i)).second)
        f.Fail(fmt::format("{}: piece \"{}\" appears twice", where, piece));
      pieces_.emplace_back(piece, e[1].AsNumber());
      min_score = std::min(min_score, e[1].AsNumber());
      max_len_ = std::max(max_len_, piece.size());
    }
    if (pieces_.empty()) f.Fail(where + ": \"vocab\" is empty");
    if (const io::Json* u = f.Optional(j, "unk_id")) {
      const int64_t id = f.AsInt(*u, where + ": \"unk_id\"");
      if (id < 0 || id >= static_cast<int64_t>(pieces_.size()))
        f.Fail(fmt::format("{}: unk_id {} is outside the vocabulary of {}", where, id, pieces_.size()));
      unk_id_ = static_cast<int32_t>(id);
    }
    byte_fallback_ = f.BoolOr(j, "byte_fallback", where, false);
    unk_score_ = min_score - kUnknownPenalty;
    byte_ids_.fill(-1);
    if (byte_fallback_) {
      for (int b = 0; b < 256; ++b) {
        const auto it = ids_.find(fmt::format("<0x{:02X}>", b));
        if (it != ids_.end()) byte_ids_[b] = it->second;
      }
    }
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
          const auto it = ids_.find(sub);
          if (it != ids_.end()) {
            const double s = best[i].score + pieces_[it->second].second;
            if (best[i + len].score == kNone || s > best[i + len].score) best[i + len] = {s, i, it->second};
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

  std::optional<int32_t> TokenToId(std::string_view token) const override {
    const auto it = ids_.find(std::string(token));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  const std::string* IdToToken(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return nullptr;
    return &pieces_[id].first;
  }
  int32_t Size() const override { return static_cast<int32_t>(pieces_.size()); }
  std::optional<std::string> UnkToken() const override {
    if (unk_id_ < 0) return std::nullopt;
    return pieces_[unk_id_].first;
  }
  std::string ToJson() const override {
    std::string o =
        "{\"type\":\"Unigram\",\"unk_id\":" + (unk_id_ < 0 ? std::string("null") : std::to_string(unk_id_)) +
        ",\"byte_fallback\":" + (byte_fallback_ ? "true" : "false") + ",\"vocab\":[";
    for (size_t i = 0; i < pieces_.size(); ++i)
      o += (i ? ",[" : "[") + JsonString(pieces_[i].first) + "," +
           io::Json::Number(pieces_[i].second).Dump() + "]";
    return o + "]}";
  }

 private:
  std::vector<std::pair<std::string, double>> pieces_;
  std::unordered_map<std::string, int32_t> ids_;
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
