// HuggingFace's tokenizer.json: reading it into a pipeline (FromFile) and writing one (Save).

#include <filesystem>
#include <ostream>
#include <system_error>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "kiln/tokenizers/tokenizer.h"
#include "tokenizers/hf_json.h"
#include "tokenizers/models.h"
#include "tokenizers/pipeline.h"

namespace kiln::tokenizers {

namespace {

std::shared_ptr<const Model> ModelFromJson(const io::Json& j, const Fields& f) {
  f.CheckObject(j, "model");
  std::string type;
  if (f.Optional(j, "type") != nullptr) {
    type = f.Type(j, "model");
  } else if (f.Optional(j, "merges") != nullptr) {  // files older than the "type" tag
    type = "BPE";
  } else if (const io::Json* v = f.Optional(j, "vocab");
             v != nullptr && v->kind() == io::Json::Kind::kArray) {
    type = "Unigram";
  } else {
    type = "WordPiece";
  }
  if (type == "BPE") return MakeBpe(BpeSpecFromJson(j, f), f);
  if (type == "WordPiece") return WordPieceFromJson(j, f);
  if (type == "Unigram") return UnigramFromJson(j, f);
  f.Fail(fmt::format("model type \"{}\" is not supported (kiln reads BPE, WordPiece and Unigram)", type));
}

std::vector<AddedToken> AddedTokensFromJson(const io::Json& doc, const Fields& f) {
  std::vector<AddedToken> out;
  const io::Json* list = f.Optional(doc, "added_tokens");
  if (list == nullptr) return out;
  for (const io::Json& t : f.AsArray(*list, "\"added_tokens\"")) {
    const std::string where = fmt::format("added token {}", out.size());
    AddedToken a;
    const int64_t id = f.AsInt(f.Required(t, "id", where), where + ": \"id\"");
    if (id < 0 || id >= (int64_t{1} << 31) - 1) f.Fail(fmt::format("{}: id {} is out of range", where, id));
    a.id = static_cast<int32_t>(id);
    a.content = f.String(t, "content", where);
    if (a.content.empty()) f.Fail(where + ": \"content\" is empty");
    a.single_word = f.BoolOr(t, "single_word", where, false);
    a.lstrip = f.BoolOr(t, "lstrip", where, false);
    a.rstrip = f.BoolOr(t, "rstrip", where, false);
    a.normalized = f.BoolOr(t, "normalized", where, false);
    a.special = f.BoolOr(t, "special", where, false);
    for (const AddedToken& b : out)
      if (b.id == a.id || b.content == a.content)
        f.Fail(
            fmt::format("{} (\"{}\", id {}) repeats \"{}\", id {}", where, a.content, a.id, b.content, b.id));
    out.push_back(std::move(a));
  }
  return out;
}

std::string AddedTokensToJson(const std::vector<AddedToken>& added) {
  std::string o = "[";
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken& a = added[i];
    o += fmt::format(
        "{}{{\"id\":{},\"content\":{},\"single_word\":{},\"lstrip\":{},\"rstrip\":{},\"normalized\":{},"
        "\"special\":{}}}",
        i ? "," : "", a.id, JsonString(a.content), a.single_word, a.lstrip, a.rstrip, a.normalized,
        a.special);
  }
  return o + "]";
}

/// A role from tokenizer_config.json: "<s>", {"content": "<s>", ...} or null.
void ApplyConfigRole(const Tokenizer::Impl& m, const io::Json& config, const char* key, const Fields& f,
                     std::optional<int32_t>& role) {
  if (!config.IsObject()) return;
  const io::Json* v = config.Find(key);
  if (v == nullptr) return;
  if (v->kind() == io::Json::Kind::kNull) {
    role.reset();
    return;
  }
  const std::string token = v->IsObject() ? f.String(*v, "content", key) : f.AsString(*v, key);
  role = m.Find(token);
  if (!role) f.Fail(fmt::format("\"{}\" is \"{}\", which is not a token of the tokenizer", key, token));
}

}  // namespace

std::shared_ptr<Tokenizer::Impl> PipelineFromJson(const io::Json& doc, const Fields& f) {
  f.CheckObject(doc, "the document");
  auto m = std::make_shared<Tokenizer::Impl>();
  m->model = ModelFromJson(f.Required(doc, "model", "the document"), f);
  m->added = AddedTokensFromJson(doc, f);
  if (const io::Json* j = f.Optional(doc, "normalizer")) m->normalizer = {NormalizerFromJson(*j, f), *j};
  if (const io::Json* j = f.Optional(doc, "pre_tokenizer"))
    m->pre_tokenizer = {PreTokenizerFromJson(*j, f), *j};
  if (const io::Json* j = f.Optional(doc, "post_processor"))
    m->post_processor = {PostProcessorFromJson(*j, f), *j};
  if (const io::Json* j = f.Optional(doc, "decoder")) m->decoder = {DecoderFromJson(*j, f), *j};
  m->IndexAddedTokens();
  const Tokenizer probe(m);
  if (m->post_processor.stage) {
    for (const int32_t id : m->post_processor.stage->Ids())
      if (id >= probe.VocabSize())
        f.Fail(fmt::format("post_processor: id {} is outside the vocabulary of {}", id, probe.VocabSize()));
  }
  m->GuessSpecialTokens();
  return m;
}

std::string PipelineToJson(const Tokenizer::Impl& m) {
  const auto stage = [](const io::Json& j) { return j.Dump(); };
  return "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":" +
         AddedTokensToJson(m.added) + ",\"normalizer\":" + stage(m.normalizer.json) +
         ",\"pre_tokenizer\":" + stage(m.pre_tokenizer.json) +
         ",\"post_processor\":" + stage(m.post_processor.json) + ",\"decoder\":" + stage(m.decoder.json) +
         ",\"model\":" + m.model->ToJson() + "}\n";
}

Tokenizer FromFile(const std::string& path) {
  const Fields f("FromFile", path);
  const io::Json doc = io::Json::Parse(io::ReadWholeFile(path, "FromFile"), "FromFile " + path);
  std::shared_ptr<Tokenizer::Impl> m = PipelineFromJson(doc, f);
  // HuggingFace keeps the special-token roles beside the tokenizer, in tokenizer_config.json.
  std::error_code ec;
  const std::filesystem::path config = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(config, ec)) {
    const Fields cf("FromFile", config.string());
    const io::Json c =
        io::Json::Parse(io::ReadWholeFile(config.string(), "FromFile"), "FromFile " + config.string());
    ApplyConfigRole(*m, c, "bos_token", cf, m->bos);
    ApplyConfigRole(*m, c, "eos_token", cf, m->eos);
    ApplyConfigRole(*m, c, "pad_token", cf, m->pad);
    ApplyConfigRole(*m, c, "unk_token", cf, m->unk);
  }
  return Tokenizer(std::move(m));
}

void Tokenizer::Save(const std::string& path) const {
  if (impl_ == nullptr) detail::Throw("Tokenizer::Save: used after being moved from");
  if (impl_->sentencepiece)
    detail::Throw(
        "Tokenizer::Save {}: a SentencePiece tokenizer has no tokenizer.json form (keep its .model file)",
        path);
  const std::string text = PipelineToJson(*impl_);
  io::WriteFileAtomically(
      path, [&](std::ostream& o) { o.write(text.data(), static_cast<std::streamsize>(text.size())); });
}

}  // namespace kiln::tokenizers
