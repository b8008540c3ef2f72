// Gradient rows of ConvGeneral (with respect to input and kernel): 1-D, 2-D and 3-D,
// channels-last and channels-first, strides that do and do not divide the input, kernel and
// input dilations, asymmetric and negative padding, feature groups (depthwise too), batch groups,
// an unusual axis layout, and empty sizes.

#include <utility>

#include "grad_internal.h"
#include "kiln/graph/conv.h"

namespace kiln::conformance::internal {

namespace {

using compute::PadAxis;
using Configure = graph::ConvBuilder& (*)(graph::ConvBuilder&);

/// A row function: Convolve(x, kernel) configured by `configure`, then Done().
graph::GraphFn Conv(Configure configure) {
  return P([configure](const std::vector<Node>& p) {
    graph::ConvBuilder b = graph::Convolve(p[0], p[1]);
    return configure(b).Done();
  });
}

/// A row function: the ConvGeneral primitive with explicit attributes.
graph::GraphFn General(compute::ConvDims dims, std::vector<int64_t> strides, std::vector<PadAxis> padding,
                       std::vector<int64_t> input_dilations, std::vector<int64_t> kernel_dilations,
                       int64_t feature_groups = 1, int64_t batch_groups = 1) {
  return P([=](const std::vector<Node>& p) {
    return graph::ConvGeneral(p[0], p[1], dims, strides, padding, input_dilations, kernel_dilations,
                              feature_groups, batch_groups);
  });
}

}  // namespace

void AddConvGrads(std::vector<GradCase>& out) {
  GradList L(out, "conv");
  // ---- 1-D, channels last: x [batch, width, in], kernel [width, in, out] ----
  L.Add("Conv1D/valid", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b; }),
        {L.Rand({2, 6, 3}), L.Rand({3, 3, 2})});
  L.Add("Conv1D/stride2_uneven",
        Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b.Strides(2); }),
        {L.Rand({1, 8, 2}), L.Rand({3, 2, 2})});
  L.Add("Conv1D/stride3_pad_same",
        Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b.Strides(3).PadSame(); }),
        {L.Rand({2, 7, 2}), L.Rand({2, 2, 3})});
  L.Add("Conv1D/negative_padding", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.Padding({{-1, 2, 0}});
        }),
        {L.Rand({1, 6, 2}), L.Rand({2, 2, 2})});
  L.Add("Conv1D/large_padding_stride2", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.Padding({{4, 3, 0}}).Strides(2);
        }),
        {L.Rand({1, 3, 1}), L.Rand({2, 1, 2})});
  L.Add("Conv1D/kernel_dilation_stride",
        Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b.Dilations(2).Strides(2); }),
        {L.Rand({1, 9, 2}), L.Rand({3, 2, 2})});
  L.Add("Conv1D/transposed", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.InputDilations(3).Padding({{2, 1, 0}});
        }),
        {L.Rand({2, 3, 2}), L.Rand({3, 2, 2})});
  L.Add("Conv1D/all_dilations_stride", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.InputDilations(2).Dilations(2).Strides(3).Padding({{1, -1, 0}});
        }),
        {L.Rand({1, 6, 2}), L.Rand({2, 2, 2})});
  L.Add("Conv1D/kernel_wider_than_input", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.Padding({{3, 2, 0}});
        }),
        {L.Rand({1, 2, 1}), L.Rand({4, 1, 2})});
  // ---- 2-D ----
  L.Add("Conv2D/channels_last_same",
        Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b.PadSame(); }),
        {L.Rand({1, 4, 3, 2}), L.Rand({3, 2, 2, 2})});
  L.Add("Conv2D/channels_first_strides", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.ChannelsFirst().Strides({2, 1}).Padding({{1, 0, 0}, {0, 2, 0}});
        }),
        {L.Rand({2, 2, 5, 3}), L.Rand({2, 2, 2, 2})});
  L.Add("Conv2D/dilations_per_axis", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.Dilations({2, 1}).InputDilations({1, 2}).Strides({1, 2});
        }),
        {L.Rand({1, 5, 3, 1}), L.Rand({2, 2, 1, 2})});
  L.Add("Conv2D/feature_groups",
        Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b.ChannelGroupCount(2).Strides(2); }),
        {L.Rand({2, 4, 3, 4}), L.Rand({2, 2, 2, 4})});
  L.Add("Conv2D/depthwise_channels_first", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.ChannelsFirst().ChannelGroupCount(3).PadSame();
        }),
        {L.Rand({1, 3, 3, 3}), L.Rand({6, 1, 2, 2})});
  L.Add("Conv2D/batch_groups",
        Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b.BatchGroupCount(2); }),
        {L.Rand({4, 3, 3, 2}), L.Rand({2, 2, 2, 4})});
  L.Add("Conv2D/batch_groups_channels_first_dilated", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.ChannelsFirst().BatchGroupCount(3).Strides(2).Dilations(2).InputDilations({2, 1}).Padding(
              {{1, 2, 0}, {-1, 1, 0}});
        }),
        {L.Rand({3, 1, 3, 5}), L.Rand({3, 1, 2, 2})});
  L.Add("Conv2D/feature_groups_transposed", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.ChannelGroupCount(2).InputDilations(2).Padding({{1, 1, 0}, {1, 0, 0}});
        }),
        {L.Rand({1, 2, 3, 2}), L.Rand({2, 2, 1, 4})});
  // ---- 3-D ----
  L.Add("Conv3D/channels_last_stride", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.Strides({1, 2, 1});
        }),
        {L.Rand({1, 3, 4, 2, 2}), L.Rand({2, 2, 2, 2, 1})});
  L.Add("Conv3D/channels_first_groups", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& {
          return b.ChannelsFirst().ChannelGroupCount(2).PadSame();
        }),
        {L.Rand({1, 2, 2, 3, 2}), L.Rand({2, 1, 2, 2, 1})});
  // ---- The primitive with an unusual layout: input [w, f, b, h], kernel [o, h, i, w],
  // output [f, h, b, w] ----
  compute::ConvDims odd;
  odd.input_batch = 2;
  odd.input_feature = 1;
  odd.input_spatial = {3, 0};
  odd.kernel_input_feature = 2;
  odd.kernel_output_feature = 0;
  odd.kernel_spatial = {1, 3};
  odd.output_batch = 2;
  odd.output_feature = 0;
  odd.output_spatial = {1, 3};
  L.Add("ConvGeneral/odd_layout", General(odd, {2, 1}, {{1, 0, 0}, {0, 1, 0}}, {1, 2}, {1, 1}),
        {L.Rand({3, 2, 2, 4}), L.Rand({2, 2, 2, 2})});
  L.Add("ConvGeneral/odd_layout_feature_groups", General(odd, {1, 2}, {}, {}, {2, 1}, 2),
        {L.Rand({4, 4, 1, 4}), L.Rand({4, 2, 2, 2})});
  L.Add("ConvGeneral/odd_layout_batch_groups", General(odd, {1, 1}, {{0, 1, 0}, {1, 0, 0}}, {}, {}, 1, 2),
        {L.Rand({3, 2, 4, 3}), L.Rand({4, 2, 2, 2})});
  // ---- Empty sizes ----
  L.Add("Conv1D/empty_batch", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b; }),
        {L.Rand({0, 4, 2}), L.Rand({2, 2, 2})});
  L.Add("Conv1D/no_windows", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b; }),
        {L.Rand({1, 2, 2}), L.Rand({3, 2, 2})});
  L.Add("Conv1D/no_output_features", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b; }),
        {L.Rand({1, 3, 2}), L.Rand({2, 2, 0})});
  L.Add("Conv1D/empty_kernel_window", Conv([](graph::ConvBuilder& b) -> graph::ConvBuilder& { return b; }),
        {L.Rand({1, 3, 2}), L.Rand({0, 2, 2})});
  L.Add("Conv2D/same_operand", P([](const std::vector<Node>& p) {
          return graph::Convolve(p[0], graph::Reshape(p[0], {2, 2, 1, 1})).Done();
        }),
        {L.Rand({1, 2, 2, 1})});
}

}  // namespace kiln::conformance::internal
