// FromSentencePiece against the SentencePiece library itself: models trained here with the
// library's trainer (in a separate process that holds no kiln, tests/tokenizers/spm_reference.cc)
// on text the test makes, then the library's ids and decodings compared with kiln's.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "tokenizers/tokenizer_test_util.h"

namespace {

using kiln::test::StdoutOf;
using kiln::test::TempDir;
using kiln::test::VariedTexts;
using kiln::test::WriteText;
using kiln::tokenizers::FromSentencePiece;
using kiln::tokenizers::Tokenizer;
using Ids = std::vector<int32_t>;

/// Sentences of made-up words (syllables, some accented or CJK), the same every run.
std::string TrainingText() {
  const std::vector<std::string> syllables = {"ka", "to", "ri", "na", "mu", "se", "lo", "vi", "dé", "pü",
                                              "ra", "en", "th", "qu", "zo", "北", "京", "東", "ß",  "2"};
  std::mt19937 rng(7);
  std::vector<std::string> words;
  for (int w = 0; w < 400; ++w) {
    std::string word;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k)
      word += syllables[rng() % syllables.size()];
    words.push_back(word);
  }
  std::string text;
  for (int line = 0; line < 3000; ++line) {
    const int n = 3 + static_cast<int>(rng() % 8);
    // Zipf-like: low word indices far more often.
    for (int w = 0; w < n; ++w) text += (w ? " " : "") + words[(rng() % 400) * (rng() % 400) / 400];
    text += rng() % 3 == 0 ? ".\n" : "\n";
  }
  return text;
}

std::string Hex(const std::string& s) {
  std::string out;
  char buf[3];
  for (const unsigned char c : s) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

void ExpectTheLibrarysIds(const std::string& model_type, int vocab_size, const std::string& flags) {
  TempDir dir;
  WriteText(dir / "train.txt", TrainingText());
  // The reference exits with the trainer's allocations alive: no leak report under ASan.
  const std::string ref = std::string("ASAN_OPTIONS=detect_leaks=0 ") + KILN_SPM_REFERENCE_BIN;
  const std::string trained =
      StdoutOf(ref + " train '" + (dir / "train.txt") + "' '" + (dir / "m") + "' " +
               std::to_string(vocab_size) + " " + model_type + " '" + flags + "' 2>&1");
  ASSERT_TRUE(std::filesystem::exists(dir / "m.model")) << trained;
  std::vector<std::string> texts = VariedTexts();
  texts.push_back("the river walked again in the quiet morning garden");
  texts.push_back("unseen words: zebra xylophone quokka");
  std::string joined;
  for (const std::string& t : texts) joined += t + '\0';
  WriteText(dir / "texts", joined);
  std::istringstream lines(StdoutOf(ref + " encode '" + (dir / "m.model") + "' '" + (dir / "texts") + "'"));

  const Tokenizer tok = FromSentencePiece(dir / "m.model");
  EXPECT_EQ(tok.VocabSize(), vocab_size);
  for (const std::string& t : texts) {
    std::string ids_line, decoded_hex;
    ASSERT_TRUE(std::getline(lines, ids_line) && std::getline(lines, decoded_hex))
        << "reference output ended";
    Ids want;
    std::istringstream in(ids_line);
    for (int32_t id; in >> id;) want.push_back(id);
    const Ids got = tok.Encode(t, false);
    EXPECT_EQ(got, want) << model_type << ": " << t;
    EXPECT_EQ(Hex(tok.Decode(got)), decoded_hex) << model_type << ": " << t;
    Ids with_bos = want;
    with_bos.insert(with_bos.begin(), *tok.Bos());
    EXPECT_EQ(tok.Encode(t), with_bos);
  }
  // SentencePiece's defaults: <unk> 0, <s> 1, </s> 2, no padding.
  EXPECT_EQ(tok.Unk(), 0);
  EXPECT_EQ(tok.Bos(), 1);
  EXPECT_EQ(tok.Eos(), 2);
  EXPECT_EQ(tok.Pad(), std::nullopt);
  EXPECT_EQ(tok.IdToToken(1), "<s>");
  EXPECT_EQ(tok.TokenToId("</s>"), 2);
  EXPECT_TRUE(tok.IsSpecial(1));
  EXPECT_EQ(tok.Decode({1}), "");  // the library drops control symbols
  EXPECT_TRUE(
      kiln::test::Throws([&] { tok.Save(dir / "tokenizer.json"); }, {"SentencePiece", "no tokenizer.json"}));
}

TEST(SentencePiece, UnigramModelsGiveTheLibrarysIds) { ExpectTheLibrarysIds("unigram", 200, ""); }

TEST(SentencePiece, BpeModelsWithByteFallbackGiveTheLibrarysIds) {
  ExpectTheLibrarysIds("bpe", 400, "--byte_fallback=true");
}

TEST(SentencePiece, FilesTheLibraryRefusesAreErrors) {
  TempDir dir;
  WriteText(dir / "bad.model", "this is not a protobuf");
  EXPECT_TRUE(kiln::test::Throws([&] { FromSentencePiece(dir / "bad.model"); },
                                 {"FromSentencePiece", "bad.model", "the SentencePiece library refuses it"}));
  EXPECT_TRUE(kiln::test::Throws([&] { FromSentencePiece(dir / "missing.model"); },
                                 {"FromSentencePiece", "cannot read", "missing.model"}));
}

}  // namespace
