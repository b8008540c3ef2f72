// Layers: Dense, Convolution, global pooling, Dropout, DropPath and Embedding.

#include "kiln/ml/layers.h"

#include <string>

#include "core/check.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/random.h"
#include "kiln/ml/initializers.h"
#include "kiln/ml/nn.h"
#include "kiln/ml/quantized.h"
#include "kiln/ml/regularizers.h"
#include "kiln/model/random_state.h"
#include "kiln/quant/quant.h"

namespace kiln::layers {

Node DenseWithDims(model::Scope scope, Node x, bool use_bias, const std::vector<int64_t>& dims) {
  if (!x.Ok()) kiln::detail::Throw("layers::Dense: x is an invalid node");
  if (x.rank() < 1)
    kiln::detail::Throw("layers::Dense({}): x {} needs at least one axis", scope.Path(), x.shape());
  if (dims.empty()) kiln::detail::Throw("layers::Dense({}): no output dimensions", scope.Path());
  if (!IsFloat(x.dtype()))
    kiln::detail::Throw("layers::Dense({}): x {} must be float", scope.Path(), x.shape());
  graph::Graph& g = x.graph();
  const int64_t in = x.shape().Dimensions().back();
  if (auto q = quant::QuantizedVariableIn(scope, "weights", g)) {  // After quant::QuantizeStore.
    Node b = use_bias ? scope.VariableWithShape("biases", Shape(x.dtype(), dims)).NodeValue(g) : Node();
    Node y = nn::QuantizedDense(x, q->first, q->second, b);
    if (y.shape().Dimensions().back() != dims.back() || dims.size() != 1)
      kiln::detail::Throw("layers::Dense({}): quantized weights give {} outputs, the layer wants [{}]",
                          scope.Path(), y.shape().Dimensions().back(), fmt::join(dims, ", "));
    return y;
  }
  std::vector<int64_t> wdims = {in};
  wdims.insert(wdims.end(), dims.begin(), dims.end());
  Node w = scope.VariableWithShape("weights", Shape(x.dtype(), wdims)).NodeValue(g);
  Node b = use_bias ? scope.VariableWithShape("biases", Shape(x.dtype(), dims)).NodeValue(g) : Node();
  regularizers::RegularizeWeights(scope);  // "l1_regularization" / "l2_regularization", if set
  return nn::Dense(x, w, b);
}

ConvolutionBuilder& ConvolutionBuilder::Filters(int64_t n) {
  filters_ = n;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::KernelSize(int size) {
  kernel_ = {size};
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::KernelSize(const std::vector<int>& sizes) {
  kernel_ = sizes;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::Strides(int stride) {
  strides_ = {stride};
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::Strides(const std::vector<int>& strides) {
  strides_ = strides;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::Dilations(int dilation) {
  dilations_ = {dilation};
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::Dilations(const std::vector<int>& dilations) {
  dilations_ = dilations;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::PadSame() {
  same_ = true;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::NoPadding() {
  same_ = false;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::UseBias(bool use) {
  bias_ = use;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::ChannelGroupCount(int groups) {
  groups_ = groups;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::ChannelsFirst() {
  channels_first_ = true;
  return *this;
}
ConvolutionBuilder& ConvolutionBuilder::ChannelsLast() {
  channels_first_ = false;
  return *this;
}

Node ConvolutionBuilder::Done() {
  const std::string where = "layers::Convolution(" + scope_.Path() + ")";
  if (!x_.Ok()) kiln::detail::Throw("{}: x is an invalid node", where);
  const int spatial = x_.rank() - 2;
  if (spatial < 1 || spatial > 3)
    kiln::detail::Throw("{}: x {} must be [batch, spatial (1 to 3 axes)..., channels]", where, x_.shape());
  if (filters_ < 1) kiln::detail::Throw("{}: Filters(n) must be set to a positive count", where);
  if (kernel_.empty()) kiln::detail::Throw("{}: KernelSize must be set", where);
  std::vector<int> ks =
      kernel_.size() == 1 ? std::vector<int>(static_cast<size_t>(spatial), kernel_[0]) : kernel_;
  if (static_cast<int>(ks.size()) != spatial)
    kiln::detail::Throw("{}: {} kernel sizes for {} spatial axes", where, ks.size(), spatial);
  const int64_t channels = channels_first_ ? x_.shape().Dim(1) : x_.shape().Dim(x_.rank() - 1);
  if (groups_ < 1 || channels % groups_ != 0 || filters_ % groups_ != 0) {
    kiln::detail::Throw("{}: ChannelGroupCount({}) must divide the channels ({}) and the filters ({})", where,
                        groups_, channels, filters_);
  }
  std::vector<int64_t> kdims(ks.begin(), ks.end());
  kdims.push_back(channels / groups_);
  kdims.push_back(filters_);
  graph::Graph& g = x_.graph();
  Node kernel = scope_.VariableWithShape("weights", Shape(x_.dtype(), kdims)).NodeValue(g);
  graph::ConvBuilder conv = graph::Convolve(x_, kernel);
  if (channels_first_) {
    // The kernel keeps its [spatial..., in, out] layout.
    compute::ConvDims d;
    d.input_batch = 0;
    d.input_feature = 1;
    d.output_batch = 0;
    d.output_feature = 1;
    for (int a = 0; a < spatial; ++a) {
      d.input_spatial.push_back(2 + a);
      d.output_spatial.push_back(2 + a);
      d.kernel_spatial.push_back(a);
    }
    d.kernel_input_feature = spatial;
    d.kernel_output_feature = spatial + 1;
    conv.AxesConfig(d);
  }
  if (!strides_.empty()) conv.Strides(strides_);
  if (!dilations_.empty()) conv.Dilations(dilations_);
  if (same_) conv.PadSame();
  if (groups_ > 1) conv.ChannelGroupCount(groups_);
  Node y = conv.Done();
  if (bias_) {
    Node b = scope_.VariableWithShape("biases", Shape(x_.dtype(), {filters_})).NodeValue(g);
    std::vector<int64_t> shape(static_cast<size_t>(y.rank()), 1);
    shape[static_cast<size_t>(channels_first_ ? 1 : y.rank() - 1)] = filters_;
    y = y + graph::Reshape(b, shape);
  }
  regularizers::RegularizeWeights(scope_);  // "l1_regularization" / "l2_regularization", if set
  return y;
}

namespace {

std::vector<int> SpatialAxes(Node x, bool channels_first, const char* fn) {
  if (x.rank() < 3) kiln::detail::Throw("{}: x {} needs a batch, spatial axes and channels", fn, x.shape());
  std::vector<int> axes;
  for (int a = 0; a < x.rank() - 2; ++a) axes.push_back(channels_first ? 2 + a : 1 + a);
  return axes;
}

}  // namespace

Node GlobalAvgPool(Node x, bool channels_first) {
  return graph::ReduceMean(x, SpatialAxes(x, channels_first, "GlobalAvgPool"));
}

Node GlobalMaxPool(Node x, bool channels_first) {
  return graph::ReduceMax(x, SpatialAxes(x, channels_first, "GlobalMaxPool"));
}

Node Dropout(model::Scope scope, Node x, double rate) {
  if (rate < 0 || rate >= 1)
    kiln::detail::Throw("layers::Dropout({}): rate {} is not in [0, 1)", scope.Path(), rate);
  if (!model::IsTraining(scope) || rate == 0) return x;
  if (!IsFloat(x.dtype()))
    kiln::detail::Throw("layers::Dropout({}): x {} must be float", scope.Path(), x.shape());
  Node state = model::RandomStateForDraws(scope);
  Node y = nn::Dropout(x, state, rate, true);
  model::SetRandomStateAfterDraws(scope, state);
  return y;
}

Node DropPath(model::Scope scope, Node x, double rate) {
  if (rate < 0 || rate >= 1)
    kiln::detail::Throw("layers::DropPath({}): rate {} is not in [0, 1)", scope.Path(), rate);
  if (!x.Ok()) kiln::detail::Throw("layers::DropPath({}): x is an invalid node", scope.Path());
  if (!model::IsTraining(scope) || rate == 0) return x;
  if (!IsFloat(x.dtype()) || x.rank() < 1) {
    kiln::detail::Throw("layers::DropPath({}): x {} must be float with a batch axis", scope.Path(),
                        x.shape());
  }
  // One uniform number per example, broadcast over the example's other axes.
  std::vector<int64_t> dims(static_cast<size_t>(x.rank()), 1);
  dims[0] = x.shape().Dim(0);
  auto [next, u] = graph::RandomUniform(model::RandomStateForDraws(scope), Shape(x.dtype(), dims));
  model::SetRandomStateAfterDraws(scope, next);
  Node keep =
      graph::BroadcastToDims(graph::GreaterOrEqual(u, graph::ScalarLike(u, rate)), x.shape().Dimensions());
  return graph::Where(keep, x * (1 / (1 - rate)), graph::ZerosLike(x));
}

Node Embedding(model::Scope scope, Node ids, int64_t vocab_size, int64_t dims, DType dtype) {
  const std::string where = "layers::Embedding(" + scope.Path() + ")";
  if (!ids.Ok()) kiln::detail::Throw("{}: ids is an invalid node", where);
  if (!IsInt(ids.dtype()) || IsPacked(ids.dtype()))
    kiln::detail::Throw("{}: ids {} must have an integer dtype", where, ids.shape());
  if (vocab_size < 1 || dims < 1)
    kiln::detail::Throw("{}: vocab_size {} and dims {} must be positive", where, vocab_size, dims);
  if (!IsFloat(dtype)) kiln::detail::Throw("{}: the table's dtype {} must be float", where, dtype);
  model::Scope s =
      scope.GetInitializer() ? scope : scope.WithInitializer(initializers::RandomUniform(-0.05, 0.05));
  // Int64 holds every id (a Uint64 beyond its range wraps negative, so it is out of range too).
  // Gather clamps out-of-range starts; those rows are replaced by zeros below.
  Node id64 = ids.dtype() == DType::Int64 ? ids : graph::ConvertDType(ids, DType::Int64);
  Node rows;
  if (auto q = quant::QuantizedVariableIn(s, "embeddings", ids.graph())) {  // After quant::QuantizeStore.
    rows = graph::ConvertDType(nn::QuantizedEmbedding(id64, q->first, q->second), dtype);
    if (rows.shape().Dimensions().back() != dims)
      kiln::detail::Throw("{}: the quantized table has rows of {}, the layer wants {}", where,
                          rows.shape().Dimensions().back(), dims);
  } else {
    Node table = s.VariableWithShape("embeddings", Shape(dtype, {vocab_size, dims})).NodeValue(ids.graph());
    rows = graph::Gather(table, graph::InsertAxes(id64, {-1}));
  }
  Node in_range = graph::LogicalAnd(graph::GreaterOrEqual(id64, graph::ScalarLike(id64, 0)),
                                    graph::Less(id64, graph::ScalarLike(id64, vocab_size)));
  std::vector<int64_t> out = rows.shape().Dimensions();
  Node mask = graph::BroadcastToDims(graph::InsertAxes(in_range, {-1}), out);
  return graph::Where(mask, rows, graph::ZerosLike(rows));
}

}  // namespace kiln::layers
