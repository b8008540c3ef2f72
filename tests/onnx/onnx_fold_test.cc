// Import-time fusions: a BatchNormalization, and Mul and Add by known scalars or per-channel
// values, after a Conv fold into the Conv's kernel and bias when all are known (the graph then
// has no normalisation or product left), and stay nodes of their own when the Conv's output has
// another reader or the weights are variables (fine-tuning).

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/onnx/onnx.h"

namespace kiln::onnx {
namespace {

constexpr int64_t kBatch = 2, kIn = 3, kOut = 4, kSize = 5;  // x [2, 3, 5, 5], kernel 3x3, pad 1.

struct Weights {
  std::vector<float> w, b, scale, beta, mean, var;
};

Weights MakeWeights() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  Weights p;
  p.w.resize(static_cast<size_t>(kOut * kIn * 9));
  for (float& v : p.w) v = u(rng);
  for (auto* v : {&p.b, &p.scale, &p.beta, &p.mean, &p.var}) v->resize(kOut);
  for (size_t o = 0; o < kOut; ++o) {
    p.b[o] = u(rng);
    p.scale[o] = 1.5f + u(rng);
    p.beta[o] = u(rng);
    p.mean[o] = u(rng);
    p.var[o] = 0.5f + 0.4f * u(rng);
  }
  return p;
}

void AddInitializer(::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<float>& values) {
  ::onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

void AddOutput(::onnx::GraphProto* g, const std::string& name) { g->add_output()->set_name(name); }

/// An opset-17 model whose graph `name` has the float input "x" of `dims`.
::onnx::ModelProto ModelWithInput(const std::string& name, const std::vector<int64_t>& dims) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  ::onnx::GraphProto* g = m.mutable_graph();
  g->set_name(name);
  ::onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  ::onnx::TypeProto_Tensor* t = x->mutable_type()->mutable_tensor_type();
  t->set_elem_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  return m;
}

/// x -> Conv(W, B, pads 1) -> "c" -> BatchNormalization -> "y"; with `conv_also_output`, "c" is
/// a graph output too (a second reader).
::onnx::ModelProto ConvBn(const Weights& p, bool conv_also_output) {
  ::onnx::ModelProto m = ModelWithInput("conv_bn", {kBatch, kIn, kSize, kSize});
  ::onnx::GraphProto* g = m.mutable_graph();
  AddInitializer(g, "W", {kOut, kIn, 3, 3}, p.w);
  AddInitializer(g, "B", {kOut}, p.b);
  AddInitializer(g, "scale", {kOut}, p.scale);
  AddInitializer(g, "beta", {kOut}, p.beta);
  AddInitializer(g, "mean", {kOut}, p.mean);
  AddInitializer(g, "var", {kOut}, p.var);
  ::onnx::NodeProto* conv = g->add_node();
  conv->set_op_type("Conv");
  conv->set_name("conv");
  for (const char* in : {"x", "W", "B"}) conv->add_input(in);
  conv->add_output("c");
  ::onnx::AttributeProto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(::onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  ::onnx::NodeProto* bn = g->add_node();
  bn->set_op_type("BatchNormalization");
  for (const char* in : {"c", "scale", "beta", "mean", "var"}) bn->add_input(in);
  bn->add_output("y");
  AddOutput(g, "y");
  if (conv_also_output) AddOutput(g, "c");
  return m;
}

Tensor Input() {
  std::vector<float> v(static_cast<size_t>(kBatch * kIn * kSize * kSize));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i));
  return Tensor::FromFlat(Shape(DType::Float32, {kBatch, kIn, kSize, kSize}), v);
}

