// TrainBpe (byte-level, GPT-2's pre-tokenizer), round trips on varied text, and tokenizer.json
// written by Save and read back by FromFile.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tokenizers/tokenizer_test_util.h"

namespace {

using kiln::test::TempDir;
using kiln::test::VariedTexts;
using kiln::tokenizers::FromFile;
using kiln::tokenizers::Tokenizer;
using kiln::tokenizers::TrainBpe;
using Ids = std::vector<int32_t>;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// A few hundred KB of varied text, the same every run.
std::vector<std::string> Corpus() {
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i)
    for (const std::string& t : VariedTexts()) texts.push_back(t + " " + std::to_string(i * 7919 % 1000));
  return texts;
}

TEST(TrainBpe, MergesTheMostFrequentPairFirstAndBreaksTiesByIds) {
  // Words "aaab" and " aaab": (a,a) occurs 4 times -> aa (256); then (aa,a) and (a,b) both twice:
  // the smaller pair of ids, (97,98), wins -> ab (257); then aa+ab (258); then " "+aaab (259).
  const Tokenizer tok = TrainBpe({"aaab aaab"}, 300);
  EXPECT_EQ(tok.VocabSize(), 261);
  EXPECT_EQ(tok.IdToToken(256), "aa");
  EXPECT_EQ(tok.IdToToken(257), "ab");
  EXPECT_EQ(tok.IdToToken(258), "aaab");
  EXPECT_EQ(tok.IdToToken(259), "Ġaaab");
  EXPECT_EQ(tok.IdToToken(260), "<|endoftext|>");
  EXPECT_EQ(tok.Encode("aaab aaab"), (Ids{258, 259}));
  EXPECT_EQ(tok.Encode("aab"), (Ids{256, 98}));  // a a before a b
  EXPECT_EQ(tok.Encode("abab"), (Ids{257, 257}));
  EXPECT_EQ(tok.Encode("ba"), (Ids{98, 97}));
  EXPECT_EQ(tok.Bos(), 260);
  EXPECT_EQ(tok.Eos(), 260);
  EXPECT_EQ(tok.Encode("aaab<|endoftext|>aaab"), (Ids{258, 260, 258}));
  EXPECT_EQ(tok.Decode({258, 260, 258}, true), "aaabaaab");
  // The 256 byte tokens come first, in byte order, in GPT-2's byte alphabet.
  EXPECT_EQ(tok.IdToToken(' '), "Ġ");
  EXPECT_EQ(tok.IdToToken('A'), "A");
  EXPECT_EQ(tok.IdToToken(0), "Ā");
  EXPECT_EQ(tok.TokenToId("Ċ"), '\n');
}

TEST(TrainBpe, TheContractSentence) {
  const Tokenizer tok = TrainBpe({"the quick brown fox jumps over the lazy dog. "}, 300);
  const Ids ids = tok.Encode("the quick brown fox");
  EXPECT_EQ(tok.Decode(ids), "the quick brown fox");
  EXPECT_LT(ids.size(), 19u);
}

TEST(TrainBpe, IsDeterministicFillsTheVocabularyAndRoundTrips) {
  const std::vector<std::string> corpus = Corpus();
  const Tokenizer a = TrainBpe(corpus, 1000), b = TrainBpe(corpus, 1000);
  EXPECT_EQ(a.VocabSize(), 1000);
  TempDir dir;
  a.Save(dir / "a.json");
  b.Save(dir / "b.json");
  EXPECT_EQ(ReadAll(dir / "a.json"), ReadAll(dir / "b.json"));
  size_t bytes = 0, tokens = 0;
  for (const std::string& t : VariedTexts()) {
    const Ids ids = a.Encode(t);
    EXPECT_EQ(a.Decode(ids), t) << t;
    bytes += t.size();
    tokens += ids.size();
  }
  EXPECT_LT(tokens * 3, bytes) << "merges should cover the text they were trained on";
}

TEST(TrainBpe, SaveAndFromFileGiveTheSameIds) {
  const Tokenizer tok = TrainBpe(Corpus(), 600);
  TempDir dir;
  tok.Save(dir / "tokenizer.json");
  const Tokenizer again = FromFile(dir / "tokenizer.json");
  EXPECT_EQ(again.VocabSize(), tok.VocabSize());
  EXPECT_EQ(again.Bos(), tok.Bos());
  for (const std::string& t : VariedTexts()) {
    EXPECT_EQ(again.Encode(t), tok.Encode(t)) << t;
    EXPECT_EQ(again.Decode(again.Encode(t)), t) << t;
  }
  // What FromFile reads, Save writes back unchanged.
  again.Save(dir / "again.json");
  EXPECT_EQ(ReadAll(dir / "again.json"), ReadAll(dir / "tokenizer.json"));
}

TEST(TrainBpe, PartialCharactersDecodeToReplacementCharacters) {
  const Tokenizer tok = TrainBpe({"plain ascii"}, 260);
  // é is C3 A9: the first byte alone is not UTF-8.
  EXPECT_EQ(tok.Decode({0xC3}), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.Decode({0xC3, 0xA9}), "é");
  EXPECT_EQ(tok.Decode({'a', 0xF0, 0x9F, 'b'}),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(Tokenizer, CopiesShareTheVocabularyAndSettersCopyOnWrite) {
  Tokenizer tok = TrainBpe({"aaab aaab"}, 300);
  const Tokenizer copy = tok;
  tok.SetBos("aa").SetPad("ab").SetEos(std::nullopt);
  EXPECT_EQ(tok.Bos(), 256);
  EXPECT_EQ(tok.Pad(), 257);
  EXPECT_EQ(tok.Eos(), std::nullopt);
  EXPECT_EQ(copy.Bos(), 260);
  EXPECT_EQ(copy.Eos(), 260);
  const int32_t id = tok.AddSpecialToken("<|user|>");
  EXPECT_EQ(id, 261);
  EXPECT_EQ(tok.VocabSize(), 262);
  EXPECT_EQ(copy.VocabSize(), 261);
  EXPECT_EQ(tok.Encode("aa<|user|>aa"), (Ids{256, 261, 256}));
  EXPECT_EQ(tok.Decode({256, 261, 256}), "aa<|user|>aa");
  EXPECT_EQ(tok.Decode({256, 261, 256}, true), "aaaa");
  // An existing token keeps its id.
  EXPECT_EQ(tok.AddSpecialToken("aaab"), 258);
  EXPECT_EQ(tok.Encode("aaabaaab"), (Ids{258, 258}));
  Tokenizer moved = std::move(tok);
  EXPECT_EQ(moved.VocabSize(), 262);
}

}  // namespace
