// model::Exec: one graph per input shapes with the store's variables as extra inputs and the
// values it sets as extra outputs; variables updated in place through buffer donation.

#include "kiln/model/exec.h"

#include <list>
#include <mutex>

#include "core/check.h"
#include "graph/exec_debug.h"
#include "graph/exec_internal.h"
#include "kiln/compute/backend.h"
#include "kiln/compute/replicas.h"
#include "model/model_internal.h"

namespace kiln::model {

namespace {

struct Entry {
  std::vector<Shape> key;
  bool with_aliases = false;
  int replicas = 1;          // Graph::Replicas() of the graph.
  uint64_t fingerprint = 0;  // compute::ProgramFingerprint of a replicated program.
  graph::exec_internal::DebugOutputs debug;
  std::unique_ptr<graph::Graph> graph;
  std::shared_ptr<const compute::Program> program;
  std::unique_ptr<compute::Executable> executable;
  std::vector<std::shared_ptr<detail::VariableData>> reads, writes;
  size_t num_outputs = 0;  // The function's own outputs (before the variables set).
};

}  // namespace

struct Exec::State {
  compute::BackendPtr backend;
  Store store;
  ModelFn fn;
  int num_inputs = 0;
  std::string name;
  std::function<void(graph::Graph&)> hook;
  graph::exec_internal::StateMutex mu;
  int builds = 0;
  std::vector<std::vector<std::string>> dynamic_axes;  // Per input, as WithDynamicAxes took them.
  std::string dynamic_batch;                           // WithDynamicBatch's axis name, or "".
  std::list<std::shared_ptr<Entry>> lru;
  graph::NodeLogger logger = graph::DefaultNodeLogger;
  bool nan_check = graph::NanCheckFromEnvironment();
  int device = 0;  // InDevice's.

  std::string what;  // "model exec \"NAME\"", for messages: formatted once, not at every
                     // lock a call takes.
  const std::string& What() const { return what; }
  /// The inputs' shapes, after checking their count and that each is Ok.
  std::vector<Shape> InputShapes(const std::vector<Tensor>& inputs) const;
  /// Runs entry `e` on device `on` (the caller holds the store's lock) and stores the variables it
  /// sets: device 0's in the store, the others' in the variables' replica copies.
  std::vector<Tensor> RunOn(const std::shared_ptr<Entry>& e, int on, const std::vector<Tensor>& inputs,
                            const graph::NodeLogger& log, std::map<std::string, Tensor>* aliased);

  std::vector<Shape> Signature(const std::vector<Shape>& shapes) {
    std::vector<std::vector<std::string>> axes;
    std::string batch;
    {
      std::lock_guard lock(mu.Checked(What()));
      axes = dynamic_axes;
      batch = dynamic_batch;
    }
    return graph::exec_internal::DynamicSignature(name, axes, batch, shapes,
                                                  backend->Capabilities().HasDynamicShapes());
  }

