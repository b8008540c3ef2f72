// The text job: trains a small Llama-style language model on the fortune cookies of Debian's
// `fortunes` package. It trains a byte-level BPE tokenizer on the text, trains the model on
// windows of the token stream with a progress bar, a plot (training loss and the held-out loss)
// and checkpoints (resuming), then writes the model in HuggingFace's layout with its
// tokenizer.json and samples text from a few prompts with the key/value-cache generator.
//
//   text_lm [--corpus=DIR] [--steps=1200] [--batch=16] [--window=128] [--vocab=1024] [--hidden=128]
//           [--layers=4] [--heads=4] [--kv_heads=2] [--lr=0.003] [--ckpt=DIR] [--out=DIR]
//           [--plot=FILE] [--seed=42] [--ckpt_every=N] [--eval_every=N] [--sample=N]
//           [--backend=cpu] [--prompt=TEXT]
//
// The corpus is every fortune file of --corpus (default /usr/share/games/fortunes), fortunes
// split at their "%" lines; one fortune in twenty is held out for the evaluation loss. Fortunes
// are joined with the tokenizer's end-of-text token, so the model learns where one ends.
// --out (default lm-model) receives config.json, model.safetensors and tokenizer.json.

#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace kiln;

namespace {

struct Flags {
  std::string corpus = "/usr/share/games/fortunes", ckpt, out = "lm-model", plot = "text_lm.html", backend;
  std::vector<std::string> prompts;
  int64_t steps = 1200, batch = 16, window = 128, vocab = 1024, hidden = 128, layers = 4, heads = 4,
          kv_heads = 2;
  int64_t ckpt_every = 0, eval_every = -1, sample = 60;
  double lr = 3e-3;
  uint64_t seed = 42;
};

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    auto integer = [&] { return std::stoll(value); };
    if (key == "--corpus")
      f.corpus = value;
    else if (key == "--ckpt")
      f.ckpt = value;
    else if (key == "--out")
      f.out = value;
    else if (key == "--plot")
      f.plot = value;
    else if (key == "--backend")
      f.backend = value;
    else if (key == "--prompt")
      f.prompts.push_back(value);
    else if (key == "--steps")
      f.steps = integer();
    else if (key == "--batch")
      f.batch = integer();
    else if (key == "--window")
      f.window = integer();
    else if (key == "--vocab")
      f.vocab = integer();
    else if (key == "--hidden")
      f.hidden = integer();
    else if (key == "--layers")
      f.layers = integer();
    else if (key == "--heads")
      f.heads = integer();
    else if (key == "--kv_heads")
      f.kv_heads = integer();
    else if (key == "--ckpt_every")
      f.ckpt_every = integer();
    else if (key == "--eval_every")
      f.eval_every = integer();
    else if (key == "--sample")
      f.sample = integer();
    else if (key == "--lr")
      f.lr = std::stod(value);
    else if (key == "--seed")
      f.seed = std::stoull(value);
    else {
      std::cerr
          << "unknown flag " << a
          << " (valid: --corpus --steps --batch --window --vocab --hidden --layers --heads --kv_heads --lr"
          << " --ckpt --out --plot --seed --ckpt_every --eval_every --sample --backend --prompt)\n";
      std::exit(2);
    }
  }
  if (f.prompts.empty()) f.prompts = {"The ", "A programmer ", "Q:"};
  return f;
}

