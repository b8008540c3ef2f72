// Tokenizer: the pipeline run on a text (added tokens, normalizer, pre-tokenizer, model,
// post-processor) and back (decoder), and the special-token roles.

#include "kiln/tokenizers/tokenizer.h"

#include "core/check.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/sentencepiece.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(const Tokenizer&) = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(const Tokenizer&) = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

namespace {

const Tokenizer::Impl& Checked(const std::shared_ptr<const Tokenizer::Impl>& impl) {
  if (impl == nullptr) detail::Throw("Tokenizer: used after being moved from");
  return *impl;
}

}  // namespace

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special_tokens) const {
  const Impl& m = Checked(impl_);
  CheckUtf8(text, "Tokenizer::Encode");
  std::vector<int32_t> ids;
  // SentencePiece: the library's ids, after the BOS its users put first (as Llama's).
  if (m.sentencepiece && add_special_tokens && m.bos) ids.push_back(*m.bos);
  std::vector<Piece> pieces;
  for (const Segment& s : m.matcher->Split(text)) {
    if (s.added_id >= 0) {
      ids.push_back(s.added_id);
      continue;
    }
    if (m.sentencepiece) {
      m.sentencepiece->Encode(s.text, ids);
      continue;
    }
    pieces.assign(1, Piece{std::string(s.text), s.at_start});
    if (m.normalizer.stage) m.normalizer.stage->Normalize(pieces[0].text);
    if (m.pre_tokenizer.stage) m.pre_tokenizer.stage->Split(pieces);
    for (const Piece& p : pieces) m.model->Tokenize(p.text, ids);
  }
  if (add_special_tokens && m.post_processor.stage) m.post_processor.stage->Process(ids);
  return ids;
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  const Impl& m = Checked(impl_);
  const int32_t size = VocabSize();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= size)
      detail::Throw("Tokenizer::Decode: id {} (at {}) is outside the vocabulary [0, {})", ids[i], i, size);
  if (m.sentencepiece) {
    // Runs of the library's ids through its decoder; added tokens as their text.
    std::string out;
    std::vector<int32_t> run;
    for (size_t i = 0; i <= ids.size(); ++i) {
      const bool added = i < ids.size() && m.added_index.count(ids[i]) != 0;
      if (i < ids.size() && !added) {
        run.push_back(ids[i]);
        continue;
      }
      if (!run.empty()) out += m.sentencepiece->Decode(run);
      run.clear();
      if (added && !(skip_special_tokens && IsSpecial(ids[i])))
        out += m.added[m.added_index.at(ids[i])].content;
    }
    return out;
  }
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (skip_special_tokens && IsSpecial(ids[i])) continue;
    tokens.push_back(IdToToken(ids[i]));
  }
  std::string out;
  if (m.decoder.stage) {
    m.decoder.stage->Decode(tokens);
    for (const std::string& t : tokens) out += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  }
  return out;
}

int32_t Tokenizer::VocabSize() const {
  const Impl& m = Checked(impl_);
  int32_t n = m.sentencepiece ? m.sentencepiece->Size() : m.model->Size();
  for (const AddedToken& t : m.added) n = std::max(n, t.id + 1);
  return n;
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  return Checked(impl_).Find(token);
}

std::string Tokenizer::IdToToken(int32_t id) const {
  const Impl& m = Checked(impl_);
  const auto a = m.added_index.find(id);
  if (a != m.added_index.end()) return m.added[a->second].content;
  if (m.sentencepiece) {
    if (id >= 0 && id < m.sentencepiece->Size()) return m.sentencepiece->Piece(id);
  } else if (const std::string* t = m.model->IdToToken(id)) {
    return *t;
  }
  detail::Throw("Tokenizer::IdToToken: id {} is outside the vocabulary [0, {})", id, VocabSize());
}

bool Tokenizer::IsSpecial(int32_t id) const {
  const Impl& m = Checked(impl_);
  const auto a = m.added_index.find(id);
  if (a != m.added_index.end()) return m.added[a->second].special;
  return m.sentencepiece != nullptr && id >= 0 && id < m.sentencepiece->Size() &&
         m.sentencepiece->IsControl(id);
}

