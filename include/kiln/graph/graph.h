#pragma once
/// @file
/// Graph and Node: the symbolic computation a user function builds, op by op, before it is
/// compiled by a backend.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/compute/program.h"
#include "kiln/core/error.h"
#include "kiln/core/shape.h"

namespace kiln::graph {

class Graph;

/// A cheap handle to the output of one operation in a Graph: a future value with a known shape.
class Node {
 public:
  /// An invalid handle (Ok() false).
  Node() = default;

  /// The shape of the node's value; kiln::Error on an invalid node.
  const Shape& shape() const;
  /// The dtype of the node's value (shape().dtype()).
  DType dtype() const { return shape().dtype(); }
  /// Number of axes of the node's value (0 for a scalar).
  int rank() const { return shape().Rank(); }
  /// The graph the node belongs to.
  Graph& graph() const;
  /// Position of the node in its graph (its value number in the Program).
  int id() const { return id_; }
  /// False for a default-constructed handle; such a node throws kiln::Error when used.
  bool Ok() const { return graph_ != nullptr; }
  /// "#3 Add(#1, #2) -> (Float32)[2, 3]".
  std::string ToString() const;
  /// The primitive op that produced the node.
  compute::OpType op() const;
  /// The node's operands.
  std::vector<Node> operands() const;

  // ---- Debugging: value logging, aliases, build traces (docs/debugging.md) ----

  /// Marks the node to be logged: every Exec run of a graph holding it hands its value, with
  /// `message`, to the Exec's node logger (Exec::SetNodeLogger; by default one line on stderr).
  /// A message starting with "#full " prints the whole value instead of an abbreviated one. An
  /// empty message unmarks the node. Returns the node, to chain.
  Node SetLogged(const std::string& message) const;
  /// SetLogged with a printf-style formatted message.
  Node SetLoggedf(const char* format, ...) const __attribute__((format(printf, 2, 3)));
  /// True when the node is marked to be logged.
  bool IsLogged() const;
  /// The message the node is logged with ("" when it is not logged).
  std::string LogMessage() const;
  /// Gives the node the alias `alias`, prefixed by the graph's alias scope (Graph::PushAliasScope)
  /// unless it starts with "/": "/layer1/output". Lookup: Graph::NodeByAlias, and the values of
  /// aliased nodes after a run: Exec::CallWithAliases. kiln::Error when the graph already has the
  /// alias, or `alias` is empty or ends with "/". Returns the node, to chain.
  Node WithAlias(const std::string& alias) const;
  /// The node's absolute alias, or "" without one.
  std::string Alias() const;
  /// Where the node was built (the caller's stack, one frame per line, frames inside kiln
  /// dropped) when the graph records traces (Graph::SetTraced), else "".
  std::string Trace() const;

  /// The same node of the same graph (not a comparison of values: see graph::Equal for that).
  friend bool operator==(const Node& a, const Node& b) { return a.graph_ == b.graph_ && a.id_ == b.id_; }

 private:
  friend class Graph;
  Node(Graph* graph, int id) : graph_(graph), id_(id) {}
  Graph* graph_ = nullptr;
  int id_ = -1;
};

/// A computation graph under construction. Ops are free functions of kiln::graph taking and
/// returning Nodes; each checks its operands' shapes and dtypes and throws kiln::Error (with
/// the stack of the call) when they do not fit, before anything runs.
/// Not copyable: nodes refer to it by address.
class Graph {
 public:
  /// An empty graph; `name` appears in its listings and error messages.
  explicit Graph(std::string name = "graph");
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  /// The name given at construction.
  const std::string& name() const { return name_; }

  /// A new input of the graph; parameters are numbered in creation order.
  Node Parameter(const Shape& shape, const std::string& name = "");
  /// Number of parameters created so far.
  int NumParameters() const { return static_cast<int>(parameters_.size()); }
  /// The node of parameter `index`; kiln::Error unless 0 <= index < NumParameters().
  Node ParameterNode(int index) const;

