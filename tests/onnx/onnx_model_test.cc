// Reading ONNX models and tensors: metadata, TensorProto round trips, and the errors for bad
// input. The models are ONNX's own test cases (Debian's libonnx-testdata).

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/onnx/onnx.h"
#include "test_util.h"

namespace kiln::onnx {
namespace {

using kiln::test::Throws;
namespace fs = std::filesystem;

const std::string kNode = "/usr/share/libonnx-testdata/data/node/";

std::string ReadBytesOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(OnnxModel, ReadsTheGraphsSignature) {
  const Model m = ReadFile(kNode + "test_add/model.onnx");
  EXPECT_EQ(m.InputNames(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(m.OutputNames(), (std::vector<std::string>{"sum"}));
  ASSERT_EQ(m.InputShapes().size(), 2u);
  EXPECT_EQ(m.InputShapes()[0], Shape(DType::Float32, {3, 4, 5}));
  EXPECT_GE(m.Opset(), 7);
  EXPECT_TRUE(m.InitializerNames().empty());
  // Run it: x + y.
  const Tensor x = ReadTensorProto(kNode + "test_add/test_data_set_0/input_0.pb");
  const Tensor y = ReadTensorProto(kNode + "test_add/test_data_set_0/input_1.pb");
  const Tensor want = ReadTensorProto(kNode + "test_add/test_data_set_0/output_0.pb");
  kiln::test::ForEachBackend([&](const compute::BackendPtr& backend) {
    std::vector<Tensor> got = graph::ExecOnce(
        backend,
        [&m](graph::Node a, graph::Node b) {
          return m.CallGraph(a.graph(), {a, b});
        },
        x, y);
    EXPECT_EQ(got[0].ToDoubles(), want.ToDoubles()) << backend->Name();
  });
}

TEST(OnnxModel, TensorProtoRoundTrips) {
  kiln::test::TempDir dir;
  const std::vector<Tensor> tensors = {Tensor::FromValue(std::vector<std::vector<float>>{{1, -2}, {3.5f, 4}}),
                                       Tensor::FromValue(std::vector<int64_t>{-1, 1LL << 40}),
                                       Tensor::FromValue(std::vector<bool>{true, false, true}),
                                       Tensor::FromValue(std::vector<float16>{float16(0.5f)}),
                                       Tensor::FromValue(std::vector<std::complex<double>>{{1, -1}}),
                                       Tensor::FromScalar<uint8_t>(7)};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string path = dir / ("t" + std::to_string(i) + ".pb");
    WriteTensorProto(path, tensors[i], "t");
    const Tensor back = ReadTensorProto(path);
    EXPECT_EQ(back.shape(), tensors[i].shape());
    EXPECT_TRUE(back.Equal(tensors[i])) << back << " vs " << tensors[i];
  }
}

TEST(OnnxModel, BadInputIsAnErrorNamingWhatIsWrong) {
  kiln::test::TempDir dir;
  EXPECT_TRUE(Throws([] { ReadBytes("this is text, not a protobuf", "text.onnx"); },
                     {"text.onnx", "not an ONNX model"}));
  const std::string bytes = ReadBytesOf(kNode + "test_add/model.onnx");
  for (size_t cut : {bytes.size() / 2, bytes.size() - 1, size_t{3}}) {
    EXPECT_TRUE(Throws([&] { ReadBytes(bytes.substr(0, cut), "cut.onnx"); }, {"cut.onnx"})) << cut;
  }
  EXPECT_TRUE(Throws([] { ReadFile("/nonexistent-kiln-dir/m.onnx"); }, {"/nonexistent-kiln-dir/m.onnx"}));
  EXPECT_TRUE(Throws([] { ReadTensorProto("/nonexistent-kiln-dir/t.pb"); }, {"ReadTensorProto"}));
  // An operator kiln does not convert (test_add's node renamed: op_type is field 4, "\x22\x03Add"):
  // the error names the op type and the opset.
  std::string renamed = bytes;
  const size_t at =
      renamed.find(std::string("\x22\x03"
                               "Add"));
  ASSERT_NE(at, std::string::npos);
  renamed.replace(at + 2, 3, "Qzx");
  const Model unknown = ReadBytes(renamed, "renamed.onnx");
  graph::Graph g("unknown");
  std::vector<graph::Node> in;
  for (const Shape& s : unknown.InputShapes()) in.push_back(g.Parameter(s));
  EXPECT_TRUE(Throws([&] { unknown.CallGraph(g, in); }, {"Qzx", "opset 14", "not supported"}));
  // Wrong inputs at the call.
  const Model add = ReadFile(kNode + "test_add/model.onnx");
  graph::Graph g2("add");
  graph::Node x = g2.Parameter(Shape(DType::Int32, {3, 4, 5}));
  EXPECT_TRUE(Throws([&] { add.CallGraph(g2, {x}); }, {"got 1 inputs", "takes 2 (x, y)"}));
  EXPECT_TRUE(Throws([&] { add.CallGraph(g2, {x, x}); }, {"input \"x\"", "Float32"}));
}

TEST(OnnxModel, InputsAsConstantsFixTheSizesTheyCarry) {
  // Reshape(data, shape) with the shape a model input: unknown when the graph is built until
  // the input is fixed.
  const std::string dir = kNode + "test_reshape_reordered_all_dims/";
  const Model m = ReadFile(dir + "model.onnx");
  ASSERT_EQ(m.InputNames(), (std::vector<std::string>{"data", "shape"}));
  const Tensor data = ReadTensorProto(dir + "test_data_set_0/input_0.pb");
  const Tensor shape = ReadTensorProto(dir + "test_data_set_0/input_1.pb");
  const Tensor want = ReadTensorProto(dir + "test_data_set_0/output_0.pb");
  graph::Graph g("reshape");
  std::vector<graph::Node> in = {g.Parameter(m.InputShapes()[0]), g.Parameter(m.InputShapes()[1])};
  EXPECT_TRUE(Throws([&] { m.CallGraph(g, in); }, {"Reshape", "must be known when the model is imported"}));
  const Model fixed = m.WithInputsAsConstants({{"shape", shape}});
  EXPECT_EQ(fixed.InputNames(), std::vector<std::string>{"data"});
  EXPECT_EQ(m.InputNames().size(), 2u);  // The original is unchanged.
  const Tensor got = graph::ExecOnce(
      compute::New(), [&fixed](graph::Node x) { return fixed.CallGraph(x.graph(), {x}); }, data)[0];
  EXPECT_TRUE(got.Equal(want)) << got;
  EXPECT_TRUE(Throws(
      [&] {
        (void)m.WithInputsAsConstants({{"nope", shape}});
      },
      {"no input \"nope\"", "data, shape"}));
  EXPECT_TRUE(Throws([&] { (void)m.WithInputsAsConstants({{"shape", data}}); }, {"input \"shape\" must be"}));
}

TEST(OnnxModel, FineTunedWeightsAreWrittenBack) {
  // A PyTorch-exported Linear layer (its weight and bias are initializers).
  const std::string dir = "/usr/share/libonnx-testdata/data/pytorch-converted/test_Linear/";
  Model m = ReadFile(dir + "model.onnx");
  ASSERT_FALSE(m.InitializerNames().empty());
  const Tensor x = ReadTensorProto(dir + "test_data_set_0/input_0.pb");
  const Tensor want = ReadTensorProto(dir + "test_data_set_0/output_0.pb");
  model::Store store;
  m.VariablesToStore(store.RootScope().In("onnx"));
  EXPECT_EQ(store.Variables().size(), m.InitializerNames().size());
  // Through the variables, the model computes what it computed with constants.
  model::Exec exec =
      model::NewExec(compute::New(), store, [&m](model::Scope scope, const std::vector<graph::Node>& in) {
        return m.CallGraph(scope.In("onnx"), in);
      });
  const Tensor got = exec.Call(x)[0];
  const std::vector<double> g = got.ToDoubles(), w = want.ToDoubles();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5 + 1e-4 * std::abs(w[i])) << i;
  // Change the weights, write them back and read the file again: the new weights are there.
  for (const model::Variable& v : store.Variables()) {
    Tensor t = v.Value().Clone();
    t.MutableFlatData<float>([](std::span<float> f) {
      for (float& e : f) e += 1;
    });
    v.SetValue(t);
  }
  // The graph reads the variables: y = x·W' + b with every weight and bias up by one is the old
  // output plus the row's sum of x, plus one.
  {
    ASSERT_EQ(x.shape().Rank(), 2);
    const int64_t rows = x.shape().Dimensions()[0], in = x.shape().Dimensions()[1];
    const int64_t outs = want.shape().Size() / rows;
    const std::vector<double> xs = x.ToDoubles(), tuned = exec.Call(x)[0].ToDoubles();
    ASSERT_EQ(tuned.size(), w.size());
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < in; ++j) sum += xs[static_cast<size_t>(r * in + j)];
      for (int64_t o = 0; o < outs; ++o) {
        const size_t i = static_cast<size_t>(r * outs + o);
        EXPECT_NEAR(tuned[i], w[i] + sum + 1, 1e-4 + 1e-4 * std::abs(w[i] + sum + 1)) << i;
      }
    }
  }
  m.StoreToOnnx(store.RootScope().In("onnx"));
  kiln::test::TempDir tmp;
  m.Write(tmp / "tuned.onnx");
  const Model back = ReadFile(tmp / "tuned.onnx");
  for (const std::string& name : m.InitializerNames()) {
    const std::vector<double> a = back.Initializer(name).ToDoubles(),
                              b = ReadFile(dir + "model.onnx").Initializer(name).ToDoubles();
    ASSERT_EQ(a.size(), b.size()) << name;
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_FLOAT_EQ(static_cast<float>(a[i]), static_cast<float>(b[i] + 1)) << name;
  }
  model::Store empty;
  EXPECT_TRUE(Throws([&] { m.StoreToOnnx(empty.RootScope()); }, {"StoreToOnnx", "no variable"}));
}

