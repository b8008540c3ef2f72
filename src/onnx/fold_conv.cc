// Import-time fusion of what follows a Conv into its kernel and bias (what ONNX Runtime's
// ConvBNFusion, ConvMulFusion and ConvAddFusion do): an inference BatchNormalization (with
// s = scale / sqrt(var + eps), BN(W*x + B) is (W*s)*x + ((B - mean)*s + bias)), and Mul and Add
// by known scalars or per-channel values, each the only reader of the value before it: one
// convolution with a bias and no per-element pass after it.
// Only known values fold: a model imported with its weights as variables (CallGraph with a
// scope, for fine-tuning) keeps both nodes, so the variables stay the model's initializers.

#include <fmt/format.h>

#include <cmath>

#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

/// The values of float tensor `t` as doubles; nothing for other dtypes.
std::optional<std::vector<double>> Doubles(const Tensor& t) {
  if (t.dtype() != DType::Float32 && t.dtype() != DType::Float64) return std::nullopt;
  return t.ToDoubles();
}

/// `values` as a tensor of `shape` (Float32 or Float64).
Tensor FromDoubles(const Shape& shape, const std::vector<double>& values) {
  if (shape.dtype() == DType::Float64) return Tensor::FromFlat(shape, values);
  std::vector<float> f(values.begin(), values.end());
  return Tensor::FromFlat(shape, f);
}

/// The integer attribute `name` of `node`, or `fallback`.
int64_t IntAttr(const ::onnx::NodeProto& node, const char* name, int64_t fallback) {
  const ::onnx::AttributeProto* a = FindAttribute(node, name);
  return a == nullptr ? fallback : a->i();
}

float FloatAttr(const ::onnx::NodeProto& node, const char* name, float fallback) {
  const ::onnx::AttributeProto* a = FindAttribute(node, name);
  return a == nullptr ? fallback : a->f();
}

}  // namespace

std::map<std::string, Readers> CountReaders(const ::onnx::GraphProto& graph) {
  std::map<std::string, Readers> readers;
  for (int i = 0; i < graph.node_size(); ++i) {
    const ::onnx::NodeProto& node = graph.node(i);
    for (const std::string& name : node.input()) {
      if (name.empty()) continue;
      Readers& r = readers[name];
      if (r.count++ == 0) r.first = i;
    }
    // A subgraph reading a value counts as a reader too (it may read it many times).
    for (const auto& a : node.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) OuterNames(a.g(), inner);
      for (const auto& sub : a.graphs()) OuterNames(sub, inner);
      for (const std::string& name : inner) ++readers[name].count;
    }
  }
  for (const auto& o : graph.output()) ++readers[o.name()].count;
  return readers;
}

namespace {

/// The per-output-channel values of a known tensor `t` that multiplies or shifts a Conv's result
/// [N, OC, spatial...] of rank `rank`: a scalar, or one value per channel laid out along axis 1
/// (after NumPy broadcasting); nothing otherwise.
std::optional<std::vector<double>> PerChannel(const Tensor& t, DType dtype, int64_t oc, int64_t rank) {
  if (t.dtype() != dtype || t.shape().Rank() > rank) return std::nullopt;
  std::optional<std::vector<double>> v = Doubles(t);
  if (!v) return std::nullopt;
  if (v->size() == 1) return std::vector<double>(static_cast<size_t>(oc), (*v)[0]);
  // Aligned to the right: the channel axis is axis 1 of the result.
  const std::vector<int64_t>& d = t.shape().Dimensions();
  const int64_t offset = rank - static_cast<int64_t>(d.size());
  for (int64_t a = 0; a < static_cast<int64_t>(d.size()); ++a)
    if (d[static_cast<size_t>(a)] != (a + offset == 1 ? oc : 1)) return std::nullopt;
  if (offset > 1) return std::nullopt;
  return v;
}

}  // namespace

