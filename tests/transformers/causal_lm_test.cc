// Tests for transformers::CausalLM and its HuggingFace checkpoints: logits of small Llama, Qwen2
// (llama3 rotary scaling, attention biases), dynamic-NTK and GPT-2 models against a PyTorch
// implementation (fixtures from make_lm_fixtures.py, read with LoadHF), SaveHF/LoadHF round
// trips and sharded checkpoints, checkpoint errors, training on windows of a token stream with
// the leading-axes cross-entropy, and the dataset.

#include "kiln/transformers/causal_lm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::Throws;

std::vector<compute::BackendPtr> Backends() { return {compute::New(), compute::NewWithConfig("ref")}; }

std::string FixtureDir(const std::string& name) {
  const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/transformers/fixtures/" + name;
}

/// The logits CausalLM computes for `ids` with the store's weights.
Tensor Logits(const compute::BackendPtr& backend, const model::Store& store, const transformers::Config& cfg,
              const Tensor& ids) {
  model::Exec exec(
      backend, store,
      [cfg](model::Scope scope, graph::Graph&, const std::vector<graph::Node>& in)
          -> std::vector<graph::Node> { return {transformers::CausalLMLogits(scope, cfg, in[0])}; },
      -1);
  return exec.Call({ids})[0];
}

class TorchFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchFixture, LogitsMatchPyTorch) {
  const std::string dir = FixtureDir(GetParam());
  const auto expected = io::ReadNpz(dir + "/expected.npz");
  const Tensor ids = expected.at("ids");
  const std::vector<double> want = expected.at("logits").ToVector<double>();
  for (const compute::BackendPtr& backend : Backends()) {
    SCOPED_TRACE(backend->Name());
    model::Store store;
    transformers::Config cfg = transformers::LoadHF(dir, store);
    const Tensor logits = Logits(backend, store, cfg, ids);
    ASSERT_EQ(logits.shape().Dimensions(),
              (std::vector<int64_t>{ids.shape().Dim(0), ids.shape().Dim(1), cfg.vocab_size()}));
    const std::vector<float> got = logits.ToVector<float>();
    double worst = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - want[i]));
      scale = std::max(scale, std::abs(want[i]));
    }
    EXPECT_LT(worst, 1e-4 * std::max(1.0, scale)) << "largest |logit| " << scale;
    EXPECT_GT(scale, 1.0);  // The logits are not all near zero.
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TorchFixture,
                         ::testing::Values("llama", "llama_scaled", "llama_dynamic", "gpt2"));

TEST(CausalLM, ConfigFromTheFixturesReadsEveryField) {
  transformers::Config scaled = transformers::Config::Load(FixtureDir("llama_scaled") + "/config.json");
  EXPECT_EQ(scaled.model_type(), "qwen2");
  EXPECT_EQ(scaled.rope_scaling(), transformers::RopeScaling::kLlama3);
  EXPECT_EQ(scaled.rope_factor(), 8.0);
  EXPECT_EQ(scaled.rope_original_max_positions(), 16);
  EXPECT_TRUE(scaled.attention_bias());
  EXPECT_EQ(scaled.kv_heads(), 2);
  transformers::Config gpt2 = transformers::Config::Load(FixtureDir("gpt2") + "/config.json");
  EXPECT_EQ(gpt2.architecture(), transformers::Architecture::kGpt2);
  EXPECT_EQ(gpt2.hidden_size(), 24);
  EXPECT_EQ(gpt2.intermediate_size(), 40);
  EXPECT_EQ(gpt2.eos_token_id(), std::optional<int32_t>(50));
  EXPECT_TRUE(gpt2.tie_embeddings());
}

