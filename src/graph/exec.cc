#include "kiln/graph/exec.h"

#include <algorithm>
#include <list>
#include <map>
#include <mutex>

#include "core/check.h"
#include "graph/exec_debug.h"
#include "graph/exec_internal.h"
#include "kiln/compute/backend.h"
#include "kiln/compute/replicas.h"

namespace kiln::graph {

Tensor Donate(Tensor tensor) {
  tensor.MarkForDonation();
  return tensor;
}

Tensor DonateTensorBuffer(Tensor tensor, const compute::BackendPtr& backend, int device) {
  if (!backend) kiln::detail::Throw("DonateTensorBuffer: null backend");
  backend->CheckDevice(device);
  tensor.MarkForDonation();
  return tensor;
}

namespace exec_internal {

std::mutex& StateMutex::Checked(const std::string& what) {
  if (builder_.load() == std::this_thread::get_id())
    kiln::detail::Throw(
        "{} was called from inside its own graph function, while it builds a graph; build "
        "the inner computation into the same graph instead",
        what);
  return mu_;
}

void CheckDynamicAxesInputs(const std::string& what, size_t lists, int num_inputs) {
  if (num_inputs >= 0 && static_cast<int>(lists) > num_inputs) {
    kiln::detail::Throw("{}: WithDynamicAxes names axes for {} inputs, but its function takes {}", what,
                        lists, num_inputs);
  }
}

std::vector<Shape> CheckReplicatedCall(
    const std::string& what, const compute::Backend& backend, const compute::ReplicaGroup& group,
    const std::vector<std::vector<Tensor>>& inputs,
    const std::function<std::vector<Shape>(const std::vector<Tensor>&)>& shapes_of) {
  const int devices = group.Devices();
  if (devices > backend.NumDevices())
    kiln::detail::Throw("{}: a replica group of {} devices on backend \"{}\" with {}", what, devices,
                        backend.Name(), backend.NumDevices());
  if (static_cast<int>(inputs.size()) != devices)
    kiln::detail::Throw("{}: CallReplicas given inputs for {} devices, the group has {}", what, inputs.size(),
                        devices);
  const std::vector<Shape> shapes = shapes_of(inputs[0]);
  for (int d = 1; d < devices; ++d) {
    if (shapes_of(inputs[static_cast<size_t>(d)]) != shapes)
      kiln::detail::Throw("{}: device {}'s inputs differ in shape from device 0's", what, d);
  }
  return shapes;
}

std::vector<Shape> DynamicSignature(const std::string& name,
                                    const std::vector<std::vector<std::string>>& axes,
                                    const std::string& batch, const std::vector<Shape>& shapes,
                                    bool dynamic_backend) {
  std::map<std::string, std::pair<int64_t, std::string>> seen;  // Name -> size, where first seen.
  std::vector<Shape> signature;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    std::vector<std::string> names;
    if (i < axes.size() && !axes[i].empty()) {
      names = axes[i];
    } else if (!batch.empty() && s.Rank() >= 1) {
      names.assign(static_cast<size_t>(s.Rank()), "");
      names[0] = batch;
    } else {
      signature.push_back(s);
      continue;
    }
    if (static_cast<int>(names.size()) != s.Rank()) {
      kiln::detail::Throw(
          "exec \"{}\": input {} has shape {} (rank {}), but WithDynamicAxes names {} axes for it", name, i,
          s, s.Rank(), names.size());
    }
    std::vector<int64_t> dims = s.Dimensions();
    for (size_t a = 0; a < names.size(); ++a) {
      if (names[a].empty()) continue;
      const std::string where = fmt::format("input {} axis {}", i, a);
      auto [it, fresh] = seen.emplace(names[a], std::make_pair(dims[a], where));
      if (!fresh && it->second.first != dims[a]) {
        kiln::detail::Throw("exec \"{}\": dynamic axis \"{}\" has size {} at {}, but {} at {}", name,
                            names[a], dims[a], where, it->second.first, it->second.second);
      }
      dims[a] = Shape::kDynamic;
    }
    signature.push_back(dynamic_backend ? Shape::MakeDynamic(s.dtype(), std::move(dims), names) : s);
  }
  return signature;
}

}  // namespace exec_internal

namespace {

struct CacheEntry {
  std::vector<Shape> key;
  bool with_aliases = false;  // Built for CallWithAliases (aliased values are extra outputs).
  int replicas = 1;           // Graph::Replicas() of the graph.
  uint64_t fingerprint = 0;   // compute::ProgramFingerprint of a replicated program.
  exec_internal::DebugOutputs debug;
  std::unique_ptr<Graph> graph;
  std::shared_ptr<const compute::Program> program;
  std::unique_ptr<compute::Executable> executable;
};

}  // namespace

struct Exec::State {
  compute::BackendPtr backend;
  GraphFn fn;
  int num_inputs;
  std::string name;

