#include "kiln/graph/exec.h"

#include <algorithm>
#include <list>
#include <mutex>

#include "core/check.h"
#include "kiln/compute/backend.h"

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

namespace {

struct CacheEntry {
  std::vector<Shape> key;
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

  std::mutex mu;
  size_t max_cache = 32;
  int builds = 0;
  std::list<std::shared_ptr<CacheEntry>> lru;  // Most recently used first.

  std::shared_ptr<CacheEntry> Get(const std::vector<Shape>& shapes) {
    std::lock_guard lock(mu);
    for (auto it = lru.begin(); it != lru.end(); ++it) {
      if ((*it)->key == shapes) {
        lru.splice(lru.begin(), lru, it);
        return lru.front();
      }
    }
    // Build and compile under the lock: concurrent first calls of one shape build once.
    auto entry = std::make_shared<CacheEntry>();
    entry->key = shapes;
    entry->graph = std::make_unique<Graph>(name);
    std::vector<Node> params;
    for (const Shape& s : shapes) params.push_back(entry->graph->Parameter(s));
    ++builds;
    std::vector<Node> outputs = fn(*entry->graph, params);
    if (outputs.empty()) kiln::detail::Throw("exec \"{}\": the graph function returned no outputs", name);
    entry->program = entry->graph->Build(outputs, std::vector<bool>(shapes.size(), true));
    entry->executable = backend->Compile(entry->program);
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
}

Exec& Exec::SetMaxCacheSize(int size) {
  if (size < 1) kiln::detail::Throw("exec \"{}\": cache size {} must be at least 1", state_->name, size);
  std::lock_guard lock(state_->mu);
  state_->max_cache = static_cast<size_t>(size);
  while (state_->lru.size() > state_->max_cache) state_->lru.pop_back();
  return *this;
}

int Exec::NumBuilds() const {
  std::lock_guard lock(state_->mu);
  return state_->builds;
}

Exec& Exec::WithDynamicAxes(const std::vector<std::vector<std::string>>& axes_per_input) {
  if (!state_->backend->Capabilities().HasDynamicShapes()) {
    kiln::detail::Throw(
        "exec \"{}\": WithDynamicAxes needs a backend with dynamic shapes; backend \"{}\" has none (it "
        "recompiles per input shape)",
        state_->name, state_->backend->Name());
  }
  (void)axes_per_input;
  kiln::detail::Throw("exec \"{}\": dynamic axes are not supported: inputs have static shapes", state_->name);
}

const compute::BackendPtr& Exec::backend() const { return state_->backend; }

std::shared_ptr<const compute::Program> Exec::ProgramFor(const std::vector<Shape>& input_shapes) {
  return state_->Get(input_shapes)->program;
}

std::vector<Tensor> Exec::CallTensors(const std::vector<Tensor>& inputs) {
  State& st = *state_;
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
  std::shared_ptr<CacheEntry> entry = st.Get(shapes);

  const int device = 0;
  std::vector<compute::BufferPtr> buffers;
  std::vector<bool> donated;
  for (const Tensor& input : inputs) {
    Tensor t = input;  // Handles share storage: donation through a copy affects the caller's.
    if (t.IsMarkedForDonation()) {
      buffers.push_back(t.DonateBuffer(st.backend, device));
      donated.push_back(true);
    } else {
      buffers.push_back(t.DeviceBuffer(st.backend, device));
      donated.push_back(false);
    }
  }
  std::vector<compute::BufferPtr> out = entry->executable->Execute(buffers, donated, device);
  const compute::Program& program = *entry->program;
  if (out.size() != program.Outputs().size()) {
    kiln::detail::Throw("exec \"{}\": backend returned {} outputs for {}", st.name, out.size(),
                        program.Outputs().size());
  }
  std::vector<Tensor> results;
  for (size_t i = 0; i < out.size(); ++i) {
    results.push_back(
        Tensor::FromBuffer(st.backend, device, program.OutputShape(static_cast<int>(i)), std::move(out[i])));
  }
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