TEST(CausalLM, SaveHFThenLoadHFKeepsEveryTensorAndTheConfig) {
  kiln::test::TempDir tmp;
  for (const std::string name : {"llama_scaled", "gpt2"}) {
    SCOPED_TRACE(name);
    model::Store a;
    transformers::Config cfg = transformers::LoadHF(FixtureDir(name), a);
    transformers::SaveHF(a, cfg, tmp / name);
    model::Store b;
    transformers::Config cfg2 = transformers::LoadHF(tmp / name, b);
    EXPECT_EQ(cfg2.ToJson(), cfg.ToJson());
    for (const auto& [path, hf] : transformers::HFTensorNames(cfg)) {
      EXPECT_EQ(a.GetVariable(path).Value().ToVector<float>(), b.GetVariable(path).Value().ToVector<float>())
          << path;
    }
    // The file kiln wrote holds HuggingFace's names and layouts: [out, in] for Llama's linear layers.
    io::SafetensorsFile f = io::ReadSafetensors(tmp / name + "/model.safetensors");
    if (name == "llama_scaled") {
      EXPECT_EQ(f.Find("model.layers.1.self_attn.k_proj.weight").shape().Dimensions(),
                (std::vector<int64_t>{16, 32}));
      EXPECT_TRUE(f.Find("lm_head.weight").Ok());
    } else {
      EXPECT_EQ(f.Find("transformer.h.0.attn.c_attn.weight").shape().Dimensions(),
                (std::vector<int64_t>{24, 72}));
      EXPECT_FALSE(f.Find("lm_head.weight").Ok());  // Tied to the token embeddings.
    }
  }
}

