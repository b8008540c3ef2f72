#pragma once
/// @file
/// Per-batch transformations of a dataset: a host function (data::Map) or a graph function
/// compiled once per batch shape on a backend (data::GraphMap).
///
///   auto scaled = data::GraphMap(backend, ds, [](std::vector<graph::Node>& x, std::vector<graph::Node>&) {
///     x[0] = x[0] * 2.0;
///   });

#include <any>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/core/tensor.h"
#include "kiln/data/dataset.h"
#include "kiln/graph/graph.h"

namespace kiln::data {

/// A host function applied to each batch in place: spec, inputs and labels may all be changed.
using MapFn = std::function<void(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels)>;

/// A graph function over a batch's inputs and labels, replacing them (their number may change).
using GraphMapFn = std::function<void(std::vector<graph::Node>& inputs, std::vector<graph::Node>& labels)>;

/// A dataset whose batches are another's with a function applied (see data::Parallel for
/// running the function on worker threads).
class MapDataset : public Dataset {
 public:
  /// `inner`'s batches with `fn` applied; a null `inner` or empty `fn` is a kiln::Error.
  MapDataset(DatasetPtr inner, MapFn fn, std::string name);
  /// The name given at construction (Map and GraphMap pass the inner dataset's).
  std::string Name() const override { return name_; }
  bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) override;
  void Reset() override { inner_->Reset(); }
  bool IsInfinite() const override { return inner_->IsInfinite(); }

  /// The dataset this one transforms.
  const DatasetPtr& Inner() const { return inner_; }
  /// Applies the function to a batch of the inner dataset.
  void Apply(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) const;

 private:
  DatasetPtr inner_;
  MapFn fn_;
  std::string name_;
};

/// `ds` with `fn` applied to each batch on the host.
std::shared_ptr<MapDataset> Map(DatasetPtr ds, MapFn fn);

/// `ds` with the graph function `fn` applied to each batch, compiled with graph::Exec on
/// `backend` once per distinct batch shapes; the spec passes through unchanged.
std::shared_ptr<MapDataset> GraphMap(compute::BackendPtr backend, DatasetPtr ds, GraphMapFn fn);

}  // namespace kiln::data
