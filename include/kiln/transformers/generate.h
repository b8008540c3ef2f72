#pragma once
/// @file
/// transformers::Generator: text generation with a key/value cache. The prompt is processed once
/// (prefill), then each step feeds one token per row; the cache lives in backend buffers donated
/// from one step to the next, and one compiled program serves every step and prompt length (the
/// sequence and cache axes are dynamic).
///
///   transformers::Generator gen(backend, store, cfg);
///   gen.StopTokens({eos});
///   std::vector<int32_t> out = gen.Generate(tok.Encode("Once upon"), transformers::Sampling::Greedy(), 50);
///   auto more = gen.Generate(prompt, transformers::Sampling::Random(0.8, /*seed=*/1).TopP(0.9), 50,
///                            [&](int row, int32_t id) { std::cout << tok.Decode({id}); return true; });

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/compute/backend.h"
#include "kiln/model/store.h"
#include "kiln/transformers/config.h"

namespace kiln::transformers {

/// How the next token is chosen from the logits: greedy (the largest; temperature 0), or drawn
/// from softmax(logits / temperature) restricted to the top_k largest and then to the smallest
/// set whose probability reaches top_p. A repetition penalty > 1 makes tokens already in the
/// row less likely (HuggingFace's rule: a positive logit is divided by it, a negative one
/// multiplied). Draws are reproducible for a given seed.
struct Sampling {
  double temperature = 0;         ///< 0: greedy.
  int64_t top_k = 0;              ///< 0: no limit.
  double top_p = 1;               ///< 1: no limit.
  double repetition_penalty = 1;  ///< 1: none.
  uint64_t seed = 0;              ///< Seeds the draws (the same seed, the same tokens).

  /// The largest logit every step.
  static Sampling Greedy() { return Sampling(); }
  /// Draws at `temperature` (> 0) with `seed`.
  static Sampling Random(double temperature = 1, uint64_t seed = 0) {
    Sampling s;
    s.temperature = temperature;
    s.seed = seed;
    return s;
  }
  /// Sets the temperature (0: greedy).
  Sampling& Temperature(double t) {
    temperature = t;
    return *this;
  }
  /// Keeps the k largest logits (0: all).
  Sampling& TopK(int64_t k) {
    top_k = k;
    return *this;
  }
  /// Keeps the smallest set of tokens whose probability reaches p (1: all).
  Sampling& TopP(double p) {
    top_p = p;
    return *this;
  }
  /// Penalises tokens already in the row (1: none).
  Sampling& RepetitionPenalty(double penalty) {
    repetition_penalty = penalty;
    return *this;
  }
  /// Seeds the draws.
  Sampling& Seed(uint64_t s) {
    seed = s;
    return *this;
  }
};

/// Called with each new token of a row (rows numbered as the prompts); returning false ends
/// that row.
using TokenCallback = std::function<bool(int row, int32_t token)>;

/// Generates text from a causal language model whose variables are in `store` (trained with
/// CausalLM(cfg) or read by LoadHF). Copies share the compiled program and the settings.
class Generator {
 public:
  /// A generator of the model in `store` with config `cfg`, on `backend`; kiln::Error for an
  /// invalid config.
  Generator(compute::BackendPtr backend, model::Store store, Config cfg);

  /// Tokens that end a row (included in its output). The config's eos_token_id, if set, is one.
  Generator& StopTokens(std::vector<int32_t> ids);

  /// The prompt followed by up to `max_new` new tokens (fewer when a stop token comes, the
  /// callback returns false, or the model's positions run out). kiln::Error for an empty prompt,
  /// an id outside the vocabulary, a prompt longer than MaxPositions, or invalid sampling values.
  std::vector<int32_t> Generate(const std::vector<int32_t>& prompt, const Sampling& sampling, int64_t max_new,
                                const TokenCallback& on_token = {});

  /// Generate for several prompts of any lengths at once (left-padded, the padding masked):
  /// each row gives what Generate would give for it alone (up to floating-point rounding, which
  /// can tip a near tie).
  std::vector<std::vector<int32_t>> GenerateBatch(const std::vector<std::vector<int32_t>>& prompts,
                                                  const Sampling& sampling, int64_t max_new,
                                                  const TokenCallback& on_token = {});

  /// The number of programs built so far (one per batch size: new prompt lengths and steps
  /// reuse it).
  int NumBuilds() const;

  /// Internal: the shared state (compiled program, settings).
  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace kiln::transformers
