// Post-training quantization of a model::Store (quant::QuantizeStore) and the reading of its
// quantized variables by layers (quant::QuantizedVariableIn).

#include <vector>

#include "core/check.h"
#include "kiln/quant/quant.h"
#include "quant/float_values.h"

namespace kiln::quant {

namespace {

constexpr const char* kScheme = "quantization_scheme";
constexpr const char* kBlockSize = "quantization_block_size";
constexpr const char* kBlockAxis = "quantization_block_axis";

}  // namespace

StoreQuantization QuantizeStore(model::Store& store, Scheme scheme, int64_t block_size,
                                const std::function<bool(const model::Variable&)>& filter) {
  StoreQuantization out;
  for (const model::Variable& v : store.Variables()) {
    const std::string name = v.Name();
    if ((name != "weights" && name != "embeddings") || v.shape().Rank() != 2 || !IsFloat(v.dtype())) continue;
    if (filter && !filter(v)) continue;
    const bool table = name == "embeddings";
    const Tensor value = v.Value();
    Quantized q;
    try {
      if (table && IsGGML(scheme)) {
        q = Quantize(float_values::TransposedF32(value), scheme, block_size, 0);  // One row of blocks per id.
      } else {
        q = Quantize(value, scheme, block_size, table ? 1 : 0);
      }
    } catch (const Error& e) {
      kiln::detail::Throw("quant::QuantizeStore: {}: {}", v.Path(), e.message());
    }
    const model::Scope scope(store, v.ScopePath());
    scope.VariableWithValue(name + "_quantized", q.weights).SetTrainable(false);
    if (q.scales.Ok()) scope.VariableWithValue(name + "_scales", q.scales).SetTrainable(false);
    if (q.zero_points.Ok()) scope.VariableWithValue(name + "_zero_points", q.zero_points).SetTrainable(false);
    store.SetParamValue(v.ScopePath(), kScheme, SchemeName(scheme));
    store.SetParamValue(v.ScopePath(), kBlockSize, q.block_size);
    store.SetParamValue(v.ScopePath(), kBlockAxis, static_cast<int64_t>(q.block_axis));
    out.paths.push_back(v.Path());
    out.bytes_before += v.shape().ByteSize();
    out.bytes_after += q.ByteSize();
    store.DeleteVariable(v.Path());
  }
  return out;
}

std::optional<std::pair<graph::Node, nn::Quantization>> QuantizedVariableIn(const model::Scope& scope,
                                                                            const std::string& name,
                                                                            graph::Graph& g) {
  const model::Variable w = scope.InspectVariable(name + "_quantized");
  if (!w.Ok()) return std::nullopt;
  const model::Store& store = scope.store();
  const auto scheme_param = store.GetParamAt(scope.Path(), kScheme);
  const auto size_param = store.GetParamAt(scope.Path(), kBlockSize);
  const auto axis_param = store.GetParamAt(scope.Path(), kBlockAxis);
  if (!scheme_param || !size_param || !axis_param || !std::holds_alternative<std::string>(*scheme_param) ||
      !std::holds_alternative<int64_t>(*size_param) || !std::holds_alternative<int64_t>(*axis_param))
    kiln::detail::Throw("{}: quantized weights without the hyperparameters {}, {} and {} at {}", w.Path(),
                        kScheme, kBlockSize, kBlockAxis, scope.Path());
  const Scheme scheme = SchemeFromName(std::get<std::string>(*scheme_param));
  nn::Quantization q;
  q.scheme = GraphScheme(scheme);
  q.block_size = std::get<int64_t>(*size_param);
  q.block_axis = static_cast<int>(std::get<int64_t>(*axis_param));
  if (IsGGML(scheme)) {
    q.ggml_type = GGMLTypeOf(scheme);
  } else {
    const model::Variable s = scope.InspectVariable(name + "_scales");
    if (!s.Ok()) kiln::detail::Throw("{}: quantized weights without \"{}_scales\"", w.Path(), name);
    q.scale = s.NodeValue(g);
    if (IsAsymmetric(scheme)) {
      const model::Variable z = scope.InspectVariable(name + "_zero_points");
      if (!z.Ok())
        kiln::detail::Throw("{}: {} weights without \"{}_zero_points\"", w.Path(), SchemeName(scheme), name);
      q.zero_point = z.NodeValue(g);
    }
  }
  return std::make_pair(w.NodeValue(g), q);
}

}  // namespace kiln::quant
