#pragma once
/// @file
/// Debugging a model while it runs: the node logger that receives the values of logged nodes
/// (Node::SetLogged), the NaN check (Exec::SetNanCheck, KILN_NAN_CHECK=1) and the values of
/// aliased nodes (Node::WithAlias, Exec::CallWithAliases). docs/debugging.md shows them at work.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::graph {

/// Receives, after each run of a graph, the messages of its logged nodes and their values, in
/// the order the nodes were built (also with no logged node, so it can serve as a hook).
using NodeLogger =
    std::function<void(const std::vector<std::string>& messages, const std::vector<Tensor>& values)>;

/// The default node logger, GoMLX's format on stderr: a line `DefaultNodeLogger(Graph "NAME"):`
/// then one line per value, `\t(Node #ID) MESSAGE: VALUE` (the value abbreviated as
/// Tensor::ToString prints it, in full when the message starts with "#full ", which is dropped).
/// Prints nothing when there is no message. Called outside an Exec's run, it omits the graph
/// name and node ids it does not know.
void DefaultNodeLogger(const std::vector<std::string>& messages, const std::vector<Tensor>& values);

/// True when the environment variable KILN_NAN_CHECK is "1", "true" or "on": the initial NaN
/// check setting of every Exec, model::Exec and train::Trainer.
bool NanCheckFromEnvironment();

/// What Exec::CallWithAliases returns: the graph function's outputs, and the value of every
/// aliased node of the graph, by absolute alias ("/layer1/output").
struct AliasedResults {
  std::vector<Tensor> outputs;            ///< The graph function's outputs, as Call returns them.
  std::map<std::string, Tensor> aliased;  ///< The aliased nodes' values, by absolute alias.
};

}  // namespace kiln::graph
