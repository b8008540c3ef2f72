// A model's vocabulary (token <-> id), and reading one from tokenizer.json.

#include "tokenizers/vocabulary.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizers/models.h"

namespace kiln::tokenizers {

Vocabulary::Vocabulary(const std::vector<std::pair<std::string, int32_t>>& vocab, const Fields& f,
                       std::string_view model) {
  tokens_ = TokensById(vocab, f, fmt::format("{}: \"vocab\"", model));
  present_.assign(tokens_.size(), false);
  for (const auto& v : vocab) present_[v.second] = true;
  ids_.reserve(vocab.size());
  for (const auto& [t, id] : vocab)
    if (!ids_.emplace(t, id).second)
      f.Fail(fmt::format("{}: token \"{}\" appears twice in the vocabulary", model, t));
}

bool Vocabulary::Append(const std::string& token) {
  if (!ids_.emplace(token, Size()).second) return false;
  tokens_.push_back(token);
  present_.push_back(true);
  return true;
}

std::optional<int32_t> Vocabulary::TokenToId(std::string_view token) const {
  const auto it = ids_.find(std::string(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

const std::string* Vocabulary::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || !present_[id]) return nullptr;
  return &tokens_[id];
}

std::string Vocabulary::ToJson() const {
  std::string o = "{";
  bool first = true;
  for (size_t id = 0; id < tokens_.size(); ++id) {
    if (!present_[id]) continue;
    o += (first ? "" : ",") + JsonString(tokens_[id]) + ":" + std::to_string(id);
    first = false;
  }
  return o + "}";
}

std::array<int32_t, 256> Vocabulary::ByteIds() const {
  std::array<int32_t, 256> ids;
  for (int b = 0; b < 256; ++b) ids[b] = Find(fmt::format("<0x{:02X}>", b));
  return ids;
}

std::vector<std::pair<std::string, int32_t>> VocabFromJson(const io::Json& vocab, const Fields& f,
                                                           std::string_view where) {
  f.CheckObject(vocab, where);
  const auto& members = vocab.Members(std::string(where));
  std::vector<std::pair<std::string, int32_t>> out;
  out.reserve(members.size());
  for (const auto& [token, id] : members) {
    const int64_t v = f.AsInt(id, fmt::format("{}: id of \"{}\"", where, token));
    if (v < 0 || v >= (int64_t{1} << 31) - 1)
      f.Fail(fmt::format("{}: id {} of \"{}\" is outside [0, 2^31-1)", where, v, token));
    out.emplace_back(token, static_cast<int32_t>(v));
  }
  return out;
}

std::vector<std::string> TokensById(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                    const Fields& f, std::string_view where) {
  int32_t max_id = -1;
  for (const auto& v : vocab) max_id = std::max(max_id, v.second);
  // Ids are dense in real vocabularies; a file whose ids leave most of the table empty is refused
  // before the table is allocated.
  if (static_cast<int64_t>(max_id) + 1 > 2 * static_cast<int64_t>(vocab.size()) + 1024)
    f.Fail(fmt::format("{}: ids go up to {} for {} tokens", where, max_id, vocab.size()));
  std::vector<std::string> tokens(static_cast<size_t>(max_id + 1));
  std::vector<bool> seen(tokens.size());
  for (const auto& [t, id] : vocab) {
    if (seen[id]) f.Fail(fmt::format("{}: id {} is given to \"{}\" and \"{}\"", where, id, tokens[id], t));
    seen[id] = true;
    tokens[id] = t;
  }
  return tokens;
}

}  // namespace kiln::tokenizers
