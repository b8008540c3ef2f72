// The post-processors of tokenizer.json, for one sequence: the special tokens a model expects
// around it (TemplateProcessing's "single" template, BERT's [CLS] A [SEP], RoBERTa's <s> A </s>).

#include <fmt/format.h>

#include "tokenizers/pipeline.h"

namespace kiln::tokenizers {

namespace {

/// The ids before and after the sequence.
class Surround final : public PostProcessor {
 public:
  Surround(std::vector<int32_t> before, std::vector<int32_t> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  void Process(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }
  std::vector<int32_t> Ids() const override {
    std::vector<int32_t> all = before_;
    all.insert(all.end(), after_.begin(), after_.end());
    return all;
  }

 private:
  std::vector<int32_t> before_, after_;
};

class Nothing final : public PostProcessor {
 public:
  void Process(std::vector<int32_t>&) const override {}
  std::vector<int32_t> Ids() const override { return {}; }
};

class SequencePostProcessor final : public PostProcessor {
 public:
  explicit SequencePostProcessor(std::vector<std::shared_ptr<const PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void Process(std::vector<int32_t>& ids) const override {
    for (const auto& s : steps_) s->Process(ids);
  }
  std::vector<int32_t> Ids() const override {
    std::vector<int32_t> all;
    for (const auto& s : steps_) {
      const auto ids = s->Ids();
      all.insert(all.end(), ids.begin(), ids.end());
    }
    return all;
  }

 private:
  std::vector<std::shared_ptr<const PostProcessor>> steps_;
};

/// A [token, id] pair of BertProcessing and RobertaProcessing.
int32_t TokenPairId(const io::Json& j, const Fields& f, const std::string& where, const char* key) {
  const auto& pair = f.Array(j, key, where);
  if (pair.size() != 2) f.Fail(fmt::format("{}: \"{}\" is not [token, id]", where, key));
  const int64_t id = f.AsInt(pair[1], fmt::format("{}: \"{}\" id", where, key));
  if (id < 0 || id > INT32_MAX) f.Fail(fmt::format("{}: \"{}\" id {} is out of range", where, key, id));
  return static_cast<int32_t>(id);
}

std::shared_ptr<const PostProcessor> Template(const io::Json& j, const Fields& f, const std::string& where) {
  // special_tokens: {name: {"id": name, "ids": [...], "tokens": [...]}}
  std::unordered_map<std::string, std::vector<int32_t>> specials;
  if (const io::Json* s = f.Optional(j, "special_tokens")) {
    f.CheckObject(*s, where + ": \"special_tokens\"");
    for (const auto& [name, v] : s->Members("special_tokens")) {
      std::vector<int32_t> ids;
      for (const io::Json& id : f.Array(v, "ids", fmt::format("{}: special token \"{}\"", where, name))) {
        const int64_t x = f.AsInt(id, fmt::format("{}: special token \"{}\" id", where, name));
        if (x < 0 || x > INT32_MAX)
          f.Fail(fmt::format("{}: special token \"{}\" id {} is out of range", where, name, x));
        ids.push_back(static_cast<int32_t>(x));
      }
      specials[name] = std::move(ids);
    }
  }
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (const io::Json& item : f.Array(j, "single", where)) {
    f.CheckObject(item, where + ": \"single\" item");
    if (const io::Json* s = f.Optional(item, "SpecialToken")) {
      const std::string name = f.String(*s, "id", where + ": SpecialToken");
      const auto it = specials.find(name);
      if (it == specials.end())
        f.Fail(fmt::format("{}: special token \"{}\" is used but not in \"special_tokens\"", where, name));
      auto& side = seen_sequence ? after : before;
      side.insert(side.end(), it->second.begin(), it->second.end());
    } else if (const io::Json* q = f.Optional(item, "Sequence")) {
      const std::string id = f.String(*q, "id", where + ": Sequence");
      if (id != "A")
        f.Fail(fmt::format("{}: the single template uses sequence \"{}\" (expected A)", where, id));
      if (seen_sequence) f.Fail(where + ": the single template holds the sequence twice");
      seen_sequence = true;
    } else {
      f.Fail(where + ": a \"single\" item is neither SpecialToken nor Sequence");
    }
  }
  if (!seen_sequence) f.Fail(where + ": the single template has no sequence");
  return std::make_shared<Surround>(std::move(before), std::move(after));
}

}  // namespace

std::shared_ptr<const PostProcessor> PostProcessorFromJson(const io::Json& j, const Fields& f) {
  const std::string type = f.Type(j, "post_processor");
  const std::string where = "post_processor " + type;
  if (type == "TemplateProcessing") return Template(j, f, where);
  if (type == "BertProcessing" || type == "RobertaProcessing")
    return std::make_shared<Surround>(std::vector<int32_t>{TokenPairId(j, f, where, "cls")},
                                      std::vector<int32_t>{TokenPairId(j, f, where, "sep")});
  if (type == "ByteLevel") return std::make_shared<Nothing>();  // it only adjusts offsets
  if (type == "Sequence") {
    std::vector<std::shared_ptr<const PostProcessor>> steps;
    for (const io::Json& s : f.Array(j, "processors", where)) steps.push_back(PostProcessorFromJson(s, f));
    return std::make_shared<SequencePostProcessor>(std::move(steps));
  }
  f.Fail(fmt::format(
      "post_processor type \"{}\" is not supported (kiln reads TemplateProcessing, BertProcessing, "
      "RobertaProcessing, ByteLevel and Sequence)",
      type));
}

}  // namespace kiln::tokenizers