TEST(OnnxExport, ARoundTripComputesWhatTheModelDoes) {
  // Dense -> Relu -> Dense with a dynamic batch axis, exported, read back and run at two sizes.
  const ExportFn mlp = [](model::Scope scope, const std::any&, std::vector<graph::Node> in) {
    graph::Node h = activations::Relu(layers::Dense(scope.In("hidden"), in[0], true, 5));
    return std::vector<graph::Node>{graph::Softmax(layers::Dense(scope.In("out"), h, true, 3)),
                                    graph::ReduceSum(h, {1})};
  };
  model::Store store;
  const compute::BackendPtr backend = compute::New();
  model::Exec exec = model::NewExec(
      backend, store,
      [&mlp](model::Scope scope, const std::vector<graph::Node>& in) { return mlp(scope, std::any(), in); });
  const Tensor x2 = Tensor::FromValue(std::vector<std::vector<float>>{{1, 2, 3, 4}, {-1, 0.5f, 2, 0}});
  const Tensor x3 =
      Tensor::FromValue(std::vector<std::vector<float>>{{0, 1, 0, 1}, {2, 2, 2, 2}, {-3, 1, 0, 5}});
  const std::vector<Tensor> want2 = exec.Call(x2), want3 = exec.Call(x3);
  kiln::test::TempDir dir;
  Export(store, mlp, {Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 4}, {"batch", ""})},
         dir / "mlp.onnx");
  const Model m = ReadFile(dir / "mlp.onnx");
  EXPECT_EQ(m.InputShapes()[0].ToString(), "(Float32)[batch, 4]");
  EXPECT_EQ(m.OutputNames(), (std::vector<std::string>{"output_0", "output_1"}));
  auto variables = [](const Model& model) {  // The initializers named by a variable's path.
    int n = 0;
    for (const std::string& name : model.InitializerNames())
      n += name.rfind("hidden/", 0) == 0 || name.rfind("out/", 0) == 0;
    return n;
  };
  EXPECT_EQ(variables(m), 4);  // Two weights, two biases.
  for (const auto& [x, want] : {std::pair{x2, want2}, std::pair{x3, want3}}) {
    const std::vector<Tensor> got = graph::ExecOnce(
        backend, [&m](graph::Node in) { return m.CallGraph(in.graph(), {in}); }, x);
    ASSERT_EQ(got.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      const std::vector<double> g = got[k].ToDoubles(), w = want[k].ToDoubles();
      ASSERT_EQ(g.size(), w.size());
      for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5) << k << " " << i;
    }
  }
  // A primitive the exporter does not write is an error naming it; the previous file stays.
  const ExportFn angle = [](model::Scope, const std::any&, std::vector<graph::Node> in) {
    return std::vector<graph::Node>{graph::Atan2(in[0], in[0])};
  };
  EXPECT_TRUE(Throws(
      [&] {
        Export(store, angle, {Shape(DType::Float32, {2, 4})}, dir / "mlp.onnx");
      },
      {"Atan2", "no ONNX equivalent"}));
  EXPECT_EQ(variables(ReadFile(dir / "mlp.onnx")), 4);
}

