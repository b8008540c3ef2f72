// Reading ONNX models and building them into kiln graphs: the node walk, the folding of values
// known at import, and the converters' Context.

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "kiln/compute/backend.h"
#include "kiln/graph/exec.h"
#include "kiln/onnx/onnx.h"
#include "onnx/convert.h"
#include "onnx/proto.h"

namespace kiln::onnx {

struct Model::Impl {
  std::shared_ptr<const ::onnx::ModelProto> model;  // Shared by the copies WithInputsAsConstants makes.
  const ::onnx::ModelProto& proto() const { return *model; }
  std::string name, dir;
  int64_t opset = 0;
  std::vector<std::string> input_names, output_names;
  std::vector<Shape> input_shapes;
  std::map<std::string, Tensor> initializers;
  std::vector<std::string> initializer_order;
  std::map<std::string, Tensor> fixed_inputs;  // WithInputsAsConstants.
  std::optional<uint64_t> random_seed;         // WithRandomSeed.
};

namespace {

using internal::IsDefaultDomain;

/// The operator domains kiln converts: the default one (IsDefaultDomain) and the training
/// optimizers.
const char* const kTrainingDomain = "ai.onnx.preview.training";

/// The version `m` imports of operator domain `domain` (0 when it imports none).
int64_t DomainOpset(const ::onnx::ModelProto& m, const std::string& domain) {
  // IR version 3 files may leave the imports out; ONNX then means opset 1 of the default domain.
  if (m.opset_import_size() == 0) return IsDefaultDomain(domain) ? 1 : 0;
  for (const auto& o : m.opset_import())
    if (IsDefaultDomain(o.domain()) ? IsDefaultDomain(domain) : o.domain() == domain) return o.version();
  return 0;
}

}  // namespace

Model::Model() : impl_(std::make_shared<Impl>()) {}
Model::Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

const std::vector<std::string>& Model::InputNames() const { return impl_->input_names; }
const std::vector<std::string>& Model::OutputNames() const { return impl_->output_names; }
const std::vector<Shape>& Model::InputShapes() const { return impl_->input_shapes; }
int64_t Model::Opset() const { return impl_->opset; }
std::string Model::Producer() const {
  const auto& p = impl_->proto();
  if (p.producer_name().empty()) return "";
  return p.producer_version().empty() ? p.producer_name() : p.producer_name() + " " + p.producer_version();
}
std::vector<std::string> Model::InitializerNames() const { return impl_->initializer_order; }
Tensor Model::Initializer(const std::string& name) const {
  auto it = impl_->initializers.find(name);
  if (it == impl_->initializers.end())
    detail::Throw("onnx::Model: {} has no initializer \"{}\"", impl_->name, name);
  return it->second;
}

Model ReadBytes(std::string_view bytes, const std::string& name, const std::string& dir) {
  auto impl = std::make_shared<Model::Impl>();
  impl->name = name;
  impl->dir = dir;
  const std::string where = "onnx: " + name;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    detail::Throw("{}: {} bytes is beyond protobuf's 2 GiB limit (store the weights as external data)", where,
                  bytes.size());
  auto proto = std::make_shared<::onnx::ModelProto>();
  if (!proto->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    detail::Throw("{}: not an ONNX model (the bytes do not parse as a ModelProto)", where);
  impl->model = proto;
  const ::onnx::ModelProto& m = *proto;
  if (!m.has_graph()) detail::Throw("{}: not an ONNX model (no graph)", where);
  impl->opset = DomainOpset(m, "");
  const ::onnx::GraphProto& g = m.graph();
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) detail::Throw("{}: an initializer has no name", where);
    if (impl->initializers.count(t.name()) != 0)
      detail::Throw("{}: initializer \"{}\" repeated", where, t.name());
    impl->initializers[t.name()] =
        internal::TensorFromProto(t, dir, fmt::format("{}: initializer \"{}\"", where, t.name()));
    impl->initializer_order.push_back(t.name());
  }
  for (const auto& in : g.input()) {
    if (impl->initializers.count(in.name()) != 0) continue;  // A weight listed as an input.
    impl->input_names.push_back(in.name());
    impl->input_shapes.push_back(internal::ShapeFromValueInfo(in, where));
  }
  for (const auto& out : g.output()) impl->output_names.push_back(out.name());
  if (impl->output_names.empty()) detail::Throw("{}: the graph has no outputs", where);
  return Model(std::move(impl));
}

