// transformers::Generator: prefill then one token per step over a key/value cache held in backend
// buffers (donated between steps); the next token is chosen on the host (sampling.cc).

#include "kiln/transformers/generate.h"

#include <algorithm>
#include <random>
#include <set>
#include <string>

#include "core/check.h"
#include "kiln/graph/exec.h"
#include "kiln/graph/gather.h"
#include "kiln/model/exec.h"
#include "transformers/decoder.h"
#include "transformers/sampling.h"

namespace kiln::transformers {

using graph::Node;

struct Generator::State {
  compute::BackendPtr backend;
  model::Store store;
  Config cfg;
  std::vector<int32_t> stop;
  model::Exec exec;

  State(compute::BackendPtr b, model::Store s, Config c)
      : backend(std::move(b)), store(std::move(s)), cfg(std::move(c)), exec(MakeExec()) {}

  // Inputs: ids [b, t], positions [b, t], write_pos, last (Int32 scalars), key_valid [b, C],
  // inv_freq [head_dim / 2], then keys and values of each layer [b, C, kv_heads, head_dim].
  // Outputs: the logits of position `last` [b, vocab], then the updated caches.
  model::Exec MakeExec() {
    const Config c = cfg;
    model::Exec e(
        backend, store,
        [c](model::Scope scope, graph::Graph&, const std::vector<Node>& in) -> std::vector<Node> {
          internal::Cache cache;
          cache.write_pos = in[2];
          cache.key_valid = in[4];
          for (int64_t l = 0; l < c.layers(); ++l) {
            cache.keys.push_back(in[static_cast<size_t>(6 + 2 * l)]);
            cache.values.push_back(in[static_cast<size_t>(7 + 2 * l)]);
          }
          Node hidden = internal::DecoderHidden(scope, c, in[0], in[1], in[5], &cache);
          const int64_t batch = hidden.shape().Dim(0), width = hidden.shape().Dim(2);
          Node zero = graph::ScalarLike(in[3], 0);
          Node last = graph::DynamicSlice(hidden, {zero, in[3], zero}, {batch, 1, width});
          last = graph::Reshape(last, {batch, width});
          std::vector<Node> out = {internal::OutputLogits(scope, c, last)};
          for (int64_t l = 0; l < c.layers(); ++l) {
            out.push_back(cache.keys[static_cast<size_t>(l)]);
            out.push_back(cache.values[static_cast<size_t>(l)]);
          }
          return out;
        },
        -1, "transformers generator");
    std::vector<std::vector<std::string>> axes = {{"", "seq"}, {"", "seq"}, {}, {}, {"", "cache"}, {}};
    for (int64_t l = 0; l < 2 * c.layers(); ++l) axes.push_back({"", "cache", "", ""});
    e.WithDynamicAxes(axes);
    return e;
  }
};

Generator::Generator(compute::BackendPtr backend, model::Store store, Config cfg) {
  cfg.Check();
  if (!backend) kiln::detail::Throw("transformers::Generator: no backend");
  state_ = std::make_shared<State>(std::move(backend), std::move(store), std::move(cfg));
  if (state_->cfg.eos_token_id()) state_->stop.push_back(*state_->cfg.eos_token_id());
}

Generator& Generator::StopTokens(std::vector<int32_t> ids) {
  for (int32_t id : ids) {
    if (id < 0 || id >= state_->cfg.vocab_size())
      kiln::detail::Throw("transformers::Generator: stop token {} is outside the vocabulary [0, {})", id,
                          state_->cfg.vocab_size());
  }
  if (state_->cfg.eos_token_id() &&
      std::find(ids.begin(), ids.end(), *state_->cfg.eos_token_id()) == ids.end())
    ids.push_back(*state_->cfg.eos_token_id());
  state_->stop = std::move(ids);
  return *this;
}

int Generator::NumBuilds() const { return state_->exec.NumBuilds(); }

std::vector<int32_t> Generator::Generate(const std::vector<int32_t>& prompt, const Sampling& sampling,
                                         int64_t max_new, const TokenCallback& on_token) {
  return GenerateBatch({prompt}, sampling, max_new, on_token)[0];
}

namespace {

Tensor Int32Tensor(const std::vector<int64_t>& dims, const std::vector<int32_t>& values) {
  return Tensor::FromFlat(Shape(DType::Int32, dims), values);
}

Tensor BoolTensor(const std::vector<int64_t>& dims, const std::vector<uint8_t>& values) {
  return Tensor::FromBytes(Shape(DType::Bool, dims), values);
}

Tensor Frequencies(const Config& cfg, int64_t max_position) {
  std::vector<double> inv = internal::RopeInverseFrequencies(cfg, max_position);
  return Tensor::FromFlat(Shape(DType::Float64, {static_cast<int64_t>(inv.size())}), inv);
}

}  // namespace

std::vector<std::vector<int32_t>> Generator::GenerateBatch(const std::vector<std::vector<int32_t>>& prompts,
                                                           const Sampling& sampling, int64_t max_new,
                                                           const TokenCallback& on_token) {
  const char* fn = "transformers::Generator";
  const Config& cfg = state_->cfg;
  internal::CheckSampling(fn, sampling);
  if (prompts.empty()) kiln::detail::Throw("{}: no prompts", fn);
  if (max_new < 0) kiln::detail::Throw("{}: max_new {} must be >= 0", fn, max_new);
  const int64_t rows = static_cast<int64_t>(prompts.size());
  int64_t longest = 0;
  for (size_t r = 0; r < prompts.size(); ++r) {
    const auto& p = prompts[r];
    if (p.empty()) kiln::detail::Throw("{}: prompt {} is empty (start it with a token, such as BOS)", fn, r);
    if (static_cast<int64_t>(p.size()) > cfg.position_limit())
      kiln::detail::Throw("{}: prompt {} has {} tokens, more than the model's {} positions", fn, r, p.size(),
                          cfg.position_limit());
    for (size_t i = 0; i < p.size(); ++i) {
      if (p[i] < 0 || p[i] >= cfg.vocab_size())
        kiln::detail::Throw("{}: prompt {} token {} is id {}, outside the vocabulary [0, {})", fn, r, i, p[i],
                            cfg.vocab_size());
    }
    longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()));
  }
  std::vector<std::vector<int32_t>> out(prompts.begin(), prompts.end());
  // New tokens stop at the model's positions for the longest row.
  max_new = std::min(max_new, cfg.position_limit() - longest);
  if (max_new <= 0) return out;

  // Cache slots: rows are left-padded to the longest prompt; the capacity is rounded up to a
  // multiple of 128 (one program specialisation per capacity; attention reads every slot).
  const int64_t capacity = std::min(cfg.position_limit(), (longest + max_new + 127) / 128 * 128);
  const int64_t kv = cfg.kv_heads(), hd = cfg.head_dim(), vocab = cfg.vocab_size();
  std::vector<int64_t> pad(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    pad[static_cast<size_t>(r)] = longest - static_cast<int64_t>(prompts[r].size());

  std::vector<Tensor> caches;
  for (int64_t l = 0; l < 2 * cfg.layers(); ++l)
    caches.push_back(
        Tensor::FromShapeForBackend(state_->backend, 0, Shape(DType::Float32, {rows, capacity, kv, hd})));
  std::vector<uint8_t> valid(static_cast<size_t>(rows * capacity), 0);

  // Prefill: every row's prompt at slots 0 .. longest - 1.
  std::vector<int32_t> ids(static_cast<size_t>(rows * longest), 0), positions(ids.size(), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const auto& p = prompts[static_cast<size_t>(r)];
    for (int64_t j = 0; j < longest; ++j) {
      const int64_t k = j - pad[static_cast<size_t>(r)];
      const size_t at = static_cast<size_t>(r * longest + j);
      if (k >= 0) {
        ids[at] = p[static_cast<size_t>(k)];
        positions[at] = static_cast<int32_t>(k);
        valid[static_cast<size_t>(r * capacity + j)] = 1;
      }
    }
  }
  std::vector<bool> done(static_cast<size_t>(rows), false);
  std::mt19937_64 rng(sampling.seed);
  int64_t write = 0, t = longest;
  for (int64_t step = 0; step < max_new; ++step) {
    std::vector<Tensor> in = {Int32Tensor({rows, t}, ids),
                              Int32Tensor({rows, t}, positions),
                              Tensor::FromScalar(static_cast<int32_t>(write)),
                              Tensor::FromScalar(static_cast<int32_t>(t - 1)),
                              BoolTensor({rows, capacity}, valid),
                              Frequencies(cfg, write + t - 1)};
    for (Tensor& c : caches) in.push_back(graph::Donate(std::move(c)));
    std::vector<Tensor> res = state_->exec.Call(in);
    for (size_t i = 0; i < caches.size(); ++i) caches[i] = std::move(res[i + 1]);
    const std::vector<float> logits = res[0].ToVector<float>();
    write += t;

    // One token per unfinished row; finished rows keep feeding their last token (masked out).
    std::vector<int32_t> next(static_cast<size_t>(rows), 0);
    for (int64_t r = 0; r < rows; ++r) {
      auto& row = out[static_cast<size_t>(r)];
      if (done[static_cast<size_t>(r)]) {
        next[static_cast<size_t>(r)] = row.back();
        continue;
      }
      std::vector<float> z(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
      const int32_t id = internal::ChooseToken(z, sampling, row, rng);
      row.push_back(id);
      next[static_cast<size_t>(r)] = id;
      bool stop = std::find(state_->stop.begin(), state_->stop.end(), id) != state_->stop.end();
      if (on_token && !on_token(static_cast<int>(r), id)) stop = true;
      if (stop) done[static_cast<size_t>(r)] = true;
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; }) || step + 1 == max_new) break;

    // The next step feeds each row's new token at slot `write`.
    t = 1;
    ids = next;
    positions.assign(static_cast<size_t>(rows), 0);
    for (int64_t r = 0; r < rows; ++r) {
      positions[static_cast<size_t>(r)] = static_cast<int32_t>(write - pad[static_cast<size_t>(r)]);
      valid[static_cast<size_t>(r * capacity + write)] = done[static_cast<size_t>(r)] ? 0 : 1;
    }
  }
  return out;
}

}  // namespace kiln::transformers
