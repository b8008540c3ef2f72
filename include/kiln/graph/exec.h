#pragma once
/// @file
/// Exec: builds a graph from a C++ function once per distinct input shapes, compiles it on a
/// backend, caches it, and runs it on tensors.

#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/core/tensor.h"
#include "kiln/graph/debug.h"
#include "kiln/graph/graph.h"

namespace kiln::graph {

/// Marks `tensor` so that the next execution it is passed to may reuse its buffer for an
/// output (GoMLX's donation). Afterwards, where the buffer was shared with the host, every copy
/// of the handle reports Ok() == false. Returns the same handle.
Tensor Donate(Tensor tensor);
/// GoMLX's spelling: donate `tensor`'s buffer on `backend`'s `device`.
Tensor DonateTensorBuffer(Tensor tensor, const compute::BackendPtr& backend, int device);

/// A graph-building function in normal form: the graph and its parameter nodes in, outputs out.
using GraphFn = std::function<std::vector<Node>(Graph&, const std::vector<Node>&)>;

/// An argument Exec::Call accepts: a Tensor, or C++ values Tensor::FromValue takes.
template <typename V>
concept CallArg = std::same_as<std::remove_cvref_t<V>, Tensor> || TensorValue<std::remove_cvref_t<V>>;

/// Runs a graph function on a backend, compiling once per distinct input shapes (a bounded LRU
/// cache, 32 entries by default). Copies of an Exec share the cache. Call is synchronous and
/// safe from several threads at once.
class Exec {
 public:
  /// `num_inputs` is the number of parameters, or -1 for a function taking a vector of nodes.
  Exec(compute::BackendPtr backend, GraphFn fn, int num_inputs, std::string name = "exec");

  /// Runs with the given inputs (Tensors or C++ values) and returns the outputs.
  template <CallArg... Args>
  std::vector<Tensor> Call(Args&&... args) {
    return CallTensors({ToTensor(std::forward<Args>(args))...});
  }
  /// Runs with a list of input tensors.
  std::vector<Tensor> Call(const std::vector<Tensor>& inputs) { return CallTensors(inputs); }
  /// Runs a graph with exactly one output and returns it.
  template <CallArg... Args>
  Tensor Call1(Args&&... args) {
    return Single(Call(std::forward<Args>(args)...));
  }
  /// Call1 with the inputs as one vector (one tensor per parameter, in order).
  Tensor Call1(const std::vector<Tensor>& inputs) { return Single(CallTensors(inputs)); }

  /// Runs on `device` of the backend from now on (GoMLX's InDevice): inputs are copied there as
  /// needed and outputs stay there. A kiln::Error naming the backend when out of range.
  Exec& InDevice(int device);
  /// A replicated run: the graph, built for group.NumReplicas() replicas (Graph::SetReplicas),
  /// runs once on each device d < group.Devices() of this process at the same time, with
  /// inputs[d] (the same shapes on every device); returns each device's outputs. Its collective
  /// ops (graph/collective.h) exchange values with every replica of the job.
  std::vector<std::vector<Tensor>> CallReplicas(compute::ReplicaGroup& group,
                                                const std::vector<std::vector<Tensor>>& inputs);
  /// Maximum number of compiled shape combinations kept (least recently used dropped first).
  Exec& SetMaxCacheSize(int size);
  /// Number of graphs built so far (cache misses).
  int NumBuilds() const;
  /// Declares dynamic axes per input, GoMLX's way: for input i, one name per axis, "" for a
  /// static axis (an empty list, or no entry, keeps the input static). Axes of one name must
  /// have one size in every call. On a backend with dynamic shapes the graph is built and
  /// compiled once for every size of those axes; on a static-only one the Exec builds per
  /// concrete shape as before. Clears the cache.
  Exec& WithDynamicAxes(const std::vector<std::vector<std::string>>& axes_per_input);
  /// Makes axis 0 of every input of rank >= 1 (not named by WithDynamicAxes) the dynamic axis
  /// `name`: one build for every batch size. "" turns it off. Clears the cache.
  Exec& WithDynamicBatch(const std::string& name = "batch");
  /// WithDynamicAxes from shapes: input i's dynamic axes are those of `specs[i]` (kDynamic, named
  /// as there; an unnamed one is named "input<i>_axis<a>"); its static axes are not checked here.
  Exec& WithDynamicAxesSpecs(const std::vector<Shape>& specs);
  /// The shapes the graph is built for when called with inputs of `shapes`: the declared
  /// dynamic axes made kDynamic and named (when the backend has dynamic shapes), else `shapes`.
  /// Throws kiln::Error when an input's rank contradicts its declared axes, or named axes differ.
  std::vector<Shape> SignatureOf(const std::vector<Shape>& shapes) const;
  /// The backend this Exec compiles for.
  const compute::BackendPtr& backend() const;
  /// The Program compiled for the given input shapes (building it if needed): for debugging.
  std::shared_ptr<const compute::Program> ProgramFor(const std::vector<Shape>& input_shapes);

  // ---- Debugging (graph/debug.h, docs/debugging.md) ----