Model ReadFile(const std::string& path) {
  const std::string bytes = io::ReadWholeFile(path, "onnx::ReadFile");
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir.push_back('.');
  return ReadBytes(bytes, path, dir);
}

namespace internal {

// ---- Context ----------------------------------------------------------------------------------

Context::Context(Graph& g, const ::onnx::NodeProto& node, int64_t opset,
                 std::vector<std::optional<Node>> inputs, std::vector<std::optional<Tensor>> constants,
                 std::string where)
    : g_(g),
      node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      constants_(std::move(constants)),
      where_(std::move(where)) {}

bool Context::Has(int i) const {
  return i >= 0 && i < NumInputs() && inputs_[static_cast<size_t>(i)].has_value();
}

Node Context::In(int i) const {
  if (!Has(i)) Fail(fmt::format("input {} is missing", i));
  return *inputs_[static_cast<size_t>(i)];
}

const std::optional<Tensor>& Context::Constant(int i) const {
  static const std::optional<Tensor> none;
  if (i < 0 || i >= NumInputs()) return none;
  return constants_[static_cast<size_t>(i)];
}

std::vector<int64_t> Context::Ints(int i, const char* what) const {
  const Tensor* t = &KnownInput(*this, i, what);
  if (!IsInt(t->dtype()))
    Fail(fmt::format("its {} (input {}) must be integers, got {}", what, i, t->shape()));
  if (t->dtype() == DType::Int64) return t->ToVector<int64_t>();  // Exact beyond 2^53.
  std::vector<int64_t> v;
  if (t->dtype() == DType::Uint64) {
    for (uint64_t u : t->ToVector<uint64_t>()) {
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        Fail(fmt::format("its {} (input {}) holds {}, beyond the int64 range", what, i, u));
      v.push_back(static_cast<int64_t>(u));
    }
    return v;
  }
  for (double d : t->ToDoubles()) v.push_back(static_cast<int64_t>(d));  // Exact: 32 bits or less.
  return v;
}

const ::onnx::AttributeProto* FindAttribute(const ::onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

const ::onnx::AttributeProto* Context::Find(const std::string& name) const {
  return FindAttribute(node_, name);
}
bool Context::HasAttr(const std::string& name) const { return Find(name) != nullptr; }
const ::onnx::AttributeProto& Context::Attr(const std::string& name) const {
  const auto* a = Find(name);
  if (a == nullptr) Fail(fmt::format("attribute \"{}\" is missing", name));
  return *a;
}
int64_t Context::Int(const std::string& name, int64_t fallback) const {
  const auto* a = Find(name);
  return a == nullptr ? fallback : a->i();
}
float Context::Float(const std::string& name, float fallback) const {
  const auto* a = Find(name);
  return a == nullptr ? fallback : a->f();
}
std::string Context::String(const std::string& name, const std::string& fallback) const {
  const auto* a = Find(name);
  return a == nullptr ? fallback : a->s();
}
std::vector<int64_t> Context::IntList(const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = Find(name);
  if (a == nullptr) return fallback;
  return {a->ints().begin(), a->ints().end()};
}
std::vector<float> Context::FloatList(const std::string& name) const {
  const auto* a = Find(name);
  if (a == nullptr) return {};
  return {a->floats().begin(), a->floats().end()};
}
Tensor Context::TensorAttr(const std::string& name) const {
  const auto& a = Attr(name);
  if (!a.has_t()) Fail(fmt::format("attribute \"{}\" is not a tensor", name));
  return TensorFromProto(a.t(), "", where_ + " attribute " + name);
}

void Context::Fail(const std::string& what) const {
  detail::Throw("{}: node \"{}\" ({}, opset {}): {}", where_, node_.name(), node_.op_type(), opset_, what);
}

// ---- Helpers ---------------------------------------------------------------------------------

std::pair<Node, Node> SameRank(Node a, Node b) {
  const int rank = std::max(a.rank(), b.rank());
  return {graph::ExpandLeftToRank(a, rank), graph::ExpandLeftToRank(b, rank)};
}

int64_t CheckedProduct(const Context& c, int64_t a, int64_t b, const char* what, int64_t limit) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > limit)
    c.Fail(fmt::format("{} ({} x {}) is beyond the {} elements kiln computes or unrolls at import", what, a,
                       b, limit));
  return r;
}

