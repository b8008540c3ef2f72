#pragma once
/// @file
/// ONNX models as kiln graphs (GoMLX's onnx-gomlx): read a model, call it inside a graph, read and
/// write ONNX tensors. Files are parsed with the ONNX project's own protobuf schema (Debian's
/// libonnx); every malformed input is a kiln::Error naming the file and what is wrong.

#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/core/shape.h"
#include "kiln/core/tensor.h"
#include "kiln/graph/graph.h"
#include "kiln/model/store.h"

namespace kiln::onnx {

/// An ONNX model: its graph, initializers (weights) and metadata. Copies share the model.
class Model {
 public:
  Model();
  /// The graph inputs the caller feeds, in graph order (inputs that are also initializers, which
  /// older exporters list, are left out: they are weights).
  const std::vector<std::string>& InputNames() const;
  /// The graph outputs, in order.
  const std::vector<std::string>& OutputNames() const;
  /// The inputs' shapes: symbolic dimensions ("batch") become named dynamic axes, unknown ones
  /// dynamic axes named after the input ("input.0").
  const std::vector<Shape>& InputShapes() const;
  /// The version of the default ("ai.onnx") operator set the model imports.
  int64_t Opset() const;
  /// The producer's name and version ("pytorch 2.1.0"), empty when the file has none.
  std::string Producer() const;
  /// The names of the initializers (weights), in file order.
  std::vector<std::string> InitializerNames() const;
  /// An initializer's value (kiln::Error when there is none of that name).
  Tensor Initializer(const std::string& name) const;

  /// Builds the model into `g`: `inputs` are the graph inputs in InputNames() order (their
  /// dtypes must match; dimensions are checked as the ops are built), the weights become
  /// constants. Returns the outputs in OutputNames() order. An operator kiln does not convert is
  /// a kiln::Error naming its type, the node and the opset.
  std::vector<graph::Node> CallGraph(graph::Graph& g, const std::vector<graph::Node>& inputs) const;
  /// CallGraph with the float initializers as variables of `scope` (created from the
  /// initializers' values when missing, named after them with '/' written '|'), so that a
  /// trainer fine-tunes them; the other initializers stay constants.
  std::vector<graph::Node> CallGraph(model::Scope scope, const std::vector<graph::Node>& inputs) const;
  /// Creates the variables CallGraph(scope, ...) reads, from the initializers (existing ones are
  /// kept).
  void VariablesToStore(model::Scope scope) const;
  /// Copies the variables' current values back into the initializers (of this model and every
  /// copy sharing it), for Write.
  void StoreToOnnx(model::Scope scope);
  /// Writes the model with its current initializers, atomically.
  void Write(const std::string& path) const;

  /// A copy of the model with the named inputs fixed to these values (GoMLX's
  /// WithInputsAsConstants): they leave InputNames() and become constants, so that sizes
  /// computed from them (a Reshape's shape fed as an input) are known when the graph is built.
  /// kiln::Error for a name that is not an input or a value of another dtype or rank.
  Model WithInputsAsConstants(const std::vector<std::pair<std::string, Tensor>>& values) const;
  /// A copy of the model whose random operators without a `seed` attribute (RandomUniform,
  /// Bernoulli, Dropout in training mode...) draw reproducible streams derived from `seed` and
  /// the node's position; by default each build of the graph draws fresh numbers.
  Model WithRandomSeed(uint64_t seed) const;

  /// The operator types kiln converts (every opset from 6 to 17 unless noted in docs/onnx.md).
  static std::vector<std::string> SupportedOps();

  struct Impl;

 private:
  explicit Model(std::shared_ptr<Impl> impl);
  std::vector<graph::Node> Build(graph::Graph& g, const std::vector<graph::Node>& inputs,
                                 const std::map<std::string, graph::Node>* weights) const;
  std::shared_ptr<Impl> impl_;
  friend Model ReadBytes(std::string_view bytes, const std::string& name, const std::string& dir);
};

/// A model function as the trainer takes it (train::ModelFn's signature): the scope holding the
/// variables, a spec (unused by Export) and the inputs.
using ExportFn = std::function<std::vector<graph::Node>(model::Scope scope, const std::any& spec,
                                                        std::vector<graph::Node> inputs)>;

/// Writes the model `fn` computes with the variables of `store` as an ONNX file (opset 17): the
/// inputs of `input_shapes` (dynamic axes become symbolic dimensions of their names), the
/// variables as initializers named by their paths, the outputs `output_0`... A primitive without
/// an ONNX equivalent in the exporter is a kiln::Error naming it. The write is atomic.
void Export(const model::Store& store, const ExportFn& fn, const std::vector<Shape>& input_shapes,
            const std::string& path);

/// Reads a .onnx file; tensors stored as external data are read from files beside it.
Model ReadFile(const std::string& path);
/// Parses a serialized ModelProto. `name` names it in errors; `dir` is where external data files
/// are looked up (empty: external data is an error).
Model ReadBytes(std::string_view bytes, const std::string& name = "<memory>", const std::string& dir = "");

/// Reads a serialized TensorProto (the .pb files of ONNX's test cases).
Tensor ReadTensorProto(const std::string& path);
/// Writes `tensor` as a serialized TensorProto, atomically.
void WriteTensorProto(const std::string& path, const Tensor& tensor, const std::string& name = "");

}  // namespace kiln::onnx
