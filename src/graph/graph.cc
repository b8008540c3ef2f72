#include "kiln/graph/graph.h"

#include <algorithm>

#include "compute/shape_rules.h"
#include "core/check.h"
#include "kiln/compute/shape_inference.h"

namespace kiln::graph {

const Shape& Node::shape() const {
  if (graph_ == nullptr) kiln::detail::Throw("Node: use of an invalid (default-constructed) node");
  return graph_->instruction(id_).shape;
}

Graph& Node::graph() const {
  if (graph_ == nullptr) kiln::detail::Throw("Node: use of an invalid (default-constructed) node");
  return *graph_;
}

compute::OpType Node::op() const { return graph().instruction(id_).op; }

std::vector<Node> Node::operands() const {
  std::vector<Node> result;
  for (int o : graph().instruction(id_).operands) result.push_back(Node(graph_, o));
  return result;
}

std::string Node::ToString() const {
  if (graph_ == nullptr) return "<invalid node>";
  const compute::Instruction& inst = graph_->instruction(id_);
  std::vector<std::string> operands;
  for (int o : inst.operands) operands.push_back(fmt::format("#{}", o));
  return fmt::format("#{} {}({}) -> {}", id_, compute::FormatOp(inst.op, inst.attrs),
                     fmt::join(operands, ", "), inst.shape);
}

Graph::Graph(std::string name) : name_(std::move(name)) {}
Graph::~Graph() = default;

void Graph::SetReplicas(int replicas) {
  if (replicas < 1) kiln::detail::Throw("Graph \"{}\": SetReplicas({}): at least 1 replica", name_, replicas);
  replicas_ = replicas;
}

Graph::CallFrame Graph::PopCallFrame() {
  if (call_frames_.empty()) kiln::detail::Throw("Graph \"{}\": no function call is being traced", name_);
  CallFrame f = std::move(call_frames_.back());
  call_frames_.pop_back();
  return f;
}

Node Graph::Parameter(const Shape& shape, const std::string& name) {
  if (!shape.Ok()) kiln::detail::Throw("Graph \"{}\": parameter \"{}\" has an invalid shape", name_, name);
  if (!call_frames_.empty()) {
    // Tracing a Function call: the parameter is the call's next input.
    CallFrame& f = call_frames_.back();
    if (f.next >= f.inputs.size())
      kiln::detail::Throw(
          "function \"{}\": parameter \"{}\" is its parameter {}, but it was called with {} inputs",
          f.function, name, f.next, f.inputs.size());
    Node in = f.inputs[f.next++];
    const bool fits = f.elementwise ? shape.IsScalar() : shape.Dimensions() == in.shape().Dimensions();
    if (in.dtype() != shape.dtype() || !fits)
      kiln::detail::Throw("function \"{}\": parameter {} (\"{}\") is declared {}{}, but the call passes {}",
                          f.function, f.next - 1, name, shape,
                          f.elementwise ? " (comparator parameters are scalars)" : "", in.shape());
    return in;
  }
  compute::OpAttributes attrs;
  attrs.index = static_cast<int64_t>(parameters_.size());
  attrs.shape = shape;
  if (shape.IsDynamic()) {
    // Every dynamic axis of a graph has a name: what its size is found by when the program runs.
    std::vector<std::string> names;
    for (int a = 0; a < shape.Rank(); ++a) {
      std::string n = shape.AxisName(a);
      if (n.empty() && shape.Dim(a) == Shape::kDynamic) n = fmt::format("p{}.{}", attrs.index, a);
      names.push_back(n);
    }
    attrs.shape = Shape::MakeDynamic(shape.dtype(), shape.Dimensions(), std::move(names));
  }
  Node node = AddOp(compute::OpType::Parameter, {}, std::move(attrs));
  parameters_.push_back(node.id());
  parameter_names_.push_back(name);
  return node;
}

Node Graph::ParameterNode(int index) const {
  if (index < 0 || index >= NumParameters()) {
    kiln::detail::Throw("Graph \"{}\": parameter {} does not exist ({} parameters)", name_, index,
                        NumParameters());
  }
  return Node(const_cast<Graph*>(this), parameters_[static_cast<size_t>(index)]);
}

Node Graph::NodeAt(int id) {
  if (id < 0 || id >= NumNodes()) kiln::detail::Throw("Graph \"{}\": node #{} does not exist", name_, id);
  return Node(this, id);
}

void Graph::CollectOperands(compute::OpType op, const std::vector<Node>& operands, std::vector<Shape>& shapes,
                            std::vector<int>& ids) const {
  shapes.reserve(operands.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    const Node& n = operands[i];
    if (!n.Ok())
      kiln::detail::Throw("{}: operand {} is an invalid (default-constructed) node", compute::OpName(op), i);
    if (n.graph_ != this) {
      kiln::detail::Throw("{}: operand {} belongs to graph \"{}\", not to \"{}\"", compute::OpName(op), i,
                          n.graph_->name(), name_);
    }
    shapes.push_back(instructions_[static_cast<size_t>(n.id_)].shape);
    ids.push_back(n.id_);
  }
}

Node Graph::AddOp(compute::OpType op, const std::vector<Node>& operands, compute::OpAttributes attrs) {
  std::vector<Shape> shapes;
  std::vector<int> ids;
  CollectOperands(op, operands, shapes, ids);
  Shape shape;
  const compute::Instruction* tuple = op == compute::OpType::GetTupleElement && ids.size() == 1
                                          ? &instructions_[static_cast<size_t>(ids[0])]
                                          : nullptr;
  if (tuple != nullptr && tuple->IsTuple()) {
    shape = compute::InferTupleElementShape(tuple->tuple_shapes, attrs);
  } else {
    shape = compute::InferShape(op, shapes, attrs);
  }
  PushFlags(ids);
  instructions_.push_back(
      compute::Instruction{op, std::move(ids), std::move(attrs), std::move(shape), {}, {}});
  return Node(this, NumNodes() - 1);
}

std::vector<Node> Graph::AddTupleOp(compute::OpType op, const std::vector<Node>& operands,
                                    compute::OpAttributes attrs,
                                    std::vector<std::shared_ptr<const compute::Program>> subprograms) {
  std::vector<Shape> shapes;
  std::vector<int> ids;
  CollectOperands(op, operands, shapes, ids);
  std::vector<Shape> results = compute::InferTupleShapes(op, shapes, attrs, subprograms);
  PushFlags(ids);
  instructions_.push_back(
      compute::Instruction{op, std::move(ids), std::move(attrs), Shape(), std::move(subprograms), results});
  const int tuple = NumNodes() - 1;
  std::vector<Node> nodes;
  for (size_t i = 0; i < results.size(); ++i) {
    compute::OpAttributes at;
    at.index = static_cast<int64_t>(i);
    PushFlags({tuple});
    instructions_.push_back(
        compute::Instruction{compute::OpType::GetTupleElement, {tuple}, at, results[i], {}, {}});
    nodes.push_back(Node(this, NumNodes() - 1));
  }
  return nodes;
}

std::shared_ptr<const compute::Program> Graph::Build(const std::vector<Node>& outputs,
                                                     const std::vector<bool>& donatable) const {
  if (outputs.empty()) kiln::detail::Throw("Graph \"{}\": no outputs to build", name_);
  // Keep what the outputs need, plus every parameter (the inputs are part of the signature).
  std::vector<bool> live(instructions_.size(), false);
  for (int p : parameters_) live[static_cast<size_t>(p)] = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Node& n = outputs[i];
    if (!n.Ok() || n.graph_ != this)
      kiln::detail::Throw("Graph \"{}\": output {} is not a node of this graph", name_, i);
    live[static_cast<size_t>(n.id_)] = true;
  }
  for (size_t id = instructions_.size(); id-- > 0;) {
    if (!live[id]) continue;
    for (int o : instructions_[id].operands) live[static_cast<size_t>(o)] = true;
  }
  std::vector<int> renumber(instructions_.size(), -1);
  std::vector<compute::Instruction> kept;
  for (size_t id = 0; id < instructions_.size(); ++id) {
    if (!live[id]) continue;
    compute::Instruction inst = instructions_[id];
    for (int& o : inst.operands) o = renumber[static_cast<size_t>(o)];
    renumber[id] = static_cast<int>(kept.size());
    kept.push_back(std::move(inst));
  }
  std::vector<int> outs;
  for (const Node& n : outputs) outs.push_back(renumber[static_cast<size_t>(n.id_)]);
  return std::make_shared<const compute::Program>(std::move(kept), std::move(outs), donatable);
}