const Tensor& KnownInput(const Context& c, int i, const char* what) {
  const std::optional<Tensor>& t = c.Constant(i);
  if (!t) c.Fail(fmt::format("its {} (input {}) must be known when the model is imported", what, i));
  return *t;
}

std::vector<int64_t> StaticDims(const Context& c, Node x, const char* what) {
  for (int64_t d : x.shape().Dimensions())
    if (d == Shape::kDynamic) c.Fail(fmt::format("{} needs static dimensions, got {}", what, x.shape()));
  return x.shape().Dimensions();
}

Node Int64Const(Graph& g, const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  return graph::Const(g, Tensor::FromFlat(Shape(DType::Int64, std::move(dims)), values));
}

int Axis(const Context& c, int64_t axis, int rank) {
  if (axis < -rank || axis >= std::max(rank, 1))
    c.Fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

const std::map<std::string, Converter>& Converters() {
  static const std::map<std::string, Converter> m = [] {
    std::map<std::string, Converter> r;
    AddElementwiseConverters(r);
    AddShapeConverters(r);
    AddMathConverters(r);
    AddNNConverters(r);
    AddLossConverters(r);
    AddResizeConverters(r);
    AddSignalConverters(r);
    AddQuantConverters(r);
    AddRnnConverters(r);
    AddSamplingConverters(r);
    AddTextConverters(r);
    AddDataDependentConverters(r);
    AddTrainingConverters(r);
    AddRandomConverters(r);
    AddControlConverters(r);
    return r;
  }();
  return m;
}

namespace {

/// Ops whose outputs are not a function of their inputs alone: never folded.
bool Foldable(const std::string& op) {
  return op.rfind("Random", 0) != 0 && op != "Dropout" && op != "Bernoulli" && op != "Multinomial";
}

/// Whether `node` has subgraph attributes (If, Loop, Scan): those read values of the enclosing
/// scopes by name, so the node is never folded from its inputs alone.
bool HasSubgraphs(const ::onnx::NodeProto& node) {
  for (const auto& a : node.attribute())
    if (a.has_g() || a.graphs_size() > 0) return true;
  return false;
}

/// The outputs of `node` with every input a known constant: the converter run once on the
/// reference backend.
std::vector<Tensor> Fold(const ::onnx::NodeProto& node, Converter convert, int64_t opset,
                         const std::vector<std::optional<Tensor>>& constants, const std::string& where) {
  static const compute::BackendPtr ref = compute::NewWithConfig("ref");
  return graph::ExecOnce(ref, [&](Graph& g) {
    std::vector<std::optional<Node>> inputs;
    for (const auto& t : constants)
      inputs.push_back(t ? std::optional<Node>(graph::Const(g, *t)) : std::nullopt);
    Context c(g, node, opset, std::move(inputs), constants, where);
    return convert(c);
  });
}

}  // namespace

/// Adds to `out` the names `graph` reads that it does not define (its inputs, initializers and
/// node outputs), through its nested subgraphs too: the values it takes from enclosing scopes.
void OuterNames(const ::onnx::GraphProto& graph, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& in : graph.input()) defined.insert(in.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  auto read = [&](const std::string& name) {
    if (!name.empty() && defined.count(name) == 0) out.insert(name);
  };
  for (const auto& node : graph.node()) {
    for (const std::string& name : node.input()) read(name);
    for (const auto& a : node.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) OuterNames(a.g(), inner);
      for (const auto& sub : a.graphs()) OuterNames(sub, inner);
      for (const std::string& name : inner) read(name);
    }
    for (const std::string& name : node.output()) defined.insert(name);
  }
  for (const auto& o : graph.output()) read(o.name());
}