  exec_internal::StateMutex mu;
  size_t max_cache = 32;
  int builds = 0;
  std::vector<std::vector<std::string>> dynamic_axes;  // Per input, as WithDynamicAxes took them.
  std::string dynamic_batch;                           // WithDynamicBatch's axis name, or "".
  std::list<std::shared_ptr<CacheEntry>> lru;          // Most recently used first.
  NodeLogger logger = DefaultNodeLogger;
  bool nan_check = NanCheckFromEnvironment();
  int device = 0;  // InDevice's.

  std::string what;  // "exec \"NAME\"", for messages: formatted once, not at every
                     // lock a call takes.
  const std::string& What() const { return what; }

  std::shared_ptr<CacheEntry> Get(const std::vector<Shape>& shapes, bool with_aliases = false,
                                  int replicas = 1) {
    std::lock_guard lock(mu.Checked(What()));
    for (auto it = lru.begin(); it != lru.end(); ++it) {
      if ((*it)->key == shapes && (*it)->with_aliases == with_aliases && (*it)->replicas == replicas) {
        lru.splice(lru.begin(), lru, it);
        return lru.front();
      }
    }
    // Build and compile under the lock: concurrent first calls of one shape build once.
    auto entry = std::make_shared<CacheEntry>();
    entry->key = shapes;
    entry->with_aliases = with_aliases;
    entry->replicas = replicas;
    entry->graph = std::make_unique<Graph>(name);
    entry->graph->SetTraced(nan_check);
    entry->graph->SetReplicas(replicas);
    std::vector<Node> params;
    for (const Shape& s : shapes) params.push_back(entry->graph->Parameter(s));
    ++builds;
    std::vector<Node> outputs;
    {
      exec_internal::StateMutex::Building building(mu);
      outputs = fn(*entry->graph, params);
    }
    if (outputs.empty()) kiln::detail::Throw("exec \"{}\": the graph function returned no outputs", name);
    entry->debug = exec_internal::AppendDebugOutputs(*entry->graph, outputs, with_aliases, nan_check);
    entry->program = entry->graph->Build(outputs, std::vector<bool>(shapes.size(), true));
    entry->executable = backend->Compile(entry->program);
    if (replicas > 1) entry->fingerprint = compute::ProgramFingerprint(*entry->program);
    lru.push_front(entry);
    while (lru.size() > max_cache) lru.pop_back();
    return entry;
  }
};

Exec::Exec(compute::BackendPtr backend, GraphFn fn, int num_inputs, std::string name)
    : state_(std::make_shared<State>()) {
  if (!backend) kiln::detail::Throw("NewExec: null backend");
  state_->backend = std::move(backend);
  state_->fn = std::move(fn);
  state_->num_inputs = num_inputs;
  state_->name = std::move(name);
  state_->what = fmt::format("exec \"{}\"", state_->name);
}

Exec& Exec::SetMaxCacheSize(int size) {
  if (size < 1) kiln::detail::Throw("exec \"{}\": cache size {} must be at least 1", state_->name, size);
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  state_->max_cache = static_cast<size_t>(size);
  while (state_->lru.size() > state_->max_cache) state_->lru.pop_back();
  return *this;
}

int Exec::NumBuilds() const {
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  return state_->builds;
}

Exec& Exec::WithDynamicAxes(const std::vector<std::vector<std::string>>& axes_per_input) {
  State& st = *state_;
  exec_internal::CheckDynamicAxesInputs(fmt::format("exec \"{}\"", st.name), axes_per_input.size(),
                                        st.num_inputs);
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

Exec& Exec::WithDynamicAxesSpecs(const std::vector<Shape>& specs) {
  std::vector<std::vector<std::string>> axes;
  for (size_t i = 0; i < specs.size(); ++i) {
    std::vector<std::string> names;
    bool any = false;
    for (int a = 0; a < specs[i].Rank(); ++a) {
      std::string n;
      if (specs[i].Dim(a) == Shape::kDynamic) {
        n = specs[i].AxisName(a);
        if (n.empty()) n = fmt::format("input{}_axis{}", i, a);
        any = true;
      }
      names.push_back(n);
    }
    axes.push_back(any ? names : std::vector<std::string>{});
  }
  return WithDynamicAxes(axes);
}

std::vector<Shape> Exec::SignatureOf(const std::vector<Shape>& shapes) const {
  std::vector<std::vector<std::string>> axes;
  std::string batch;
  {
    std::lock_guard lock(state_->mu.Checked(state_->What()));
    axes = state_->dynamic_axes;
    batch = state_->dynamic_batch;
  }
  return exec_internal::DynamicSignature(state_->name, axes, batch, shapes,
                                         state_->backend->Capabilities().HasDynamicShapes());
}

const compute::BackendPtr& Exec::backend() const { return state_->backend; }

std::shared_ptr<const compute::Program> Exec::ProgramFor(const std::vector<Shape>& input_shapes) {
  return state_->Get(SignatureOf(input_shapes))->program;
}

Exec& Exec::SetNodeLogger(NodeLogger logger) {
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

AliasedResults Exec::CallWithAliases(const std::vector<Tensor>& inputs) {
  AliasedResults r;
  r.outputs = Run(inputs, &r.aliased);
  return r;
}

std::vector<Tensor> Exec::CallTensors(const std::vector<Tensor>& inputs) { return Run(inputs, nullptr); }

namespace {

std::vector<Shape> InputShapes(const Exec::State& st, const std::vector<Tensor>& inputs) {
  if (st.num_inputs >= 0 && static_cast<int>(inputs.size()) != st.num_inputs) {
    kiln::detail::Throw("exec \"{}\": called with {} inputs, but its function takes {}", st.name,
                        inputs.size(), st.num_inputs);
  }
  std::vector<Shape> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].Ok()) {
      kiln::detail::Throw("exec \"{}\": input {} is not Ok (empty, finalized or donated)", st.name, i);
    }
    shapes.push_back(inputs[i].shape());
  }
  return shapes;
}