  /// Appends a primitive op after checking operands and attributes with the op's shape rule
  /// (compute::InferShape). Frontend functions call this; users call the functions.
  Node AddOp(compute::OpType op, const std::vector<Node>& operands, compute::OpAttributes attrs = {});
  /// Appends a tuple-producing op (While, If, OptimizationBarrier) with its sub-programs after
  /// checking them (compute::InferTupleShapes), then one GetTupleElement node per result, which
  /// it returns. The control-flow functions (control_flow.h) call this.
  std::vector<Node> AddTupleOp(compute::OpType op, const std::vector<Node>& operands,
                               compute::OpAttributes attrs,
                               std::vector<std::shared_ptr<const compute::Program>> subprograms);

  /// Number of nodes in the graph.
  int NumNodes() const { return static_cast<int>(instructions_.size()); }
  /// The instruction that node `id` records (op, operands, attributes, shape); std::out_of_range
  /// unless 0 <= id < NumNodes().
  const compute::Instruction& instruction(int id) const { return instructions_.at(static_cast<size_t>(id)); }
  /// The handle of node `id`; kiln::Error unless 0 <= id < NumNodes().
  Node NodeAt(int id);

  /// The Program computing `outputs` (only what they need), ready for a backend to compile.
  /// `donatable[i]` marks parameter i as one whose buffer an execution may reuse.
  std::shared_ptr<const compute::Program> Build(const std::vector<Node>& outputs,
                                                const std::vector<bool>& donatable = {}) const;

  /// A listing of every node.
  std::string ToString() const;

  // ---- Debugging (see Node::SetLogged, Node::WithAlias, Node::Trace) ----

  /// The nodes marked with Node::SetLogged, in build order.
  std::vector<Node> LoggedNodes();
  /// Pushes a part of the alias scope: aliases given next are "/<scopes...>/<alias>". Pair with
  /// PopAliasScope (or use graph::AliasScope). kiln::Error for an empty scope or one with "/".
  void PushAliasScope(const std::string& scope);
  /// Pops the part pushed last; kiln::Error when none is pushed.
  void PopAliasScope();
  /// The current alias scope, "/" at the root, else "/a/b/".
  std::string AliasScopePath() const;
  /// The node with alias `alias` (absolute when it starts with "/", else relative to the current
  /// scope), or an invalid Node (Ok() false) when none has it.
  Node NodeByAlias(const std::string& alias);
  /// Every aliased node, sorted by absolute alias.
  std::vector<std::pair<std::string, Node>> AliasedNodes();
  /// Records, for each node built from now on, the stack of the code that built it (for
  /// Node::Trace and the NaN checker's errors). Off by default: capturing costs a stack walk
  /// per node. Exec turns it on for graphs it builds with the NaN check on.
  void SetTraced(bool traced) { traced_ = traced; }
  /// Whether new nodes record their build stack.
  bool Traced() const { return traced_; }

  /// The number of replicas the graph's program runs on (every device of every process in a
  /// data-parallel run): what the collective ops (graph/collective.h) exchange between. 1 unless
  /// set; Exec::CallReplicas and Trainer::DataParallel set it before the graph function runs. A
  /// kiln::Error unless at least 1.
  void SetReplicas(int replicas);
  /// The replicas set with SetReplicas (1 by default).
  int Replicas() const { return replicas_; }

  /// Data a library attaches to the graph under `key` (the model package keeps its per-graph
  /// state here); destroyed with the graph. Empty until set.
  std::shared_ptr<void>& Attachment(const std::string& key) { return attachments_[key]; }

  // ---- Function calls (graph/function.h uses these; users call Function::Call) ----

  /// While a Function's definition is traced for a call, Parameter returns the call's inputs in
  /// order instead of adding graph inputs.
  struct CallFrame {
    std::string function;      ///< The function's name, for errors.
    std::vector<Node> inputs;  ///< The call's inputs, one per parameter the definition declares.
    size_t next = 0;           ///< How many parameters were declared so far.
    /// Scalar parameters take inputs of any shape (SortFunc's comparator runs on all pairs).
    bool elementwise = false;
  };
  /// Starts tracing a call: Parameter now takes `frame`'s inputs.
  void PushCallFrame(CallFrame frame) { call_frames_.push_back(std::move(frame)); }
  /// Ends the innermost call; returns its frame (how many parameters were declared).
  CallFrame PopCallFrame();

