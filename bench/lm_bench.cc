// kiln's side of the language-model benchmark (bench/lm_vs_torch.py runs it beside
// bench/torch_lm_bench.py, on the same weights):
//
//   kiln_lm_bench init DIR              writes a Llama-shaped model (~100M parameters, random
//                                       N(0, 0.02) weights) in HuggingFace's layout to DIR
//   kiln_lm_bench generate DIR          greedy generation at batch 1: per-token times after
//                                       prompts of 16 and 512 tokens, and the prefill of 512
//   kiln_lm_bench train DIR             training steps (AdamW) on [batch, seq] random tokens
//
// Each mode prints one JSON line of medians: {"mode": ..., keys in ms or tokens/s}.

#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace kiln;
using Clock = std::chrono::steady_clock;

namespace {

transformers::Config BenchConfig() {
  return transformers::Config::Llama()
      .VocabSize(32000)
      .HiddenSize(768)
      .Layers(10)
      .Heads(12)
      .KVHeads(4)
      .IntermediateSize(2048)
      .MaxPositions(2048);
}

std::vector<int32_t> RandomIds(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return ids;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Per-token times (ms) of `count` greedy tokens after a prompt of `prompt_len`, and the time of
/// the prefill with the first token.
std::pair<std::vector<double>, double> TimeGeneration(transformers::Generator& gen, int64_t prompt_len,
                                                      int64_t count, int64_t vocab) {
  std::vector<Clock::time_point> at;
  const auto start = Clock::now();
  gen.Generate(RandomIds(prompt_len, vocab, 7 + static_cast<uint64_t>(prompt_len)),
               transformers::Sampling::Greedy(), count, [&](int, int32_t) {
                 at.push_back(Clock::now());
                 return true;
               });
  std::vector<double> per;
  for (size_t i = 1; i < at.size(); ++i) per.push_back(Ms(at[i - 1], at[i]));
  return {per, Ms(start, at.front())};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: kiln_lm_bench init|generate|train DIR [--reps=N] [--batch=B] [--seq=S]\n";
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  int reps = 3;
  int64_t batch = 4, seq = 128;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--reps=", 0) == 0) reps = std::stoi(a.substr(7));
    if (a.rfind("--batch=", 0) == 0) batch = std::stoll(a.substr(8));
    if (a.rfind("--seq=", 0) == 0) seq = std::stoll(a.substr(6));
  }
  try {
    compute::BackendPtr backend = compute::New();
    if (mode == "init") {
      const transformers::Config cfg = BenchConfig();
      model::Store store;
      store.SetRNGStateFromSeed(1);
      model::Exec build(
          backend, store,
          [cfg](model::Scope scope, graph::Graph&, const std::vector<graph::Node>& in)
              -> std::vector<graph::Node> { return {transformers::CausalLMLogits(scope, cfg, in[0])}; },
          -1);
      build.Call({Tensor::FromFlat(Shape(DType::Int32, {1, 1}), std::vector<int32_t>{0})});
      transformers::SaveHF(store, cfg, dir);
      std::printf("{\"mode\": \"init\", \"parameters\": %lld}\n",
                  static_cast<long long>(cfg.NumParameters()));
      return 0;
    }
    model::Store store;
    const transformers::Config cfg = transformers::LoadHF(dir, store);
    if (mode == "generate") {
      transformers::Generator gen(backend, store, cfg);
      TimeGeneration(gen, 16, 4, cfg.vocab_size());  // Compiles and warms up.
      TimeGeneration(gen, 512, 4, cfg.vocab_size());
      std::vector<double> at16, at512, prefill;
      for (int r = 0; r < reps; ++r) {
        auto a = TimeGeneration(gen, 16, 33, cfg.vocab_size());
        at16.insert(at16.end(), a.first.begin(), a.first.end());
        auto b = TimeGeneration(gen, 512, 33, cfg.vocab_size());
        at512.insert(at512.end(), b.first.begin(), b.first.end());
        prefill.push_back(b.second);
      }
      std::printf(
          "{\"mode\": \"generate\", \"ms_per_token_at_16\": %.3f, \"ms_per_token_at_512\": %.3f, "
          "\"prefill_512_ms\": %.1f, \"prefill_tokens_per_s\": %.0f, \"builds\": %d}\n",
          Median(at16), Median(at512), Median(prefill), 512.0 / (Median(prefill) / 1000.0), gen.NumBuilds());
      return 0;
    }
    if (mode == "train") {
      store.SetParam("optimizer", "adamw");
      store.SetParam("learning_rate", 1e-4);
      train::Trainer trainer(backend, store, transformers::CausalLM(cfg),
                             losses::SparseCategoricalCrossEntropyLogits, optimizers::FromStore(store), {},
                             {});
      const std::vector<int32_t> ids = RandomIds(batch * (seq + 1), cfg.vocab_size(), 3);
      std::vector<int32_t> x, y;
      for (int64_t b = 0; b < batch; ++b) {
        x.insert(x.end(), ids.begin() + b * (seq + 1), ids.begin() + b * (seq + 1) + seq);
        y.insert(y.end(), ids.begin() + b * (seq + 1) + 1, ids.begin() + (b + 1) * (seq + 1));
      }
      const Tensor tx = Tensor::FromFlat(Shape(DType::Int32, {batch, seq}), x);
      const Tensor ty = Tensor::FromFlat(Shape(DType::Int32, {batch, seq}), y);
      std::any spec;
      trainer.TrainStep(spec, {tx}, {ty});  // Compiles.
      std::vector<double> ms;
      for (int r = 0; r < std::max(reps, 3); ++r) {
        const auto t0 = Clock::now();
        std::vector<Tensor> m = trainer.TrainStep(spec, {tx}, {ty});
        m[0].Item<float>();
        ms.push_back(Ms(t0, Clock::now()));
      }
      std::printf(
          "{\"mode\": \"train\", \"ms_per_step\": %.1f, \"tokens_per_s\": %.0f, \"batch\": %lld, \"seq\": "
          "%lld}\n",
          Median(ms), static_cast<double>(batch * seq) / (Median(ms) / 1000.0), static_cast<long long>(batch),
          static_cast<long long>(seq));
      return 0;
    }
    std::cerr << "unknown mode " << mode << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "kiln_lm_bench: " << e.what() << "\n";
    return 1;
  }
}
