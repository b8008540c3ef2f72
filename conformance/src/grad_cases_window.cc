// Gradient rows of the window ops: the pooling builders (max, min, sum, mean; strides, same
// padding, channels first and last, 1-D to 3-D, overlapping windows), ReduceWindow directly for
// each kind (with padding, negative padding, window and input dilations, which the Max/Min rule
// takes apart into taps), and SelectAndScatter differentiated with respect to its source. Max and
// min rows use distinct values (no ties).

#include <utility>

#include "grad_internal.h"
#include "kiln/graph/conv.h"

namespace kiln::conformance::internal {

namespace {

using compute::PadAxis;
using compute::ReduceKind;
using Configure = graph::PoolBuilder& (*)(graph::PoolBuilder&);

/// A row function: pooling `make(x)` configured by `configure`, then Done().
graph::GraphFn Pool(graph::PoolBuilder (*make)(Node), Configure configure) {
  return P([make, configure](const std::vector<Node>& p) {
    graph::PoolBuilder b = make(p[0]);
    return configure(b).Done();
  });
}

/// A row function: the ReduceWindow primitive.
graph::GraphFn Window(ReduceKind kind, std::vector<int64_t> window, std::vector<int64_t> strides = {},
                      std::vector<PadAxis> padding = {}, std::vector<int64_t> dilations = {},
                      std::vector<int64_t> input_dilations = {}) {
  return P([=](const std::vector<Node>& p) {
    return graph::ReduceWindow(p[0], kind, window, strides, padding, dilations, input_dilations);
  });
}

}  // namespace

void AddWindowGrads(std::vector<GradCase>& out) {
  GradList L(out, "window");
  // ---- Pooling builders ----
  L.Add("MaxPool/2d_window2",
        Pool(graph::MaxPool, [](graph::PoolBuilder& b) -> graph::PoolBuilder& { return b.Window(2); }),
        {L.Distinct({2, 4, 4, 2})});
  L.Add("MaxPool/2d_same_stride2",
        Pool(graph::MaxPool,
             [](graph::PoolBuilder& b) -> graph::PoolBuilder& { return b.Window(3).Strides(2).PadSame(); }),
        {L.Distinct({1, 5, 4, 2})});
  L.Add("MaxPool/overlapping_channels_first",
        Pool(graph::MaxPool,
             [](graph::PoolBuilder& b) -> graph::PoolBuilder& {
               return b.ChannelsFirst().Window(3).Strides(1);
             }),
        {L.Distinct({1, 2, 4, 4})});
  L.Add("MaxPool/1d",
        Pool(graph::MaxPool,
             [](graph::PoolBuilder& b) -> graph::PoolBuilder& { return b.Window(2).Strides(1).PadSame(); }),
        {L.Distinct({2, 5, 1})});
  L.Add("MaxPool/3d",
        Pool(graph::MaxPool,
             [](graph::PoolBuilder& b) -> graph::PoolBuilder& {
               return b.Window({2, 2, 1}).Strides({1, 2, 1});
             }),
        {L.Distinct({1, 3, 4, 2, 1})});
  L.Add("MinPool/2d_same",
        Pool(graph::MinPool,
             [](graph::PoolBuilder& b) -> graph::PoolBuilder& { return b.Window(2).Strides(2).PadSame(); }),
        {L.Distinct({1, 3, 5, 2})});
  L.Add("SumPool/2d_strides_same",
        Pool(graph::SumPool,
             [](graph::PoolBuilder& b) -> graph::PoolBuilder& {
               return b.Window(3).Strides({2, 1}).PadSame();
             }),
        {L.Rand({2, 5, 4, 1})});
  L.Add("SumPool/channels_first",
        Pool(graph::SumPool,
             [](graph::PoolBuilder& b) -> graph::PoolBuilder& { return b.ChannelsFirst().Window(2); }),
        {L.Rand({1, 2, 4, 5})});
  L.Add("MeanPool/2d_same",
        Pool(graph::MeanPool,
             [](graph::PoolBuilder& b) -> graph::PoolBuilder& { return b.Window(2).Strides(2).PadSame(); }),
        {L.Rand({1, 3, 3, 2})});
  L.Add("MaxPool/squared", P([](const std::vector<Node>& p) {
          return graph::Square(graph::MaxPool(p[0]).Window(2).Strides(1).Done());
        }),
        {L.Distinct({1, 3, 4, 1})});
  // ---- ReduceWindow directly ----
  L.Add("ReduceWindow/sum_padding_strides", Window(ReduceKind::Sum, {2, 3}, {2, 2}, {{1, 0, 0}, {2, 1, 0}}),
        {L.Rand({4, 5})});
  L.Add("ReduceWindow/sum_dilations_negative_padding",
        Window(ReduceKind::Sum, {2, 2}, {1, 2}, {{-1, 2, 0}, {1, -1, 0}}, {2, 1}, {1, 2}), {L.Rand({5, 4})});
  L.Add("ReduceWindow/max_padding", Window(ReduceKind::Max, {3, 2}, {2, 1}, {{1, 1, 0}, {0, 1, 0}}),
        {L.Distinct({4, 3})});
  L.Add("ReduceWindow/min_strides", Window(ReduceKind::Min, {2, 2}, {1, 2}), {L.Distinct({3, 5})});
  L.Add("ReduceWindow/max_window_dilation", Window(ReduceKind::Max, {2, 2}, {1, 1}, {{1, 0, 0}, {}}, {2, 2}),
        {L.Distinct({5, 4})});
  L.Add("ReduceWindow/max_input_dilation",
        Window(ReduceKind::Max, {3, 2}, {2, 1}, {{1, 1, 0}, {0, 0, 0}}, {}, {2, 2}), {L.Distinct({3, 3})});
  L.Add("ReduceWindow/min_negative_padding_dilated",
        Window(ReduceKind::Min, {2, 3}, {2, 1}, {{-1, 1, 0}, {1, -1, 0}}, {1, 2}, {2, 1}),
        {L.Distinct({4, 5})});
  L.Add("ReduceWindow/product", Window(ReduceKind::Product, {2, 2}, {1, 1}), {L.Rand({3, 4}, 0.5, 1.5)});
  L.Add("ReduceWindow/product_padding_dilations",
        Window(ReduceKind::Product, {2, 2}, {2, 1}, {{1, 2, 0}, {-1, 1, 0}}, {1, 2}, {2, 1}),
        {L.Rand({3, 5}, -1.5, 1.5)});
  L.Add(
      "ReduceWindow/product_with_zeros", Window(ReduceKind::Product, {1, 3}, {1, 1}, {{0, 0, 0}, {1, 1, 0}}),
      {Tensor::FromFlat(Shape(DType::Float64, {2, 4}), std::vector<double>{0, 0.5, -1.5, 0, 0, 0, 2, 0.7})});
  L.Add("ReduceWindow/3d_max",
        Window(ReduceKind::Max, {1, 2, 2}, {1, 1, 2}, {{0, 0, 0}, {0, 1, 0}, {1, 0, 0}}),
        {L.Distinct({2, 2, 3})});
  L.Add("ReduceWindow/max_dilated_squared", P([](const std::vector<Node>& p) {
          return graph::Square(graph::ReduceWindow(p[0], ReduceKind::Max, {2, 2}, {1, 1}, {}, {2, 1}));
        }),
        {L.Distinct({4, 3})});
  L.Add("ReduceWindow/sum_empty", Window(ReduceKind::Sum, {2, 1}), {L.Rand({3, 0})});
  L.Add("ReduceWindow/max_no_windows", Window(ReduceKind::Max, {3, 1}), {L.Distinct({2, 2})});
  // ---- SelectAndScatter: the gradient of its source (and none of its operand) ----
  L.Add("SelectAndScatter/max_source", P([](const std::vector<Node>& p) {
          return graph::SelectAndScatterMax(p[0], p[1], {2, 3}, {2, 1}, {{0, 1, 0}, {1, 0, 0}});
        }),
        {L.Distinct({4, 3}), L.Rand({2, 2})})
      .wrt = {1};
  L.Add("SelectAndScatter/min_source_overlapping", P([](const std::vector<Node>& p) {
          return graph::SelectAndScatterMin(p[0], p[1], {2, 2}, {1, 1});
        }),
        {L.Distinct({3, 4}), L.Rand({2, 3})})
      .wrt = {1};
  L.Add("SelectAndScatter/max_both", P([](const std::vector<Node>& p) {
          return graph::SelectAndScatterMax(p[0], p[1], {2, 2}, {2, 2}, {{1, 0, 0}, {0, 1, 0}});
        }),
        {L.Distinct({3, 3}), L.Rand({2, 2})});
  L.Add("SelectAndScatter/empty", P([](const std::vector<Node>& p) {
          return graph::SelectAndScatterMax(p[0], p[1], {1, 2}, {1, 1}, {{0, 0, 0}, {1, 0, 0}});
        }),
        {L.Distinct({2, 0}), L.Rand({2, 0})})
      .wrt = {1};
  L.Add("SelectAndScatter/max_of_square", P([](const std::vector<Node>& p) {
          return graph::SelectAndScatterMax(p[0], graph::Square(p[1]), {3}, {1}, {{1, 1, 0}});
        }),
        {L.Distinct({5}), L.Rand({5})})
      .wrt = {1};
}

}  // namespace kiln::conformance::internal
