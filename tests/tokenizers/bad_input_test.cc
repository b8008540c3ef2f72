// Every kind of bad input to the tokenizers is a kiln::Error that names the reader, the file and
// what was wrong: malformed files, unknown components, ids outside the vocabulary, invalid UTF-8.

#include <gtest/gtest.h>

#include "tokenizers/tokenizer_test_util.h"

namespace {

using kiln::test::TempDir;
using kiln::test::Throws;
using kiln::test::WriteText;
using namespace kiln::tokenizers;

/// FromFile on `json` fails naming the file and each of `parts`.
::testing::AssertionResult Refused(const std::string& json, std::vector<std::string> parts) {
  TempDir dir;
  WriteText(dir / "tokenizer.json", json);
  parts.push_back("FromFile " + (dir / "tokenizer.json"));
  return Throws([&] { FromFile(dir / "tokenizer.json"); }, parts);
}

std::string WithModel(const std::string& model, const std::string& rest = "") {
  return "{" + rest + R"("model":)" + model + "}";
}

const char kBpe[] = R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]})";

TEST(TokenizerBadInput, MalformedTokenizerJsonFiles) {
  EXPECT_TRUE(Refused("", {"invalid JSON at offset 0"}));
  EXPECT_TRUE(Refused("{\"model\": {", {"invalid JSON"}));
  EXPECT_TRUE(Refused("[1, 2]", {"the document is not an object"}));
  EXPECT_TRUE(Refused("{}", {"\"model\" is missing"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"WordLevel","vocab":{}})"),
                      {"model type \"WordLevel\" is not supported"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"BPE","vocab":{"a":"zero"},"merges":[]})"),
                      {"id of \"a\"", "not a number"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"BPE","vocab":{"a":-1},"merges":[]})"), {"id -1 of \"a\""}));
  EXPECT_TRUE(
      Refused(WithModel(R"({"type":"BPE","vocab":{"a":0,"b":0},"merges":[]})"), {"id 0 is given to"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"BPE","vocab":{"a":0,"b":4000000},"merges":[]})"),
                      {"ids go up to 4000000"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"BPE","vocab":{"a":0},"merges":["a x"]})"),
                      {"merge 0 \"a x\" names a token that is not in the vocabulary"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"BPE","vocab":{"a":0},"merges":["a a"]})"),
                      {"makes \"aa\", which is not in the vocabulary"}));
  EXPECT_TRUE(
      Refused(WithModel(R"({"type":"BPE","vocab":{"a":0},"merges":["aa"]})"), {"merge 0 \"aa\" is not two"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"BPE","vocab":{"a":0},"merges":[3]})"), {"merge 0 is neither"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"BPE","vocab":{"a":0},"merges":[],"unk_token":"<unk>"})"),
                      {"unk_token \"<unk>\" is not in the vocabulary"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"BPE","vocab":{"a":0},"merges":[],"dropout":0.1})"), {"dropout"}));
  EXPECT_TRUE(
      Refused(WithModel(R"({"type":"WordPiece","vocab":{"a":0}})"), {"unk_token \"[UNK]\" is not in"}));
  EXPECT_TRUE(
      Refused(WithModel(R"({"type":"Unigram","vocab":[["a"]]})"), {"vocab entry 0 is not [piece, score]"}));
  EXPECT_TRUE(
      Refused(WithModel(R"({"type":"Unigram","vocab":[["a",-1]],"unk_id":5})"), {"unk_id 5 is outside"}));
  EXPECT_TRUE(Refused(WithModel(R"({"type":"Unigram","vocab":[]})"), {"\"vocab\" is empty"}));
}

TEST(TokenizerBadInput, UnknownOrMalformedComponentsAreNamed) {
  EXPECT_TRUE(
      Refused(WithModel(kBpe, R"("normalizer":{"type":"Precompiled","precompiled_charsmap":"AA=="},)"),
              {"normalizer type \"Precompiled\" is not supported"}));
  EXPECT_TRUE(Refused(WithModel(kBpe, R"("pre_tokenizer":{"type":"UnicodeScripts"},)"),
                      {"pre_tokenizer type \"UnicodeScripts\" is not supported"}));
  EXPECT_TRUE(
      Refused(WithModel(kBpe, R"("decoder":{"type":"CTC"},)"), {"decoder type \"CTC\" is not supported"}));
  EXPECT_TRUE(Refused(WithModel(kBpe, R"("post_processor":{"type":"Magic"},)"),
                      {"post_processor type \"Magic\" is not supported"}));
  EXPECT_TRUE(
      Refused(WithModel(kBpe, R"("normalizer":{"kind":"NFC"},)"), {"normalizer: \"type\" is missing"}));
  EXPECT_TRUE(Refused(WithModel(kBpe, R"("normalizer":{"type":"Sequence","normalizers":{}},)"),
                      {"normalizer Sequence: \"normalizers\" is not an array"}));
  EXPECT_TRUE(Refused(
      WithModel(kBpe, R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":"(a"},"behavior":"Isolated"},)"),
      {"pre_tokenizer Split: regex (a", "missing closing parenthesis"}));
  EXPECT_TRUE(Refused(
      WithModel(kBpe, R"("pre_tokenizer":{"type":"Split","pattern":{"String":"a"},"behavior":"Sideways"},)"),
      {"behavior \"Sideways\" is not one of"}));
  EXPECT_TRUE(
      Refused(WithModel(kBpe, R"("pre_tokenizer":{"type":"Split","pattern":{},"behavior":"Isolated"},)"),
              {"has neither \"String\" nor \"Regex\""}));
  EXPECT_TRUE(Refused(WithModel(kBpe, R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":"yes"},)"),
                      {"\"add_prefix_space\" is not true or false"}));
  EXPECT_TRUE(Refused(
      WithModel(kBpe, R"("post_processor":{"type":"BertProcessing","cls":["[CLS]",9],"sep":["[SEP]",1]},)"),
      {"post_processor: id 9 is outside the vocabulary of 3"}));
  EXPECT_TRUE(Refused(
      WithModel(
          kBpe,
          R"("post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}}]},)"),
      {"special token \"<s>\" is used but not in \"special_tokens\""}));
  EXPECT_TRUE(
      Refused(WithModel(kBpe, R"("added_tokens":[{"id":3,"content":"<s>"},{"id":3,"content":"</s>"}],)"),
              {"added token 1 (\"</s>\", id 3) repeats \"<s>\", id 3"}));
  EXPECT_TRUE(
      Refused(WithModel(kBpe, R"("added_tokens":[{"id":3}],)"), {"added token 0: \"content\" is missing"}));
}