  std::shared_ptr<Entry> Get(const std::vector<Shape>& shapes, bool with_aliases = false, int replicas = 1) {
    std::lock_guard lock(mu.Checked(What()));
    for (auto it = lru.begin(); it != lru.end(); ++it) {
      if ((*it)->key == shapes && (*it)->with_aliases == with_aliases && (*it)->replicas == replicas) {
        lru.splice(lru.begin(), lru, it);
        return lru.front();
      }
    }
    auto e = std::make_shared<Entry>();
    e->key = shapes;
    e->with_aliases = with_aliases;
    e->replicas = replicas;
    e->graph = std::make_unique<graph::Graph>(name);
    graph::Graph& g = *e->graph;
    g.SetTraced(nan_check);
    g.SetReplicas(replicas);
    std::vector<graph::Node> params;
    for (const Shape& s : shapes) params.push_back(g.Parameter(s));
    detail::GraphState& st = detail::StateOf(g);
    st.store = store.data();
    ++builds;
    std::vector<graph::Node> outputs;
    {
      graph::exec_internal::StateMutex::Building building(mu);
      if (hook) hook(g);
      outputs = fn(Scope(store, "/", &g), g, params);
    }
    if (outputs.empty() && st.updates.empty())
      kiln::detail::Throw("model exec \"{}\": the model function returned no outputs and set no variable",
                          name);
    e->num_outputs = outputs.size();
    for (const auto& v : st.inputs) {
      if (detail::StoreOf(*v) != store.data())
        kiln::detail::Throw("model exec \"{}\": variable \"{}\" belongs to another Store", name, v->path);
    }
    e->reads = st.inputs;
    for (const auto& [v, node] : st.updates) {
      if (&node.graph() != &g)
        kiln::detail::Throw("model exec \"{}\": the new value of \"{}\" is a node of another graph", name,
                            v->path);
      e->writes.push_back(v);
      outputs.push_back(node);
    }
    e->debug = graph::exec_internal::AppendDebugOutputs(g, outputs, with_aliases, nan_check);
    e->program = g.Build(outputs, std::vector<bool>(static_cast<size_t>(g.NumParameters()), true));
    e->executable = backend->Compile(e->program);
    if (replicas > 1) e->fingerprint = compute::ProgramFingerprint(*e->program);
    lru.push_front(e);
    while (lru.size() > 32) lru.pop_back();
    return e;
  }
};

Exec::Exec(compute::BackendPtr backend, Store store, ModelFn fn, int num_inputs, std::string name)
    : state_(std::make_shared<State>()) {
  if (!backend) kiln::detail::Throw("model::NewExec: null backend");
  state_->backend = std::move(backend);
  state_->store = std::move(store);
  state_->fn = std::move(fn);
  state_->num_inputs = num_inputs;
  state_->name = std::move(name);
  state_->what = fmt::format("model exec \"{}\"", state_->name);
}

Exec& Exec::OnNewGraph(std::function<void(graph::Graph&)> hook) {
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  state_->hook = std::move(hook);
  return *this;
}

Exec& Exec::WithDynamicAxes(const std::vector<std::vector<std::string>>& axes_per_input) {
  State& st = *state_;
  graph::exec_internal::CheckDynamicAxesInputs(fmt::format("model exec \"{}\"", st.name),
                                               axes_per_input.size(), st.num_inputs);
  std::lock_guard lock(st.mu.Checked(st.What()));
  st.dynamic_axes = axes_per_input;
  st.lru.clear();
  return *this;
}

Exec& Exec::WithDynamicBatch(const std::string& name) {
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  state_->dynamic_batch = name;
  state_->lru.clear();
  return *this;
}

int Exec::NumBuilds() const {
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  return state_->builds;
}

const Store& Exec::store() const { return state_->store; }
const compute::BackendPtr& Exec::backend() const { return state_->backend; }

std::shared_ptr<const compute::Program> Exec::ProgramFor(const std::vector<Shape>& input_shapes) {
  return state_->Get(state_->Signature(input_shapes))->program;
}

Exec& Exec::SetNodeLogger(graph::NodeLogger logger) {
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  state_->logger = std::move(logger);
  return *this;
}

Exec& Exec::SetNanCheck(bool on) {
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  if (state_->nan_check != on) state_->lru.clear();
  state_->nan_check = on;
  return *this;
}

bool Exec::NanCheck() const {
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  return state_->nan_check;
}

graph::AliasedResults Exec::CallWithAliases(const std::vector<Tensor>& inputs) {
  graph::AliasedResults r;
  r.outputs = Run(inputs, &r.aliased);
  return r;
}

std::vector<Tensor> Exec::CallTensors(const std::vector<Tensor>& inputs) { return Run(inputs, nullptr); }

std::vector<Shape> Exec::State::InputShapes(const std::vector<Tensor>& inputs) const {
  if (num_inputs >= 0 && static_cast<int>(inputs.size()) != num_inputs) {
    kiln::detail::Throw("model exec \"{}\": called with {} inputs, but its function takes {}", name,
                        inputs.size(), num_inputs);
  }
  std::vector<Shape> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].Ok())
      kiln::detail::Throw("model exec \"{}\": input {} is not Ok (empty, finalized or donated)", name, i);
    shapes.push_back(inputs[i].shape());
  }
  return shapes;
}

