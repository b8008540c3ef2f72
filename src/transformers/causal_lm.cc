// transformers::CausalLM (the model function) and CausalLMDataset (next-token windows).

#include "kiln/transformers/causal_lm.h"

#include <string>

#include "core/check.h"
#include "kiln/graph/dynamic.h"
#include "transformers/decoder.h"

namespace kiln::transformers {

graph::Node CausalLMLogits(model::Scope scope, const Config& cfg, graph::Node ids) {
  cfg.Check();
  if (!ids.Ok() || ids.rank() != 2)
    kiln::detail::Throw("transformers::CausalLM: token ids {} must be [batch, seq]",
                        ids.Ok() ? ids.shape().ToString() : std::string("(invalid)"));
  const int64_t seq = ids.shape().Dim(1);
  if (seq > cfg.position_limit())
    kiln::detail::Throw(
        "transformers::CausalLM: a sequence of {} tokens is longer than the model's {} positions", seq,
        cfg.position_limit());
  if (cfg.rope_scaling() == RopeScaling::kDynamic && seq < 0)
    kiln::detail::Throw("transformers::CausalLM: dynamic NTK rotary scaling needs a static sequence length");
  graph::Graph& g = ids.graph();
  graph::Node positions = graph::DynamicIota(g, DType::Int32, 0, {graph::DimensionSpecFor(ids, 1)});
  graph::Node inv_freq = graph::Const(g, internal::RopeInverseFrequencies(cfg, seq - 1));
  graph::Node hidden = internal::DecoderHidden(scope, cfg, ids, positions, inv_freq, nullptr);
  return internal::OutputLogits(scope, cfg, hidden);
}

train::ModelFn CausalLM(const Config& cfg) {
  cfg.Check();
  return [cfg](model::Scope scope, const std::any&,
               std::vector<graph::Node> inputs) -> std::vector<graph::Node> {
    if (inputs.empty()) kiln::detail::Throw("transformers::CausalLM: no inputs (expected the token ids)");
    return {CausalLMLogits(scope, cfg, inputs[0])};
  };
}

std::shared_ptr<data::InMemoryDataset> CausalLMDataset(compute::BackendPtr backend,
                                                       const std::vector<int32_t>& ids, int64_t window,
                                                       int64_t stride) {
  const char* fn = "transformers::CausalLMDataset";
  if (window <= 0) kiln::detail::Throw("{}: window {} must be positive", fn, window);
  if (stride == 0) stride = window;
  if (stride <= 0) kiln::detail::Throw("{}: stride {} must be positive", fn, stride);
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n < window + 1)
    kiln::detail::Throw("{}: {} tokens are too few for one window of {} (and its next token)", fn, n, window);
  const int64_t examples = (n - 1 - window) / stride + 1;
  std::vector<int32_t> in(static_cast<size_t>(examples * window)), out(in.size());
  for (int64_t k = 0; k < examples; ++k) {
    for (int64_t j = 0; j < window; ++j) {
      in[static_cast<size_t>(k * window + j)] = ids[static_cast<size_t>(k * stride + j)];
      out[static_cast<size_t>(k * window + j)] = ids[static_cast<size_t>(k * stride + j + 1)];
    }
  }
  return data::InMemoryFromData(std::move(backend), "causal lm windows",
                                {Tensor::FromFlat(Shape(DType::Int32, {examples, window}), in)},
                                {Tensor::FromFlat(Shape(DType::Int32, {examples, window}), out)});
}

}  // namespace kiln::transformers
