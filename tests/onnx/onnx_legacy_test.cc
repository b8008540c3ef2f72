// Models of opset 6 and earlier, built here with ONNX's own schema (libonnx_proto): the attributes
// later opsets dropped (`broadcast`/`axis` on binary ops, BatchNormalization's `spatial`,
// `is_test`, `consumed_inputs`) mean what they meant, the inputs a model declares are checked
// at Call, and hostile attributes are refused with errors naming them.

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/onnx/onnx.h"
#include "test_util.h"

namespace kiln::onnx {
namespace {

using kiln::test::Throws;

struct Input {
  std::string name;
  std::vector<int64_t> dims;
};

/// A one-node float32 model of `opset`: node(op, inputs, attributes) -> "y".
::onnx::ModelProto OneNode(int64_t opset, const std::string& op, const std::vector<Input>& inputs) {
  ::onnx::ModelProto m;
  m.set_ir_version(3);
  m.add_opset_import()->set_version(opset);
  ::onnx::GraphProto* g = m.mutable_graph();
  g->set_name("legacy");
  ::onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->add_output("y");
  for (const Input& in : inputs) {
    n->add_input(in.name);
    ::onnx::ValueInfoProto* v = g->add_input();
    v->set_name(in.name);
    ::onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : in.dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  g->add_output()->set_name("y");
  return m;
}

void SetInt(::onnx::ModelProto& m, const std::string& name, int64_t value) {
  ::onnx::AttributeProto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}

Model Read(const ::onnx::ModelProto& m) { return ReadBytes(m.SerializeAsString(), "legacy.onnx"); }

std::vector<double> RunModel(const Model& m, const std::vector<Tensor>& inputs) {
  graph::Exec exec(
      compute::New(), [&m](graph::Graph& g, const std::vector<graph::Node>& p) { return m.CallGraph(g, p); },
      static_cast<int>(inputs.size()), "legacy");
  return exec.Call(inputs)[0].ToDoubles();
}

Tensor Iota(const std::vector<int64_t>& dims) {
  std::vector<float> v(static_cast<size_t>(Shape(DType::Float32, dims).Size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::FromFlat(Shape(DType::Float32, dims), v);
}

TEST(OnnxLegacy, BroadcastAndAxisPlaceTheSecondOperand) {
  // Opset 6 Add with broadcast 1 and axis 1: B [3] runs along A's axis 1 of [2, 3, 2].
  ::onnx::ModelProto add = OneNode(6, "Add", {{"a", {2, 3, 2}}, {"b", {3}}});
  SetInt(add, "broadcast", 1);
  SetInt(add, "axis", 1);
  SetInt(add, "consumed_inputs", 0);  // Opset 5's memory hint: ignored.
  const std::vector<double> y =
      RunModel(Read(add), {Iota({2, 3, 2}), Tensor::FromValue(std::vector<float>{100, 200, 300})});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) want.push_back((i * 3 + j) * 2 + k + 100.0 * (j + 1));
  EXPECT_EQ(y, want);
  // Without axis, B aligns with A's trailing axes (Mul of [2, 3] by [3]).
  ::onnx::ModelProto mul = OneNode(6, "Mul", {{"a", {2, 3}}, {"b", {3}}});
  SetInt(mul, "broadcast", 1);
  EXPECT_EQ(RunModel(Read(mul), {Iota({2, 3}), Tensor::FromValue(std::vector<float>{1, 10, 100})}),
            (std::vector<double>{0, 10, 200, 3, 40, 500}));
  // Broadcast 0 (the default): the shapes must be equal, and the error says why.
  const Model strict = Read(OneNode(6, "Sub", {{"a", {2, 3}}, {"b", {3}}}));
  EXPECT_TRUE(Throws(
      [&] {
        RunModel(strict, {Iota({2, 3}), Iota({3})});
      },
      {"Sub", "broadcast is 0", "opset 6"}));
  // From opset 7 on, NumPy's broadcasting without attributes.
  EXPECT_EQ(RunModel(Read(OneNode(7, "Sub", {{"a", {2, 3}}, {"b", {3}}})), {Iota({2, 3}), Iota({3})}),
            (std::vector<double>{0, 0, 0, 3, 3, 3}));
}

TEST(OnnxLegacy, BatchNormalizationSpatialZeroNormalizesEachElement) {
  ::onnx::ModelProto bn =
      OneNode(6, "BatchNormalization",
              {{"x", {1, 2, 2}}, {"scale", {2, 2}}, {"bias", {2, 2}}, {"mean", {2, 2}}, {"var", {2, 2}}});
  SetInt(bn, "spatial", 0);
  SetInt(bn, "is_test", 1);
  ::onnx::AttributeProto* eps = bn.mutable_graph()->mutable_node(0)->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(::onnx::AttributeProto::FLOAT);
  eps->set_f(0);
  const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {1, 2, 2}), std::vector<float>{1, 2, 3, 4});
  const Tensor scale = Tensor::FromFlat(Shape(DType::Float32, {2, 2}), std::vector<float>{1, 2, 3, 4});
  const Tensor bias = Tensor::FromFlat(Shape(DType::Float32, {2, 2}), std::vector<float>{0, 0, 0, 10});
  const Tensor mean = Tensor::FromFlat(Shape(DType::Float32, {2, 2}), std::vector<float>{1, 0, 1, 0});
  const Tensor var = Tensor::FromFlat(Shape(DType::Float32, {2, 2}), std::vector<float>{1, 4, 4, 16});
  // (x - mean) / sqrt(var) * scale + bias, element by element.
  EXPECT_EQ(RunModel(Read(bn), {x, scale, bias, mean, var}), (std::vector<double>{0, 2, 3, 14}));
}

TEST(OnnxLegacy, DeclaredInputSizesAreCheckedAtCall) {
  const Model add = Read(OneNode(7, "Add", {{"a", {2, 3}}, {"b", {2, 3}}}));
  EXPECT_TRUE(Throws(
      [&] {
        RunModel(add, {Iota({2, 4}), Iota({2, 4})});
      },
      {"input \"a\"", "[2, 3]", "axis 1 differs"}));
}

void SetInts(::onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& values) {
  ::onnx::AttributeProto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

TEST(OnnxHostile, BadWindowAttributesAreErrorsNamingThem) {
  // Stride 0, a dilation list of the wrong length, a kernel longer than the spatial axes: each
  // refused when the graph is built, before any division or out-of-range read.
  ::onnx::ModelProto zero = OneNode(12, "MaxPool", {{"x", {1, 1, 4, 4}}});
  SetInts(zero, "kernel_shape", {2, 2});
  SetInts(zero, "strides", {0, 0});
  SetInt(zero, "ceil_mode", 1);
  EXPECT_TRUE(Throws([&] { RunModel(Read(zero), {Iota({1, 1, 4, 4})}); }, {"MaxPool", "stride 0"}));
  ::onnx::ModelProto dil = OneNode(12, "MaxPool", {{"x", {1, 1, 4, 4}}});
  SetInts(dil, "kernel_shape", {2, 2});
  SetInts(dil, "dilations", {2});
  EXPECT_TRUE(Throws([&] { RunModel(Read(dil), {Iota({1, 1, 4, 4})}); }, {"MaxPool", "dilation"}));
  ::onnx::ModelProto conv = OneNode(11, "Conv", {{"x", {1, 1, 4, 4}}, {"w", {1, 1, 2, 2}}});
  SetInts(conv, "kernel_shape", {2, 2, 2});
  EXPECT_TRUE(Throws(
      [&] {
        RunModel(Read(conv), {Iota({1, 1, 4, 4}), Iota({1, 1, 2, 2})});
      },
      {"Conv", "per spatial axis"}));
}

}  // namespace
}  // namespace kiln::onnx