/// The convolution and the normalisation after it, in double, as ONNX defines them.
std::vector<double> Reference(const Weights& p, const Tensor& x) {
  const std::vector<double> xv = x.ToDoubles();
  std::vector<double> y;
  for (int64_t n = 0; n < kBatch; ++n)
    for (int64_t o = 0; o < kOut; ++o)
      for (int64_t i = 0; i < kSize; ++i)
        for (int64_t j = 0; j < kSize; ++j) {
          double acc = p.b[static_cast<size_t>(o)];
          for (int64_t c = 0; c < kIn; ++c)
            for (int64_t di = 0; di < 3; ++di)
              for (int64_t dj = 0; dj < 3; ++dj) {
                const int64_t a = i + di - 1, b = j + dj - 1;
                if (a < 0 || b < 0 || a >= kSize || b >= kSize) continue;
                acc += p.w[static_cast<size_t>(((o * kIn + c) * 3 + di) * 3 + dj)] *
                       xv[static_cast<size_t>(((n * kIn + c) * kSize + a) * kSize + b)];
              }
          const size_t k = static_cast<size_t>(o);
          y.push_back((acc - p.mean[k]) / std::sqrt(p.var[k] + 1e-5) * p.scale[k] + p.beta[k]);
        }
  return y;
}

/// Builds `m` into a graph and counts its instructions of `op`; runs it on `x`.
std::vector<Tensor> RunCounting(const Model& m, const Tensor& x, compute::OpType op, int* count) {
  graph::Exec exec(
      compute::New(),
      [&](graph::Graph& g, const std::vector<graph::Node>& in) {
        std::vector<graph::Node> out = m.CallGraph(g, in);
        *count = 0;
        for (int id = 0; id < g.NumNodes(); ++id) *count += g.instruction(id).op == op ? 1 : 0;
        return out;
      },
      1, "conv_bn");
  return exec.Call({x});
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 + 1e-5 * std::abs(want[i])) << i;
}

TEST(OnnxFold, BatchNormalizationAfterConvFoldsIntoItsKernel) {
  const Weights p = MakeWeights();
  const Model m = ReadBytes(ConvBn(p, false).SerializeAsString(), "conv_bn.onnx");
  const Tensor x = Input();
  int rsqrt = -1;
  const std::vector<Tensor> y = RunCounting(m, x, compute::OpType::Rsqrt, &rsqrt);
  EXPECT_EQ(rsqrt, 0) << "the normalisation should have folded into the convolution";
  ExpectNear(y[0].ToDoubles(), Reference(p, x));
}

TEST(OnnxFold, ConvOutputReadTwiceKeepsTheNormalization) {
  const Weights p = MakeWeights();
  const Model m = ReadBytes(ConvBn(p, true).SerializeAsString(), "conv_bn.onnx");
  const Tensor x = Input();
  int rsqrt = -1;
  const std::vector<Tensor> y = RunCounting(m, x, compute::OpType::Rsqrt, &rsqrt);
  EXPECT_EQ(rsqrt, 1);
  ASSERT_EQ(y.size(), 2u);
  ExpectNear(y[0].ToDoubles(), Reference(p, x));
  // The convolution's own output, before the normalisation: undo it in double.
  const std::vector<double> c = y[1].ToDoubles(), r = Reference(p, x);
  for (size_t i = 0; i < c.size(); ++i) {
    const size_t k = (i / (kSize * kSize)) % kOut;
    const double s = p.scale[k] / std::sqrt(p.var[k] + 1e-5);
    EXPECT_NEAR(c[i], (r[i] - p.beta[k]) / s + p.mean[k], 1e-4) << i;
  }
}

TEST(OnnxFold, ScalarAndPerChannelMulAndAddFoldIntoTheConv) {
  // conv -> BatchNormalization -> Mul by 1.75 -> Add of a [1, C, 1, 1] shift: one convolution.
  const Weights p = MakeWeights();
  ::onnx::ModelProto m = ConvBn(p, false);
  ::onnx::GraphProto* g = m.mutable_graph();
  g->mutable_node(1)->set_output(0, "bn");
  AddInitializer(g, "k", {}, {1.75f});
  AddInitializer(g, "shift", {1, kOut, 1, 1}, {0.5f, -0.25f, 1.0f, 2.0f});
  ::onnx::NodeProto* mul = g->add_node();
  mul->set_op_type("Mul");
  mul->add_input("k");  // The constant first: either order folds.
  mul->add_input("bn");
  mul->add_output("scaled");
  ::onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("scaled");
  add->add_input("shift");
  add->add_output("y");
  const Model model = ReadBytes(m.SerializeAsString(), "conv_bn.onnx");
  const Tensor x = Input();
  int muls = -1;
  const std::vector<Tensor> y = RunCounting(model, x, compute::OpType::Mul, &muls);
  EXPECT_EQ(muls, 0) << "the scale should have folded into the convolution";
  std::vector<double> want = Reference(p, x);
  const std::vector<double> shift = {0.5, -0.25, 1.0, 2.0};
  for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * 1.75 + shift[(i / (kSize * kSize)) % kOut];
  ExpectNear(y[0].ToDoubles(), want);
}