// ---- ValueScope ---------------------------------------------------------------------------------

void ValueScope::Bind(const std::string& name, const Value& v) {
  if (v.constant) {
    constants_[name] = *v.constant;
    values_.erase(name);
    if (v.node.Ok() && &v.node.graph() == &g_) values_[name] = v.node;
  } else {
    if (!v.node.Ok()) detail::Throw("onnx: value \"{}\" is bound to an invalid node", name);
    values_[name] = v.node;
    constants_.erase(name);
  }
}

bool ValueScope::Has(const std::string& name) const {
  for (const ValueScope* s = this; s != nullptr; s = s->parent_)
    if (s->constants_.count(name) != 0 || s->values_.count(name) != 0) return true;
  return false;
}

std::optional<Tensor> ValueScope::Known(const std::string& name) const {
  for (const ValueScope* s = this; s != nullptr; s = s->parent_) {
    if (auto c = s->constants_.find(name); c != s->constants_.end()) return c->second;
    if (s->values_.count(name) != 0) return std::nullopt;
  }
  return std::nullopt;
}

std::optional<Node> ValueScope::NodeOf(const std::string& name) {
  for (ValueScope* s = this; s != nullptr; s = s->parent_) {
    auto v = s->values_.find(name);
    const bool same_graph = &s->g_ == &g_;
    if (auto c = s->constants_.find(name); c != s->constants_.end()) {
      if (v != s->values_.end() && same_graph) return v->second;
      // A constant: its Const node made in this graph, kept where this graph sees it (with the
      // value, so that it stays known here).
      Node n = graph::Const(g_, c->second);
      if (same_graph) {
        s->values_[name] = n;
      } else {
        values_[name] = n;
        constants_[name] = c->second;
      }
      return n;
    }
    if (v != s->values_.end()) {
      if (!same_graph)
        detail::Throw(
            "onnx: value \"{}\" of an enclosing graph is read inside a sub-program it was not passed to",
            name);
      return v->second;
    }
  }
  return std::nullopt;
}

// ---- The node walk ----------------------------------------------------------------------------