std::optional<int32_t> Tokenizer::Bos() const { return Checked(impl_).bos; }
std::optional<int32_t> Tokenizer::Eos() const { return Checked(impl_).eos; }
std::optional<int32_t> Tokenizer::Pad() const { return Checked(impl_).pad; }
std::optional<int32_t> Tokenizer::Unk() const { return Checked(impl_).unk; }

namespace {

/// A copy of `impl` whose `role` is the id of `token` (none when `token` is); an error naming
/// `setter` when the tokenizer has no such token.
std::shared_ptr<const Tokenizer::Impl> WithRole(const std::shared_ptr<const Tokenizer::Impl>& impl,
                                                std::optional<int32_t> Tokenizer::Impl::*role,
                                                std::optional<std::string_view> token, const char* setter) {
  auto copy = std::make_shared<Tokenizer::Impl>(Checked(impl));
  std::optional<int32_t> id;
  if (token) {
    id = copy->Find(*token);
    if (!id) detail::Throw("Tokenizer::{}: \"{}\" is not a token of this tokenizer", setter, *token);
  }
  (*copy).*role = id;
  return copy;
}

}  // namespace

Tokenizer& Tokenizer::SetBos(std::optional<std::string_view> token) {
  impl_ = WithRole(impl_, &Impl::bos, token, "SetBos");
  return *this;
}

Tokenizer& Tokenizer::SetEos(std::optional<std::string_view> token) {
  impl_ = WithRole(impl_, &Impl::eos, token, "SetEos");
  return *this;
}

Tokenizer& Tokenizer::SetPad(std::optional<std::string_view> token) {
  impl_ = WithRole(impl_, &Impl::pad, token, "SetPad");
  return *this;
}

Tokenizer& Tokenizer::SetUnk(std::optional<std::string_view> token) {
  impl_ = WithRole(impl_, &Impl::unk, token, "SetUnk");
  return *this;
}

int32_t Tokenizer::AddSpecialToken(std::string_view token) {
  CheckUtf8(token, "Tokenizer::AddSpecialToken");
  if (token.empty()) detail::Throw("Tokenizer::AddSpecialToken: the token is empty");
  auto copy = std::make_shared<Impl>(Checked(impl_));
  int32_t id;
  const auto a = copy->added_ids.find(std::string(token));
  if (a != copy->added_ids.end()) {
    id = a->second;
    copy->added[copy->added_index.at(id)].special = true;
  } else {
    const std::optional<int32_t> existing = copy->Find(token);
    id = existing ? *existing : VocabSize();
    AddedToken t;
    t.id = id;
    t.content = std::string(token);
    copy->added.push_back(std::move(t));
  }
  copy->IndexAddedTokens();
  impl_ = std::move(copy);
  return id;
}

void Tokenizer::Impl::IndexAddedTokens() {
  added_ids.clear();
  added_index.clear();
  for (size_t i = 0; i < added.size(); ++i) {
    added_ids[added[i].content] = added[i].id;
    added_index[added[i].id] = i;
  }
  matcher = std::make_shared<AddedTokenMatcher>(added);
}

std::optional<int32_t> Tokenizer::Impl::Find(std::string_view token) const {
  const auto a = added_ids.find(std::string(token));
  if (a != added_ids.end()) return a->second;
  if (sentencepiece) return sentencepiece->PieceToId(token);
  return model->TokenToId(token);
}

void Tokenizer::Impl::GuessSpecialTokens() {
  const auto first_of = [&](std::initializer_list<std::string_view> names) -> std::optional<int32_t> {
    for (const std::string_view n : names)
      if (const auto id = Find(n)) return id;
    return std::nullopt;
  };
  bos = first_of({"<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>", "[CLS]", "<|endoftext|>"});
  eos = first_of({"</s>", "<|end_of_text|>", "<eos>", "<|endoftext|>", "[SEP]"});
  pad = first_of({"<pad>", "[PAD]", "<|pad|>"});
  const std::optional<std::string> model_unk = model ? model->UnkToken() : std::nullopt;
  unk = model_unk ? Find(*model_unk) : first_of({"<unk>", "[UNK]"});
}

}  // namespace kiln::tokenizers
