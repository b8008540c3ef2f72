// Map datasets: a host function per batch, or a graph function run through graph::Exec.

#include "kiln/data/map.h"

#include <map>
#include <mutex>
#include <utility>

#include "core/check.h"
#include "kiln/graph/exec.h"

namespace kiln::data {

MapDataset::MapDataset(DatasetPtr inner, MapFn fn, std::string name)
    : inner_(std::move(inner)), fn_(std::move(fn)), name_(std::move(name)) {
  if (!inner_) kiln::detail::Throw("Map(\"{}\"): the dataset is null", name_);
  if (!fn_) kiln::detail::Throw("Map(\"{}\"): the function is empty", name_);
}

bool MapDataset::Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) {
  if (!inner_->Yield(spec, inputs, labels)) return false;
  Apply(spec, inputs, labels);
  return true;
}

void MapDataset::Apply(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) const {
  fn_(spec, inputs, labels);
}

std::shared_ptr<MapDataset> Map(DatasetPtr ds, MapFn fn) {
  if (!ds) kiln::detail::Throw("Map: the dataset is null");
  std::string name = ds->Name();
  return std::make_shared<MapDataset>(std::move(ds), std::move(fn), std::move(name));
}

namespace {

// One graph::Exec per (number of inputs, number of labels): the graph function receives them
// as one list and must know where the labels start. Safe to call from several threads.
class GraphMapper {
 public:
  GraphMapper(compute::BackendPtr backend, GraphMapFn fn, std::string name)
      : backend_(std::move(backend)), fn_(std::move(fn)), name_(std::move(name)) {}

  void operator()(std::vector<Tensor>& inputs, std::vector<Tensor>& labels) {
    const std::pair<size_t, size_t> key(inputs.size(), labels.size());
    if (key.first + key.second == 0) kiln::detail::Throw("GraphMap(\"{}\"): the batch has no tensors", name_);
    Entry* entry = nullptr;
    {
      std::lock_guard lock(mu_);
      auto it = execs_.find(key);
      if (it == execs_.end()) {
        auto made = std::make_unique<Entry>();
        Entry* e = made.get();
        graph::GraphFn build = [this, key, e](graph::Graph&, const std::vector<graph::Node>& params) {
          std::vector<graph::Node> in(params.begin(), params.begin() + static_cast<ptrdiff_t>(key.first));
          std::vector<graph::Node> lab(params.begin() + static_cast<ptrdiff_t>(key.first), params.end());
          fn_(in, lab);
          std::lock_guard count_lock(mu_);
          if (e->num_inputs >= 0 && e->num_inputs != static_cast<int64_t>(in.size()))
            kiln::detail::Throw(
                "GraphMap(\"{}\"): the function returned {} inputs for one batch shape and {} for another",
                name_, e->num_inputs, in.size());
          e->num_inputs = static_cast<int64_t>(in.size());
          in.insert(in.end(), lab.begin(), lab.end());
          if (in.empty())
            kiln::detail::Throw("GraphMap(\"{}\"): the function returned no inputs or labels", name_);
          return in;
        };
        e->exec = std::make_unique<graph::Exec>(backend_, std::move(build), -1, "GraphMap(" + name_ + ")");
        it = execs_.emplace(key, std::move(made)).first;
      }
      entry = it->second.get();
    }
    std::vector<Tensor> all = inputs;
    all.insert(all.end(), labels.begin(), labels.end());
    std::vector<Tensor> out = entry->exec->Call(all);
    size_t n = 0;
    {
      std::lock_guard lock(mu_);
      n = static_cast<size_t>(entry->num_inputs);
    }
    inputs.assign(out.begin(), out.begin() + static_cast<ptrdiff_t>(n));
    labels.assign(out.begin() + static_cast<ptrdiff_t>(n), out.end());
  }

 private:
  struct Entry {
    std::unique_ptr<graph::Exec> exec;
    int64_t num_inputs = -1;  // Set when the first graph is built.
  };
  compute::BackendPtr backend_;
  GraphMapFn fn_;
  std::string name_;
  std::mutex mu_;
  std::map<std::pair<size_t, size_t>, std::unique_ptr<Entry>> execs_;
};

}  // namespace

std::shared_ptr<MapDataset> GraphMap(compute::BackendPtr backend, DatasetPtr ds, GraphMapFn fn) {
  if (!ds) kiln::detail::Throw("GraphMap: the dataset is null");
  if (!backend) kiln::detail::Throw("GraphMap(\"{}\"): the backend is null", ds->Name());
  if (!fn) kiln::detail::Throw("GraphMap(\"{}\"): the function is empty", ds->Name());
  auto mapper = std::make_shared<GraphMapper>(std::move(backend), std::move(fn), ds->Name());
  std::string name = ds->Name();
  return std::make_shared<MapDataset>(
      std::move(ds),
      [mapper](std::any&, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) {
        (*mapper)(inputs, labels);
      },
      std::move(name));
}

}  // namespace kiln::data