/// Exports `fn` (its variables from `store`) for `shapes` (default: the inputs' shapes), reads
/// the file back and runs both on `inputs`: the outputs agree to 1e-5. Returns the file's bytes.
std::string ExpectRoundTrip(const std::string& what, model::Store& store, const ExportFn& fn,
                            const std::vector<Tensor>& inputs, std::vector<Shape> shapes = {}) {
  SCOPED_TRACE(what);
  const compute::BackendPtr backend = compute::New();
  model::Exec exec = model::NewExec(
      backend, store,
      [&fn](model::Scope scope, const std::vector<graph::Node>& in) { return fn(scope, std::any(), in); });
  const std::vector<Tensor> want = exec.Call(inputs);
  if (shapes.empty())
    for (const Tensor& t : inputs) shapes.push_back(t.shape());
  kiln::test::TempDir dir;
  Export(store, fn, shapes, dir / "m.onnx");
  const Model m = ReadFile(dir / "m.onnx");
  graph::Exec back(
      backend, [&m](graph::Graph& g, const std::vector<graph::Node>& p) { return m.CallGraph(g, p); },
      static_cast<int>(inputs.size()), "exported");
  const std::vector<Tensor> got = back.Call(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
    EXPECT_EQ(got[k].shape(), want[k].shape()) << k;
    const std::vector<double> g = got[k].ToDoubles(), w = want[k].ToDoubles();
    if (g.size() != w.size()) continue;
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(w[i])) {
        EXPECT_TRUE(std::isnan(g[i])) << k << " " << i;
      } else if (std::isinf(w[i])) {
        EXPECT_EQ(g[i], w[i]) << k << " " << i;
      } else {
        EXPECT_NEAR(g[i], w[i], 1e-5) << k << " " << i;
      }
    }
  }
  return ReadBytesOf(dir / "m.onnx");
}

