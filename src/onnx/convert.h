#pragma once
// The graph builder: one converter per ONNX operator type, each turning a NodeProto into kiln
// graph ops through a Context that hands it inputs, constant values and attributes.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/ops.h"
#include "onnx/proto.h"

namespace kiln::onnx::internal {

using graph::Graph;
using graph::Node;

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

 private:
  const ::onnx::AttributeProto* Find(const std::string& name) const;
  Graph& g_;
  const ::onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<std::optional<Node>> inputs_;
  std::vector<std::optional<Tensor>> constants_;
  std::string where_;
  std::optional<uint64_t> random_seed_;
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

// ---- Helpers the converters share (convert.cc) ----

/// a and b with the smaller rank padded with leading size-1 axes (NumPy's broadcasting; kiln's
/// binary ops then broadcast the size-1 axes).
std::pair<Node, Node> SameRank(Node a, Node b);
/// ONNX's Gather: x's slices at `indices` (non-negative) along `axis`, the index axes in its place.
Node GatherAlongAxis(Node x, Node indices, int axis);
/// x with its last axis moved to position `axis`.
Node MoveLastAxisTo(Node x, int axis);
/// `axis` normalised for `rank` (negative from the end); the context fails when out of range.
int Axis(const Context& c, int64_t axis, int rank);

}  // namespace kiln::onnx::internal
