// data::Take: a dataset ending after n batches of its source.

#include "kiln/data/take.h"

#include <string>
#include <utility>

#include "core/check.h"

namespace kiln::data {

namespace {

class TakeDataset final : public Dataset {
 public:
  TakeDataset(DatasetPtr source, int64_t n) : source_(std::move(source)), n_(n) {}
  std::string Name() const override { return source_->Name() + " [Take " + std::to_string(n_) + "]"; }
  bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) override {
    if (count_ >= n_) return false;
    if (!source_->Yield(spec, inputs, labels)) return false;
    ++count_;
    return true;
  }
  void Reset() override {
    source_->Reset();
    count_ = 0;
  }

 private:
  DatasetPtr source_;
  int64_t n_;
  int64_t count_ = 0;
};

}  // namespace

DatasetPtr Take(DatasetPtr source, int64_t n) {
  if (!source) kiln::detail::Throw("data::Take: no source dataset");
  if (n < 0) kiln::detail::Throw("data::Take({}): n = {} must be >= 0", source->Name(), n);
  return std::make_shared<TakeDataset>(std::move(source), n);
}

}  // namespace kiln::data