TEST(OnnxExport, ACnnRoundTrips) {
  // Channels-last conv -> relu -> max pool -> strided conv -> mean pool -> dense, with a dynamic
  // batch axis, and the predicted class; at two batch sizes.
  const ExportFn cnn = [](model::Scope scope, const std::any&, std::vector<graph::Node> in) {
    graph::Node h = layers::Convolution(scope.In("conv1"), in[0]).Filters(4).KernelSize(3).PadSame().Done();
    h = layers::MaxPool(activations::Relu(h)).Window(2).Done();
    h = layers::Convolution(scope.In("conv2"), h).Filters(6).KernelSize(3).Strides(2).PadSame().Done();
    h = layers::AvgPool(activations::Relu(h)).Window(3).Strides(1).PadSame().Done();
    graph::Node logits = layers::Dense(scope.In("out"), graph::Reshape(h, {-1, 2 * 2 * 6}), true, 3);
    return std::vector<graph::Node>{logits, graph::ArgMax(logits, 1)};
  };
  model::Store store;
  const Shape batch = Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 8, 8, 2}, {"batch", "", "", ""});
  for (int64_t n : {2, 3}) {
    const Tensor x = kiln::test::NormalTensor({n, 8, 8, 2}, static_cast<uint32_t>(n));
    const std::string bytes = ExpectRoundTrip("batch " + std::to_string(n), store, cnn, {x}, {batch});
    EXPECT_EQ(ReadBytes(bytes, "cnn.onnx").InputShapes()[0].ToString(), "(Float32)[batch, 8, 8, 2]");
    for (const char* op : {"Conv", "MaxPool", "ArgMax"}) EXPECT_NE(bytes.find(op), std::string::npos) << op;
  }
}