TEST(CausalLM, LoadHFReadsShardedCheckpointsAndReplacesExistingValues) {
  kiln::test::TempDir tmp;
  model::Store src;
  transformers::Config cfg = transformers::LoadHF(FixtureDir("llama"), src);
  io::SafetensorsFile whole = io::ReadSafetensors(FixtureDir("llama") + "/model.safetensors");
  // Two shards and an index, as HuggingFace writes large models.
  std::vector<std::pair<std::string, Tensor>> s1, s2;
  std::string map;
  for (size_t i = 0; i < whole.tensors.size(); ++i) {
    const bool first = i % 2 == 0;
    (first ? s1 : s2).push_back(whole.tensors[i]);
    map += (map.empty() ? "" : ",") + std::string("\"") + whole.tensors[i].first + "\":\"" +
           (first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors") + "\"";
  }
  std::filesystem::create_directories(tmp / "sharded");
  io::WriteSafetensors(tmp / "sharded/model-00001-of-00002.safetensors", s1);
  io::WriteSafetensors(tmp / "sharded/model-00002-of-00002.safetensors", s2);
  std::ofstream(tmp / "sharded/model.safetensors.index.json")
      << "{\"metadata\":{},\"weight_map\":{" << map << "}}";
  std::filesystem::copy_file(FixtureDir("llama") + "/config.json", tmp / "sharded/config.json");
  // A store that already holds the model (other values) gets the checkpoint's.
  model::Store dst;
  transformers::LoadHF(FixtureDir("llama"), dst);
  dst.GetVariable("/model/norm/gain")
      .SetValue(Tensor::FromFlat(Shape(DType::Float32, {32}), std::vector<float>(32, 7)));
  transformers::LoadHF(tmp / "sharded", dst);
  for (const auto& [path, hf] : transformers::HFTensorNames(cfg))
    EXPECT_EQ(dst.GetVariable(path).Value().ToVector<float>(),
              src.GetVariable(path).Value().ToVector<float>())
        << path;
}

TEST(CausalLM, CheckpointErrorsNameTheTensorAndTheFile) {
  kiln::test::TempDir tmp;
  io::SafetensorsFile whole = io::ReadSafetensors(FixtureDir("llama") + "/model.safetensors");
  auto write = [&](const std::string& name, const std::vector<std::pair<std::string, Tensor>>& tensors,
                   const std::string& config) {
    std::filesystem::create_directories(tmp / name);
    io::WriteSafetensors(tmp / (name + "/model.safetensors"), tensors);
    std::ofstream(tmp / (name + "/config.json")) << config;
  };
  std::ifstream cf(FixtureDir("llama") + "/config.json");
  const std::string config((std::istreambuf_iterator<char>(cf)), std::istreambuf_iterator<char>());
  model::Store store;
  // A missing tensor.
  auto fewer = whole.tensors;
  fewer.erase(fewer.begin() + 3);
  write("missing", fewer, config);
  EXPECT_TRUE(Throws([&] { transformers::LoadHF(tmp / "missing", store); },
                     {whole.tensors[3].first, "has no tensor"}));
  // A tensor of the wrong shape.
  auto wrong = whole.tensors;
  wrong[0].second = Tensor::FromFlat(Shape(DType::Float32, {2, 2}), std::vector<float>{1, 2, 3, 4});
  write("shape", wrong, config);
  EXPECT_TRUE(
      Throws([&] { transformers::LoadHF(tmp / "shape", store); }, {"model.embed_tokens.weight", "[61, 32]"}));
  // A tensor the architecture does not have.
  auto extra = whole.tensors;
  extra.emplace_back("model.layers.0.self_attn.rotary_mixer.weight", whole.tensors[0].second);
  write("extra", extra, config);
  EXPECT_TRUE(Throws([&] { transformers::LoadHF(tmp / "extra", store); }, {"rotary_mixer", "not part of"}));
  // Config errors: an unknown model type, a missing field, malformed JSON, heads that do not fit.
  write("type", whole.tensors, R"({"model_type": "mamba", "vocab_size": 61})");
  EXPECT_TRUE(Throws([&] { transformers::LoadHF(tmp / "type", store); },
                     {"config.json", "\"mamba\" is not supported"}));
  write("field", whole.tensors, R"({"model_type": "llama", "vocab_size": 61, "hidden_size": 32})");
  EXPECT_TRUE(Throws([&] { transformers::LoadHF(tmp / "field", store); }, {"intermediate_size"}));
  write("json", whole.tensors, R"({"model_type": "llama", )");
  EXPECT_TRUE(Throws([&] { transformers::LoadHF(tmp / "json", store); }, {"config.json"}));
  EXPECT_TRUE(Throws(
      [] {
        transformers::Config::FromJson(
            R"({"model_type":"llama","vocab_size":61,"hidden_size":32,"intermediate_size":8,"num_hidden_layers":1,)"
            R"("num_attention_heads":4,"num_key_value_heads":3})");
      },
      {"kv_heads 3 do not divide heads 4"}));
  EXPECT_TRUE(Throws([&] { transformers::LoadHF(tmp / "nothing-here", store); }, {"nothing-here"}));
  // Saving a store that lacks the model's variables.
  EXPECT_TRUE(
      Throws([&] { transformers::SaveHF(model::Store(), transformers::Config::Llama(), tmp / "out"); },
             {"/model/embed_tokens/embeddings"}));
}

TEST(CausalLM, SequencesLongerThanThePositionsAreErrors) {
  transformers::Config cfg = transformers::Config::Gpt2()
                                 .VocabSize(10)
                                 .HiddenSize(8)
                                 .Layers(1)
                                 .Heads(2)
                                 .IntermediateSize(8)
                                 .MaxPositions(4);
  model::Store store;
  Tensor ids = Tensor::FromFlat(Shape(DType::Int32, {1, 5}), std::vector<int32_t>{1, 2, 3, 4, 5});
  EXPECT_TRUE(Throws([&] { Logits(compute::New(), store, cfg, ids); }, {"5 tokens", "4 positions"}));
}

TEST(CausalLM, DatasetHoldsNextTokenWindows) {
  std::vector<int32_t> ids(23);
  for (int i = 0; i < 23; ++i) ids[static_cast<size_t>(i)] = i * 3;
  auto ds = transformers::CausalLMDataset(compute::New(), ids, 5, 4);
  EXPECT_EQ(ds->NumExamples(), 5);  // starts 0, 4, 8, 12, 16 (16 + 5 < 23)
  ds->BatchSize(5, false);
  std::any spec;
  std::vector<Tensor> in, labels;
  ASSERT_TRUE(ds->Yield(spec, in, labels));
  const std::vector<int32_t> x = in[0].ToVector<int32_t>(), y = labels[0].ToVector<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(x.begin() + 5, x.begin() + 10), (std::vector<int32_t>{12, 15, 18, 21, 24}));
  EXPECT_EQ(std::vector<int32_t>(y.begin() + 5, y.begin() + 10), (std::vector<int32_t>{15, 18, 21, 24, 27}));
  EXPECT_TRUE(Throws([&] { transformers::CausalLMDataset(compute::New(), {1, 2, 3}, 3); }, {"too few"}));
  EXPECT_TRUE(Throws([&] { transformers::CausalLMDataset(compute::New(), ids, 0); }, {"window 0"}));
}

