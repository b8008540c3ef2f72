// Tests for transformers::Generator: cached decoding gives the tokens that recomputing the whole
// sequence gives, batched prompts of different lengths give what each gives alone, one program
// serves every prompt length and step, and the sampling rules, stop tokens, callbacks and errors.

#include "kiln/transformers/generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::Throws;

std::vector<compute::BackendPtr> Backends() { return {compute::New(), compute::NewWithConfig("ref")}; }

transformers::Config TinyLlama() {
  return transformers::Config::Llama()
      .VocabSize(61)
      .HiddenSize(32)
      .Layers(2)
      .Heads(4)
      .KVHeads(2)
      .IntermediateSize(48)
      .MaxPositions(96);
}

transformers::Config TinyGpt2() {
  return transformers::Config::Gpt2()
      .VocabSize(53)
      .HiddenSize(24)
      .Layers(2)
      .Heads(3)
      .IntermediateSize(40)
      .MaxPositions(80);
}

/// A store with random weights for `cfg` (N(0, 0.3): large enough that tokens differ by position).
model::Store RandomModel(const compute::BackendPtr& backend, const transformers::Config& cfg, uint64_t seed) {
  model::Store store;
  store.SetRNGStateFromSeed(seed);
  model::Exec init(
      backend, store,
      [cfg](model::Scope scope, graph::Graph&,
            const std::vector<graph::Node>& in) -> std::vector<graph::Node> {
        return {transformers::CausalLMLogits(scope.WithInitializer(initializers::RandomNormal(0, 0.3)), cfg,
                                             in[0])};
      },
      -1);
  init.Call({Tensor::FromFlat(Shape(DType::Int32, {1, 2}), std::vector<int32_t>{1, 2})});
  return store;
}

/// Greedy generation recomputing the whole sequence every step (no cache): the reference.
std::vector<int32_t> GreedyWithoutCache(const compute::BackendPtr& backend, const model::Store& store,
                                        const transformers::Config& cfg, std::vector<int32_t> ids,
                                        int steps) {
  model::Exec logits(
      backend, store,
      [cfg](model::Scope scope, graph::Graph&, const std::vector<graph::Node>& in)
          -> std::vector<graph::Node> { return {transformers::CausalLMLogits(scope, cfg, in[0])}; },
      -1);
  for (int s = 0; s < steps; ++s) {
    const int64_t n = static_cast<int64_t>(ids.size());
    std::vector<float> z =
        logits.Call({Tensor::FromFlat(Shape(DType::Int32, {1, n}), ids)})[0].ToVector<float>();
    const int64_t v = cfg.vocab_size();
    auto last = z.begin() + (n - 1) * v;
    ids.push_back(static_cast<int32_t>(std::max_element(last, last + v) - last));
  }
  return ids;
}

TEST(Generator, CachedGreedyEqualsRecomputingTheSequence) {
  for (const compute::BackendPtr& backend : Backends()) {
    for (const transformers::Config& cfg : {TinyLlama(), TinyGpt2()}) {
      SCOPED_TRACE(backend->Name() + " " + cfg.model_type());
      model::Store store = RandomModel(backend, cfg, 11);
      const std::vector<int32_t> prompt = {3, 17, 5, 40, 9};
      const std::vector<int32_t> want = GreedyWithoutCache(backend, store, cfg, prompt, 12);
      transformers::Generator gen(backend, store, cfg);
      const std::vector<int32_t> got = gen.Generate(prompt, transformers::Sampling::Greedy(), 12);
      EXPECT_EQ(got, want);
      // The new tokens are not all one id (the model is random, not degenerate).
      std::vector<int32_t> fresh(got.begin() + 5, got.end());
      std::sort(fresh.begin(), fresh.end());
      EXPECT_GT(std::unique(fresh.begin(), fresh.end()) - fresh.begin(), 1);
    }
  }
}

TEST(Generator, BatchedPromptsOfDifferentLengthsGiveWhatEachGivesAlone) {
  for (const compute::BackendPtr& backend : Backends()) {
    for (const transformers::Config& cfg : {TinyLlama(), TinyGpt2()}) {
      SCOPED_TRACE(backend->Name() + " " + cfg.model_type());
      model::Store store = RandomModel(backend, cfg, 5);
      transformers::Generator gen(backend, store, cfg);
      const std::vector<std::vector<int32_t>> prompts = {{4}, {9, 2, 30, 7, 7, 1, 12}, {22, 8, 3}};
      const auto batch = gen.GenerateBatch(prompts, transformers::Sampling::Greedy(), 9);
      ASSERT_EQ(batch.size(), 3u);
      for (size_t r = 0; r < prompts.size(); ++r) {
        EXPECT_EQ(batch[r], GreedyWithoutCache(backend, store, cfg, prompts[r], 9)) << "row " << r;
      }
    }
  }
}

TEST(Generator, OneProgramServesEveryPromptLengthAndStep) {
  const compute::BackendPtr backend = compute::New();
  const transformers::Config cfg = TinyLlama();
  model::Store store = RandomModel(backend, cfg, 2);
  transformers::Generator gen(backend, store, cfg);
  gen.Generate({1, 2, 3}, transformers::Sampling::Greedy(), 10);
  gen.Generate({5, 6, 7, 8, 9, 10, 11}, transformers::Sampling::Greedy(), 20);
  gen.Generate({5}, transformers::Sampling::Greedy(), 90);  // A cache of another size (96 slots).
  EXPECT_EQ(gen.NumBuilds(), 1);
  // New tokens stop at the model's positions (96).
  EXPECT_EQ(gen.Generate({1, 2}, transformers::Sampling::Greedy(), 500).size(), 96u);
}