TEST(OnnxExport, ConvolutionsAndWindowsRoundTrip) {
  model::Store store;
  using graph::Node;
  auto one = [](std::function<Node(std::vector<Node>)> f) -> ExportFn {
    return [f](model::Scope, const std::any&, std::vector<Node> in) { return std::vector<Node>{f(in)}; };
  };
  const Tensor img = kiln::test::NormalTensor({2, 3, 7, 6}, 1);  // [batch, channels, h, w]
  const Tensor k3 = kiln::test::NormalTensor({4, 3, 3, 2}, 2);   // [out, in, kh, kw]
  const Tensor kg = kiln::test::NormalTensor({6, 1, 2, 2}, 3);   // Grouped: 3 groups of 1 -> 2.
  ExpectRoundTrip("channels first, dilated, uneven and negative padding", store,
                  one([](std::vector<Node> in) {
                    return graph::Convolve(in[0], in[1])
                        .ChannelsFirst()
                        .Dilations({2, 1})
                        .Strides({1, 2})
                        .Padding({{2, 1, 0}, {-1, 3, 0}})
                        .Done();
                  }),
                  {img, k3});
  ExpectRoundTrip("feature groups", store, one([](std::vector<Node> in) {
                    return graph::Convolve(in[0], in[1]).ChannelsFirst().ChannelGroupCount(3).Done();
                  }),
                  {img, kg});
  // An odd layout: input [h, w, channels, batch], kernel [in, kh, out, kw], output [out, batch, h, w].
  compute::ConvDims odd{3, 2, {0, 1}, 0, 2, {1, 3}, 1, 0, {2, 3}};
  ExpectRoundTrip("odd layout", store, one([&](std::vector<Node> in) {
                    return graph::ConvGeneral(in[0], in[1], odd, {1, 1}, {{1, 1, 0}, {0, 0, 0}});
                  }),
                  {kiln::test::NormalTensor({5, 4, 3, 2}, 4), kiln::test::NormalTensor({3, 2, 4, 2}, 5)});
  // Input dilation (a transposed convolution), with kernel dilation and uneven padding.
  const std::string tconv = ExpectRoundTrip("input dilations", store, one([](std::vector<Node> in) {
                                              return graph::Convolve(in[0], in[1])
                                                  .ChannelsFirst()
                                                  .InputDilations({2, 3})
                                                  .Dilations({1, 2})
                                                  .Padding({{2, 1, 0}, {0, 2, 0}})
                                                  .Done();
                                            }),
                                            {img, k3});
  EXPECT_NE(tconv.find("ConvTranspose"), std::string::npos);
  // Pools: channels last and first, min pooling with padding wider than the window (explicit
  // Pad), sum and max over five axes (three unpooled ones merged), a 1-D max over a vector.
  const Tensor x = kiln::test::NormalTensor({2, 5, 6, 3}, 6);
  ExpectRoundTrip("max pool same", store, one([](std::vector<Node> in) {
                    return graph::MaxPool(in[0]).Window({3, 2}).Strides({2, 1}).PadSame().Done();
                  }),
                  {x});
  ExpectRoundTrip("mean pool channels first", store, one([](std::vector<Node> in) {
                    return graph::MeanPool(in[0]).ChannelsFirst().Window(2).Strides(1).PadSame().Done();
                  }),
                  {img});
  ExpectRoundTrip("min pool wide padding", store, one([](std::vector<Node> in) {
                    return graph::MinPool(in[0]).Window(2).PaddingPerDim({{3, 0}, {1, -1}}).Done();
                  }),
                  {x});
  const Tensor x5 = kiln::test::NormalTensor({2, 3, 4, 5, 2}, 7);
  for (auto kind : {compute::ReduceKind::Sum, compute::ReduceKind::Max}) {
    ExpectRoundTrip("five axes", store, one([kind](std::vector<Node> in) {
                      return graph::ReduceWindow(in[0], kind, {1, 1, 2, 3, 1}, {1, 1, 1, 2, 1},
                                                 {{0, 0, 0}, {0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 0, 0}},
                                                 {1, 1, 2, 1, 1});
                    }),
                    {x5});
  }
  ExpectRoundTrip("1-D sum", store, one([](std::vector<Node> in) {
                    return graph::ReduceWindow(in[0], compute::ReduceKind::Sum, {3}, {2}, {{1, 1, 0}});
                  }),
                  {kiln::test::NormalTensor({9}, 8)});
}