std::vector<Tensor> RunOn(Exec::State& st, CacheEntry& entry, int device, const std::vector<Tensor>& inputs,
                          std::map<std::string, Tensor>* aliased) {
  std::vector<Shape> shapes;
  std::vector<compute::BufferPtr> buffers;
  std::vector<bool> donated;
  for (const Tensor& input : inputs) {
    Tensor t = input;  // Handles share storage: donation through a copy affects the caller's.
    shapes.push_back(t.shape());
    if (t.IsMarkedForDonation()) {
      buffers.push_back(t.DonateBuffer(st.backend, device));
      donated.push_back(true);
    } else {
      buffers.push_back(t.DeviceBuffer(st.backend, device));
      donated.push_back(false);
    }
  }
  std::vector<Shape> out_shapes;
  std::vector<compute::BufferPtr> out =
      entry.executable->ExecuteWithShapes(buffers, shapes, donated, device, out_shapes);
  const compute::Program& program = *entry.program;
  if (out.size() != program.Outputs().size() || out_shapes.size() != out.size()) {
    kiln::detail::Throw("exec \"{}\": backend returned {} outputs for {}", st.name, out.size(),
                        program.Outputs().size());
  }
  std::vector<Tensor> results;
  for (size_t i = 0; i < out.size(); ++i) {
    results.push_back(Tensor::FromBuffer(st.backend, device, out_shapes[i], std::move(out[i])));
  }
  if (entry.debug.Count() > 0 || st.logger) {
    NodeLogger logger;
    {
      std::lock_guard lock(st.mu.Checked(st.What()));
      logger = st.logger;
    }
    exec_internal::FinishDebugOutputs(st.What(), *entry.graph, entry.debug, results, logger, aliased);
  }
  return results;
}

}  // namespace

std::vector<Tensor> Exec::Run(const std::vector<Tensor>& inputs, std::map<std::string, Tensor>* aliased) {
  State& st = *state_;
  std::shared_ptr<CacheEntry> entry = st.Get(SignatureOf(InputShapes(st, inputs)), aliased != nullptr);
  int device = 0;
  {
    std::lock_guard lock(st.mu.Checked(st.What()));
    device = st.device;
  }
  return RunOn(st, *entry, device, inputs, aliased);
}

Exec& Exec::InDevice(int device) {
  state_->backend->CheckDevice(device);
  std::lock_guard lock(state_->mu.Checked(state_->What()));
  state_->device = device;
  return *this;
}

std::vector<std::vector<Tensor>> Exec::CallReplicas(compute::ReplicaGroup& group,
                                                    const std::vector<std::vector<Tensor>>& inputs) {
  State& st = *state_;
  const std::vector<Shape> shapes =
      exec_internal::CheckReplicatedCall(st.What(), *st.backend, group, inputs,
                                         [&](const std::vector<Tensor>& in) { return InputShapes(st, in); });
  std::shared_ptr<CacheEntry> entry = st.Get(SignatureOf(shapes), false, group.NumReplicas());
  std::vector<std::vector<Tensor>> results(static_cast<size_t>(group.Devices()));
  compute::RunReplicas(
      group,
      [&](int d) {
        results[static_cast<size_t>(d)] = RunOn(st, *entry, d, inputs[static_cast<size_t>(d)], nullptr);
      },
      entry->fingerprint);
  return results;
}

Tensor Exec::Single(std::vector<Tensor> outputs) const {
  if (outputs.size() != 1) {
    kiln::detail::Throw("exec \"{}\": Call1 needs exactly one output, the graph has {}", state_->name,
                        outputs.size());
  }
  return std::move(outputs[0]);
}

}  // namespace kiln::graph
