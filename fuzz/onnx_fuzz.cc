// libFuzzer target for the ONNX reader and importer: any bytes either parse as a model (which
// is then built into a graph with its inputs' dynamic axes set to 2, folding what is known at
// import) or raise a kiln::Error; the same bytes read as a TensorProto file likewise.

#include "fuzz_util.h"
#include "kiln/graph/graph.h"
#include "kiln/onnx/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  kiln::fuzz::Refused([&] {
    const kiln::onnx::Model m = kiln::onnx::ReadBytes(bytes, "fuzz.onnx");
    kiln::graph::Graph g("fuzz");
    std::vector<kiln::graph::Node> inputs;
    for (const kiln::Shape& s : m.InputShapes()) {
      std::vector<int64_t> dims = s.Dimensions();
      int64_t total = 1;
      for (int64_t& d : dims) {
        if (d == kiln::Shape::kDynamic) d = 2;
        total *= d > 0 ? d : 1;
      }
      if (total > (int64_t{1} << 20)) return;  // Inputs too large to be worth building.
      inputs.push_back(g.Parameter(kiln::Shape(s.dtype(), dims)));
    }
    m.CallGraph(g, inputs);
  });
  const std::string path = kiln::fuzz::WriteScratch(data, size, ".pb");
  kiln::fuzz::Refused([&] { kiln::onnx::ReadTensorProto(path); });
  return 0;
}