TEST(TokenizerBadInput, MissingFilesAndDirectories) {
  TempDir dir;
  EXPECT_TRUE(Throws([&] { FromFile(dir / "none.json"); }, {"FromFile: cannot read", "none.json"}));
  EXPECT_TRUE(Throws([&] { FromFile(dir.str()); }, {"FromFile: cannot read"}));
}

TEST(TokenizerBadInput, Gpt2VocabAndMergesFiles) {
  TempDir dir;
  WriteText(dir / "vocab.json", R"({"a":0,"b":1,"ab":2})");
  WriteText(dir / "merges.txt", "#version: 0.2\na b\n");
  EXPECT_EQ(FromVocabAndMerges(dir / "vocab.json", dir / "merges.txt").Encode("ab"),
            (std::vector<int32_t>{2}));
  WriteText(dir / "bad_merges.txt", "#version: 0.2\na b\nab\n");
  EXPECT_TRUE(Throws([&] { FromVocabAndMerges(dir / "vocab.json", dir / "bad_merges.txt"); },
                     {"FromVocabAndMerges", "bad_merges.txt", "line 3: \"ab\" is not two tokens"}));
  WriteText(dir / "unknown_merges.txt", "a c\n");
  EXPECT_TRUE(Throws([&] { FromVocabAndMerges(dir / "vocab.json", dir / "unknown_merges.txt"); },
                     {"unknown_merges.txt", "\"a c\" names a token that is not in the vocabulary"}));
  WriteText(dir / "array.json", "[1]");
  EXPECT_TRUE(Throws([&] { FromVocabAndMerges(dir / "array.json", dir / "merges.txt"); },
                     {"FromVocabAndMerges", "array.json", "the vocabulary is not an object"}));
  WriteText(dir / "binary.txt", std::string("a b\n\xff\xfe\n"));
  EXPECT_TRUE(Throws([&] { FromVocabAndMerges(dir / "vocab.json", dir / "binary.txt"); },
                     {"binary.txt", "invalid UTF-8 at byte 4"}));
  EXPECT_TRUE(
      Throws([&] { FromVocabAndMerges(dir / "vocab.json", dir / "none.txt"); }, {"cannot read", "none.txt"}));
}

TEST(TokenizerBadInput, IdsOutsideTheVocabularyAndInvalidText) {
  Tokenizer tok = TrainBpe({"some text"}, 300);
  const int32_t n = tok.VocabSize();
  EXPECT_TRUE(Throws(
      [&] {
        tok.Decode({1, n});
      },
      {"Tokenizer::Decode: id", "(at 1) is outside the vocabulary"}));
  EXPECT_TRUE(Throws([&] { tok.Decode({-1}); }, {"id -1 (at 0) is outside the vocabulary"}));
  EXPECT_TRUE(Throws([&] { tok.IdToToken(n); }, {"Tokenizer::IdToToken: id", "outside the vocabulary"}));
  EXPECT_TRUE(Throws([&] { tok.Encode("ok \xC3\x28 no"); }, {"Tokenizer::Encode: invalid UTF-8 at byte 3"}));
  EXPECT_TRUE(Throws([&] { tok.Encode("\xED\xA0\x80"); }, {"invalid UTF-8 at byte 0"}));  // a surrogate
  EXPECT_TRUE(Throws([&] { tok.Encode("\xC0\xAF"); }, {"invalid UTF-8 at byte 0"}));      // overlong
  EXPECT_TRUE(Throws([&] { tok.SetBos("<nope>"); }, {"Tokenizer::SetBos: \"<nope>\" is not a token"}));
  EXPECT_TRUE(Throws([&] { tok.AddSpecialToken(""); }, {"AddSpecialToken: the token is empty"}));
  EXPECT_TRUE(Throws([&] { TrainBpe({"x"}, 256); }, {"TrainBpe: vocab_size 256 is below 257"}));
  EXPECT_TRUE(Throws(
      [&] {
        TrainBpe({"fine", "bad \xFF"}, 300);
      },
      {"TrainBpe: text 1: invalid UTF-8 at byte 4"}));
  Tokenizer moved = std::move(tok);
  EXPECT_TRUE(
      Throws([&] { tok.Encode("x"); }, {"used after being moved from"}));  // NOLINT(bugprone-use-after-move)
}

}  // namespace
