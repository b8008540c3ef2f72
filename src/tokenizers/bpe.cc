// Byte-pair encoding: a word starts as its characters (or their bytes as <0xNN> tokens with
// byte_fallback) and the adjacent pair of highest priority is merged until no merge applies.

#include <fmt/format.h>

#include <array>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "tokenizers/models.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

class Bpe final : public Model {
 public:
  Bpe(const BpeSpec& spec, const Fields& f)
      : unk_token_(spec.unk_token),
        prefix_(spec.continuing_subword_prefix),
        suffix_(spec.end_of_word_suffix),
        fuse_unk_(spec.fuse_unk),
        byte_fallback_(spec.byte_fallback),
        ignore_merges_(spec.ignore_merges),
        vocab_(spec.vocab, f, "model BPE") {
    if (unk_token_) {
      unk_id_ = vocab_.Find(*unk_token_);
      if (unk_id_ < 0)
        f.Fail(fmt::format("model BPE: unk_token \"{}\" is not in the vocabulary", *unk_token_));
    }
    merges_.reserve(spec.merges.size());
    for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
      const auto& [a, b] = spec.merges[rank];
      const int32_t ia = vocab_.Find(a), ib = vocab_.Find(b);
      if (ia < 0 || ib < 0)
        f.Fail(fmt::format("model BPE: merge {} \"{} {}\" names a token that is not in the vocabulary", rank,
                           a, b));
      const std::string merged =
          a + (!prefix_.empty() && b.compare(0, prefix_.size(), prefix_) == 0 ? b.substr(prefix_.size()) : b);
      const int32_t im = vocab_.Find(merged);
      if (im < 0)
        f.Fail(fmt::format("model BPE: merge {} \"{} {}\" makes \"{}\", which is not in the vocabulary", rank,
                           a, b, merged));
      // A repeated merge keeps its first (highest) priority, as HuggingFace's reader does.
      merges_.emplace(PairKey(ia, ib), Merge{static_cast<int32_t>(rank), im});
      merge_list_.emplace_back(a, b);
    }
    byte_ids_.fill(-1);
    if (byte_fallback_) byte_ids_ = vocab_.ByteIds();
  }

  void Tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    if (word.empty()) return;
    if (ignore_merges_) {
      const std::optional<int32_t> id = vocab_.TokenToId(word);
      if (id) {
        out.push_back(*id);
        return;
      }
    }
    std::vector<Symbol> syms;
    size_t i = 0;
    std::string s;
    while (i < word.size()) {
      const size_t start = i;
      NextCodePoint(word, i);
      s.assign(word.substr(start, i - start));
      if (start > 0 && !prefix_.empty()) s.insert(0, prefix_);
      if (i == word.size() && !suffix_.empty()) s += suffix_;
      const int32_t id = vocab_.Find(s);
      if (id >= 0) {
        syms.push_back({id, false});
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (size_t k = start; k < i; ++k) all = all && byte_ids_[static_cast<unsigned char>(word[k])] >= 0;
        if (all) {
          for (size_t k = start; k < i; ++k)
            syms.push_back({byte_ids_[static_cast<unsigned char>(word[k])], false});
          continue;
        }
      }
      if (unk_id_ >= 0) {
        if (fuse_unk_ && !syms.empty() && syms.back().unk) continue;
        syms.push_back({unk_id_, true});
      }
    }
    MergeAll(syms);
    for (const Symbol& y : syms)
      if (y.id >= 0) out.push_back(y.id);
  }

  std::optional<int32_t> TokenToId(std::string_view token) const override { return vocab_.TokenToId(token); }
  const std::string* IdToToken(int32_t id) const override { return vocab_.IdToToken(id); }
  int32_t Size() const override { return vocab_.Size(); }
  std::optional<std::string> UnkToken() const override { return unk_token_; }

  std::string ToJson() const override {
    std::string o = "{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":";
    o += unk_token_ ? JsonString(*unk_token_) : "null";
    o += ",\"continuing_subword_prefix\":" + (prefix_.empty() ? std::string("null") : JsonString(prefix_));
    o += ",\"end_of_word_suffix\":" + (suffix_.empty() ? std::string("null") : JsonString(suffix_));
    o += fmt::format(",\"fuse_unk\":{},\"byte_fallback\":{},\"ignore_merges\":{},\"vocab\":", fuse_unk_,
                     byte_fallback_, ignore_merges_);
    o += vocab_.ToJson() + ",\"merges\":[";
    for (size_t m = 0; m < merge_list_.size(); ++m)
      o +=
          (m ? ",[" : "[") + JsonString(merge_list_[m].first) + "," + JsonString(merge_list_[m].second) + "]";
    o += "]}";
    return o;
  }

 private:
  struct Symbol {
    int32_t id;
    bool unk;
    int32_t prev = -1, next = -1;
  };
  struct Merge {
    int32_t rank;
    int32_t id;
  };

  /// Applies the merges in priority order, the leftmost first among equal ranks: a heap of
  /// candidate pairs over a linked list of symbols, O(n log n) in the word's length.
  void MergeAll(std::vector<Symbol>& syms) const {
    const int32_t n = static_cast<int32_t>(syms.size());
    if (n < 2 || merges_.empty()) return;
    for (int32_t k = 0; k < n; ++k) {
      syms[k].prev = k - 1;
      syms[k].next = k + 1 < n ? k + 1 : -1;
    }
    using Candidate =
        std::tuple<int32_t, int32_t, int32_t, int32_t>;  // rank, left position, right id, merged id
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    const auto push = [&](int32_t left) {
      const int32_t right = syms[left].next;
      if (right < 0) return;
      const auto it = merges_.find(PairKey(syms[left].id, syms[right].id));
      if (it != merges_.end()) heap.emplace(it->second.rank, left, syms[right].id, it->second.id);
    };
    for (int32_t k = 0; k + 1 < n; ++k) push(k);
    while (!heap.empty()) {
      const auto [rank, left, right_id, merged] = heap.top();
      heap.pop();
      Symbol& l = syms[left];
      if (l.id < 0 || l.next < 0 || syms[l.next].id != right_id) continue;  // stale
      const auto it = merges_.find(PairKey(l.id, right_id));
      if (it == merges_.end() || it->second.rank != rank) continue;
      const int32_t right = l.next;
      l.id = merged;
      l.unk = false;
      l.next = syms[right].next;
      if (l.next >= 0) syms[l.next].prev = left;
      syms[right].id = -1;
      if (l.prev >= 0) push(l.prev);
      push(left);
    }
  }

  std::optional<std::string> unk_token_;
  std::string prefix_, suffix_;
  bool fuse_unk_, byte_fallback_, ignore_merges_;
  Vocabulary vocab_;
  int32_t unk_id_ = -1;
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<std::pair<std::string, std::string>> merge_list_;
  std::array<int32_t, 256> byte_ids_{};
};

}  // namespace