std::vector<Tensor> Exec::State::RunOn(const std::shared_ptr<Entry>& e, int on,
                                       const std::vector<Tensor>& inputs, const graph::NodeLogger& log,
                                       std::map<std::string, Tensor>* aliased) {
  const bool checking = !e->debug.checked.empty();
  std::vector<Shape> shapes;
  std::vector<compute::BufferPtr> buffers;
  std::vector<bool> donated;
  for (const Tensor& input : inputs) {
    Tensor t = input;
    const bool donate = t.IsMarkedForDonation();
    shapes.push_back(t.shape());
    buffers.push_back(donate ? t.DonateBuffer(backend, on) : t.DeviceBuffer(backend, on));
    donated.push_back(donate);
  }
  // Device 0 reads the store's values; the other devices of a replicated run their own copies.
  // (CallReplicas made the copies before the devices started.)
  auto value_of = [&](detail::VariableData& v) -> Tensor& {
    return e->replicas == 1 || on == 0 ? v.value : v.replicas.at(static_cast<size_t>(on - 1));
  };
  for (const auto& v : e->reads) {
    Tensor& value = value_of(*v);
    if (!value.Ok()) kiln::detail::Throw("model exec \"{}\": variable \"{}\" has no value", name, v->path);
    // In place only when the store holds the sole handle and the graph sets a new value.
    const bool written = std::find(e->writes.begin(), e->writes.end(), v) != e->writes.end();
    const bool donate = written && value.HandleCount() == 1 && !checking;
    shapes.push_back(value.shape());
    buffers.push_back(donate ? value.DonateBuffer(backend, on) : value.DeviceBuffer(backend, on));
    donated.push_back(donate);
  }
  std::vector<Shape> out_shapes;
  std::vector<compute::BufferPtr> out =
      e->executable->ExecuteWithShapes(buffers, shapes, donated, on, out_shapes);
  std::vector<Tensor> results;
  for (size_t i = 0; i < out.size(); ++i)
    results.push_back(Tensor::FromBuffer(backend, on, out_shapes[i], std::move(out[i])));
  // Logged values, the NaN check (before any variable changes) and aliased values: device 0's.
  if (on == 0 && (e->debug.Count() > 0 || log))
    graph::exec_internal::FinishDebugOutputs(What(), *e->graph, e->debug, results, log, aliased);
  results.resize(e->num_outputs + e->writes.size());
  for (size_t i = e->num_outputs; i < results.size(); ++i) {
    detail::VariableData& v = *e->writes[i - e->num_outputs];
    if (e->replicas == 1) v.replicas.clear();  // Another run changed it: copies are remade.
    value_of(v) = std::move(results[i]);
    v.pending = nullptr;
  }
  results.resize(e->num_outputs);
  return results;
}

std::vector<Tensor> Exec::Run(const std::vector<Tensor>& inputs, std::map<std::string, Tensor>* aliased) {
  State& st = *state_;
  std::shared_ptr<Entry> e = st.Get(st.Signature(st.InputShapes(inputs)), aliased != nullptr);
  graph::NodeLogger logger;
  int device = 0;
  {
    std::lock_guard lock(st.mu.Checked(st.What()));
    logger = st.logger;
    device = st.device;
  }
  st.store.InitializeVariables(st.backend);
  std::shared_ptr<detail::StoreData> store = st.store.data();
  std::unique_lock store_lock(store->mu);
  return st.RunOn(e, device, inputs, logger, aliased);
}

std::vector<std::vector<Tensor>> Exec::CallReplicas(compute::ReplicaGroup& group,
                                                    const std::vector<std::vector<Tensor>>& inputs) {
  State& st = *state_;
  const int devices = group.Devices();
  const std::vector<Shape> shapes = graph::exec_internal::CheckReplicatedCall(
      st.What(), *st.backend, group, inputs,
      [&](const std::vector<Tensor>& in) { return st.InputShapes(in); });
  std::shared_ptr<Entry> e = st.Get(st.Signature(shapes), false, group.NumReplicas());
  graph::NodeLogger logger;
  {
    std::lock_guard lock(st.mu.Checked(st.What()));
    logger = st.logger;
  }
  st.store.InitializeVariables(st.backend);
  std::shared_ptr<detail::StoreData> store = st.store.data();
  // The devices' threads read and write variables under the caller's lock.
  std::unique_lock store_lock(store->mu);
  // Devices above 0 get their copies of the variables now, before device 0 may update the store's.
  for (const auto& v : e->reads) {
    if (!v->value.Ok())
      kiln::detail::Throw("model exec \"{}\": variable \"{}\" has no value", st.name, v->path);
    if (v->replicas.size() < static_cast<size_t>(devices - 1))
      v->replicas.resize(static_cast<size_t>(devices - 1));
    for (Tensor& copy : v->replicas)
      if (!copy.Ok()) copy = v->value.Clone();
  }
  std::vector<std::vector<Tensor>> results(static_cast<size_t>(devices));
  compute::RunReplicas(
      group,
      [&](int d) {
        results[static_cast<size_t>(d)] = st.RunOn(e, d, inputs[static_cast<size_t>(d)], logger, nullptr);
      },
      e->fingerprint);
  return results;
}

Exec& Exec::InDevice(int device) {
  state_->backend->CheckDevice(device);
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  state_->device = device;
  return *this;
}

Tensor Exec::Single(std::vector<Tensor> outputs) const {
  if (outputs.size() != 1) {
    kiln::detail::Throw("model exec \"{}\": Call1 needs exactly one output, the function has {}",
                        state_->name, outputs.size());
  }
  return std::move(outputs[0]);
}

}  // namespace kiln::model
