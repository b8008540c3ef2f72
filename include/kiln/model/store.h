#pragma once
/// @file
/// model::Store and model::Scope: the tree of named variables and hyperparameters a model keeps
/// across graphs, and cheap handles to paths in it (GoMLX's context.Context).
///
///   model::Store store;
///   model::Scope scope = store.RootScope().In("layer1");
///   model::Variable w = scope.VariableWithShape("weights", Shape(DType::Float32, {784, 512}));
///   scope.SetParam("dropout", 0.1);

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/core/tensor.h"
#include "kiln/graph/graph.h"
#include "kiln/model/params.h"
#include "kiln/model/variable.h"

namespace kiln::model {

/// Makes a variable's initial value in graph `g`: `rng_state` is the store's random-number state
/// node ((Uint64)[3]), to be advanced (replaced by the new state) when random numbers are drawn.
using Initializer = std::function<graph::Node(graph::Graph& g, graph::Node& rng_state, const Shape& shape)>;

/// The default initializer (GoMLX's): zeros for rank <= 1, He-uniform for rank >= 2 with
/// fan-in the product of all axes but the last (limit sqrt(6 / fan_in)); integer variables zeros.
Initializer DefaultInitializer();

namespace detail {
struct StoreData;
struct ScopeVisit;
}  // namespace detail

class Scope;

/// The default seed of a Store's random-number state.
inline constexpr uint64_t kDefaultSeed = 42;

/// A tree of variables and hyperparameters. A cheap handle: copies share the same store.
class Store {
 public:
  /// A new, empty store.
  Store();

  /// The scope at "/".
  Scope RootScope() const;

  /// Every variable, in creation order.
  std::vector<Variable> Variables() const;
  /// The variable at `path` ("/layer1/weights"); kiln::Error naming the path if there is none.
  Variable GetVariable(const std::string& path) const;
  /// The variable at `path`, or an invalid handle.
  Variable FindVariable(const std::string& path) const;
  /// Removes the variable at `path` (kiln::Error if there is none).
  void DeleteVariable(const std::string& path);
  /// Number of elements over all variables.
  int64_t NumParameters() const;
  /// Bytes over all variables.
  int64_t ByteSize() const;

  /// Sets a hyperparameter at the root scope.
  template <typename T>
  void SetParam(const std::string& key, const T& value) {
    SetParamValue("/", key, detail::ToParam(value));
  }
  /// Sets hyperparameter `key` at the scope `scope_path` ("/" or "/layer1"), replacing any
  /// value there; an empty key is a kiln::Error.
  void SetParamValue(const std::string& scope_path, const std::string& key, ParamValue value) const;
  /// The hyperparameter `key` set exactly at `scope_path` (no inheritance).
  std::optional<ParamValue> GetParamAt(const std::string& scope_path, const std::string& key) const;
  /// Every hyperparameter: (scope path, key, value), sorted by scope path then key.
  std::vector<std::tuple<std::string, std::string, ParamValue>> Params() const;

  /// The random-number state variable "/#rngState" ((Uint64)[3], not trainable), created on
  /// first use from kDefaultSeed.
  Variable RNGState() const;
  /// Resets the random-number state from `seed`: one seed reproduces a model exactly.
  void SetRNGStateFromSeed(uint64_t seed);
  /// The global step "/global_step" (Int64 scalar, not trainable), created at 0 on first use.
  Variable GlobalStep() const;

  /// Initialises every variable created but not yet initialised, in one graph run on `backend`
  /// (model::Exec does it before running; Variable::Value() does it on the default backend).
  void InitializeVariables(const compute::BackendPtr& backend);
  /// Whether some variable waits for its initial value.
  bool HasUninitializedVariables() const;

  /// @cond internal
  // The shared state, for kiln's own code (detail::StoreData is defined inside the library).
  const std::shared_ptr<detail::StoreData>& data() const { return data_; }
  explicit Store(std::shared_ptr<detail::StoreData> data) : data_(std::move(data)) {}
  /// @endcond

 private:
  std::shared_ptr<detail::StoreData> data_;
};

/// A path in a Store, possibly bound to the graph being built (model::Exec binds the scope it
/// passes to the model function). Cheap to copy.
class Scope {
 public:
  /// The scope at `path` of `store`, bound to `graph` when one is being built, creating
  /// variables with `initializer` (empty: DefaultInitializer()). Store::RootScope() and
  /// model::Exec make scopes; user code rarely calls this.
  Scope(Store store, std::string path, graph::Graph* graph = nullptr, Initializer initializer = {});