  // ---- Autodiff bookkeeping (graph/gradient.h uses these; users call the functions there) ----

  /// A gradient override: given the forward operand `x` and the adjoint of the node, returns
  /// the adjoint of x.
  using CustomGradientFn = std::function<Node(Node x, Node adjoint)>;
  /// Gives node `n` the gradient `fn` instead of its op's rule.
  void SetCustomGradient(Node n, CustomGradientFn fn);
  /// The override of node `id`, or nullptr.
  const CustomGradientFn* CustomGradient(int id) const;
  /// True when some node has a gradient override.
  bool HasCustomGradients() const { return !custom_gradients_.empty(); }
  /// Marks node `n` as a checkpoint: its value is kept for the backward pass. When
  /// `rematerialize` is true, the nodes built on it afterwards are recomputed in the backward
  /// pass instead of kept (until a checkpoint with `rematerialize` false).
  void MarkCheckpoint(Node n, bool rematerialize);
  /// True for nodes marked with MarkCheckpoint (false for ids out of range).
  bool IsCheckpoint(int id) const { return Flag(id, kCheckpoint); }
  /// True for nodes the backward pass recomputes from the nearest checkpoints.
  bool NeedsRematerialization(int id) const { return Flag(id, kRemat); }
  /// While set, new nodes do not inherit NeedsRematerialization from their operands (the
  /// backward pass sets it for the nodes it builds).
  void SetRematInheritance(bool on) { remat_inheritance_ = on; }
  /// Whether new nodes inherit NeedsRematerialization (true unless SetRematInheritance(false)).
  bool RematInheritance() const { return remat_inheritance_; }

 private:
  friend class Node;  // The debugging marks (Node::SetLogged, WithAlias, Trace) live here.
  static constexpr uint8_t kCheckpoint = 1, kRemat = 2;
  bool Flag(int id, uint8_t f) const {
    return id >= 0 && static_cast<size_t>(id) < flags_.size() && (flags_[static_cast<size_t>(id)] & f) != 0;
  }
  /// Records the flags of a newly appended node (inheriting kRemat from `operand_ids`).
  void PushFlags(const std::vector<int>& operand_ids);

  /// Checks that `operands` are valid nodes of this graph; their shapes and ids.
  void CollectOperands(compute::OpType op, const std::vector<Node>& operands, std::vector<Shape>& shapes,
                       std::vector<int>& ids) const;

  std::string name_;
  // A deque: references returned by Node::shape() stay valid while nodes are added.
  std::deque<compute::Instruction> instructions_;
  std::vector<int> parameters_;
  std::vector<std::string> parameter_names_;
  std::vector<uint8_t> flags_;  // per node: kCheckpoint | kRemat
  std::unordered_map<int, CustomGradientFn> custom_gradients_;
  bool remat_inheritance_ = true;
  std::unordered_map<std::string, std::shared_ptr<void>> attachments_;
  // Debugging: logged nodes, aliases, build traces.
  std::map<int, std::string> logged_;
  std::vector<std::string> alias_scope_;
  std::map<std::string, int> alias_to_node_;
  std::unordered_map<int, std::string> node_alias_;
  bool traced_ = false;
  int replicas_ = 1;
  std::unordered_map<int, Error> traces_;
  std::vector<CallFrame> call_frames_;
};

/// Pushes an alias scope for its lifetime (Graph::PushAliasScope / PopAliasScope).
class AliasScope {
 public:
  /// Pushes `scope` on `g`'s alias scope; the destructor pops it.
  AliasScope(Graph& g, const std::string& scope) : g_(g) { g_.PushAliasScope(scope); }
  ~AliasScope() { g_.PopAliasScope(); }
  AliasScope(const AliasScope&) = delete;
  AliasScope& operator=(const AliasScope&) = delete;

 private:
  Graph& g_;
};

}  // namespace kiln::graph
