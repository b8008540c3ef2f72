#pragma once
// A generator of random valid graphs for the differential test: random shapes (ranks 0-4,
// small dimensions including 0 and 1), dtypes and op sequences, built through the graph
// frontend so that every program is valid by construction, with inputs in safe ranges.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/program.h"
#include "kiln/core/tensor.h"

namespace kiln::test {

/// One generated graph: its program (parameters donatable) and the inputs to run it on.
struct RandomGraph {
  std::shared_ptr<const compute::Program> program;
  std::vector<Tensor> inputs;
  /// The ops the generator chose, in order ("Add", "ReduceSum"...), skipped ones marked.
  std::vector<std::string> steps;
};

struct RandomGraphOptions {
  int min_ops = 5;              ///< Ops drawn per graph (at least).
  int max_ops = 30;             ///< Ops drawn per graph (at most).
  int64_t max_elements = 2048;  ///< Larger values are dropped (20x in large graphs).
  int max_parameters = 6;       ///< Inputs at most.
};

/// The graph for `seed` (the same seed gives the same graph and inputs).
RandomGraph MakeRandomGraph(uint64_t seed, const RandomGraphOptions& options = {});

}  // namespace kiln::test
