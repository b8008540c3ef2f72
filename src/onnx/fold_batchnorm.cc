// Import-time fusion of an inference BatchNormalization into the Conv it follows (what ONNX
// Runtime's ConvBNFusion does): with s = scale / sqrt(var + eps), BN(W*x + B) is
// (W*s)*x + ((B - mean)*s + bias), one convolution with a bias and no per-element pass after it.
// Only known values fold: a model imported with its weights as variables (CallGraph with a
// scope, for fine-tuning) keeps both nodes, so the variables stay the model's initializers.

#include <fmt/format.h>

#include <cmath>

#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

/// The values of float tensor `t` as doubles; nothing for other dtypes.
std::optional<std::vector<double>> Doubles(const Tensor& t) {
  std::vector<double> out;
  if (t.dtype() == DType::Float32) {
    t.ConstFlatData<float>([&](std::span<const float> xs) { out.assign(xs.begin(), xs.end()); });
  } else if (t.dtype() == DType::Float64) {
    t.ConstFlatData<double>([&](std::span<const double> xs) { out.assign(xs.begin(), xs.end()); });
  } else {
    return std::nullopt;
  }
  return out;
}

/// `values` as a tensor of `shape` (Float32 or Float64).
Tensor FromDoubles(const Shape& shape, const std::vector<double>& values) {
  if (shape.dtype() == DType::Float64) return Tensor::FromFlat(shape, values);
  std::vector<float> f(values.begin(), values.end());
  return Tensor::FromFlat(shape, f);
}

/// The integer attribute `name` of `node`, or `fallback`.
int64_t IntAttr(const ::onnx::NodeProto& node, const char* name, int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

float FloatAttr(const ::onnx::NodeProto& node, const char* name, float fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.f();
  return fallback;
}

bool IsDefault(const ::onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

}  // namespace

std::map<std::string, int> CountReaders(const ::onnx::GraphProto& graph) {
  std::map<std::string, int> readers;
  for (const auto& node : graph.node()) {
    for (const std::string& name : node.input())
      if (!name.empty()) ++readers[name];
    // A subgraph reading a value counts as a reader too (it may read it many times).
    for (const auto& a : node.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) OuterNames(a.g(), inner);
      for (const auto& sub : a.graphs()) OuterNames(sub, inner);
      for (const std::string& name : inner) ++readers[name];
    }
  }
  for (const auto& o : graph.output()) ++readers[o.name()];
  return readers;
}

std::optional<FoldedConv> FoldBatchNormIntoConv(const ::onnx::GraphProto& graph, int i,
                                                const std::map<std::string, int>& readers, ValueScope& scope,
                                                int64_t opset) {
  const ::onnx::NodeProto& conv = graph.node(i);
  if (conv.op_type() != "Conv" || !IsDefault(conv) || conv.output_size() != 1 || conv.input_size() < 2)
    return std::nullopt;
  const std::string& y = conv.output(0);
  auto r = readers.find(y);
  if (y.empty() || r == readers.end() || r->second != 1) return std::nullopt;
  // The one reader: the first node after the Conv that takes y.
  int j = -1;
  for (int k = i + 1; k < graph.node_size() && j < 0; ++k)
    for (const std::string& name : graph.node(k).input())
      if (name == y) j = k;
  if (j < 0) return std::nullopt;
  const ::onnx::NodeProto& bn = graph.node(j);
  if (bn.op_type() != "BatchNormalization" || !IsDefault(bn) || bn.input_size() != 5 || bn.input(0) != y)
    return std::nullopt;
  // Inference only: one output, no training mode, per-channel statistics.
  for (int k = 1; k < bn.output_size(); ++k)
    if (!bn.output(k).empty()) return std::nullopt;
  if (bn.output_size() < 1 || bn.output(0).empty()) return std::nullopt;
  if (opset >= 14 && IntAttr(bn, "training_mode", 0) != 0) return std::nullopt;
  if (opset < 9 && IntAttr(bn, "spatial", 1) == 0) return std::nullopt;
  if (opset < 7 && IntAttr(bn, "is_test", 0) == 0) return std::nullopt;
  auto known = [&](const std::string& name) -> std::optional<Tensor> {
    if (name.empty()) return std::nullopt;
    return scope.Known(name);
  };
  const std::optional<Tensor> w = known(conv.input(1));
  if (!w || w->shape().Rank() < 3) return std::nullopt;
  const int64_t oc = w->shape().Dimensions()[0];
  std::optional<Tensor> b;
  if (conv.input_size() > 2 && !conv.input(2).empty()) {
    b = known(conv.input(2));
    if (!b) return std::nullopt;
  }
  // The kernel, the bias and the statistics: floats of one dtype, [OC] each.
  std::vector<std::vector<double>> p;
  for (int k = 1; k <= 4; ++k) {
    std::optional<Tensor> t = known(bn.input(k));
    if (!t || t->dtype() != w->dtype() || t->shape().Rank() != 1 || t->shape().Dimensions()[0] != oc)
      return std::nullopt;
    std::optional<std::vector<double>> v = Doubles(*t);
    if (!v) return std::nullopt;
    p.push_back(std::move(*v));
  }
  std::optional<std::vector<double>> wv = Doubles(*w);
  if (!wv) return std::nullopt;
  std::vector<double> bias(static_cast<size_t>(oc), 0.0);
  if (b) {
    if (b->dtype() != w->dtype() || b->shape().Rank() != 1 || b->shape().Dimensions()[0] != oc)
      return std::nullopt;
    bias = *Doubles(*b);
  }
  const double eps = FloatAttr(bn, "epsilon", 1e-5f);
  const std::vector<double>&scale = p[0], &beta = p[1], &mean = p[2], &var = p[3];
  const size_t per_oc = wv->size() / static_cast<size_t>(oc);
  for (size_t o = 0; o < static_cast<size_t>(oc); ++o) {
    const double s = scale[o] / std::sqrt(var[o] + eps);
    for (size_t k = 0; k < per_oc; ++k) (*wv)[o * per_oc + k] *= s;
    bias[o] = (bias[o] - mean[o]) * s + beta[o];
  }
  // The fused node reads new constants under names no model value can take (ONNX names do not
  // hold a NUL).
  FoldedConv f;
  f.skip = j;
  f.node = conv;
  const std::string base = bn.output(0) + std::string(1, '\0') + "folded ";
  f.node.clear_input();
  f.node.add_input(conv.input(0));
  f.node.add_input(base + "W");
  f.node.add_input(base + "B");
  f.node.set_output(0, bn.output(0));
  scope.BindConstant(base + "W", FromDoubles(w->shape(), *wv));
  scope.BindConstant(base + "B", FromDoubles(Shape(w->dtype(), {oc}), bias));
  return f;
}

}  // namespace kiln::onnx::internal