TEST(OnnxExport, IndexingAndOtherPrimitivesRoundTrip) {
  model::Store store;
  using graph::Node;
  auto one = [](std::function<Node(std::vector<Node>)> f) -> ExportFn {
    return [f](model::Scope, const std::any&, std::vector<Node> in) { return std::vector<Node>{f(in)}; };
  };
  const Tensor x = kiln::test::NormalTensor({4, 5, 3}, 11);
  // Rows of x by [..., 2] index vectors, one out of range (clamped as kiln does).
  const Tensor rows =
      Tensor::FromValue(std::vector<std::vector<std::vector<int32_t>>>{{{0, 1}, {3, 4}, {9, -2}}});
  ExpectRoundTrip("gather", store, one([](std::vector<Node> in) { return graph::Gather(in[0], in[1]); }),
                  {x, rows});
  // Indices along axis 1, scalar index vectors, the offset axes around them; and partial slices.
  const Tensor cols = Tensor::FromValue(std::vector<int64_t>{4, 0, 2, 7});
  ExpectRoundTrip("take along axis 1", store, one([](std::vector<Node> in) {
                    return graph::GatherGeneral(in[0], in[1], 1, {0, 2}, {1}, {1}, {4, 1, 3});
                  }),
                  {x, cols});
  ExpectRoundTrip("partial slices, offset axes first", store, one([](std::vector<Node> in) {
                    return graph::GatherGeneral(in[0], in[1], 1, {0, 1}, {1}, {1}, {2, 1, 2});
                  }),
                  {x, cols});
  const Tensor v =
      Tensor::FromValue(std::vector<std::vector<float>>{{3, 1, 3, -2, 1}, {0.5f, 0.5f, 2, -1, 4}});
  ExpectRoundTrip("arg, sort, scan", store,
                  [](model::Scope, const std::any&, std::vector<Node> in) {
                    return std::vector<Node>{
                        graph::ArgMax(in[0], 1),       graph::ArgMin(in[0], 0, DType::Int64),
                        graph::ArgSort(in[0], 1),      graph::ArgSort(in[0], 1, false),
                        graph::CumSum(in[0], 1, true), graph::CumSum(in[0], 0)};
                  },
                  {v});
  ExpectRoundTrip("pad, reverse", store,
                  [](model::Scope, const std::any&, std::vector<Node> in) {
                    return std::vector<Node>{
                        graph::Pad(in[0], graph::ScalarLike(in[0], 7.5), {{1, -1, 0}, {2, 0, 0}, {-1, 1, 0}}),
                        graph::Reverse(in[0], {0, 2})};
                  },
                  {x});
  const Tensor e = Tensor::FromValue(std::vector<float>{-3, -1e-3f, 0, 2e-4f, 0.5f, 4, INFINITY, NAN});
  ExpectRoundTrip("elementwise", store,
                  [](model::Scope, const std::any&, std::vector<Node> in) {
                    Node finite = graph::Where(graph::IsFinite(in[0]), in[0], graph::ZerosLike(in[0]));
                    return std::vector<Node>{graph::Clip(in[0], -1.0, 1.0),
                                             graph::Expm1(finite),
                                             graph::Log1p(graph::Abs(finite)),
                                             graph::IsFinite(in[0]),
                                             graph::Rem(finite, graph::ScalarLike(finite, -0.75)),
                                             graph::Rsqrt(graph::Abs(in[0])),
                                             graph::Logistic(in[0]),
                                             graph::Erf(in[0])};
                  },
                  {e});
  const Tensor ints = Tensor::FromValue(std::vector<int32_t>{-7, -3, 0, 5, 9});
  ExpectRoundTrip("integer remainder", store,
                  one([](std::vector<Node> in) { return graph::Rem(in[0], graph::ScalarLike(in[0], 4)); }),
                  {ints});
}

