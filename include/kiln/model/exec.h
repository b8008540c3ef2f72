#pragma once
/// @file
/// model::Exec: runs a model function — one taking a Scope besides its inputs — on a backend,
/// feeding the store's variables in as extra inputs and writing the values the graph sets back
/// into the store, updating them in place (their buffers are donated) when nothing else holds
/// them.
///
///   model::Exec step = model::NewExec(backend, store, [](model::Scope scope, Node x) {
///     model::Variable count = scope.VariableWithValue("count", int32_t(0));
///     count.SetNodeValue(count.NodeValue(x.graph()) + 1);
///     return x * 2;
///   });

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/graph/exec.h"
#include "kiln/model/store.h"

namespace kiln::model {

/// A model function in normal form: the scope (bound to the graph), the graph and its input
/// nodes in, outputs out.
using ModelFn =
    std::function<std::vector<graph::Node>(Scope scope, graph::Graph& g, const std::vector<graph::Node>&)>;

/// Runs a model function on a backend (GoMLX's context.Exec), compiling once per distinct input
/// shapes as graph::Exec does. Copies share the cache; Call is safe from several threads.
class Exec {
 public:
  /// `num_inputs`: the number of inputs, or -1 for a function taking a vector of nodes.
  Exec(compute::BackendPtr backend, Store store, ModelFn fn, int num_inputs, std::string name = "model exec");

  /// Runs with the given inputs (Tensors or C++ values) and returns the function's outputs.
  template <graph::CallArg... Args>
  std::vector<Tensor> Call(Args&&... args) {
    return CallTensors({ToTensor(std::forward<Args>(args))...});
  }
  /// Runs with a list of input tensors.
  std::vector<Tensor> Call(const std::vector<Tensor>& inputs) { return CallTensors(inputs); }
  /// Runs a function with exactly one output and returns it (kiln::Error otherwise).
  template <graph::CallArg... Args>
  Tensor Call1(Args&&... args) {
    return Single(Call(std::forward<Args>(args)...));
  }
  /// Call1 with the inputs as one vector.
  Tensor Call1(const std::vector<Tensor>& inputs) { return Single(CallTensors(inputs)); }

  /// Runs on `device` of the backend from now on (GoMLX's InDevice): inputs and variables are
  /// copied there as needed, outputs stay there. A kiln::Error naming the backend when out of range.
  Exec& InDevice(int device);
  /// A replicated run: the function, built for group.NumReplicas() replicas
  /// (Graph::SetReplicas), runs once on each device d < group.Devices() of this process at the
  /// same time, with inputs[d] (of the same shapes on every device); returns each device's
  /// outputs. Its collective ops exchange values with the other replicas of the job. Device 0
  /// reads and updates the store's variables; each other device its own copy, made from the
  /// store's value on first use (and again after the value is set any other way), so replicas
  /// whose updates agree (gradients averaged with AllReduce) keep identical variables.
  std::vector<std::vector<Tensor>> CallReplicas(compute::ReplicaGroup& group,
                                                const std::vector<std::vector<Tensor>>& inputs);
  /// Called with each new graph before the model function runs (e.g. SetTraining).
  Exec& OnNewGraph(std::function<void(graph::Graph&)> hook);
  /// Number of graphs built (one per distinct input shapes).
  int NumBuilds() const;
  /// Declares the inputs' dynamic axes, as graph::Exec::WithDynamicAxes (one name per axis, ""
  /// static): on a backend with dynamic shapes one build serves every size of them. Clears the cache.
  Exec& WithDynamicAxes(const std::vector<std::vector<std::string>>& axes_per_input);
  /// Axis 0 of every input of rank >= 1 (not named by WithDynamicAxes) is the dynamic axis
  /// `name`, as graph::Exec::WithDynamicBatch ("" turns it off). Clears the cache.
  Exec& WithDynamicBatch(const std::string& name = "batch");
  /// The store whose variables the function reads and sets.
  const Store& store() const;
  /// The backend this Exec compiles for.
  const compute::BackendPtr& backend() const;
  /// The Program compiled for the given input shapes (built if needed): user inputs first, then
  /// the variables read; outputs: the function's, then the variables set.
  std::shared_ptr<const compute::Program> ProgramFor(const std::vector<Shape>& input_shapes);