TEST(OnnxFold, AddThatBroadcastsTheConvOutputStaysANode) {
  // An Add of a [kSize] vector varies along the width, not per channel: it does not fold.
  const Weights p = MakeWeights();
  ::onnx::ModelProto m = ConvBn(p, false);
  ::onnx::GraphProto* g = m.mutable_graph();
  g->mutable_node(1)->set_output(0, "bn");
  AddInitializer(g, "row", {kSize}, {1, 2, 3, 4, 5});
  ::onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("bn");
  add->add_input("row");
  add->add_output("y");
  const Model model = ReadBytes(m.SerializeAsString(), "conv_bn.onnx");
  const Tensor x = Input();
  int rsqrt = -1;
  const std::vector<Tensor> y = RunCounting(model, x, compute::OpType::Rsqrt, &rsqrt);
  EXPECT_EQ(rsqrt, 0);  // The normalisation before it still folds.
  std::vector<double> want = Reference(p, x);
  for (size_t i = 0; i < want.size(); ++i) want[i] += static_cast<double>(i % kSize + 1);
  ExpectNear(y[0].ToDoubles(), want);
}

TEST(OnnxFold, PowByTwoImportsAsAProduct) {
  // Pow(x, 2), as exporters write a LayerNorm's variance: x * x (no Pow left), the same values.
  ::onnx::ModelProto m = ModelWithInput("pow", {5});
  ::onnx::GraphProto* g = m.mutable_graph();
  AddInitializer(g, "two", {}, {2.0f});
  ::onnx::NodeProto* pow = g->add_node();
  pow->set_op_type("Pow");
  pow->add_input("x");
  pow->add_input("two");
  pow->add_output("y");
  AddOutput(g, "y");
  const Model model = ReadBytes(m.SerializeAsString(), "pow.onnx");
  const std::vector<float> v = {-3.0f, -0.5f, 0.0f, 1.5f, 1e20f};
  int pows = -1;
  const std::vector<Tensor> y =
      RunCounting(model, Tensor::FromFlat(Shape(DType::Float32, {5}), v), compute::OpType::Pow, &pows);
  EXPECT_EQ(pows, 0);
  const std::vector<double> got = y[0].ToDoubles();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(got[i], static_cast<double>(v[i] * v[i])) << v[i];
}

TEST(OnnxFold, WeightsAsVariablesStayUnfolded) {
  // Fine-tuning trains the initializers: the kernel and the statistics stay variables of their own.
  const Weights p = MakeWeights();
  const Model m = ReadBytes(ConvBn(p, false).SerializeAsString(), "conv_bn.onnx");
  model::Store store;
  m.VariablesToStore(store.RootScope().In("onnx"));
  int rsqrt = 0;
  model::Exec exec =
      model::NewExec(compute::New(), store, [&](model::Scope scope, const std::vector<graph::Node>& in) {
        std::vector<graph::Node> out = m.CallGraph(scope.In("onnx"), in);
        graph::Graph& g = in[0].graph();
        for (int id = 0; id < g.NumNodes(); ++id) rsqrt += g.instruction(id).op == compute::OpType::Rsqrt;
        return out;
      });
  const Tensor x = Input();
  ExpectNear(exec.Call(x)[0].ToDoubles(), Reference(p, x));
  EXPECT_EQ(rsqrt, 1);
}

}  // namespace
}  // namespace kiln::onnx