  /// The function that receives the values of the nodes marked with Node::SetLogged after each
  /// run (DefaultNodeLogger unless set; an empty function reports nothing). Logged nodes are
  /// extra outputs of the compiled program: their values are kept, the results do not change.
  Exec& SetNodeLogger(NodeLogger logger);
  /// Turns the NaN check on or off (initially NanCheckFromEnvironment()); clears the cache.
  /// With it on, graphs are built traced (Graph::SetTraced) and every floating-point value the
  /// outputs depend on is kept and checked after each run: the first node (in build order)
  /// holding a NaN or an infinity while its floating-point operands hold none is a kiln::Error
  /// naming the node, where it was built, its operands' ranges and how many values are not
  /// finite. Inputs and constants are never blamed (a -inf mask is deliberate), nor what is
  /// computed from their non-finite values. Ops inside control-flow
  /// bodies are checked through the control-flow op's results. Slower and more memory-hungry
  /// while on (the values are not fused away); nothing changes when off.
  Exec& SetNanCheck(bool on);
  /// Whether the NaN check is on.
  bool NanCheck() const;
  /// Runs like Call and also returns the value of every node of the graph given an alias with
  /// Node::WithAlias (those values are kept as extra outputs of a program compiled for this).
  AliasedResults CallWithAliases(const std::vector<Tensor>& inputs);

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

template <typename T>
struct CallableTraits : CallableTraits<decltype(&std::remove_cvref_t<T>::operator())> {};
template <typename R, typename... A>
struct CallableTraits<R (*)(A...)> {
  using Result = R;
  using Args = std::tuple<A...>;
};
template <typename R, typename... A>
struct CallableTraits<R(A...)> : CallableTraits<R (*)(A...)> {};
template <typename R, typename... A>
struct CallableTraits<R (&)(A...)> : CallableTraits<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct CallableTraits<R (C::*)(A...) const> : CallableTraits<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct CallableTraits<R (C::*)(A...)> : CallableTraits<R (*)(A...)> {};

template <typename R>
std::vector<Node> ToOutputs(R&& result) {
  using T = std::remove_cvref_t<R>;
  if constexpr (std::same_as<T, Node>) {
    return {result};
  } else if constexpr (std::same_as<T, std::vector<Node>>) {
    return std::forward<R>(result);
  } else {
    return std::apply([](auto&&... nodes) { return std::vector<Node>{Node(nodes)...}; },
                      std::forward<R>(result));
  }
}

template <typename T>
inline constexpr bool kIsNodeArg = std::same_as<std::remove_cvref_t<T>, Node>;

template <typename Fn, typename Args>
struct GraphFnAdapter;

template <typename Fn, typename... A>
struct GraphFnAdapter<Fn, std::tuple<A...>> {
  static constexpr bool kTakesGraph = sizeof...(A) == 1 && (std::same_as<A, Graph&> && ...);
  static constexpr bool kTakesVector =
      sizeof...(A) == 1 && (std::same_as<std::remove_cvref_t<A>, std::vector<Node>> && ...);
  static constexpr bool kTakesNodes = (kIsNodeArg<A> && ...);
  static_assert(kTakesGraph || kTakesVector || kTakesNodes,
                "NewExec: the function must take Node parameters, a (const) std::vector<Node>&, or a Graph&");
  static constexpr int kNumInputs = kTakesVector ? -1 : kTakesGraph ? 0 : static_cast<int>(sizeof...(A));

  static GraphFn Wrap(Fn fn) {
    return [fn = std::move(fn)](Graph& g, const std::vector<Node>& params) mutable -> std::vector<Node> {
      if constexpr (kTakesGraph) {
        return ToOutputs(fn(g));
      } else if constexpr (kTakesVector) {
        return ToOutputs(fn(params));
      } else {
        return [&]<std::size_t... I>(std::index_sequence<I...>) { return ToOutputs(fn(params[I]...)); }
        (std::index_sequence_for<A...>{});
      }
    };
  }
};

}  // namespace detail
/// @endcond

/// Makes an Exec from a function or lambda of one of the forms `Node(Node...)`,
/// `std::vector<Node>(Node...)`, `std::tuple<Node...>(Node...)`, `Node(Graph&)` or
/// `R(const std::vector<Node>&)` (any number of inputs).
template <typename Fn>
Exec NewExec(compute::BackendPtr backend, Fn&& fn, std::string name = "exec") {
  using Traits = detail::CallableTraits<std::decay_t<Fn>>;
  using Adapter = detail::GraphFnAdapter<std::decay_t<Fn>, typename Traits::Args>;
  return Exec(std::move(backend), Adapter::Wrap(std::forward<Fn>(fn)), Adapter::kNumInputs, std::move(name));
}

/// Builds `fn` (any form NewExec takes), compiles it and runs it once on `inputs` (Tensors or C++
/// values, as Exec::Call takes): GoMLX's ExecOnce / CallOnce. Returns every output.
template <typename Fn, typename... Args>
std::vector<Tensor> ExecOnce(compute::BackendPtr backend, Fn&& fn, Args&&... inputs) {
  Exec exec = NewExec(std::move(backend), std::forward<Fn>(fn), "exec_once");
  return exec.Call(std::forward<Args>(inputs)...);
}

}  // namespace kiln::graph