TEST(Generator, StopTokensAndTheCallbackEndARow) {
  const compute::BackendPtr backend = compute::New();
  const transformers::Config cfg = TinyLlama();
  model::Store store = RandomModel(backend, cfg, 11);
  transformers::Generator gen(backend, store, cfg);
  const std::vector<int32_t> prompt = {3, 17, 5, 40, 9};
  const std::vector<int32_t> full = gen.Generate(prompt, transformers::Sampling::Greedy(), 12);
  // Stopping on the third new token keeps it and nothing after it.
  const int32_t stop = full[7];
  const size_t first = static_cast<size_t>(std::find(full.begin() + 5, full.end(), stop) - full.begin());
  gen.StopTokens({stop});
  EXPECT_EQ(gen.Generate(prompt, transformers::Sampling::Greedy(), 12),
            std::vector<int32_t>(full.begin(), full.begin() + static_cast<int64_t>(first) + 1));
  gen.StopTokens({});
  // The callback sees every new token, in order, and returning false ends the row.
  std::vector<int32_t> seen;
  auto out = gen.Generate(prompt, transformers::Sampling::Greedy(), 12, [&](int row, int32_t id) {
    EXPECT_EQ(row, 0);
    seen.push_back(id);
    return seen.size() < 4;
  });
  EXPECT_EQ(seen, std::vector<int32_t>(full.begin() + 5, full.begin() + 9));
  EXPECT_EQ(out, std::vector<int32_t>(full.begin(), full.begin() + 9));
  // A config's EOS is a stop token.
  transformers::Generator eos(backend, store, TinyLlama().EosTokenId(stop));
  EXPECT_EQ(eos.Generate(prompt, transformers::Sampling::Greedy(), 12).back(), stop);
}

TEST(Generator, SamplingIsReproducibleAndFollowsItsRules) {
  const compute::BackendPtr backend = compute::New();
  const transformers::Config cfg = TinyGpt2();
  model::Store store = RandomModel(backend, cfg, 8);
  transformers::Generator gen(backend, store, cfg);
  const std::vector<int32_t> prompt = {1, 2, 3};
  const auto greedy = gen.Generate(prompt, transformers::Sampling::Greedy(), 15);
  {
    std::vector<int32_t> g(greedy.begin(), greedy.end());
    std::sort(g.begin(), g.end());
    EXPECT_NE(std::unique(g.begin(), g.end()), g.end())
        << "greedy decoding repeats no token: the penalty test is void";
  }
  // top_k = 1 and a tiny nucleus leave only the largest logit.
  EXPECT_EQ(gen.Generate(prompt, transformers::Sampling::Random(1.0, 4).TopK(1), 15), greedy);
  EXPECT_EQ(gen.Generate(prompt, transformers::Sampling::Random(1.0, 4).TopP(1e-6), 15), greedy);
  // The same seed draws the same tokens; other seeds, at a high temperature, others.
  const auto a = gen.Generate(prompt, transformers::Sampling::Random(2.0, 42), 15);
  EXPECT_EQ(gen.Generate(prompt, transformers::Sampling::Random(2.0, 42), 15), a);
  int differ = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed)
    differ += gen.Generate(prompt, transformers::Sampling::Random(2.0, seed), 15) != a;
  EXPECT_GE(differ, 3);
  // A strong repetition penalty avoids every repeat (greedy decoding of this model repeats).
  const auto penalised = gen.Generate(prompt, transformers::Sampling::Greedy().RepetitionPenalty(1e6), 15);
  std::vector<int32_t> fresh(penalised.begin(), penalised.end());
  std::sort(fresh.begin(), fresh.end());
  EXPECT_EQ(std::unique(fresh.begin(), fresh.end()), fresh.end()) << "a token repeated despite the penalty";
}

TEST(Generator, BadInputIsAnError) {
  const compute::BackendPtr backend = compute::New();
  const transformers::Config cfg = TinyLlama();
  model::Store store = RandomModel(backend, cfg, 1);
  transformers::Generator gen(backend, store, cfg);
  auto greedy = transformers::Sampling::Greedy();
  EXPECT_TRUE(Throws([&] { gen.Generate({}, greedy, 3); }, {"prompt 0 is empty"}));
  EXPECT_TRUE(Throws([&] { gen.Generate({1, 61}, greedy, 3); }, {"token 1 is id 61", "vocabulary [0, 61)"}));
  EXPECT_TRUE(Throws([&] { gen.Generate({1, -2}, greedy, 3); }, {"id -2"}));
  EXPECT_TRUE(
      Throws([&] { gen.Generate(std::vector<int32_t>(97, 1), greedy, 3); }, {"97 tokens", "96 positions"}));
  EXPECT_TRUE(Throws([&] { gen.Generate({1}, transformers::Sampling::Random(-1), 3); }, {"temperature -1"}));
  EXPECT_TRUE(Throws([&] { gen.Generate({1}, transformers::Sampling::Greedy().TopP(0), 3); }, {"top_p 0"}));
  EXPECT_TRUE(Throws([&] { gen.Generate({1}, transformers::Sampling::Greedy().RepetitionPenalty(0), 3); },
                     {"repetition penalty 0"}));
  EXPECT_TRUE(Throws([&] { gen.StopTokens({70}); }, {"stop token 70"}));
  EXPECT_TRUE(
      Throws([&] { transformers::Generator(backend, store, TinyLlama().KVHeads(3)); }, {"kv_heads 3"}));
  // A store holding a model of other sizes.
  model::Store other = RandomModel(backend, TinyLlama().HiddenSize(16).IntermediateSize(8), 1);
  transformers::Generator mismatch(backend, other, cfg);
  EXPECT_TRUE(Throws([&] { mismatch.Generate({1}, greedy, 2); }, {"embed_tokens"}));
}

}  // namespace