  /// The function receiving the values of logged nodes after each run, as
  /// graph::Exec::SetNodeLogger (graph::DefaultNodeLogger unless set).
  Exec& SetNodeLogger(graph::NodeLogger logger);
  /// The NaN check, as graph::Exec::SetNanCheck (initially graph::NanCheckFromEnvironment());
  /// while it is on, variables are not updated in place, so a run that finds a NaN leaves the
  /// store's values as they were. Clears the cache.
  Exec& SetNanCheck(bool on);
  /// Whether the NaN check is on.
  bool NanCheck() const;
  /// Runs like Call and also returns the values of the graph's aliased nodes
  /// (graph::Exec::CallWithAliases).
  graph::AliasedResults CallWithAliases(const std::vector<Tensor>& inputs);

  struct State;

 private:
  template <typename V>
  static Tensor ToTensor(V&& value) {
    if constexpr (std::same_as<std::remove_cvref_t<V>, Tensor>) {
      return std::forward<V>(value);
    } else {
      return Tensor::FromValue(value);
    }
  }
  std::vector<Tensor> CallTensors(const std::vector<Tensor>& inputs);
  std::vector<Tensor> Run(const std::vector<Tensor>& inputs, std::map<std::string, Tensor>* aliased);
  Tensor Single(std::vector<Tensor> outputs) const;
  std::shared_ptr<State> state_;
};

/// @cond internal
namespace detail {

template <typename Fn, typename Args>
struct ModelFnAdapter;

template <typename Fn, typename S, typename... A>
struct ModelFnAdapter<Fn, std::tuple<S, A...>> {
  static_assert(std::same_as<std::remove_cvref_t<S>, Scope>,
                "model::NewExec: the function's first parameter must be a model::Scope");
  static constexpr bool kTakesGraph = sizeof...(A) == 1 && (std::same_as<A, graph::Graph&> && ...);
  static constexpr bool kTakesVector =
      sizeof...(A) == 1 && (std::same_as<std::remove_cvref_t<A>, std::vector<graph::Node>> && ...);
  static constexpr bool kTakesNodes = (graph::detail::kIsNodeArg<A> && ...);
  static_assert(kTakesGraph || kTakesVector || kTakesNodes,
                "model::NewExec: after the Scope, the function must take Node parameters, a (const) "
                "std::vector<Node>&, or a Graph&");
  static constexpr int kNumInputs = kTakesVector ? -1 : kTakesGraph ? 0 : static_cast<int>(sizeof...(A));

  static ModelFn Wrap(Fn fn) {
    return [fn = std::move(fn)](Scope scope, graph::Graph& g,
                                const std::vector<graph::Node>& params) mutable -> std::vector<graph::Node> {
      if constexpr (kTakesGraph) {
        return graph::detail::ToOutputs(fn(scope, g));
      } else if constexpr (kTakesVector) {
        return graph::detail::ToOutputs(fn(scope, params));
      } else {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
          return graph::detail::ToOutputs(fn(scope, params[I]...));
        }
        (std::index_sequence_for<A...>{});
      }
    };
  }
};

}  // namespace detail
/// @endcond

/// Makes a model::Exec from a function or lambda `R(Scope, Node...)`, `R(Scope, Graph&)` or
/// `R(Scope, const std::vector<Node>&)`, R being Node, std::vector<Node> or std::tuple<Node...>.
template <typename Fn>
Exec NewExec(compute::BackendPtr backend, Store store, Fn&& fn, std::string name = "model exec") {
  using Traits = graph::detail::CallableTraits<std::decay_t<Fn>>;
  using Adapter = detail::ModelFnAdapter<std::decay_t<Fn>, typename Traits::Args>;
  return Exec(std::move(backend), std::move(store), Adapter::Wrap(std::forward<Fn>(fn)), Adapter::kNumInputs,
              std::move(name));
}

}  // namespace kiln::model
