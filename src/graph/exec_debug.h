#pragma once
// What graph::Exec and model::Exec share to debug a run: the logged, aliased and NaN-checked
// nodes added as extra outputs of the program, and what is done with their values afterwards.

#include <map>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/graph/debug.h"
#include "kiln/graph/graph.h"

namespace kiln::graph::exec_internal {

/// The extra outputs appended to a program's outputs, in this order: logged nodes, aliased nodes
/// (only when asked for), NaN-checked nodes (only with the check on).
struct DebugOutputs {
  size_t first = 0;  // Index of the first extra output.
  std::vector<int> logged;
  std::vector<std::string> messages;
  std::vector<int> aliased;
  std::vector<std::string> aliases;
  std::vector<int> checked;  // Node ids, in build order.
  size_t Count() const { return logged.size() + aliased.size() + checked.size(); }
};

/// Appends the extra outputs of `g` to `outputs` (which hold what the program returns so far).
DebugOutputs AppendDebugOutputs(Graph& g, std::vector<Node>& outputs, bool with_aliases, bool nan_check);

/// After a run whose results are `results` (one per output, extras included): hands the logged
/// values to `logger` (when set), runs the NaN check (a kiln::Error naming `what` on a finding),
/// moves the aliased values into `*aliased` (when not null) and drops the extras from `results`.
void FinishDebugOutputs(const std::string& what, Graph& g, const DebugOutputs& d,
                        std::vector<Tensor>& results, const NodeLogger& logger,
                        std::map<std::string, Tensor>* aliased);

}  // namespace kiln::graph::exec_internal