std::vector<Value> ConvertGraph(Walk& walk, const ::onnx::GraphProto& graph, ValueScope& scope,
                                const std::string& where, bool skip_initializers) {
  if (!skip_initializers) {
    for (const auto& t : graph.initializer()) {
      if (t.name().empty()) detail::Throw("{}: an initializer has no name", where);
      scope.BindConstant(
          t.name(), TensorFromProto(t, walk.dir, fmt::format("{}: initializer \"{}\"", where, t.name())));
    }
  }
  const auto& converters = Converters();
  // Import-time fusions into convolutions need each value's readers.
  std::map<std::string, Readers> readers;
  const bool has_conv = std::any_of(graph.node().begin(), graph.node().end(),
                                    [](const auto& n) { return n.op_type() == "Conv"; });
  if (has_conv) readers = CountReaders(graph);
  std::set<int> skipped;
  for (int index = 0; index < graph.node_size(); ++index) {
    if (skipped.count(index) != 0) {
      ++walk.nodes;  // Folded into the node before it; counted, so later nodes' seeds stay put.
      continue;
    }
    std::optional<FoldedConv> folded_conv;
    if (has_conv && IsDefaultDomain(graph.node(index).domain()))
      folded_conv = FoldIntoConv(graph, index, readers, scope, walk.opset);
    if (folded_conv) skipped.insert(folded_conv->skip.begin(), folded_conv->skip.end());
    const ::onnx::NodeProto& node = folded_conv ? folded_conv->node : graph.node(index);
    const uint64_t node_index = ++walk.nodes;
    // Unrolled loops (nested ones multiply) are bounded as a whole.
    if (walk.nodes > kMaxConvertedNodes)
      detail::Throw("{}: the model converts to more than {} nodes (loops unrolled included); kiln refuses it",
                    where, kMaxConvertedNodes);
    const bool training = node.domain() == kTrainingDomain;
    if (!IsDefaultDomain(node.domain()) && !training)
      detail::Throw("{}: node \"{}\" ({}) is in operator domain \"{}\", which kiln does not convert", where,
                    node.name(), node.op_type(), node.domain());
    const int64_t opset = training ? DomainOpset(*walk.model, kTrainingDomain) : walk.opset;
    if (opset <= 0)
      detail::Throw(
          "{}: node \"{}\" ({}) is in operator domain \"{}\", of which the model imports no version", where,
          node.name(), node.op_type(), training ? kTrainingDomain : "ai.onnx");
    auto conv =
        converters.find(training ? std::string(kTrainingDomain) + ":" + node.op_type() : node.op_type());
    if (conv == converters.end())
      detail::Throw("{}: node \"{}\": operator {} (opset {}) is not supported", where, node.name(),
                    node.op_type(), opset);
    std::vector<std::optional<Tensor>> known;
    bool all_known = true;
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        known.emplace_back();
        continue;
      }
      if (!scope.Has(name))
        detail::Throw(
            "{}: node \"{}\" ({}) reads \"{}\", which no earlier node, input or initializer defines", where,
            node.name(), node.op_type(), name);
      known.push_back(scope.Known(name));
      if (!known.back()) all_known = false;
    }
    if (all_known && Foldable(node.op_type()) && !HasSubgraphs(node)) {
      std::vector<Tensor> folded = Fold(node, conv->second, opset, known, where);
      for (size_t k = 0; k < folded.size() && k < static_cast<size_t>(node.output_size()); ++k)
        if (!node.output(static_cast<int>(k)).empty())
          scope.BindConstant(node.output(static_cast<int>(k)), folded[k]);
      continue;
    }
    std::vector<std::optional<Node>> ins;
    for (const std::string& name : node.input())
      ins.push_back(name.empty() ? std::nullopt : scope.NodeOf(name));
    Graph& g = scope.graph();
    Context c(g, node, opset, std::move(ins), known, where);
    c.set_walk(&walk, &scope);
    if (walk.random_seed) c.set_random_seed(*walk.random_seed * 0x9E3779B97F4A7C15ull + node_index);
    const std::vector<Node> outs = conv->second(c);
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& name = node.output(k);
      if (name.empty()) continue;
      if (static_cast<size_t>(k) >= outs.size() || !outs[static_cast<size_t>(k)].Ok())
        c.Fail(fmt::format("output {} (\"{}\") is not produced", k, name));
      const Node out = outs[static_cast<size_t>(k)];
      if (&out.graph() != &g) c.Fail(fmt::format("output {} (\"{}\") is a node of another graph", k, name));
      // A value the converter knew (Shape of a static input): a constant for the nodes after.
      const compute::Instruction& inst = g.instruction(out.id());
      scope.Bind(name,
                 Value{out, inst.op == compute::OpType::Constant ? std::optional<Tensor>(inst.attrs.literal)
                                                                 : std::nullopt});
    }
  }
  std::vector<Value> result;
  for (const auto& o : graph.output()) {
    std::optional<Node> n = scope.NodeOf(o.name());
    if (!n) detail::Throw("{}: output \"{}\" is not computed by any node", where, o.name());
    result.push_back(Value{*n, scope.Known(o.name())});
  }
  return result;
}

// ---- Context: subgraphs -----------------------------------------------------------------------

const ::onnx::GraphProto& Context::GraphAttr(const std::string& name) const {
  const auto& a = Attr(name);
  if (!a.has_g()) Fail(fmt::format("attribute \"{}\" is not a graph", name));
  return a.g();
}

