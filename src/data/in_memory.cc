// The in-memory dataset: batches gathered on the host, shuffled per epoch, finite or joined.

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/check.h"
#include "kiln/compute/backend.h"
#include "kiln/data/dataset.h"

namespace kiln::data {

InMemoryDataset::InMemoryDataset(compute::BackendPtr backend, std::string name, std::vector<Tensor> inputs,
                                 std::vector<Tensor> labels)
    : backend_(std::move(backend)),
      name_(std::move(name)),
      inputs_(std::move(inputs)),
      labels_(std::move(labels)) {
  if (inputs_.empty()) kiln::detail::Throw("dataset \"{}\": no input tensors", name_);
  num_examples_ = -1;
  auto check = [&](const Tensor& t, const char* what, size_t i) {
    if (!t.Ok()) kiln::detail::Throw("dataset \"{}\": {} {} is not Ok", name_, what, i);
    if (t.rank() < 1)
      kiln::detail::Throw("dataset \"{}\": {} {} {} has no example axis", name_, what, i, t.shape());
    if (IsPacked(t.dtype()))
      kiln::detail::Throw("dataset \"{}\": {} {} has packed dtype {}", name_, what, i, t.shape());
    const int64_t n = t.shape().Dim(0);
    if (num_examples_ >= 0 && n != num_examples_) {
      kiln::detail::Throw("dataset \"{}\": {} {} {} has {} examples, the first input has {}", name_, what, i,
                          t.shape(), n, num_examples_);
    }
    num_examples_ = n;
  };
  for (size_t i = 0; i < inputs_.size(); ++i) check(inputs_[i], "input", i);
  for (size_t i = 0; i < labels_.size(); ++i) check(labels_[i], "label", i);
  Reset();
}

InMemoryDataset& InMemoryDataset::BatchSize(int64_t n, bool drop_incomplete) {
  if (n < 1) kiln::detail::Throw("dataset \"{}\": batch size {} must be at least 1", name_, n);
  batch_ = n;
  drop_incomplete_ = drop_incomplete;
  return *this;
}

InMemoryDataset& InMemoryDataset::Shuffle(uint64_t seed) {
  shuffle_ = true;
  seed_ = seed;
  Reset();
  return *this;
}

InMemoryDataset& InMemoryDataset::Infinite(bool infinite) {
  infinite_ = infinite;
  return *this;
}

InMemoryDataset& InMemoryDataset::Epochs(int n) {
  if (n < 1) kiln::detail::Throw("dataset \"{}\": epochs {} must be at least 1", name_, n);
  epochs_ = n;
  return *this;
}

void InMemoryDataset::Reset() {
  rng_.seed(seed_);
  epoch_ = 0;
  NewEpoch();
}

InMemoryDataset& InMemoryDataset::Shard(int index, int count) {
  if (count < 1 || index < 0 || index >= count)
    kiln::detail::Throw("dataset \"{}\": Shard({}, {}): the index must be in [0, count)", name_, index,
                        count);
  shard_index_ = index;
  shard_count_ = count;
  Reset();
  return *this;
}

int64_t InMemoryDataset::ShardExamples() const {
  return num_examples_ / shard_count_ + (shard_index_ < num_examples_ % shard_count_ ? 1 : 0);
}

void InMemoryDataset::NewEpoch() {
  order_.resize(static_cast<size_t>(num_examples_));
  std::iota(order_.begin(), order_.end(), 0);
  if (shuffle_) std::shuffle(order_.begin(), order_.end(), rng_);
  if (shard_count_ > 1) {  // Every process shuffles alike, then keeps its positions.
    size_t kept = 0;
    for (size_t p = static_cast<size_t>(shard_index_); p < order_.size();
         p += static_cast<size_t>(shard_count_))
      order_[kept++] = order_[p];
    order_.resize(kept);
  }
  position_ = 0;
}

Tensor InMemoryDataset::Gather(const Tensor& t, const std::vector<int64_t>& rows) const {
  std::vector<int64_t> dims = t.shape().Dimensions();
  const int64_t row_bytes = dims[0] == 0 ? 0 : t.shape().ByteSize() / dims[0];
  dims[0] = static_cast<int64_t>(rows.size());
  const Shape shape(t.dtype(), dims);
  Tensor out = backend_ && backend_->HasSharedBuffers() ? Tensor::FromShapeForBackend(backend_, 0, shape)
                                                        : Tensor::FromShape(shape);
  t.ConstBytes([&](std::span<const uint8_t> src) {
    out.MutableBytes([&](std::span<uint8_t> dst) {
      for (size_t i = 0; i < rows.size(); ++i)
        std::memcpy(dst.data() + static_cast<int64_t>(i) * row_bytes, src.data() + rows[i] * row_bytes,
                    static_cast<size_t>(row_bytes));
    });
  });
  return out;
}

bool InMemoryDataset::Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) {
  // An infinite dataset joins epochs, so a batch may hold more than one epoch's examples.
  const auto examples = static_cast<int64_t>(order_.size());  // This shard's.
  if (!infinite_ && drop_incomplete_ && batch_ > examples) {
    kiln::detail::Throw(
        "dataset \"{}\": batch size {} exceeds the {} examples, so every batch would be dropped (an "
        "Infinite dataset joins epochs instead)",
        name_, batch_, examples);
  }
  std::vector<int64_t> rows;
  while (static_cast<int64_t>(rows.size()) < batch_) {
    if (position_ >= examples) {
      // End of an epoch: joined when infinite, else a last (maybe dropped) batch or the end.
      if (infinite_ && examples > 0) {
        ++epoch_;
        NewEpoch();
        continue;
      }
      if (!rows.empty() && !drop_incomplete_) break;
      ++epoch_;
      if (epoch_ >= epochs_) return false;
      NewEpoch();
      rows.clear();
      continue;
    }
    rows.push_back(order_[static_cast<size_t>(position_++)]);
  }
  spec = name_;
  inputs.clear();
  labels.clear();
  for (const Tensor& t : inputs_) inputs.push_back(Gather(t, rows));
  for (const Tensor& t : labels_) labels.push_back(Gather(t, rows));
  return true;
}

std::shared_ptr<InMemoryDataset> InMemoryFromData(compute::BackendPtr backend, std::string name,
                                                  std::vector<Tensor> inputs, std::vector<Tensor> labels) {
  return std::make_shared<InMemoryDataset>(std::move(backend), std::move(name), std::move(inputs),
                                           std::move(labels));
}

}  // namespace kiln::data