TEST(OnnxExport, PrimitivesWithoutAnExactEquivalentAreErrors) {
  model::Store store;
  using graph::Node;
  kiln::test::TempDir dir;
  auto fails = [&](const std::vector<Shape>& shapes, std::function<Node(std::vector<Node>)> f,
                   const std::vector<std::string>& words) {
    const ExportFn fn = [f](model::Scope, const std::any&, std::vector<Node> in) {
      return std::vector<Node>{f(in)};
    };
    return Throws([&] { Export(store, fn, shapes, dir / "m.onnx"); }, words);
  };
  const Shape img(DType::Float32, {1, 2, 6, 6}), kernel(DType::Float32, {3, 2, 3, 3});
  EXPECT_TRUE(
      fails({img, kernel},
            [](std::vector<Node> in) {
              return graph::Convolve(in[0], in[1]).ChannelsFirst().InputDilations(2).Strides(2).Done();
            },
            {"ConvGeneral", "input dilations", "no exact ConvTranspose"}));
  EXPECT_TRUE(fails({Shape(DType::Float32, {2, 2, 6, 6}), Shape(DType::Float32, {4, 2, 3, 3})},
                    [](std::vector<Node> in) {
                      return graph::Convolve(in[0], in[1]).ChannelsFirst().BatchGroupCount(2).Done();
                    },
                    {"ConvGeneral", "batch groups"}));
  EXPECT_TRUE(fails({img},
                    [](std::vector<Node> in) {
                      return graph::ReduceWindow(in[0], compute::ReduceKind::Product, {1, 1, 2, 2});
                    },
                    {"ReduceWindow", "product"}));
  EXPECT_TRUE(fails(
      {img},
      [](std::vector<Node> in) {
        return graph::Pad(in[0], graph::ScalarLike(in[0], 0), {{0, 0, 0}, {0, 0, 1}, {0, 0, 0}, {0, 0, 0}});
      },
      {"Pad", "interior"}));
  EXPECT_TRUE(fails({img, Shape(DType::Int32, {4, 2})},
                    [](std::vector<Node> in) {
                      return graph::GatherSlices(in[0], {2, 3}, in[1], {2, 2});
                    },
                    {"Gather", "collapsed"}));
  EXPECT_TRUE(fails({Shape(DType::Int32, {1, 6, 6, 2})},
                    [](std::vector<Node> in) { return graph::MaxPool(in[0]).Window(2).Done(); },
                    {"ReduceWindow", "Int32"}));
}

}  // namespace
}  // namespace kiln::onnx

