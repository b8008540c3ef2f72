// BPE models from hand-written tokenizer.json files: merge priority, byte fallback as Llama 2,
// ignore_merges as Llama 3, subword prefixes and suffixes, unknown tokens.

#include <gtest/gtest.h>

#include "tokenizers/tokenizer_test_util.h"

namespace {

using kiln::test::FromJsonText;
using kiln::tokenizers::Tokenizer;
using Ids = std::vector<int32_t>;

/// A tokenizer.json with a BPE model: `model_fields` go inside the model object.
std::string BpeJson(const std::string& model_fields, const std::string& rest = "") {
  return R"({"version":"1.0",)" + rest + R"("model":{"type":"BPE",)" + model_fields + "}}";
}

TEST(Bpe, MergesApplyInTheirOrderOfPriority) {
  const std::string vocab = R"("vocab":{"a":0,"b":1,"c":2,"ab":3,"bc":4,"abc":5})";
  const std::string words = R"("pre_tokenizer":{"type":"WhitespaceSplit"},"decoder":{"type":"Fuse"},)";
  // "b c" first: abc -> a bc, and no merge joins a and bc.
  const Tokenizer bc = FromJsonText(BpeJson(vocab + R"(,"merges":["b c","a b","ab c"])", words));
  EXPECT_EQ(bc.Encode("abc"), (Ids{0, 4}));
  // "a b" first: abc -> ab c -> abc.
  const Tokenizer ab = FromJsonText(BpeJson(vocab + R"(,"merges":[["a","b"],["b","c"],["ab","c"]])", words));
  EXPECT_EQ(ab.Encode("abc"), (Ids{5}));
  EXPECT_EQ(ab.Encode("abc cab ba"), (Ids{5, 2, 3, 1, 0}));
  EXPECT_EQ(ab.Decode(ab.Encode("abc cab")), "abccab");  // Fuse: the words' spaces are gone
  // The same pair twice in a word: the leftmost merges first (aaa -> aa a).
  const Tokenizer aa = FromJsonText(BpeJson(R"("vocab":{"a":0,"aa":1},"merges":["a a"])", words));
  EXPECT_EQ(aa.Encode("aaa"), (Ids{1, 0}));
  EXPECT_EQ(aa.Encode("aaaa"), (Ids{1, 1}));
  EXPECT_EQ(aa.VocabSize(), 2);
  EXPECT_EQ(aa.TokenToId("aa"), 1);
  EXPECT_EQ(aa.TokenToId("b"), std::nullopt);
  EXPECT_EQ(aa.IdToToken(1), "aa");
}

/// Llama 2's pipeline over a small vocabulary: <unk> <s> </s>, the 256 byte tokens, then pieces.
std::string Llama2Like() {
  std::string vocab = R"("<unk>":0,"<s>":1,"</s>":2)";
  char buf[32];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, ",\"<0x%02X>\":%d", b, 3 + b);
    vocab += buf;
  }
  vocab += R"(,"▁":259,"h":260,"i":261,"hi":262,"▁hi":263)";
  return R"({"version":"1.0","added_tokens":[
      {"id":0,"content":"<unk>","special":true},{"id":1,"content":"<s>","special":true},
      {"id":2,"content":"</s>","special":true}],
    "normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},
      {"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
    "pre_tokenizer":null,
    "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},
      {"Sequence":{"id":"A","type_id":0}}],"pair":[],
      "special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}},
    "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},
      {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
    "model":{"type":"BPE","dropout":null,"unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,
      "vocab":{)" +
         vocab + R"(},"merges":["h i","▁ hi"]}})";
}

TEST(Bpe, ByteFallbackSpellsUnknownCharactersAsByteTokens) {
  const Tokenizer tok = FromJsonText(Llama2Like());
  // "hi A" -> "▁hi▁A": ▁hi, ▁, then A as <0x41> (id 3 + 0x41).
  EXPECT_EQ(tok.Encode("hi A"), (Ids{1, 263, 259, 3 + 0x41}));
  EXPECT_EQ(tok.Encode("hi A", false), (Ids{263, 259, 3 + 0x41}));
  EXPECT_EQ(tok.IdToToken(3 + 0x41), "<0x41>");
  // é is two bytes, C3 A9; 😀 four.
  EXPECT_EQ(tok.Encode("é", false), (Ids{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok.Encode("😀", false), (Ids{259, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80}));
  EXPECT_EQ(tok.Decode(tok.Encode("hi A")), "<s> hi A");
  EXPECT_EQ(tok.Decode(tok.Encode("hi A"), true), "hi A");
  for (const std::string t : {"hi é 😀 中文", "  two  spaces", "tabs\tand\nlines"})
    EXPECT_EQ(tok.Decode(tok.Encode(t), true), t) << t;
  // A lone lead byte decodes to U+FFFD; special tokens in the text are matched before the model.
  EXPECT_EQ(tok.Decode({3 + 0xC3}), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.Encode("hi</s>hi", false), (Ids{263, 2, 263}));
  EXPECT_EQ(tok.Bos(), 1);
  EXPECT_EQ(tok.Eos(), 2);
  EXPECT_EQ(tok.Unk(), 0);
  EXPECT_EQ(tok.Pad(), std::nullopt);
  EXPECT_TRUE(tok.IsSpecial(1));
  EXPECT_FALSE(tok.IsSpecial(263));
}

TEST(Bpe, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  const std::string model = R"("vocab":{"a":0,"b":1,"c":2,"ab":3,"abc":4},"merges":["a b"])";
  const std::string words = R"("pre_tokenizer":{"type":"WhitespaceSplit"},)";
  EXPECT_EQ(FromJsonText(BpeJson(model, words)).Encode("abc"), (Ids{3, 2}));
  EXPECT_EQ(FromJsonText(BpeJson(model + R"(,"ignore_merges":true)", words)).Encode("abc cab"),
            (Ids{4, 2, 3}));
}

TEST(Bpe, ContinuingSubwordPrefixAndEndOfWordSuffix) {
  const std::string words = R"("pre_tokenizer":{"type":"WhitespaceSplit"},)";
  const Tokenizer prefix = FromJsonText(BpeJson(
      R"("continuing_subword_prefix":"##","vocab":{"a":0,"##b":1,"##c":2,"ab":3,"b":4},"merges":["a ##b"])",
      words));
  EXPECT_EQ(prefix.Encode("abc b"), (Ids{3, 2, 4}));
  const Tokenizer suffix = FromJsonText(BpeJson(
      R"("end_of_word_suffix":"</w>","vocab":{"a":0,"b</w>":1,"ab</w>":2,"b":3},"merges":["a b</w>"])",
      words + R"("decoder":{"type":"BPEDecoder","suffix":"</w>"},)"));
  EXPECT_EQ(suffix.Encode("ab ab"), (Ids{2, 2}));
  EXPECT_EQ(suffix.Decode({2, 2}), "ab ab");
}

TEST(Bpe, UnknownCharactersAreTheUnkTokenFusedOrNot) {
  const std::string vocab = R"("unk_token":"<unk>","vocab":{"<unk>":0,"a":1},"merges":[])";
  EXPECT_EQ(FromJsonText(BpeJson(vocab)).Encode("axxa"), (Ids{1, 0, 0, 1}));
  EXPECT_EQ(FromJsonText(BpeJson(vocab + R"(,"fuse_unk":true)")).Encode("axxa"), (Ids{1, 0, 1}));
  // Without an unk token, HuggingFace drops what the vocabulary cannot spell; so does kiln.
  EXPECT_EQ(FromJsonText(BpeJson(R"("vocab":{"a":0},"merges":[])")).Encode("axa"), (Ids{0, 0}));
}

}  // namespace
