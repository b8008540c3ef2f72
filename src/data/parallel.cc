// The prefetching dataset. Workers claim sequence numbers in order while holding the source
// lock, so the source's batches are numbered in the order it yields them; Map layers then run
// outside that lock, and the consumer takes batches strictly by sequence number.

#include "kiln/data/parallel.h"

#include <algorithm>

#include "core/check.h"
#include "kiln/data/map.h"

namespace kiln::data {

ParallelDataset::ParallelDataset(DatasetPtr inner, int buffer, int workers)
    : inner_(std::move(inner)), window_(std::max(buffer, workers)), num_workers_(workers) {
  if (!inner_) kiln::detail::Throw("Parallel: the dataset is null");
  if (buffer < 1)
    kiln::detail::Throw("Parallel(\"{}\"): buffer {} must be at least 1", inner_->Name(), buffer);
  if (workers < 1)
    kiln::detail::Throw("Parallel(\"{}\"): {} workers, at least 1 needed", inner_->Name(), workers);
  // Peel the Map layers off, so that their functions run on the workers concurrently.
  source_ = inner_;
  while (const auto* map = dynamic_cast<const MapDataset*>(source_.get())) {
    maps_.insert(maps_.begin(), map);
    source_ = map->Inner();
  }
}

ParallelDataset::~ParallelDataset() { Stop(); }

std::string ParallelDataset::Name() const { return inner_->Name(); }

bool ParallelDataset::IsInfinite() const { return inner_->IsInfinite(); }

void ParallelDataset::Work() {
  while (true) {
    Batch batch;
    int64_t seq = 0;
    {
      std::unique_lock source_lock(source_mu_);
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock,
                      [&] { return stop_ || next_claim_ >= end_ || next_claim_ < next_yield_ + window_; });
        if (stop_ || next_claim_ >= end_) return;
        seq = next_claim_++;
      }
      bool ok = false;
      try {
        ok = source_->Yield(batch.spec, batch.inputs, batch.labels);
      } catch (...) {
        batch.error = std::current_exception();
      }
      if (!ok) {
        // The end (or an error) is recorded before the source lock is released, so no other
        // worker asks the source for more.
        std::lock_guard lock(mu_);
        if (batch.error) {
          end_ = std::min(end_, seq + 1);
          ready_.emplace(seq, std::move(batch));
        } else {
          end_ = std::min(end_, seq);
        }
        ready_cv_.notify_all();
        work_cv_.notify_all();
        return;
      }
    }
    try {
      for (const MapDataset* map : maps_) map->Apply(batch.spec, batch.inputs, batch.labels);
    } catch (...) {
      batch.error = std::current_exception();
    }
    std::lock_guard lock(mu_);
    if (batch.error && seq + 1 < end_) {
      // Later batches made by faster workers are dropped: the stream ends at the error.
      end_ = seq + 1;
      ready_.erase(ready_.upper_bound(seq), ready_.end());
      work_cv_.notify_all();
    }
    if (seq < end_) ready_.emplace(seq, std::move(batch));
    ready_cv_.notify_all();
  }
}

bool ParallelDataset::Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) {
  std::unique_lock lock(mu_);
  if (!started_) {
    started_ = true;
    for (int i = 0; i < num_workers_; ++i) workers_.emplace_back([this] { Work(); });
  }
  ready_cv_.wait(lock, [&] { return next_yield_ >= end_ || ready_.contains(next_yield_); });
  auto it = ready_.find(next_yield_);
  if (it == ready_.end()) return false;
  Batch batch = std::move(it->second);
  ready_.erase(it);
  ++next_yield_;
  lock.unlock();
  work_cv_.notify_all();
  if (batch.error) std::rethrow_exception(batch.error);
  spec = std::move(batch.spec);
  inputs = std::move(batch.inputs);
  labels = std::move(batch.labels);
  return true;
}

void ParallelDataset::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void ParallelDataset::Reset() {
  Stop();
  // No worker runs now: the state and the source are ours alone.
  std::lock_guard lock(mu_);
  ready_.clear();
  stop_ = false;
  started_ = false;
  next_claim_ = next_yield_ = 0;
  end_ = INT64_MAX;
  inner_->Reset();
}

ParallelBuilder& ParallelBuilder::Buffer(int n) {
  buffer_ = n;
  return *this;
}

ParallelBuilder& ParallelBuilder::NumWorkers(int n) {
  workers_ = n;
  return *this;
}

std::shared_ptr<ParallelDataset> ParallelBuilder::Done() {
  return std::make_shared<ParallelDataset>(inner_, buffer_, workers_);
}

ParallelBuilder Parallel(DatasetPtr inner) { return ParallelBuilder(std::move(inner)); }

}  // namespace kiln::data
