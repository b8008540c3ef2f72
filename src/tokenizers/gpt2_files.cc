// GPT-2's own tokenizer files: vocab.json (token -> id) and merges.txt (one merge per line).

#include <fmt/format.h>

#include "io/read_file.h"
#include "kiln/tokenizers/tokenizer.h"
#include "tokenizers/hf_json.h"
#include "tokenizers/unicode.h"

namespace kiln::tokenizers {

std::shared_ptr<Tokenizer::Impl> ByteLevelBpePipeline(const BpeSpec& spec, const std::string& special,
                                                      const Fields& f) {
  auto m = std::make_shared<Tokenizer::Impl>();
  m->model = MakeBpe(spec, f);
  const auto byte_level = [](bool add_prefix_space, bool trim_offsets) {
    io::Json j = io::Json::Object();
    j.Set("type", io::Json::String("ByteLevel"));
    j.Set("add_prefix_space", io::Json::Bool(add_prefix_space));
    j.Set("trim_offsets", io::Json::Bool(trim_offsets));
    j.Set("use_regex", io::Json::Bool(true));
    return j;
  };
  const io::Json pre = byte_level(false, true), post = byte_level(true, false), dec = byte_level(true, true);
  m->pre_tokenizer = {PreTokenizerFromJson(pre, f), pre};
  m->post_processor = {PostProcessorFromJson(post, f), post};
  m->decoder = {DecoderFromJson(dec, f), dec};
  if (const std::optional<int32_t> id = m->model->TokenToId(special)) {
    AddedToken t;
    t.id = *id;
    t.content = special;
    m->added.push_back(t);
  }
  m->IndexAddedTokens();
  m->GuessSpecialTokens();
  return m;
}

Tokenizer FromVocabAndMerges(const std::string& vocab_json_path, const std::string& merges_txt_path) {
  const Fields vf("FromVocabAndMerges", vocab_json_path);
  const io::Json vocab = io::Json::Parse(io::ReadWholeFile(vocab_json_path, "FromVocabAndMerges"),
                                         "FromVocabAndMerges " + vocab_json_path);
  BpeSpec spec;
  spec.vocab = VocabFromJson(vocab, vf, "the vocabulary");
  TokensById(spec.vocab, vf, "the vocabulary");  // repeated ids, named in this file

  const Fields mf("FromVocabAndMerges", merges_txt_path);
  const std::string text = io::ReadWholeFile(merges_txt_path, "FromVocabAndMerges");
  CheckUtf8(text, "FromVocabAndMerges " + merges_txt_path);
  size_t line_no = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.substr(0, 9) == "#version:")) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos)
      mf.Fail(fmt::format("line {}: \"{}\" is not two tokens separated by one space", line_no, line));
    spec.merges.emplace_back(std::string(line.substr(0, sp)), std::string(line.substr(sp + 1)));
  }
  // The model reports merges outside the vocabulary naming the merges file.
  return Tokenizer(ByteLevelBpePipeline(spec, "<|endoftext|>", mf));
}

}  // namespace kiln::tokenizers