std::shared_ptr<const Model> MakeBpe(const BpeSpec& spec, const Fields& f) {
  return std::make_shared<Bpe>(spec, f);
}

BpeSpec BpeSpecFromJson(const io::Json& j, const Fields& f) {
  const std::string where = "model BPE";
  BpeSpec spec;
  spec.vocab = VocabFromJson(f.Required(j, "vocab", where), f, where + ": \"vocab\"");
  const std::vector<io::Json>& merges = f.Array(j, "merges", where);
  spec.merges.reserve(merges.size());
  for (size_t m = 0; m < merges.size(); ++m) {
    const io::Json& v = merges[m];
    if (v.kind() == io::Json::Kind::kString) {
      // The older form: "a b" (tokens never hold a space: byte-level and Metaspace spell it).
      const std::string& s = v.AsString("merge");
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        f.Fail(fmt::format("{}: merge {} \"{}\" is not two tokens separated by one space", where, m, s));
      spec.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (v.kind() == io::Json::Kind::kArray && v.AsArray("merge").size() == 2) {
      const auto& a = v.AsArray("merge");
      spec.merges.emplace_back(f.AsString(a[0], fmt::format("{}: merge {}", where, m)),
                               f.AsString(a[1], fmt::format("{}: merge {}", where, m)));
    } else {
      f.Fail(fmt::format("{}: merge {} is neither \"a b\" nor [\"a\", \"b\"]", where, m));
    }
  }
  if (const io::Json* u = f.Optional(j, "unk_token"))
    spec.unk_token = f.AsString(*u, where + ": \"unk_token\"");
  spec.continuing_subword_prefix = f.StringOr(j, "continuing_subword_prefix", where, "");
  spec.end_of_word_suffix = f.StringOr(j, "end_of_word_suffix", where, "");
  spec.fuse_unk = f.BoolOr(j, "fuse_unk", where, false);
  spec.byte_fallback = f.BoolOr(j, "byte_fallback", where, false);
  spec.ignore_merges = f.BoolOr(j, "ignore_merges", where, false);
  const double dropout = f.NumberOr(j, "dropout", where, 0.0);
  if (dropout != 0.0) f.Fail(fmt::format("{}: dropout {} is not supported (only 0 or null)", where, dropout));
  return spec;
}

std::string JsonString(std::string_view s) { return io::Json::String(std::string(s)).Dump(); }

}  // namespace kiln::tokenizers
