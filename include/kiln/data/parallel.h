#pragma once
/// @file
/// Prefetching: a dataset wrapper whose background threads prepare the next batches while the
/// caller's step runs (GoMLX's data.Parallel). Batches come out in the inner dataset's order.
///
///   auto ds = data::Parallel(data::Map(source, augment)).Buffer(2).NumWorkers(2).Done();
///
/// The innermost dataset's Yield is called by one worker at a time, in order; the functions of
/// data::Map / data::GraphMap layers directly around it run on the workers in parallel, so they
/// must be safe to call from several threads at once (graph::Exec is). An exception thrown while
/// preparing a batch reaches the caller of Yield at that batch's position, as the same object;
/// the stream then ends until Reset.

#include <any>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/data/dataset.h"

namespace kiln::data {

class MapDataset;

/// A dataset read ahead by worker threads. Workers start on the first Yield; Reset and the
/// destructor stop them (waiting for a batch being made, never for the consumer).
class ParallelDataset : public Dataset {
 public:
  /// `buffer`: how many batches may be prepared ahead of the consumer (at least `workers`).
  ParallelDataset(DatasetPtr inner, int buffer, int workers);
  ~ParallelDataset() override;
  ParallelDataset(const ParallelDataset&) = delete;
  ParallelDataset& operator=(const ParallelDataset&) = delete;

  /// The inner dataset's name.
  std::string Name() const override;
  bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) override;
  void Reset() override;
  bool IsInfinite() const override;

 private:
  struct Batch {
    std::any spec;
    std::vector<Tensor> inputs, labels;
    std::exception_ptr error;
  };
  void Work();
  void Stop();

  DatasetPtr inner_;
  DatasetPtr source_;                    // The innermost non-Map dataset.
  std::vector<const MapDataset*> maps_;  // Map layers around source_, innermost first.
  int window_ = 1;                       // Batches prepared ahead, at most.
  int num_workers_ = 1;
  std::vector<std::thread> workers_;

  std::mutex source_mu_;              // Held while calling source_->Yield: one caller, in claim order.
  std::mutex mu_;                     // Guards everything below.
  std::condition_variable ready_cv_;  // A batch arrived or the stream ended.
  std::condition_variable work_cv_;   // A slot freed up, or stop.
  bool started_ = false, stop_ = false;
  int64_t next_claim_ = 0;   // Sequence number the next worker takes.
  int64_t next_yield_ = 0;   // Sequence number the consumer takes next.
  int64_t end_ = INT64_MAX;  // First sequence number with no batch.
  std::map<int64_t, Batch> ready_;
};

/// Options for Parallel; Done() makes the dataset.
class ParallelBuilder {
 public:
  /// Options for prefetching `inner`; Parallel(inner) makes one.
  explicit ParallelBuilder(DatasetPtr inner) : inner_(std::move(inner)) {}
  /// Batches prepared ahead of the consumer (2 by default; raised to NumWorkers if lower).
  ParallelBuilder& Buffer(int n);
  /// Worker threads (1 by default).
  ParallelBuilder& NumWorkers(int n);
  /// The prefetching dataset; kiln::Error when `inner` is null or a count is below 1.
  std::shared_ptr<ParallelDataset> Done();

 private:
  DatasetPtr inner_;
  int buffer_ = 2, workers_ = 1;
};

/// Wraps `inner` in a prefetching dataset: `data::Parallel(ds).Buffer(2).Done()`.
ParallelBuilder Parallel(DatasetPtr inner);

}  // namespace kiln::data