namespace kiln::onnx {
namespace {

std::vector<Tensor> RunModel(const Model& m, const std::vector<Tensor>& inputs) {
  graph::Exec exec(
      compute::New(), [&m](graph::Graph& g, const std::vector<graph::Node>& p) { return m.CallGraph(g, p); },
      static_cast<int>(inputs.size()), "onnx model");
  return exec.Call(inputs);
}

TEST(OnnxRandom, DropoutInTrainingModeZeroesAndRescales) {
  const Model m = ReadFile(kNode + "test_training_dropout_mask/model.onnx");
  const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {3, 4, 5}), std::vector<float>(60, 1.5f));
  for (float ratio : {0.25f, 0.5f}) {
    const std::vector<Tensor> out = RunModel(m, {x, Tensor::FromScalar(ratio), Tensor::FromScalar(true)});
    const std::vector<double> y = out[0].ToDoubles(), mask = out[1].ToDoubles();
    int kept = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      kept += mask[i] != 0 ? 1 : 0;
      EXPECT_FLOAT_EQ(y[i], mask[i] != 0 ? 1.5 / (1 - ratio) : 0.0) << i;
    }
    // 60 draws: the kept fraction is within 4 standard deviations of 1 - ratio.
    EXPECT_NEAR(kept / 60.0, 1 - ratio, 4 * std::sqrt(ratio * (1 - ratio) / 60)) << ratio;
  }
  // Out of training mode: the identity, every element kept.
  const std::vector<Tensor> off = RunModel(m, {x, Tensor::FromScalar(0.5f), Tensor::FromScalar(false)});
  EXPECT_EQ(off[0].ToDoubles(), x.ToDoubles());
  EXPECT_EQ(off[1].ToDoubles(), std::vector<double>(60, 1.0));
}

TEST(OnnxRandom, WithRandomSeedMakesUnseededDrawsReproducible) {
  const Model m = ReadFile(kNode + "test_bernoulli/model.onnx");  // No seed attribute.
  std::vector<double> p(10);
  for (size_t i = 0; i < p.size(); ++i) p[i] = i < 3 ? 0.0 : i < 6 ? 1.0 : 0.5;
  const Tensor probs = Tensor::FromFlat(Shape(DType::Float64, {10}), p);
  const std::vector<double> a = RunModel(m.WithRandomSeed(7), {probs})[0].ToDoubles();
  EXPECT_EQ(RunModel(m.WithRandomSeed(7), {probs})[0].ToDoubles(), a);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(a[i], p[i]) << i;  // Probabilities 0 and 1 are certain.
  for (double v : a) EXPECT_TRUE(v == 0 || v == 1);
  // Other seeds give other draws for the four fair coins (16 outcomes over 8 seeds: not all equal).
  bool differs = false;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const std::vector<double> b = RunModel(m.WithRandomSeed(seed), {probs})[0].ToDoubles();
    differs = differs || b != a;
  }
  EXPECT_TRUE(differs);
}

TEST(OnnxExport, AModelThatUpdatesVariablesIsAnErrorAndUnusedVariablesAreLeftOut) {
  kiln::test::TempDir dir;
  model::Store store;
  store.RootScope().VariableWithValue("unused", Tensor::FromValue(std::vector<float>{1, 2, 3}));
  store.RootScope().VariableWithValue("scale", Tensor::FromValue(std::vector<float>{2, 3}));
  // Reads "scale" only: the file holds it as its one initializer; "unused" is not in it.
  const ExportFn reads = [](model::Scope scope, const std::any&, std::vector<graph::Node> in) {
    return std::vector<graph::Node>{in[0] * scope.InspectVariable("scale").NodeValue(in[0].graph())};
  };
  const std::filesystem::path file = dir / "reads.onnx";
  Export(store, reads, {Shape(DType::Float32, {2})}, file);
  const Model m = ReadFile(file);
  EXPECT_EQ(m.InitializerNames(), std::vector<std::string>{"scale"});
  // Updates a variable (as training-mode statistics do): refused, naming it.
  const ExportFn updates = [](model::Scope scope, const std::any&, std::vector<graph::Node> in) {
    model::Variable v = scope.InspectVariable("scale");
    v.SetNodeValue(v.NodeValue(in[0].graph()) + in[0]);
    return std::vector<graph::Node>{in[0]};
  };
  EXPECT_TRUE(Throws([&] { Export(store, updates, {Shape(DType::Float32, {2})}, dir / "u.onnx"); },
                     {"updates variable", "scale", "inference"}));
}

}  // namespace
}  // namespace kiln::onnx
