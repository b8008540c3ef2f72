// layers::DropBlock: dropout of whole blocks of a feature map (Ghiasi et al. 2018).

#include <string>

#include "core/check.h"
#include "kiln/graph/random.h"
#include "kiln/ml/layers.h"
#include "kiln/model/random_state.h"

namespace kiln::layers {

DropBlockBuilder::DropBlockBuilder(model::Scope scope, Node x) : scope_(std::move(scope)), x_(x) {
  prob_ = model::GetParamOr(scope_, "dropblock_prob", 0.0);
  size_ = static_cast<int>(model::GetParamOr(scope_, "dropblock_size", int64_t{3}));
}

DropBlockBuilder& DropBlockBuilder::Probability(double prob) {
  prob_ = prob;
  return *this;
}

DropBlockBuilder& DropBlockBuilder::BlockSize(int size) {
  size_ = size;
  sizes_.clear();
  return *this;
}

DropBlockBuilder& DropBlockBuilder::BlockSizes(const std::vector<int>& sizes) {
  sizes_ = sizes;
  return *this;
}

DropBlockBuilder& DropBlockBuilder::ChannelsLast() {
  layout_ = Layout::kChannelsLast;
  return *this;
}

DropBlockBuilder& DropBlockBuilder::ChannelsFirst() {
  layout_ = Layout::kChannelsFirst;
  return *this;
}

DropBlockBuilder& DropBlockBuilder::FullShape() {
  layout_ = Layout::kFull;
  return *this;
}

Node DropBlockBuilder::Done() const {
  const std::string what = fmt::format("layers::DropBlock({})", scope_.Path());
  if (!x_.Ok()) kiln::detail::Throw("{}: x is an invalid node", what);
  if (!(prob_ >= 0 && prob_ < 1)) kiln::detail::Throw("{}: probability {} is not in [0, 1)", what, prob_);
  if (!IsFloat(x_.dtype()) && x_.dtype() != DType::Bool)
    kiln::detail::Throw("{}: x {} must be float or Bool", what, x_.shape());
  const int rank = x_.rank();
  const int spatial = layout_ == Layout::kFull ? rank : rank - 2;
  if (spatial < 1) kiln::detail::Throw("{}: x {} has no spatial axis", what, x_.shape());
  std::vector<int> sizes = sizes_.empty() ? std::vector<int>(static_cast<size_t>(spatial), size_) : sizes_;
  if (static_cast<int>(sizes.size()) != spatial) {
    kiln::detail::Throw("{}: {} block sizes for the {} spatial axes of x {}", what, sizes.size(), spatial,
                        x_.shape());
  }
  int64_t pixels = 1;
  for (int s : sizes) {
    if (s < 1) kiln::detail::Throw("{}: block size {} is below 1", what, s);
    pixels *= s;
  }
  if (!model::IsTraining(scope_) || prob_ == 0) return x_;

  // The seeds: one draw per position (shared by the channels), dropped with probability gamma.
  std::vector<int64_t> mask_dims = x_.shape().Dimensions();
  if (layout_ == Layout::kChannelsLast) mask_dims.back() = 1;
  if (layout_ == Layout::kChannelsFirst) mask_dims[1] = 1;
  const DType dtype = IsFloat(x_.dtype()) ? x_.dtype() : DType::Float32;
  const double gamma = prob_ / static_cast<double>(pixels);
  auto [state, u] = graph::RandomUniform(model::RandomStateForDraws(scope_), Shape(dtype, mask_dims));
  model::SetRandomStateAfterDraws(scope_, state);
  Node keep = graph::ConvertDType(graph::GreaterOrEqual(u, graph::ScalarLike(u, gamma)), dtype);

  // A position is kept when no seed lies within its block: the minimum over a stride-1 window.
  if (pixels > 1) {
    if (layout_ == Layout::kFull) {
      std::vector<int64_t> padded = mask_dims;
      padded.insert(padded.begin(), 1);
      padded.push_back(1);
      keep = graph::Reshape(keep, padded);
    }
    graph::PoolBuilder pool = graph::MinPool(keep);
    pool.Window(sizes).Strides(1).PadSame();
    if (layout_ == Layout::kChannelsFirst) pool.ChannelsFirst();
    keep = pool.Done();
    if (layout_ == Layout::kFull) keep = graph::Reshape(keep, mask_dims);
  }
  keep = graph::BroadcastToDims(keep, x_.shape().Dimensions());
  if (x_.dtype() == DType::Bool)
    return graph::LogicalAnd(x_, graph::GreaterOrEqual(keep, graph::ScalarLike(keep, 0.5)));
  return x_ * keep;
}

}  // namespace kiln::layers
