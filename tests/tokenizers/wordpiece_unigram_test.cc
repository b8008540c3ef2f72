// WordPiece (BERT's pipeline) and Unigram (Viterbi, Metaspace) from hand-written tokenizer.json
// files, each expected id worked out by hand.

#include <gtest/gtest.h>

#include "tokenizers/tokenizer_test_util.h"

namespace {

using kiln::test::FromJsonText;
using kiln::tokenizers::Tokenizer;
using Ids = std::vector<int32_t>;

std::string BertJson(const std::string& post_processor) {
  return R"({"version":"1.0","added_tokens":[
      {"id":0,"content":"[PAD]","special":true},{"id":1,"content":"[UNK]","special":true},
      {"id":2,"content":"[CLS]","special":true},{"id":3,"content":"[SEP]","special":true}],
    "normalizer":{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,
      "strip_accents":null,"lowercase":true},
    "pre_tokenizer":{"type":"BertPreTokenizer"},
    "post_processor":)" +
         post_processor + R"(,
    "decoder":{"type":"WordPiece","prefix":"##","cleanup":true},
    "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",
      "max_input_chars_per_word":100,"vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"hello":4,
      "world":5,"##s":6,"play":7,"##ing":8,",":9,"!":10,"the":11,"cafe":12,"中":13}}})";
}

TEST(WordPiece, BertNormalizesSplitsAndContinuesWords) {
  const Tokenizer tok =
      FromJsonText(BertJson(R"({"type":"BertProcessing","sep":["[SEP]",3],"cls":["[CLS]",2]})"));
  // Lower case, accents stripped (Café -> cafe), punctuation isolated, ## continuations, an
  // unknown word as [UNK], CJK ideographs split apart (文 is not in the vocabulary).
  const std::string text = "Hello, WORLDs\tplaying Café xyz! 中文";
  EXPECT_EQ(tok.Encode(text), (Ids{2, 4, 9, 5, 6, 7, 8, 12, 1, 10, 13, 1, 3}));
  EXPECT_EQ(tok.Encode(text, false), (Ids{4, 9, 5, 6, 7, 8, 12, 1, 10, 13, 1}));
  EXPECT_EQ(tok.Decode(tok.Encode(text), true), "hello, worlds playing cafe! 中");
  EXPECT_EQ(tok.Decode(tok.Encode("the world")), "[CLS] the world [SEP]");
  EXPECT_EQ(tok.Bos(), 2);
  EXPECT_EQ(tok.Eos(), 3);
  EXPECT_EQ(tok.Pad(), 0);
  EXPECT_EQ(tok.Unk(), 1);
  // A word that cannot be split completely is one [UNK], not a partial split.
  EXPECT_EQ(tok.Encode("plays playx", false), (Ids{7, 6, 1}));
}

TEST(WordPiece, TemplateAndRobertaProcessingAddTheSameTokens) {
  const std::string tmpl =
      R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},
      {"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}}],
      "special_tokens":{"[CLS]":{"id":"[CLS]","ids":[2],"tokens":["[CLS]"]},
                        "[SEP]":{"id":"[SEP]","ids":[3],"tokens":["[SEP]"]}}})";
  const std::string roberta = R"({"type":"RobertaProcessing","sep":["[SEP]",3],"cls":["[CLS]",2],
      "trim_offsets":true,"add_prefix_space":false})";
  EXPECT_EQ(FromJsonText(BertJson(tmpl)).Encode("hello world"), (Ids{2, 4, 5, 3}));
  EXPECT_EQ(FromJsonText(BertJson(roberta)).Encode("hello world"), (Ids{2, 4, 5, 3}));
  EXPECT_EQ(FromJsonText(BertJson("null")).Encode("hello world"), (Ids{4, 5}));
}

std::string UnigramJson(const std::string& pre_tokenizer, const std::string& vocab,
                        const std::string& extra = "") {
  return R"({"version":"1.0","pre_tokenizer":)" + pre_tokenizer +
         R"(,"decoder":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true},
    "model":{"type":"Unigram","unk_id":0,)" +
         extra + R"("vocab":)" + vocab + "}}";
}

TEST(Unigram, ViterbiFindsTheMostProbableSplit) {
  // Scores: a -1, b -1, ab -1.5, abc -5, c -1, bc -1.2; unknown: -5 - 10 = -15.
  const std::string vocab = R"([["<unk>",0],["a",-1],["b",-1],["ab",-1.5],["abc",-5],["c",-1],["bc",-1.2]])";
  const Tokenizer tok = FromJsonText(UnigramJson(R"({"type":"WhitespaceSplit"})", vocab));
  EXPECT_EQ(tok.Encode("abc"), (Ids{1, 6}));   // a+bc -2.2 beats ab+c -2.5, a+b+c -3, abc -5
  EXPECT_EQ(tok.Encode("ab"), (Ids{3}));       // ab -1.5 beats a+b -2
  EXPECT_EQ(tok.Encode("abx"), (Ids{3, 0}));   // x is unknown
  EXPECT_EQ(tok.Encode("xxab"), (Ids{0, 3}));  // consecutive unknowns fuse
  EXPECT_EQ(tok.Encode("cab bc"), (Ids{5, 3, 6}));
  EXPECT_EQ(tok.Unk(), 0);
}

TEST(Unigram, MetaspaceMarksWordStartsAndDecodesToSpaces) {
  const std::string vocab =
      R"([["<unk>",0],["▁",-2],["▁ab",-1],["abc",-1],["▁abc",-4],["a",-3],["b",-3],["c",-3]])";
  const Tokenizer tok = FromJsonText(
      UnigramJson(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true})", vocab));
  // "ab abc" -> "▁ab▁abc" -> words ▁ab, ▁abc; ▁ + abc (-3) beats ▁abc (-4) and ▁ab + c (-4).
  EXPECT_EQ(tok.Encode("ab abc"), (Ids{2, 1, 3}));
  EXPECT_EQ(tok.Decode({2, 1, 3}), "ab abc");
  // Byte fallback for a Unigram model: x is <0x78>.
  const std::string with_bytes = R"([["<unk>",0],["a",-1],["<0x78>",-5]])";
  const Tokenizer bytes =
      FromJsonText(UnigramJson(R"({"type":"WhitespaceSplit"})", with_bytes, R"("byte_fallback":true,)"));
  EXPECT_EQ(bytes.Encode("axa"), (Ids{1, 2, 1}));
  EXPECT_EQ(bytes.Encode("aya"), (Ids{1, 0, 1}));
}

}  // namespace
