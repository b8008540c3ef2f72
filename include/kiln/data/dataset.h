#pragma once
/// @file
/// Datasets (kiln::data): sources of batches for training and evaluation. Yield hands the caller
/// new tensors it owns (the trainer may donate them to the step); Reset starts over.
///
///   auto ds = data::InMemoryFromData(backend, "pixels", {inputs}, {labels});
///   ds->BatchSize(512, false).Shuffle().Infinite(true);

#include <any>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/core/tensor.h"

namespace kiln::data {

/// A source of batches (GoMLX's train.Dataset): the Trainer and Loop pull batches with Yield
/// until it returns false, and call Reset between evaluations.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// A name for progress output and error messages.
  virtual std::string Name() const = 0;
  /// The next batch: `spec` (passed to the model function), inputs and labels. Returns false,
  /// leaving them untouched, at the end of a finite dataset.
  virtual bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) = 0;
  /// Starts again from the beginning.
  virtual void Reset() = 0;
  /// True when Yield never returns false.
  virtual bool IsInfinite() const { return false; }
};
/// Shared handle to a dataset (wrappers such as MapDataset hold their inner one this way).
using DatasetPtr = std::shared_ptr<Dataset>;

/// Batches of examples held in memory: every input and label tensor has the examples along axis 0.
class InMemoryDataset : public Dataset {
 public:
  /// Batches from `inputs` and `labels` (copies go to `backend` as batches are made). There must
  /// be at least one input; every tensor must be Ok, unpacked, of rank >= 1 and have as many
  /// examples as the first input (else kiln::Error naming the dataset).
  InMemoryDataset(compute::BackendPtr backend, std::string name, std::vector<Tensor> inputs,
                  std::vector<Tensor> labels);

  /// Batches of `n` examples; `drop_incomplete` drops a last, smaller batch of an epoch. An
  /// Infinite dataset joins its epochs, so its batches may be larger than the dataset; for a
  /// finite one with `drop_incomplete`, n above the number of examples makes Yield a kiln::Error.
  InMemoryDataset& BatchSize(int64_t n, bool drop_incomplete);
  /// Visits the examples in a random order, reshuffled every epoch (seeded: reproducible).
  InMemoryDataset& Shuffle(uint64_t seed = 42);
  /// Never ends: epochs are joined so every batch is full (the step compiles once), even one of
  /// more examples than the dataset holds.
  InMemoryDataset& Infinite(bool infinite);
  /// Ends after `n` epochs (finite datasets; 1 by default).
  InMemoryDataset& Epochs(int n);
  /// Keeps this process's share of every epoch for distributed training: of the epoch's order
  /// (shuffled with the same seed in every process), the examples at positions p with
  /// p mod `count` == `index`. With Shard(distributed::Rank(), distributed::WorldSize()) the
  /// processes' shares are disjoint and together make the epoch, and batches of n / count
  /// examples per process make global batches of n. A kiln::Error unless 0 <= index < count.
  InMemoryDataset& Shard(int index, int count);

  /// The name given at construction.
  std::string Name() const override { return name_; }
  bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) override;
  void Reset() override;
  bool IsInfinite() const override { return infinite_; }
  /// Number of examples (the size of axis 0), in all shards.
  int64_t NumExamples() const { return num_examples_; }
  /// Examples in this shard: NumExamples() without Shard.
  int64_t ShardExamples() const;
  /// The batch size set with BatchSize (1 by default).
  int64_t GetBatchSize() const { return batch_; }

 private:
  void NewEpoch();
  /// The examples `rows` of tensor `t` as a new tensor, in a buffer of the backend when it
  /// shares memory with the host (so a step it is donated to takes it over without a copy).
  Tensor Gather(const Tensor& t, const std::vector<int64_t>& rows) const;

  compute::BackendPtr backend_;
  std::string name_;
  std::vector<Tensor> inputs_, labels_;
  int64_t num_examples_ = 0;
  int64_t batch_ = 1;
  bool drop_incomplete_ = false, shuffle_ = false, infinite_ = false;
  int epochs_ = 1;
  int shard_index_ = 0, shard_count_ = 1;
  uint64_t seed_ = 42;
  std::mt19937_64 rng_;
  std::vector<int64_t> order_;
  int64_t position_ = 0;
  int epoch_ = 0;
};

/// An in-memory dataset named `name` (batch size 1, in order, one epoch until configured).
std::shared_ptr<InMemoryDataset> InMemoryFromData(compute::BackendPtr backend, std::string name,
                                                  std::vector<Tensor> inputs, std::vector<Tensor> labels);

}  // namespace kiln::data
