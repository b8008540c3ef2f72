#pragma once
// The model package's shared state: a store's variables and hyperparameters, and what a graph
// being built knows about the variables it reads and sets.

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/model/store.h"

namespace kiln::model::detail {

struct StoreData;

struct VariableData {
  std::weak_ptr<StoreData> store;  // The owning store.
  std::string path;
  Shape shape;
  Tensor value;         // Invalid until initialised. Device 0's in a replicated run.
  Initializer pending;  // Set while the variable waits for its initial value.
  bool trainable = false;
  // The copies of devices 1.. in replicated runs (model::Exec::CallReplicas), entry d-1 for device
  // d; dropped whenever `value` is set otherwise (SetValue), so they are remade from it.
  std::vector<Tensor> replicas;
};

struct StoreData {
  mutable std::recursive_mutex mu;
  std::vector<std::shared_ptr<VariableData>> variables;  // Creation order.
  std::map<std::string, std::shared_ptr<VariableData>> by_path;
  std::map<std::pair<std::string, std::string>, ParamValue> params;  // (scope path, key).
};

/// What the model package keeps per graph (a Graph attachment).
struct GraphState {
  std::shared_ptr<StoreData> store;                   // The store the graph's variables belong to.
  std::vector<std::shared_ptr<VariableData>> inputs;  // Variables read, in parameter order.
  std::vector<graph::Node> input_nodes;
  std::vector<std::pair<std::shared_ptr<VariableData>, graph::Node>> updates;  // SetNodeValue, in order.
  std::set<std::string> entered;                                               // Scope paths entered with In.
  bool training = false;
};

/// The store owning `v` (kiln::Error when the store is gone).
std::shared_ptr<StoreData> StoreOf(const VariableData& v);

/// The graph's state, created on first use.
GraphState& StateOf(graph::Graph& g);
/// The graph's state, or nullptr.
GraphState* FindState(graph::Graph& g);

/// "/a" + "b" -> "/a/b"; kiln::Error naming `what` for an empty name or one with '/'.
std::string JoinPath(const std::string& scope, const std::string& name, const char* what);

}  // namespace kiln::model::detail