void Graph::PushFlags(const std::vector<int>& operand_ids) {
  uint8_t f = 0;
  if (remat_inheritance_) {
    for (int o : operand_ids)
      if (Flag(o, kRemat)) f = kRemat;
  }
  flags_.push_back(f);
  // The node about to be appended records where it was built (Node::Trace).
  if (traced_) traces_.emplace(static_cast<int>(flags_.size()) - 1, Error("built at"));
}

void Graph::SetCustomGradient(Node n, CustomGradientFn fn) {
  if (!n.Ok() || n.graph_ != this)
    kiln::detail::Throw("Graph \"{}\": custom gradient for a node of another graph", name_);
  custom_gradients_[n.id_] = std::move(fn);
}

const Graph::CustomGradientFn* Graph::CustomGradient(int id) const {
  auto it = custom_gradients_.find(id);
  return it == custom_gradients_.end() ? nullptr : &it->second;
}

void Graph::MarkCheckpoint(Node n, bool rematerialize) {
  if (!n.Ok() || n.graph_ != this)
    kiln::detail::Throw("Graph \"{}\": checkpoint of a node of another graph", name_);
  flags_[static_cast<size_t>(n.id_)] = static_cast<uint8_t>(kCheckpoint | (rematerialize ? kRemat : 0));
}

std::string Graph::ToString() const {
  std::string s = fmt::format("Graph \"{}\" ({} nodes)\n", name_, instructions_.size());
  for (int id = 0; id < NumNodes(); ++id) s += "  " + Node(const_cast<Graph*>(this), id).ToString() + "\n";
  return s;
}

}  // namespace kiln::graph
