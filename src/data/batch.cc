// data::Batch: examples stacked (or batches concatenated) into larger batches; data::Buffer.

#include "kiln/data/batch.h"

#include <cstring>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/checked.h"

namespace kiln::data {

namespace {

struct Item {
  std::any spec;
  std::vector<Tensor> inputs, labels;
};

class BatchDataset final : public Dataset {
 public:
  BatchDataset(DatasetPtr source, int64_t size, bool leading, bool drop)
      : source_(std::move(source)), size_(size), leading_(leading), drop_(drop) {}
  std::string Name() const override { return source_->Name() + " [Batch]"; }
  bool IsInfinite() const override { return source_->IsInfinite(); }
  void Reset() override { source_->Reset(); }

  bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) override {
    std::vector<Item> items;
    while (static_cast<int64_t>(items.size()) < size_) {
      Item it;
      if (!source_->Yield(it.spec, it.inputs, it.labels)) break;
      items.push_back(std::move(it));
    }
    if (items.empty() || (drop_ && static_cast<int64_t>(items.size()) < size_)) return false;
    std::vector<Tensor> in, lab;
    for (size_t t = 0; t < items[0].inputs.size(); ++t) in.push_back(Join(items, t, false));
    for (size_t t = 0; t < items[0].labels.size(); ++t) lab.push_back(Join(items, t, true));
    spec = std::move(items[0].spec);
    inputs = std::move(in);
    labels = std::move(lab);
    return true;
  }

 private:
  // Tensor `index` of the inputs (or labels) of every item, stacked or concatenated.
  Tensor Join(const std::vector<Item>& items, size_t index, bool is_label) const {
    const char* kind = is_label ? "label" : "input";
    auto at = [&](size_t i) -> const std::vector<Tensor>& {
      return is_label ? items[i].labels : items[i].inputs;
    };
    const Tensor& first = at(0)[index];
    for (size_t i = 0; i < items.size(); ++i) {
      const std::vector<Tensor>& v = at(i);
      if (v.size() != at(0).size()) {
        kiln::detail::Throw("data::Batch({}): item {} of a batch has {} {}s, item 0 has {}", source_->Name(),
                            i, v.size(), kind, at(0).size());
      }
      const Tensor& t = v[index];
      if (!t.Ok())
        kiln::detail::Throw("data::Batch({}): {} {} of item {} is not Ok", source_->Name(), kind, index, i);
      if (IsPacked(t.dtype()))
        kiln::detail::Throw("data::Batch({}): {} {} is packed ({})", source_->Name(), kind, index, t.dtype());
      const bool same = leading_
                            ? t.shape() == first.shape()
                            : t.rank() >= 1 && t.rank() == first.rank() && t.dtype() == first.dtype() &&
                                  std::equal(t.shape().Dimensions().begin() + 1, t.shape().Dimensions().end(),
                                             first.shape().Dimensions().begin() + 1);
      if (!same) {
        kiln::detail::Throw("data::Batch({}): {} {} of item {} is {}, item 0's is {}{}", source_->Name(),
                            kind, index, i, t.shape(), first.shape(),
                            leading_ ? "" : " (concatenated along axis 0)");
      }
    }
    std::vector<int64_t> dims = first.shape().Dimensions();
    if (leading_) {
      dims.insert(dims.begin(), static_cast<int64_t>(items.size()));
    } else {
      int64_t total = 0;
      for (size_t i = 0; i < items.size(); ++i)
        total = kiln::detail::CheckedAdd(total, at(i)[index].shape().Dim(0), "data::Batch size");
      dims[0] = total;
    }
    Tensor out = Tensor::FromShape(Shape(first.dtype(), dims));
    out.MutableBytes([&](std::span<uint8_t> dst) {
      size_t offset = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        at(i)[index].ConstBytes([&](std::span<const uint8_t> src) {
          if (!src.empty()) std::memcpy(dst.data() + offset, src.data(), src.size());
          offset += src.size();
        });
      }
    });
    return out;
  }

  DatasetPtr source_;
  int64_t size_;
  bool leading_, drop_;
};

}  // namespace

DatasetPtr Batch(DatasetPtr source, int64_t batch_size, bool create_leading_axis, bool drop_incomplete) {
  if (!source) kiln::detail::Throw("data::Batch: no source dataset");
  if (batch_size < 1)
    kiln::detail::Throw("data::Batch({}): batch size {} is below 1", source->Name(), batch_size);
  return std::make_shared<BatchDataset>(std::move(source), batch_size, create_leading_axis, drop_incomplete);
}

std::shared_ptr<ParallelDataset> Buffer(DatasetPtr source, int buffer) {
  if (!source) kiln::detail::Throw("data::Buffer: no source dataset");
  return Parallel(std::move(source)).Buffer(buffer).NumWorkers(1).Done();
}

}  // namespace kiln::data