  /// The scope's path: "/" or "/layer1/dense".
  const std::string& Path() const { return path_; }
  /// The store the path is in.
  const Store& store() const { return store_; }
  /// The graph being built, or nullptr outside a build.
  graph::Graph* graph() const { return graph_; }

  /// Enters the sub-scope `name`. While a graph is being built, each sub-scope may be entered
  /// with In once per graph (a second In of the same name is a kiln::Error naming it: use
  /// Shared to reuse its variables); outside a build In acts as At.
  Scope In(const std::string& name) const;
  /// Re-enters a sub-scope already entered in this graph (sharing its variables).
  Scope Shared(const std::string& name) const;
  /// Enters the sub-scope whether or not it was entered before.
  Scope At(const std::string& name) const;

  /// The same path with `initializer` for the variables created through it (and its sub-scopes).
  Scope WithInitializer(Initializer initializer) const;
  /// The initializer new variables get (empty: DefaultInitializer()).
  const Initializer& GetInitializer() const { return initializer_; }

  /// The variable `name` of this scope, created with `shape` if it does not exist (its value
  /// from the scope's initializer); an existing one must have that shape and dtype.
  Variable VariableWithShape(const std::string& name, const Shape& shape) const;
  /// The variable `name`, created with `value` if it does not exist (an existing one keeps its
  /// value, and must have the value's shape and dtype).
  Variable VariableWithValue(const std::string& name, const Tensor& value) const;
  /// VariableWithValue from C++ values (a number or nested std::vector), via Tensor::FromValue.
  template <TensorValue V>
  Variable VariableWithValue(const std::string& name, const V& value) const {
    return VariableWithValue(name, Tensor::FromValue(value));
  }
  /// The variable `name` of this scope if it exists (an invalid handle otherwise); never creates.
  Variable InspectVariable(const std::string& name) const;

  /// Sets a hyperparameter at this scope (seen by it and its sub-scopes).
  template <typename T>
  void SetParam(const std::string& key, const T& value) const {
    store_.SetParamValue(path_, key, detail::ToParam(value));
  }
  /// The hyperparameter `key` from this scope up to the root, if set anywhere.
  std::optional<ParamValue> FindParam(const std::string& key) const;

 private:
  Scope Enter(const std::string& name, int mode) const;
  Store store_;
  std::string path_;
  graph::Graph* graph_ = nullptr;
  Initializer initializer_;
};

/// The hyperparameter `key` seen from `scope` (searched up to the root), converted to the
/// default's type (integers and floats convert; a string to a number is a kiln::Error naming the
/// key), or `default_value` if it is not set.
template <typename T>
auto GetParamOr(const Scope& scope, const std::string& key, const T& default_value) {
  using R = std::conditional_t<std::is_convertible_v<const T&, std::string> && !std::is_same_v<T, bool>,
                               std::string, T>;
  std::optional<ParamValue> v = scope.FindParam(key);
  if (!v) return R(default_value);
  return detail::FromParam<R>(*v, key);
}
/// GetParamOr from the store's root scope.
template <typename T>
auto GetRootParamOr(const Store& store, const std::string& key, const T& default_value) {
  return GetParamOr(store.RootScope(), key, default_value);
}
/// GetParamOr from the root scope of `scope`'s store (ignoring `scope`'s own path).
template <typename T>
auto GetRootParamOr(const Scope& scope, const std::string& key, const T& default_value) {
  return GetParamOr(scope.store().RootScope(), key, default_value);
}

/// Sets hyperparameters from "k=v;k2=v2" (GoMLX's settings flag): values "true"/"false" are
/// bools, integers integers, other numbers floats, anything else strings; "/scope/path/k=v" sets k
/// at that scope. A malformed item is a kiln::Error naming it.
void ParseSettings(const Store& store, const std::string& settings);
/// One line: "12 variables, 669706 parameters (2.55 MiB), 669696 trainable".
std::string Summary(const Store& store);

/// The training flag of a graph (false by default): layers such as Dropout and BatchNorm read
/// it; the trainer sets it for its training graphs.
void SetTraining(graph::Graph& g, bool training);
/// The training flag of the graph `scope` is bound to (false outside a build).
bool IsTraining(const Scope& scope);
/// The training flag of graph `g` (false unless SetTraining(g, true)).
bool IsTraining(graph::Graph& g);

}  // namespace kiln::model