std::vector<std::pair<std::string, Node>> Context::Captures(
    const std::vector<const ::onnx::GraphProto*>& bodies) const {
  if (scope_ == nullptr) Fail("subgraphs can only be converted in a node walk");
  std::set<std::string> names;
  for (const auto* b : bodies) OuterNames(*b, names);
  std::vector<std::pair<std::string, Node>> r;
  for (const std::string& name : names) {
    if (!scope_->Has(name))
      Fail(fmt::format("a subgraph reads \"{}\", which no earlier node, input or initializer defines", name));
    if (scope_->Known(name)) continue;
    r.emplace_back(name, *scope_->NodeOf(name));
  }
  return r;
}

std::vector<Value> Context::Subgraph(const ::onnx::GraphProto& body, Graph& g,
                                     const std::vector<Value>& inputs,
                                     const std::vector<std::pair<std::string, Node>>& captured) const {
  if (scope_ == nullptr || walk_ == nullptr) Fail("subgraphs can only be converted in a node walk");
  if (inputs.size() != static_cast<size_t>(body.input_size()))
    Fail(fmt::format("subgraph \"{}\" takes {} inputs, {} given", body.name(), body.input_size(),
                     inputs.size()));
  ValueScope inner(g, scope_);
  for (const auto& [name, n] : captured) inner.BindNode(name, n);
  for (int i = 0; i < body.input_size(); ++i)
    inner.Bind(body.input(i).name(), inputs[static_cast<size_t>(i)]);
  return ConvertGraph(*walk_, body, inner, fmt::format("{}: subgraph \"{}\"", where_, body.name()));
}

}  // namespace internal

std::vector<graph::Node> Model::CallGraph(graph::Graph& g, const std::vector<graph::Node>& inputs) const {
  return Build(g, inputs, nullptr);
}

namespace {

/// The variable name of initializer `name`: '/' (a scope separator in kiln) becomes '|'.
std::string VariableName(std::string name) {
  std::replace(name.begin(), name.end(), '/', '|');
  return name;
}

/// Float initializers become variables (weights that train); the others stay constants, so that
/// the sizes they hold are known when the graph is built.
bool IsWeight(const Tensor& t) { return IsFloat(t.dtype()); }

}  // namespace

std::vector<graph::Node> Model::CallGraph(model::Scope scope, const std::vector<graph::Node>& inputs) const {
  if (inputs.empty() || !inputs[0].Ok())
    detail::Throw("onnx: {}: CallGraph with a scope needs the model's inputs (the graph is theirs)",
                  impl_->name);
  graph::Graph& g = inputs[0].graph();
  std::map<std::string, graph::Node> weights;
  for (const auto& [name, value] : impl_->initializers)
    if (IsWeight(value))
      weights.emplace(name, scope.VariableWithValue(VariableName(name), value).NodeValue(g));
  return Build(g, inputs, &weights);
}

void Model::VariablesToStore(model::Scope scope) const {
  for (const std::string& name : impl_->initializer_order) {
    const Tensor& value = impl_->initializers.at(name);
    if (IsWeight(value)) scope.VariableWithValue(VariableName(name), value);
  }
}

void Model::StoreToOnnx(model::Scope scope) {
  for (auto& [name, value] : impl_->initializers) {
    if (!IsWeight(value)) continue;
    const model::Variable v = scope.InspectVariable(VariableName(name));
    if (!v.Ok())
      detail::Throw(
          "onnx: {}: StoreToOnnx: scope {} has no variable for initializer \"{}\" (VariablesToStore makes "
          "them)",
          impl_->name, scope.Path(), name);
    const Tensor t = v.Value();
    if (t.shape() != value.shape())
      detail::Throw("onnx: {}: StoreToOnnx: variable {} is {}, initializer \"{}\" is {}", impl_->name,
                    v.Path(), t.shape(), name, value.shape());
    value = t.Clone();
  }
}

void Model::Write(const std::string& path) const {
  ::onnx::ModelProto proto = impl_->proto();
  ::onnx::GraphProto* g = proto.mutable_graph();
  g->clear_initializer();
  for (const std::string& name : impl_->initializer_order)
    *g->add_initializer() = internal::TensorToProto(impl_->initializers.at(name), name);
  internal::WriteMessage(proto, path, "onnx::Model::Write");
}

