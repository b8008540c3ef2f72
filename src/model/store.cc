// model::Store: variables in creation order, hyperparameters by scope, the random-number state,
// the global step, and the one-graph initialisation of new variables.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/check.h"
#include "core/checked.h"
#include "kiln/compute/backend.h"
#include "kiln/graph/ops.h"
#include "kiln/graph/random.h"
#include "model/model_internal.h"

namespace kiln::model {

using detail::StoreData;
using detail::VariableData;

namespace detail {

std::string JoinPath(const std::string& scope, const std::string& name, const char* what) {
  if (name.empty()) kiln::detail::Throw("{}: empty name in scope \"{}\"", what, scope);
  if (name.find('/') != std::string::npos)
    kiln::detail::Throw("{}: name \"{}\" contains '/' (enter sub-scopes with In)", what, name);
  return scope == "/" ? "/" + name : scope + "/" + name;
}

}  // namespace detail

Initializer DefaultInitializer() {
  return [](graph::Graph& g, graph::Node& rng, const Shape& shape) -> graph::Node {
    if (shape.Rank() <= 1 || !IsFloat(shape.dtype())) return graph::Zeros(g, shape);
    int64_t fan_in = 1;
    for (int a = 0; a + 1 < shape.Rank(); ++a) fan_in *= shape.Dimensions()[static_cast<size_t>(a)];
    const double limit = std::sqrt(6.0 / static_cast<double>(std::max<int64_t>(fan_in, 1)));
    auto [next, u] = graph::RandomUniform(rng, Shape(DType::Float32, shape.Dimensions()));
    rng = next;
    graph::Node v = u * (2 * limit) - limit;
    return shape.dtype() == DType::Float32 ? v : graph::ConvertDType(v, shape.dtype());
  };
}

Store::Store() : data_(std::make_shared<StoreData>()) {}

Scope Store::RootScope() const { return Scope(*this, "/"); }

std::vector<Variable> Store::Variables() const {
  std::lock_guard lock(data_->mu);
  std::vector<Variable> out;
  for (const auto& v : data_->variables) out.emplace_back(v);
  return out;
}

Variable Store::FindVariable(const std::string& path) const {
  std::lock_guard lock(data_->mu);
  auto it = data_->by_path.find(path);
  return it == data_->by_path.end() ? Variable() : Variable(it->second);
}

Variable Store::GetVariable(const std::string& path) const {
  Variable v = FindVariable(path);
  if (!v.Ok()) kiln::detail::Throw("Store: no variable \"{}\" ({} variables)", path, data_->variables.size());
  return v;
}

void Store::DeleteVariable(const std::string& path) {
  std::lock_guard lock(data_->mu);
  auto it = data_->by_path.find(path);
  if (it == data_->by_path.end()) kiln::detail::Throw("Store: cannot delete \"{}\": no such variable", path);
  auto& vars = data_->variables;
  vars.erase(std::remove(vars.begin(), vars.end(), it->second), vars.end());
  data_->by_path.erase(it);
}

int64_t Store::NumParameters() const {
  std::lock_guard lock(data_->mu);
  int64_t n = 0;
  for (const auto& v : data_->variables) n += v->shape.Size();
  return n;
}

int64_t Store::ByteSize() const {
  std::lock_guard lock(data_->mu);
  int64_t n = 0;
  for (const auto& v : data_->variables) n += v->shape.ByteSize();
  return n;
}

void Store::SetParamValue(const std::string& scope_path, const std::string& key, ParamValue value) const {
  if (key.empty()) kiln::detail::Throw("SetParam: empty key at scope \"{}\"", scope_path);
  std::lock_guard lock(data_->mu);
  data_->params[{scope_path, key}] = std::move(value);
}

std::optional<ParamValue> Store::GetParamAt(const std::string& scope_path, const std::string& key) const {
  std::lock_guard lock(data_->mu);
  auto it = data_->params.find({scope_path, key});
  if (it == data_->params.end()) return std::nullopt;
  return it->second;
}

std::vector<std::tuple<std::string, std::string, ParamValue>> Store::Params() const {
  std::lock_guard lock(data_->mu);
  std::vector<std::tuple<std::string, std::string, ParamValue>> out;
  for (const auto& [k, v] : data_->params) out.emplace_back(k.first, k.second, v);
  return out;
}

namespace {

/// The variable at `path`, created (not trainable) with `value` if missing.
Variable Ensure(const std::shared_ptr<StoreData>& store, const std::string& path,
                const std::function<Tensor()>& value) {
  StoreData& s = *store;
  std::lock_guard lock(s.mu);
  auto it = s.by_path.find(path);
  if (it != s.by_path.end()) return Variable(it->second);
  auto v = std::make_shared<VariableData>();
  v->store = store;
  v->path = path;
  v->value = value();
  v->shape = v->value.shape();
  v->trainable = false;
  s.variables.push_back(v);
  s.by_path[path] = v;
  return Variable(v);
}

}  // namespace

Variable Store::RNGState() const {
  return Ensure(data_, "/#rngState", [] { return graph::RNGStateFromSeedTensor(kDefaultSeed); });
}

void Store::SetRNGStateFromSeed(uint64_t seed) { RNGState().SetValue(graph::RNGStateFromSeedTensor(seed)); }

Variable Store::GlobalStep() const {
  return Ensure(data_, "/global_step", [] { return Tensor::FromScalar<int64_t>(0); });
}

bool Store::HasUninitializedVariables() const {
  std::lock_guard lock(data_->mu);
  for (const auto& v : data_->variables)
    if (v->pending) return true;
  return false;
}

void Store::InitializeVariables(const compute::BackendPtr& backend) {
  if (!HasUninitializedVariables()) return;
  Variable rng = RNGState();
  std::lock_guard lock(data_->mu);
  std::vector<std::shared_ptr<VariableData>> pending;
  for (const auto& v : data_->variables)
    if (v->pending) pending.push_back(v);
  if (pending.empty()) return;
  graph::Graph g("initialize variables");
  graph::Node state = g.Parameter(rng.shape(), "/#rngState");
  std::vector<graph::Node> outputs;
  for (const auto& v : pending) {
    graph::Node value = v->pending(g, state, v->shape);
    if (!value.Ok() || value.shape() != v->shape) {
      kiln::detail::Throw("initializer of variable \"{}\" returned {}, not {}", v->path,
                          value.Ok() ? value.shape().ToString() : std::string("an invalid node"), v->shape);
    }
    outputs.push_back(value);
  }
  outputs.push_back(state);
  std::unique_ptr<compute::Executable> exe = backend->Compile(g.Build(outputs));
  std::vector<compute::BufferPtr> out = exe->Execute({rng.data()->value.DeviceBuffer(backend, 0)}, {}, 0);
  for (size_t i = 0; i < pending.size(); ++i) {
    pending[i]->value = Tensor::FromBuffer(backend, 0, pending[i]->shape, std::move(out[i]));
    pending[i]->pending = nullptr;
  }
  rng.data()->value = Tensor::FromBuffer(backend, 0, rng.shape(), std::move(out.back()));
}

// ---- Scope ------------------------------------------------------------------------------------

Scope::Scope(Store store, std::string path, graph::Graph* graph, Initializer initializer)
    : store_(std::move(store)), path_(std::move(path)), graph_(graph), initializer_(std::move(initializer)) {}

Scope Scope::Enter(const std::string& name, int mode) const {
  static constexpr const char* kOps[] = {"Scope::In", "Scope::Shared", "Scope::At"};
  const std::string path = detail::JoinPath(path_, name, kOps[mode]);
  if (graph_ != nullptr) {
    detail::GraphState& st = detail::StateOf(*graph_);
    const bool seen = st.entered.count(path) > 0;
    if (mode == 0 && seen) {
      kiln::detail::Throw(
          "Scope::In(\"{}\"): scope \"{}\" was already entered with In while building graph \"{}\"; use "
          "Shared(\"{}\") to reuse its variables",
          name, path, graph_->name(), name);
    }
    st.entered.insert(path);
  }
  return Scope(store_, path, graph_, initializer_);
}

Scope Scope::In(const std::string& name) const { return Enter(name, 0); }
Scope Scope::Shared(const std::string& name) const { return Enter(name, 1); }
Scope Scope::At(const std::string& name) const { return Enter(name, 2); }

Scope Scope::WithInitializer(Initializer initializer) const {
  return Scope(store_, path_, graph_, std::move(initializer));
}

Variable Scope::InspectVariable(const std::string& name) const {
  return store_.FindVariable(detail::JoinPath(path_, name, "InspectVariable"));
}

namespace {

void CheckSameShape(const VariableData& v, const Shape& shape, const char* fn) {
  if (v.shape != shape) {
    kiln::detail::Throw("{}: variable \"{}\" exists with shape {}, asked for {}", fn, v.path, v.shape, shape);
  }
}

/// `dtype` when it is a half type and the "mixed_precision" parameter seen from `scope` names it
/// ("BFloat16" or "Float16"), else DType::Invalid.
DType MixedPrecisionDType(const Scope& scope, DType dtype) {
  if (dtype != DType::BFloat16 && dtype != DType::Float16) return DType::Invalid;
  const std::optional<ParamValue> p = scope.FindParam("mixed_precision");
  if (!p) return DType::Invalid;
  const std::string* name = std::get_if<std::string>(&*p);
  if (name == nullptr || (*name != "BFloat16" && *name != "Float16"))
    kiln::detail::Throw("parameter \"mixed_precision\" is {}: it must be \"BFloat16\" or \"Float16\"",
                        ParamToString(*p));
  return *name == DTypeName(dtype) ? dtype : DType::Invalid;
}

}  // namespace

Variable Scope::VariableWithShape(const std::string& name, const Shape& shape) const {
  const std::string path = detail::JoinPath(path_, name, "VariableWithShape");
  if (!shape.Ok() || shape.IsDynamic())
    kiln::detail::Throw("VariableWithShape(\"{}\"): invalid or dynamic shape {}", path, shape);
  // Mixed precision: a half-precision variable the "mixed_precision" parameter names is kept as
  // a Float32 master and read through a handle that converts it.
  const DType compute = MixedPrecisionDType(*this, shape.dtype());
  if (compute != DType::Invalid)
    return VariableWithShape(name, Shape(DType::Float32, shape.Dimensions())).ComputeAs(compute);
  StoreData& s = *store_.data();
  std::lock_guard lock(s.mu);
  if (auto it = s.by_path.find(path); it != s.by_path.end()) {
    CheckSameShape(*it->second, shape, "VariableWithShape");
    return Variable(it->second);
  }
  // A variable replaced by its quantized form (quant::QuantizeStore) must not come back as a
  // freshly initialised one: only the layers that read quantized weights may use that scope.
  if (s.by_path.count(path + "_quantized") != 0)
    kiln::detail::Throw(
        "VariableWithShape(\"{}\"): the variable was quantized (see \"{}_quantized\"); this layer does not "
        "read "
        "quantized weights (layers::Dense and layers::Embedding do)",
        path, path);
  auto v = std::make_shared<VariableData>();
  v->store = store_.data();
  v->path = path;
  v->shape = shape;
  v->pending = initializer_ ? initializer_ : DefaultInitializer();
  v->trainable = IsFloat(shape.dtype());
  s.variables.push_back(v);
  s.by_path[path] = v;
  return Variable(v);
}

Variable Scope::VariableWithValue(const std::string& name, const Tensor& value) const {
  const std::string path = detail::JoinPath(path_, name, "VariableWithValue");
  if (!value.Ok()) kiln::detail::Throw("VariableWithValue(\"{}\"): the value is not Ok", path);
  StoreData& s = *store_.data();
  std::lock_guard lock(s.mu);
  if (auto it = s.by_path.find(path); it != s.by_path.end()) {
    CheckSameShape(*it->second, value.shape(), "VariableWithValue");
    return Variable(it->second);
  }
  auto v = std::make_shared<VariableData>();
  v->store = store_.data();
  v->path = path;
  v->shape = value.shape();
  v->value = value.Clone();
  v->trainable = IsFloat(value.dtype());
  s.variables.push_back(v);
  s.by_path[path] = v;
  return Variable(v);
}

std::optional<ParamValue> Scope::FindParam(const std::string& key) const {
  std::string p = path_;
  for (;;) {
    if (auto v = store_.GetParamAt(p, key)) return v;
    if (p == "/") return std::nullopt;
    const size_t slash = p.rfind('/');
    p = slash == 0 ? "/" : p.substr(0, slash);
  }
}

// ---- Settings and summary -----------------------------------------------------------------------

void ParseSettings(const Store& store, const std::string& settings) {
  size_t start = 0;
  while (start <= settings.size()) {
    size_t end = settings.find(';', start);
    if (end == std::string::npos) end = settings.size();
    std::string item = settings.substr(start, end - start);
    start = end + 1;
    // Surrounding blanks are not part of the setting.
    const size_t first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    item = item.substr(first, item.find_last_not_of(" \t") - first + 1);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      kiln::detail::Throw("ParseSettings: \"{}\" is not key=value (in \"{}\")", item, settings);
    std::string key = item.substr(0, eq), text = item.substr(eq + 1), scope = "/";
    if (const size_t slash = key.rfind('/'); slash != std::string::npos) {
      scope = slash == 0 ? "/" : key.substr(0, slash);
      key = key.substr(slash + 1);
      if (scope[0] != '/') scope = "/" + scope;
    }
    if (key.empty()) kiln::detail::Throw("ParseSettings: empty key in \"{}\"", item);
    ParamValue value;
    char* endp = nullptr;
    int64_t i = 0;
    double d = 0;
    const kiln::detail::IntParse parsed = kiln::detail::TryParseInt64(text, i);
    if (text == "true" || text == "false") {
      value = text == "true";
    } else if (parsed == kiln::detail::IntParse::kOk) {
      value = i;
    } else if (parsed == kiln::detail::IntParse::kOutOfRange) {
      kiln::detail::Throw("ParseSettings: \"{}\": {} does not fit in int64", item, text);
    } else if (errno = 0, d = std::strtod(text.c_str(), &endp);
               !text.empty() && *endp == '\0' && !std::isspace(static_cast<unsigned char>(text[0]))) {
      if (errno == ERANGE && std::isinf(d))
        kiln::detail::Throw("ParseSettings: \"{}\": {} is out of the range of a double", item, text);
      value = d;
    } else {
      value = text;
    }
    store.SetParamValue(scope, key, std::move(value));
  }
}

std::string Summary(const Store& store) {
  int64_t trainable = 0;
  const std::vector<Variable> vars = store.Variables();
  for (const Variable& v : vars)
    if (v.Trainable()) trainable += v.shape().Size();
  return fmt::format("{} variables, {} parameters ({:.2f} MiB), {} trainable", vars.size(),
                     store.NumParameters(), static_cast<double>(store.ByteSize()) / (1 << 20), trainable);
}

// ---- Per-graph state and the training flag ------------------------------------------------------

namespace detail {

std::shared_ptr<StoreData> StoreOf(const VariableData& v) {
  std::shared_ptr<StoreData> s = v.store.lock();
  if (!s) kiln::detail::Throw("Variable \"{}\": its Store no longer exists", v.path);
  return s;
}

GraphState& StateOf(graph::Graph& g) {
  std::shared_ptr<void>& slot = g.Attachment("kiln.model");
  if (!slot) slot = std::make_shared<GraphState>();
  return *static_cast<GraphState*>(slot.get());
}

GraphState* FindState(graph::Graph& g) {
  std::shared_ptr<void>& slot = g.Attachment("kiln.model");
  return static_cast<GraphState*>(slot.get());
}

}  // namespace detail

void SetTraining(graph::Graph& g, bool training) { detail::StateOf(g).training = training; }

bool IsTraining(graph::Graph& g) {
  detail::GraphState* st = detail::FindState(g);
  return st != nullptr && st->training;
}

bool IsTraining(const Scope& scope) { return scope.graph() != nullptr && IsTraining(*scope.graph()); }

}  // namespace kiln::model
