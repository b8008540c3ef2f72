// Training a byte-level BPE: words from GPT-2's pre-tokenizer, counted once; pair counts kept
// up to date incrementally as each merge rewrites only the words that hold its pair.

#include <fmt/format.h>

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "kiln/tokenizers/tokenizer.h"
#include "tokenizers/byte_level.h"
#include "tokenizers/hf_json.h"
#include "tokenizers/regex.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

namespace {

using Pair = std::pair<int32_t, int32_t>;

struct PairHash {
  size_t operator()(const Pair& p) const {
    return std::hash<uint64_t>()((static_cast<uint64_t>(static_cast<uint32_t>(p.first)) << 32) |
                                 static_cast<uint32_t>(p.second));
  }
};

/// A candidate merge: the most frequent pair first, then the smaller pair of ids.
struct Candidate {
  int64_t count;
  Pair pair;
  bool operator<(const Candidate& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

constexpr char kEndOfText[] = "<|endoftext|>";

}  // namespace

Tokenizer TrainBpe(const std::vector<std::string>& texts, int vocab_size) {
  if (vocab_size < 257)
    detail::Throw("TrainBpe: vocab_size {} is below 257 (256 byte tokens and {})", vocab_size, kEndOfText);
  const Regex regex(kGpt2Pattern, "TrainBpe");

  // The distinct words and how often each occurs.
  std::unordered_map<std::string, int32_t> word_index;
  std::vector<std::vector<int32_t>> words;
  std::vector<int64_t> freq;
  for (size_t t = 0; t < texts.size(); ++t) {
    CheckUtf8(texts[t], fmt::format("TrainBpe: text {}", t));
    for (const auto& [b, e] : regex.FindAll(texts[t])) {
      const std::string word = texts[t].substr(b, e - b);
      const auto [it, added] = word_index.emplace(word, static_cast<int32_t>(words.size()));
      if (added) {
        words.emplace_back(word.begin(), word.end());
        for (int32_t& s : words.back()) s = static_cast<unsigned char>(s);
        freq.push_back(0);
      }
      ++freq[it->second];
    }
  }

  std::vector<std::string> bytes_of(256);  // each token's bytes
  std::unordered_map<std::string, int32_t> id_of;
  for (int b = 0; b < 256; ++b) {
    bytes_of[b] = std::string(1, static_cast<char>(b));
    id_of[bytes_of[b]] = b;
  }

  std::unordered_map<Pair, int64_t, PairHash> counts;
  std::unordered_map<Pair, std::unordered_set<int32_t>, PairHash> where;
  for (size_t w = 0; w < words.size(); ++w) {
    for (size_t k = 0; k + 1 < words[w].size(); ++k) {
      const Pair p{words[w][k], words[w][k + 1]};
      counts[p] += freq[w];
      where[p].insert(static_cast<int32_t>(w));
    }
  }
  std::priority_queue<Candidate> heap;
  for (const auto& [p, c] : counts) heap.push({c, p});

  std::vector<Pair> merges;
  const size_t max_tokens = static_cast<size_t>(vocab_size) - 1;  // <|endoftext|> comes last
  while (bytes_of.size() < max_tokens && !heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    const auto cit = counts.find(top.pair);
    const int64_t now = cit == counts.end() ? 0 : cit->second;
    if (now != top.count) {  // counts only fall once a pair exists: re-queue at its count now
      if (now > 0) heap.push({now, top.pair});
      continue;
    }
    if (now <= 0) continue;
    const auto [a, b] = top.pair;
    const std::string merged = bytes_of[a] + bytes_of[b];
    int32_t id;
    if (const auto it = id_of.find(merged); it != id_of.end()) {
      id = it->second;  // another pair already spelled these bytes
    } else {
      id = static_cast<int32_t>(bytes_of.size());
      bytes_of.push_back(merged);
      id_of.emplace(merged, id);
    }
    merges.push_back(top.pair);

    std::unordered_set<Pair, PairHash> grown;
    const std::unordered_set<int32_t> affected = std::move(where[top.pair]);
    where.erase(top.pair);
    for (const int32_t w : affected) {
      std::vector<int32_t>& word = words[w];
      const int64_t f = freq[w];
      std::vector<int32_t> next;
      next.reserve(word.size());
      bool changed = false;
      for (size_t k = 0; k < word.size(); ++k) {
        if (k + 1 < word.size() && word[k] == a && word[k + 1] == b) {
          next.push_back(id);
          ++k;
          changed = true;
        } else {
          next.push_back(word[k]);
        }
      }
      if (!changed) continue;
      for (size_t k = 0; k + 1 < word.size(); ++k) {
        const Pair p{word[k], word[k + 1]};
        if ((counts[p] -= f) <= 0) counts.erase(p);
      }
      for (size_t k = 0; k + 1 < next.size(); ++k) {
        const Pair p{next[k], next[k + 1]};
        counts[p] += f;
        if (p.first == id || p.second == id) grown.insert(p);
        if (p != top.pair) where[p].insert(w);
      }
      word = std::move(next);
    }
    for (const Pair& p : grown)
      if (const auto it = counts.find(p); it != counts.end() && it->second > 0) heap.push({it->second, p});
  }

  BpeSpec spec;
  for (size_t id = 0; id < bytes_of.size(); ++id) spec.vocab.emplace_back(BytesToChars(bytes_of[id]), id);
  // A text that holds <|endoftext|> may have merged its bytes into a token of that spelling.
  if (id_of.count(kEndOfText) == 0)
    spec.vocab.emplace_back(kEndOfText, static_cast<int32_t>(bytes_of.size()));
  for (const Pair& p : merges)
    spec.merges.emplace_back(BytesToChars(bytes_of[p.first]), BytesToChars(bytes_of[p.second]));
  return Tokenizer(ByteLevelBpePipeline(spec, kEndOfText, Fields("TrainBpe", "(trained)")));
}

}  // namespace kiln::tokenizers