std::optional<FoldedConv> FoldIntoConv(const ::onnx::GraphProto& graph, int i,
                                       const std::map<std::string, Readers>& readers, ValueScope& scope,
                                       int64_t opset) {
  const ::onnx::NodeProto& conv = graph.node(i);
  if (conv.op_type() != "Conv" || !IsDefaultDomain(conv.domain()) || conv.output_size() != 1 ||
      conv.input_size() < 2)
    return std::nullopt;
  auto known = [&](const std::string& name) -> std::optional<Tensor> {
    if (name.empty()) return std::nullopt;
    return scope.Known(name);
  };
  const std::optional<Tensor> w = known(conv.input(1));
  if (!w || w->shape().Rank() < 3) return std::nullopt;
  const int64_t oc = w->shape().Dimensions()[0], rank = w->shape().Rank();
  std::optional<std::vector<double>> wv = Doubles(*w);
  if (!wv) return std::nullopt;
  std::vector<double> bias(static_cast<size_t>(oc), 0.0);
  if (conv.input_size() > 2 && !conv.input(2).empty()) {
    const std::optional<Tensor> b = known(conv.input(2));
    if (!b || b->dtype() != w->dtype() || b->shape().Rank() != 1 || b->shape().Dimensions()[0] != oc)
      return std::nullopt;
    bias = *Doubles(*b);
  }
  // The result is s * (W*x) + t per channel: s scales the kernel, t is the new bias.
  std::vector<double> scale(static_cast<size_t>(oc), 1.0), shift = bias;
  FoldedConv f;
  std::string y = conv.output(0);
  for (int last = i;;) {
    auto r = readers.find(y);
    // The one reader, a later node of this graph (not a subgraph, not an output; a malformed
    // graph's node reading what it writes ends the chain).
    if (y.empty() || r == readers.end() || r->second.count != 1 || r->second.first <= last) break;
    const int j = last = r->second.first;
    const ::onnx::NodeProto& next = graph.node(j);
    if (!IsDefaultDomain(next.domain()) || next.output_size() < 1 || next.output(0).empty()) break;
    if (next.op_type() == "BatchNormalization") {
      // Inference only: one output, no training mode, per-channel statistics.
      bool extra_outputs = false;
      for (int o = 1; o < next.output_size(); ++o) extra_outputs = extra_outputs || !next.output(o).empty();
      if (extra_outputs || next.input_size() != 5 || next.input(0) != y) break;
      if (opset >= 14 && IntAttr(next, "training_mode", 0) != 0) break;
      if (opset < 9 && IntAttr(next, "spatial", 1) == 0) break;
      if (opset < 7 && IntAttr(next, "is_test", 0) == 0) break;
      std::vector<std::vector<double>> p;
      for (int in = 1; in <= 4; ++in) {
        std::optional<Tensor> t = known(next.input(in));
        if (!t || t->dtype() != w->dtype() || t->shape().Rank() != 1 || t->shape().Dimensions()[0] != oc)
          break;
        p.push_back(*Doubles(*t));
      }
      if (p.size() != 4) break;
      const double eps = FloatAttr(next, "epsilon", 1e-5f);
      for (size_t o = 0; o < static_cast<size_t>(oc); ++o) {
        const double s = p[0][o] / std::sqrt(p[3][o] + eps);
        scale[o] *= s;
        shift[o] = (shift[o] - p[2][o]) * s + p[1][o];
      }
    } else if ((next.op_type() == "Mul" || next.op_type() == "Add") && next.input_size() == 2 &&
               next.output_size() == 1 && opset >= 7) {
      const int other = next.input(0) == y ? 1 : 0;
      if (next.input(1 - other) != y || next.input(other) == y) break;
      const std::optional<Tensor> c = known(next.input(other));
      if (!c) break;
      const std::optional<std::vector<double>> v = PerChannel(*c, w->dtype(), oc, rank);
      if (!v) break;
      for (size_t o = 0; o < static_cast<size_t>(oc); ++o) {
        if (next.op_type() == "Mul") {
          scale[o] *= (*v)[o];
          shift[o] *= (*v)[o];
        } else {
          shift[o] += (*v)[o];
        }
      }
    } else {
      break;
    }
    f.skip.push_back(j);
    y = next.output(0);
  }
  if (f.skip.empty()) return std::nullopt;
  const size_t per_oc = wv->size() / static_cast<size_t>(oc);
  for (size_t o = 0; o < static_cast<size_t>(oc); ++o)
    for (size_t k = 0; k < per_oc; ++k) (*wv)[o * per_oc + k] *= scale[o];
  // The fused node reads new constants under names no model value can take (ONNX names do not
  // hold a NUL).
  f.node = conv;
  const std::string base = y + std::string(1, '\0') + "folded ";
  f.node.clear_input();
  f.node.add_input(conv.input(0));
  f.node.add_input(base + "W");
  f.node.add_input(base + "B");
  f.node.set_output(0, y);
  scope.BindConstant(base + "W", FromDoubles(w->shape(), *wv));
  scope.BindConstant(base + "B", FromDoubles(Shape(w->dtype(), {oc}), shift));
  return f;
}

}  // namespace kiln::onnx::internal