TEST(CausalLM, TrainsOnARepeatedSequenceWithTheLeadingAxesCrossEntropy) {
  for (const compute::BackendPtr& backend : Backends()) {
    SCOPED_TRACE(backend->Name());
    transformers::Config cfg = transformers::Config::Llama()
                                   .VocabSize(12)
                                   .HiddenSize(32)
                                   .Layers(1)
                                   .Heads(4)
                                   .KVHeads(2)
                                   .IntermediateSize(48)
                                   .MaxPositions(32);
    std::vector<int32_t> stream;
    for (int r = 0; r < 30; ++r)
      for (int32_t t : {1, 5, 2, 9, 4, 7, 3, 11, 6}) stream.push_back(t);
    auto ds = transformers::CausalLMDataset(backend, stream, 12, 3);
    ds->BatchSize(8, true).Shuffle().Infinite(true);
    model::Store store;
    store.SetRNGStateFromSeed(3);
    store.SetParam("optimizer", "adam");
    store.SetParam("learning_rate", 1e-2);
    train::Trainer trainer(backend, store, transformers::CausalLM(cfg),
                           losses::SparseCategoricalCrossEntropyLogits, optimizers::FromStore(store),
                           {metrics::NewMovingAverageSparseCategoricalAccuracy("accuracy", "acc", 0.1)}, {});
    train::Loop loop(trainer);
    const float first = loop.RunSteps(ds, 1)[0].Item<float>();
    EXPECT_NEAR(first, std::log(12.0f), 0.5f);  // Near uniform at the start.
    std::vector<Tensor> m = loop.RunSteps(ds, 60);
    EXPECT_LT(m[0].Item<float>(), 0.1f);
    // The first token of a window cannot be predicted from nothing, the rest can: accuracy ~11/12.
    model::Exec step(
        backend, store,
        [cfg](model::Scope scope, graph::Graph&,
              const std::vector<graph::Node>& in) -> std::vector<graph::Node> {
          graph::Node logits = transformers::CausalLMLogits(scope, cfg, in[0]);
          return {metrics::SparseCategoricalAccuracy({in[1]}, {logits})};
        },
        -1);
    std::vector<int32_t> x(stream.begin(), stream.begin() + 12), y(stream.begin() + 1, stream.begin() + 13);
    const float acc = step.Call({Tensor::FromFlat(Shape(DType::Int32, {1, 12}), x),
                                 Tensor::FromFlat(Shape(DType::Int32, {1, 12, 1}), y)})[0]
                          .Item<float>();
    EXPECT_GE(acc, 11.0f / 12.0f);
  }
}