/// The fortunes of every fortune file in `dir` (not the .dat indexes, not the .u8 links).
std::vector<std::string> ReadFortunes(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_symlink() || !e.is_regular_file() || e.path().extension() == ".dat") continue;
    files.push_back(e.path());
  }
  if (ec || files.empty())
    throw Error("text_lm: no fortune files in " + dir + " (on Debian: apt-get install fortunes)");
  std::sort(files.begin(), files.end());
  std::vector<std::string> fortunes;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::string line, cur;
    while (std::getline(in, line)) {
      if (line == "%") {
        if (!cur.empty()) fortunes.push_back(cur);
        cur.clear();
      } else {
        cur += line + "\n";
      }
    }
    if (!cur.empty()) fortunes.push_back(cur);
  }
  return fortunes;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = Parse(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  try {
    compute::BackendPtr backend =
        flags.backend.empty() ? compute::New() : compute::NewWithConfig(flags.backend);
    const std::vector<std::string> fortunes = ReadFortunes(flags.corpus);
    std::vector<std::string> train_text, held_out;
    for (size_t i = 0; i < fortunes.size(); ++i)
      (i % 20 == 19 ? held_out : train_text).push_back(fortunes[i]);
    size_t bytes = 0;
    for (const auto& t : fortunes) bytes += t.size();
    std::cout << "corpus: " << fortunes.size() << " fortunes, " << bytes << " bytes, " << held_out.size()
              << " held out\n";

    // The tokenizer: trained once, then read from --out.
    std::filesystem::create_directories(flags.out);
    const std::string tok_path = flags.out + "/tokenizer.json";
    const bool have_tok = std::filesystem::exists(tok_path);
    tokenizers::Tokenizer tok = have_tok ? tokenizers::FromFile(tok_path)
                                         : tokenizers::TrainBpe(train_text, static_cast<int>(flags.vocab));
    if (!have_tok) tok.Save(tok_path);
    const int32_t eos = tok.Eos().value();
    auto encode_all = [&](const std::vector<std::string>& texts) {
      std::vector<int32_t> ids;
      for (const auto& t : texts) {
        std::vector<int32_t> e = tok.Encode(t, false);
        ids.insert(ids.end(), e.begin(), e.end());
        ids.push_back(eos);
      }
      return ids;
    };
    const std::vector<int32_t> train_ids = encode_all(train_text), held_ids = encode_all(held_out);
    std::cout << "tokenizer: " << tok.VocabSize() << " tokens, " << train_ids.size() << " training tokens ("
              << static_cast<double>(bytes) / static_cast<double>(train_ids.size() + held_ids.size())
              << " bytes per token)\n";

    transformers::Config cfg = transformers::Config::Llama()
                                   .VocabSize(tok.VocabSize())
                                   .HiddenSize(flags.hidden)
                                   .Layers(flags.layers)
                                   .Heads(flags.heads)
                                   .KVHeads(flags.kv_heads)
                                   .IntermediateSize(flags.hidden * 8 / 3 / 32 * 32 + 32)
                                   .MaxPositions(std::max<int64_t>(256, flags.window))
                                   .TieEmbeddings(true)
                                   .EosTokenId(eos);
    model::Store store;
    store.SetRNGStateFromSeed(flags.seed);
    store.SetParam("optimizer", "adamw");
    store.SetParam("learning_rate", flags.lr);

    auto train_ds = transformers::CausalLMDataset(backend, train_ids, flags.window, flags.window / 2);
    train_ds->BatchSize(flags.batch, true).Shuffle(flags.seed).Infinite(true);
    auto held_ds = transformers::CausalLMDataset(backend, held_ids, flags.window);
    held_ds->BatchSize(flags.batch, false);
    train::Trainer trainer(
        backend, store, transformers::CausalLM(cfg), losses::SparseCategoricalCrossEntropyLogits,
        optimizers::FromStore(store),
        {metrics::NewMovingAverageSparseCategoricalAccuracy("Moving Average Accuracy", "~acc", 0.05)},
        {metrics::NewSparseCategoricalAccuracy("Mean Accuracy", "#acc")});
    train::Loop loop(trainer);
    commandline::AttachProgressBar(loop);
    plots::Options plot;
    if (flags.eval_every != 0) {
      plot.eval_datasets = {held_ds};
      plot.eval_every = flags.eval_every > 0 ? flags.eval_every : std::max<int64_t>(1, flags.steps / 6);
    }
    plot.title = "Llama-style LM on fortunes, " + std::to_string(cfg.NumParameters()) + " parameters";
    plots::AttachToLoop(loop, flags.plot, plot);
    std::unique_ptr<checkpoint::Handler> ckpt;
    if (!flags.ckpt.empty()) {
      ckpt = std::make_unique<checkpoint::Handler>(checkpoint::Build(store).Dir(flags.ckpt).Keep(3).Done());
      const int64_t every = flags.ckpt_every > 0 ? flags.ckpt_every : std::max<int64_t>(1, flags.steps / 4);
      train::EveryNSteps(loop, every, "checkpoint", 100,
                         [&](train::Loop&, const std::vector<Tensor>&) { ckpt->Save(); });
    }
    std::cout << "training a " << cfg.NumParameters() << "-parameter model for " << flags.steps
              << " steps of " << flags.batch << "x" << flags.window << " tokens on " << backend->Description()
              << ", seed " << flags.seed << "\n";
    const int64_t resumed = store.GlobalStep().Value().Item<int64_t>();
    if (ckpt && resumed > 0) {
      std::cout << "resuming from " << ckpt->ListCheckpoints().back() << " at global step " << resumed
                << "\n";
      std::any spec;
      std::vector<Tensor> inputs, labels;
      for (int64_t i = 0; i < resumed; ++i) train_ds->Yield(spec, inputs, labels);
    }
    loop.RunToGlobalStep(train_ds, flags.steps);
    if (ckpt) ckpt->Save();
    std::vector<Tensor> results = trainer.Eval(held_ds);
    const float loss = results[0].Item<float>();
    std::cout << "held-out loss: " << loss << ", perplexity: " << std::exp(loss)
              << ", next-token accuracy: " << results[1].Item<float>() << "\n";

    transformers::SaveHF(store, cfg, flags.out);
    std::cout << "model: " << flags.out << "/config.json, " << flags.out << "/model.safetensors, " << tok_path
              << "\n";
    transformers::Generator gen(backend, store, cfg);
    for (size_t i = 0; i < flags.prompts.size(); ++i) {
      const std::vector<int32_t> prompt = tok.Encode(flags.prompts[i], false);
      const auto sampling = i == 0 ? transformers::Sampling::Greedy()
                                   : transformers::Sampling::Random(0.8, flags.seed + i).TopP(0.95);
      std::vector<int32_t> out = gen.Generate(prompt, sampling, flags.sample);
      if (out.back() == eos) out.pop_back();
      std::cout << "sample " << (i == 0 ? "(greedy)" : "(top-p 0.95, temperature 0.8)") << ":\n"
                << tok.Decode(out) << "\n---\n";
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "time: " << seconds << " s\n";
  } catch (const Error& e) {
    std::cerr << "text_lm: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
