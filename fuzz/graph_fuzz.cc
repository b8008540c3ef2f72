// libFuzzer target for graph building: random op sequences with random attributes
// (graph_builder.h); every op either builds or raises a kiln::Error, and so does building the
// program of the last nodes.

#include "fuzz_util.h"
#include "graph_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::Bytes in(data, size);
  kiln::graph::Graph g("fuzz");
  const std::vector<kiln::graph::Node> nodes = kiln::fuzz::BuildFromBytes(g, in);
  if (nodes.empty()) return 0;
  kiln::fuzz::Refused([&] {
    const auto program = g.Build({nodes.back(), nodes[nodes.size() / 2]});
    (void)program->ToString();
  });
  return 0;
}
