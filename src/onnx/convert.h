#pragma once
// The graph builder: one converter per ONNX operator type, each turning a NodeProto into kiln
// graph ops through a Context that hands it inputs, constant values and attributes.

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/check.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/ops.h"
#include "onnx/proto.h"

namespace kiln::onnx::internal {

using graph::Graph;
using graph::Node;

/// A value of the node walk: its node, and its value when it is known at import (then the node
/// may be left invalid: it is made on first use).
struct Value {
  Node node;
  std::optional<Tensor> constant;
};

/// The values visible where a graph is converted: its own and, through `parent`, those of the
/// graphs enclosing it (ONNX subgraphs read enclosing values by name). A scope converting into a
/// kiln sub-program has the sub-program's graph: enclosing graph values must be bound in it (as
/// the sub-program's parameters); enclosing constants become constants of the sub-program.
class ValueScope {
 public:
  ValueScope(Graph& g, ValueScope* parent) : g_(g), parent_(parent) {}
  Graph& graph() const { return g_; }
  /// Binds `name` here (a graph value, or a constant when v.constant is set).
  void Bind(const std::string& name, const Value& v);
  void BindNode(const std::string& name, Node n) { Bind(name, Value{n, std::nullopt}); }
  void BindConstant(const std::string& name, const Tensor& t) { Bind(name, Value{Node(), t}); }
  /// Whether `name` is visible.
  bool Has(const std::string& name) const;
  /// `name`'s value when it is known at import, else nothing.
  std::optional<Tensor> Known(const std::string& name) const;
  /// `name` as a node of this scope's graph (constants made into Const nodes on first use);
  /// nothing when not visible.
  std::optional<Node> NodeOf(const std::string& name);

 private:
  Graph& g_;
  ValueScope* parent_;
  std::map<std::string, Node> values_;       // Graph values, and the Const nodes made of constants.
  std::map<std::string, Tensor> constants_;  // Values known at import.
};

/// The most ONNX nodes one model converts to, counting each unrolled loop iteration's body.
constexpr uint64_t kMaxConvertedNodes = uint64_t{1} << 20;

/// What converting any graph of a model needs.
struct Walk {
  const ::onnx::ModelProto* model = nullptr;
  int64_t opset = 0;                    // Of the default domain.
  std::string dir;                      // The model's directory (external data).
  std::optional<uint64_t> random_seed;  // Model::WithRandomSeed.
  uint64_t nodes = 0;                   // Nodes converted so far (the random operators' seeds).
};

/// Converts the nodes of `graph` in `scope` (which holds its inputs; its initializers are added
/// unless `skip_initializers`), then returns its outputs. `where` names the graph in messages.
std::vector<Value> ConvertGraph(Walk& walk, const ::onnx::GraphProto& graph, ValueScope& scope,
                                const std::string& where, bool skip_initializers = false);

/// Whether `domain` names ONNX's default operator domain ("" or "ai.onnx").
inline bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

/// Attribute `name` of `node`, or nullptr.
const ::onnx::AttributeProto* FindAttribute(const ::onnx::NodeProto& node, const std::string& name);

/// Adds to `out` the names `graph` reads that it does not define (its inputs, initializers and
/// node outputs), through its nested subgraphs too: the values it takes from enclosing scopes.
void OuterNames(const ::onnx::GraphProto& graph, std::set<std::string>& out);

/// Who reads a value of a graph.
struct Readers {
  int count = 0;   ///< Reads by its nodes (a subgraph reading it counts once) and as a graph output.
  int first = -1;  ///< The first node taking it as an input, or -1.
};
/// The readers of each value of `graph`.
std::map<std::string, Readers> CountReaders(const ::onnx::GraphProto& graph);

/// A Conv with the nodes after it folded in (fold_conv.cc).
struct FoldedConv {
  ::onnx::NodeProto node;  ///< The Conv, writing the last folded node's output.
  std::vector<int> skip;   ///< The folded nodes, which then convert to nothing.
};

/// When node `i` of `graph` is a Conv whose kernel and bias are known, followed by a chain of
/// inference BatchNormalizations and Muls and Adds by known scalars or per-channel values, each
/// the only reader of the value before it: the Conv with the chain folded into its kernel and
/// bias (new constants, bound in `scope`). Nothing otherwise.
std::optional<FoldedConv> FoldIntoConv(const ::onnx::GraphProto& graph, int i,
                                       const std::map<std::string, Readers>& readers, ValueScope& scope,
                                       int64_t opset);

/// What a converter sees of one node.
class Context {
 public:
  Context(Graph& g, const ::onnx::NodeProto& node, int64_t opset, std::vector<std::optional<Node>> inputs,
          std::vector<std::optional<Tensor>> constants, std::string where);