std::vector<graph::Node> Model::Build(graph::Graph& g, const std::vector<graph::Node>& inputs,
                                      const std::map<std::string, graph::Node>* weights) const {
  const Impl& m = *impl_;
  const std::string where = "onnx: " + m.name;
  if (inputs.size() != m.input_names.size())
    detail::Throw("{}: CallGraph got {} inputs, the model takes {} ({})", where, inputs.size(),
                  m.input_names.size(), fmt::join(m.input_names, ", "));
  internal::ValueScope scope(g, nullptr);
  for (const auto& [name, value] : m.initializers) scope.BindConstant(name, value);
  // Variables' values are graph values, not constants: nothing reading them is folded.
  if (weights != nullptr)
    for (const auto& [name, node] : *weights) scope.BindNode(name, node);
  for (const auto& [name, value] : m.fixed_inputs) scope.BindConstant(name, value);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].Ok())
      detail::Throw("{}: input {} (\"{}\") is an invalid node", where, i, m.input_names[i]);
    if (inputs[i].dtype() != m.input_shapes[i].dtype())
      detail::Throw("{}: input \"{}\" must be {}, got {}", where, m.input_names[i], m.input_shapes[i],
                    inputs[i].shape());
    if (inputs[i].rank() != m.input_shapes[i].Rank())
      detail::Throw("{}: input \"{}\" must have rank {} ({}), got {}", where, m.input_names[i],
                    m.input_shapes[i].Rank(), m.input_shapes[i], inputs[i].shape());
    for (int a = 0; a < inputs[i].rank(); ++a) {
      const int64_t want = m.input_shapes[i].Dimensions()[static_cast<size_t>(a)];
      const int64_t got = inputs[i].shape().Dimensions()[static_cast<size_t>(a)];
      if (want != Shape::kDynamic && got != Shape::kDynamic && got != want)
        detail::Throw("{}: input \"{}\" must be {}, got {} (axis {} differs)", where, m.input_names[i],
                      m.input_shapes[i], inputs[i].shape(), a);
    }
    scope.BindNode(m.input_names[i], inputs[i]);
  }
  internal::Walk walk;
  walk.model = &m.proto();
  walk.opset = m.opset;
  walk.dir = m.dir;
  walk.random_seed = m.random_seed;
  // The main graph's initializers are the model's (read once, possibly replaced by variables).
  std::vector<internal::Value> outs =
      internal::ConvertGraph(walk, m.proto().graph(), scope, where, /*skip_initializers=*/true);
  std::vector<graph::Node> result;
  for (const internal::Value& v : outs) result.push_back(v.node);
  return result;
}

Model Model::WithInputsAsConstants(const std::vector<std::pair<std::string, Tensor>>& values) const {
  auto impl = std::make_shared<Impl>(*impl_);
  for (const auto& [name, value] : values) {
    auto it = std::find(impl->input_names.begin(), impl->input_names.end(), name);
    if (it == impl->input_names.end())
      detail::Throw("onnx::Model::WithInputsAsConstants: {} has no input \"{}\" (inputs: {})", impl->name,
                    name, fmt::join(impl->input_names, ", "));
    const size_t i = static_cast<size_t>(it - impl->input_names.begin());
    const Shape& want = impl->input_shapes[i];
    if (!value.Ok() || value.dtype() != want.dtype() || value.shape().Rank() != want.Rank())
      detail::Throw("onnx::Model::WithInputsAsConstants: input \"{}\" must be {}, got {}", name, want,
                    value.Ok() ? value.shape().ToString() : "an empty tensor");
    impl->fixed_inputs[name] = value;
    impl->input_names.erase(it);
    impl->input_shapes.erase(impl->input_shapes.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return Model(std::move(impl));
}

Model Model::WithRandomSeed(uint64_t seed) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->random_seed = seed;
  return Model(std::move(impl));
}

std::vector<std::string> Model::SupportedOps() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : internal::Converters()) ops.push_back(name);
  return ops;
}

}  // namespace kiln::onnx