TEST(Losses, SparseCrossEntropyWithLeadingAxesIsTheMeanOverPositions) {
  for (const compute::BackendPtr& backend : Backends()) {
    SCOPED_TRACE(backend->Name());
    const Tensor logits = kiln::test::NormalTensor({2, 3, 4}, 5);
    const std::vector<int32_t> ids = {0, 3, 1, 2, 2, 9};  // 9: outside the classes, a loss of 0
    const std::vector<float> weights = {1, 0, 2, 1, 1, 1};
    const std::vector<float> z = logits.ToVector<float>();
    double sum = 0, wsum = 0, wtotal = 0;
    for (int p = 0; p < 6; ++p) {
      double m = -1e30, s = 0;
      for (int c = 0; c < 4; ++c) m = std::max(m, static_cast<double>(z[static_cast<size_t>(p * 4 + c)]));
      for (int c = 0; c < 4; ++c) s += std::exp(z[static_cast<size_t>(p * 4 + c)] - m);
      const int id = ids[static_cast<size_t>(p)];
      const double l = id < 4 ? m + std::log(s) - z[static_cast<size_t>(p * 4 + id)] : 0.0;
      sum += l;
      wsum += l * weights[static_cast<size_t>(p)];
      wtotal += weights[static_cast<size_t>(p)];
    }
    graph::Exec plain = graph::NewExec(backend, [](graph::Node y, graph::Node x) {
      return losses::SparseCategoricalCrossEntropyLogits({y}, {x});
    });
    EXPECT_NEAR(plain.Call(Tensor::FromFlat(Shape(DType::Int32, {2, 3}), ids), logits)[0].Item<float>(),
                sum / 6, 1e-5);
    EXPECT_NEAR(plain.Call(Tensor::FromFlat(Shape(DType::Int32, {2, 3, 1}), ids), logits)[0].Item<float>(),
                sum / 6, 1e-5);
    graph::Exec weighted = graph::NewExec(backend, [](graph::Node y, graph::Node x, graph::Node w) {
      return losses::SparseCategoricalCrossEntropyLogits({y, w}, {x});
    });
    EXPECT_NEAR(weighted
                    .Call(Tensor::FromFlat(Shape(DType::Int32, {2, 3}), ids), logits,
                          Tensor::FromFlat(Shape(DType::Float32, {2, 3}), weights))[0]
                    .Item<float>(),
                wsum / wtotal, 1e-5);
    EXPECT_TRUE(Throws(
        [&] {
          plain.Call(Tensor::FromFlat(Shape(DType::Int32, {3, 2}), ids), logits);
        },
        {"SparseCategoricalCrossEntropyLogits", "leading axes"}));
    // One-hot labels through the dense cross-entropy: the same mean over positions (the id 9
    // selects no class there either: an all-zero row).
    std::vector<float> onehot(24, 0.0f);
    for (int p = 0; p < 6; ++p)
      if (ids[static_cast<size_t>(p)] < 4)
        onehot[static_cast<size_t>(p * 4 + ids[static_cast<size_t>(p)])] = 1;
    graph::Exec dense = graph::NewExec(backend, [](graph::Node y, graph::Node x) {
      return losses::CategoricalCrossEntropyLogits({y}, {x});
    });
    EXPECT_NEAR(
        dense.Call(Tensor::FromFlat(Shape(DType::Float32, {2, 3, 4}), onehot), logits)[0].Item<float>(),
        sum / 6, 1e-5);
    // The accuracy over positions: the arg-max of each row against the ids.
    int right = 0;
    for (int p = 0; p < 6; ++p) {
      const auto row = z.begin() + p * 4;
      right += std::max_element(row, row + 4) - row == ids[static_cast<size_t>(p)];
    }
    graph::Exec acc = graph::NewExec(
        backend, [](graph::Node y, graph::Node x) { return metrics::SparseCategoricalAccuracy({y}, {x}); });
    EXPECT_NEAR(acc.Call(Tensor::FromFlat(Shape(DType::Int32, {2, 3}), ids), logits)[0].Item<float>(),
                right / 6.0, 1e-6);
  }
}

}  // namespace