  Graph& graph() const { return g_; }
  int64_t opset() const { return opset_; }
  const ::onnx::NodeProto& node() const { return node_; }
  /// The number of inputs listed (absent optional ones included).
  int NumInputs() const { return static_cast<int>(inputs_.size()); }
  /// Whether input i is given (listed and not the empty name).
  bool Has(int i) const;
  /// Input i (kiln::Error when absent).
  Node In(int i) const;
  /// Input i's value when it is known at import (an initializer, a Constant or folded from
  /// them), else nothing.
  const std::optional<Tensor>& Constant(int i) const;
  /// Input i's value as int64s, which must be known at import (kiln::Error naming `what`).
  std::vector<int64_t> Ints(int i, const char* what) const;

  bool HasAttr(const std::string& name) const;
  int64_t Int(const std::string& name, int64_t fallback) const;
  float Float(const std::string& name, float fallback) const;
  std::string String(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> IntList(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> FloatList(const std::string& name) const;
  Tensor TensorAttr(const std::string& name) const;
  /// An attribute that must be given.
  const ::onnx::AttributeProto& Attr(const std::string& name) const;

  /// The seed for a random operator without a `seed` attribute (Model::WithRandomSeed), if any.
  const std::optional<uint64_t>& random_seed() const { return random_seed_; }
  void set_random_seed(uint64_t seed) { random_seed_ = seed; }

  /// A kiln::Error naming the node, its op type and the opset.
  [[noreturn]] void Fail(const std::string& what) const;

  // ---- For converters of subgraph attributes (If, Loop, Scan) ----

  /// The node is converted in a node walk (not folded): the subgraph methods below work.
  void set_walk(Walk* walk, ValueScope* scope) {
    walk_ = walk;
    scope_ = scope;
  }
  /// A graph attribute that must be given.
  const ::onnx::GraphProto& GraphAttr(const std::string& name) const;
  /// The enclosing names `bodies` read (through their nested subgraphs too) that are graph values,
  /// not constants, with their nodes: a kiln sub-program built from them must get these as
  /// operands or state (then bind them with Subgraph's `captured`).
  std::vector<std::pair<std::string, Node>> Captures(
      const std::vector<const ::onnx::GraphProto*>& bodies) const;
  /// Converts `body` into `g` (the node's graph to build it inline, else a sub-program's graph):
  /// its inputs bound to `inputs` in order, the names in `captured` to the given nodes of g; the
  /// node's other visible values are visible (constants anywhere, graph values only inline).
  /// Returns its outputs.
  std::vector<Value> Subgraph(const ::onnx::GraphProto& body, Graph& g, const std::vector<Value>& inputs,
                              const std::vector<std::pair<std::string, Node>>& captured = {}) const;

 private:
  const ::onnx::AttributeProto* Find(const std::string& name) const;
  Graph& g_;
  const ::onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<std::optional<Node>> inputs_;
  std::vector<std::optional<Tensor>> constants_;
  std::string where_;
  std::optional<uint64_t> random_seed_;
  Walk* walk_ = nullptr;
  ValueScope* scope_ = nullptr;
};

using Converter = std::vector<Node> (*)(const Context&);
/// Every converter, by ONNX op type (those of the training domain as "ai.onnx.preview.training:Adam").
const std::map<std::string, Converter>& Converters();

// Registration of each family (ops_*.cc).
void AddElementwiseConverters(std::map<std::string, Converter>& m);
void AddShapeConverters(std::map<std::string, Converter>& m);
void AddMathConverters(std::map<std::string, Converter>& m);
void AddNNConverters(std::map<std::string, Converter>& m);
void AddLossConverters(std::map<std::string, Converter>& m);
void AddResizeConverters(std::map<std::string, Converter>& m);
void AddSignalConverters(std::map<std::string, Converter>& m);
void AddQuantConverters(std::map<std::string, Converter>& m);
void AddRnnConverters(std::map<std::string, Converter>& m);
void AddSamplingConverters(std::map<std::string, Converter>& m);
void AddTextConverters(std::map<std::string, Converter>& m);
void AddDataDependentConverters(std::map<std::string, Converter>& m);
void AddTrainingConverters(std::map<std::string, Converter>& m);
void AddRandomConverters(std::map<std::string, Converter>& m);
void AddControlConverters(std::map<std::string, Converter>& m);

// ---- Helpers the converters share (convert.cc) ----

/// a and b with the smaller rank padded with leading size-1 axes (NumPy's broadcasting; kiln's
/// binary ops then broadcast the size-1 axes).
std::pair<Node, Node> SameRank(Node a, Node b);
/// ONNX's Gather: x's slices at `indices` (non-negative) along `axis`, the index axes in its place.
Node GatherAlongAxis(Node x, Node indices, int axis);
/// x with its last axis moved to position `axis`.
Node MoveLastAxisTo(Node x, int axis);
/// The [begin, end] padding of each spatial axis of x [N, C, spatial...] for a node's `auto_pad` /
/// `pads` attributes, with windows `k`, strides and dilations (ops_nn.cc; Conv, pooling, ConvInteger).
std::vector<std::array<int64_t, 2>> Paddings(const Context& c, Node x, const std::vector<int64_t>& k,
                                             const std::vector<int64_t>& strides,
                                             const std::vector<int64_t>& dilations);
/// int64 sizes as the ints kiln's convolution builders take.
std::vector<int> ToInts(const std::vector<int64_t>& v);
/// `axis` normalised for `rank` (negative from the end); the context fails when out of range.
int Axis(const Context& c, int64_t axis, int rank);

/// The most elements a converter computes on the host, or steps it unrolls, from sizes a model
/// declares (2^24): beyond, the model is refused rather than allocating gigabytes or hanging.
constexpr int64_t kMaxHostElements = int64_t{1} << 24;
/// a * b for non-negative sizes; the context fails (naming `what`) when the product overflows or
/// exceeds `limit`.
int64_t CheckedProduct(const Context& c, int64_t a, int64_t b, const char* what,
                       int64_t limit = kMaxHostElements);
/// Input i's value, which must be known when the model is imported (the context fails with that
/// phrase, naming `what`, when it is not).
const Tensor& KnownInput(const Context& c, int i, const char* what);
/// Static dimensions of x (the context fails on a dynamic one: `what` says who needed it).
std::vector<int64_t> StaticDims(const Context& c, Node x, const char* what);
/// An Int64 constant of `dims` holding `values`.
Node Int64Const(Graph& g, const std::vector<int64_t>& values, std::vector<int64_t> dims);
/// Activations shared by their ONNX operators and the recurrent layers' `activations`
/// (ops_elementwise.cc): LeakyRelu, Elu, HardSigmoid (clipped to [0, 1]), ThresholdedRelu and
/// Softsign of x.
Node LeakyReluOf(Node x, double alpha);
Node EluOf(Node x, double alpha);
Node HardSigmoidOf(Node x, double alpha, double beta);
Node ThresholdedReluOf(Node x, double alpha);
Node SoftsignOf(Node x);

}  // namespace kiln::onnx::internal
