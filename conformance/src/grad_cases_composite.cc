// Gradient rows of composite functions, whose gradients come from their primitives' rules:
// Softmax, LogSoftmax and MaskedSoftmax over several axes, Einsum equations, ReduceLogSumExp on
// large values, Clamp/Clip, a two-layer MLP with a softmax cross-entropy loss, and small
// convolutional stacks (convolution, pooling, dense layer).

#include "grad_internal.h"
#include "kiln/graph/conv.h"
#include "kiln/graph/ops.h"

namespace kiln::conformance::internal {

namespace {

using Nodes = std::vector<Node>;

/// Softmax-family rows: several axes, a tied maximum, a size-one axis and empty sizes.
void AddSoftmaxRows(GradList& L) {
  struct Fn {
    const char* name;
    Node (*fn)(Node, const std::vector<int>&);
  };
  for (const Fn& f : {Fn{"Softmax", graph::Softmax}, Fn{"LogSoftmax", graph::LogSoftmax}}) {
    const std::string n = f.name;
    auto on = [fn = f.fn](std::vector<int> axes) {
      return P([fn, axes](const Nodes& p) { return fn(p[0], axes); });
    };
    L.Add(n + "/last_axis", on({-1}), {L.Rand({3, 4}, -2, 2)});
    L.Add(n + "/axis0", on({0}), {L.Rand({3, 4}, -2, 2)});
    L.Add(n + "/middle_axis_3d", on({1}), {L.Rand({2, 3, 2}, -2, 2)});
    L.Add(n + "/two_axes", on({0, 2}), {L.Rand({2, 2, 3}, -2, 2)});
    L.Add(n + "/vector", on({-1}), {L.Rand({5}, -3, 3)});
    L.Add(n + "/size_one_axis", on({1}), {L.Rand({3, 1})});
    L.Add(n + "/empty_rows", on({-1}), {L.Rand({0, 4})});
    // Equal maxima: the shift's gradient cancels, so the tie convention does not matter.
    L.Add(n + "/tied_max", on({-1}),
          {Tensor::FromFlat(Shape(DType::Float64, {2, 3}), std::vector<double>{0.5, 1.5, 1.5, -1, -1, -1})});
  }
}

/// A mask from the sign of the second input (not differentiated).
Node SignMask(Node m) { return graph::Greater(m, graph::ScalarLike(m, 0)); }

/// MaskedSoftmax rows: a random mask, a fully masked row (zeros), a broadcast scalar mask.
void AddMaskedSoftmaxRows(GradList& L) {
  L.Add("MaskedSoftmax/random_mask",
        P([](const Nodes& p) { return graph::MaskedSoftmax(p[0], SignMask(p[1])); }),
        {L.Rand({3, 4}, -2, 2), L.Distinct({3, 4})})
      .wrt = {0};
  L.Add("MaskedSoftmax/masked_row_axis0", GP([](Graph& g, const Nodes& p) {
          // Column 1 is fully masked: its outputs are zeros and get no gradient.
          const Tensor mask = V(DType::Bool, {3, 3}, {1, 0, 1, 0, 0, 1, 1, 0, 0});
          return graph::MaskedSoftmax(p[0], graph::Const(g, mask), {0});
        }),
        {L.Rand({3, 3}, -2, 2)});
  L.Add("MaskedSoftmax/all_true_scalar_mask", GP([](Graph& g, const Nodes& p) {
          return graph::MaskedSoftmax(p[0], graph::Scalar(g, DType::Bool, true), {-1});
        }),
        {L.Rand({2, 4}, -2, 2)});
  L.Add("MaskedSoftmax/empty_rows",
        P([](const Nodes& p) { return graph::MaskedSoftmax(p[0], SignMask(p[1])); }),
        {L.Rand({0, 3}), L.Rand({0, 3})})
      .wrt = {0};
}

/// Einsum equations beyond the dot family's: matrix-vector, inner and outer products, a
/// contraction over two letters, a batch letter in the middle.
void AddEinsumRows(GradList& L) {
  auto eq = [](const char* equation) {
    const std::string e = equation;
    return P([e](const Nodes& p) { return graph::Einsum(e, p[0], p[1]); });
  };
  L.Add("Einsum/matvec", eq("ij,j->i"), {L.Rand({3, 4}), L.Rand({4})});
  L.Add("Einsum/inner", eq("i,i->"), {L.Rand({5}), L.Rand({5})});
  L.Add("Einsum/outer", eq("i,j->ij"), {L.Rand({3}), L.Rand({2})});
  L.Add("Einsum/two_contracted", eq("ijk,jkl->il"), {L.Rand({2, 3, 2}), L.Rand({3, 2, 2})});
  L.Add("Einsum/batch_in_middle", eq("ibj,jbk->bik"), {L.Rand({2, 3, 2}), L.Rand({2, 3, 4})});
  L.Add("Einsum/empty_contraction", eq("ij,jk->ik"), {L.Rand({2, 0}), L.Rand({0, 3})});
  L.Add("Einsum/empty_batch", eq("bij,bjk->bik"), {L.Rand({0, 2, 3}), L.Rand({0, 3, 2})});
}

/// ReduceLogSumExp where the naive formula overflows, and over a 3-D tensor's outer axes.
void AddLogSumExpRows(GradList& L) {
  L.Add("ReduceLogSumExp/large_values", P([](const Nodes& p) { return graph::ReduceLogSumExp(p[0], {1}); }),
        {L.Rand({2, 3}, 700, 720)});
  L.Add("ReduceLogSumExp/very_negative", P([](const Nodes& p) { return graph::ReduceLogSumExp(p[0], {}); }),
        {L.Rand({4}, -800, -790)});
  L.Add("ReduceLogSumExp/outer_axes_3d", P([](const Nodes& p) {
          return graph::ReduceLogSumExp(p[0], {0, 1});
        }),
        {L.Rand({2, 3, 2}, -3, 3)});
  L.Add("ReduceLogSumExp/empty_rows", P([](const Nodes& p) { return graph::ReduceLogSumExp(p[0], {1}); }),
        {L.Rand({0, 3})});
}

/// Clip with C++ bounds and Clamp with node bounds broadcast against x.
void AddClampRows(GradList& L) {
  L.Add("Clip/numbers", P([](const Nodes& p) { return graph::Clip(p[0], -0.5, 0.5); }),
        {L.Distinct({3, 4}, -1, 1)});
  L.Add("Clamp/node_bounds", P([](const Nodes& p) { return graph::Clamp(p[1], p[0], p[2]); }),
        {L.Distinct({2, 5}, -2, 2), L.Distinct({2, 5}, -1.5, -0.2), L.Distinct({2, 5}, 0.2, 1.5)});
  L.Add("Clip/then_square", P([](const Nodes& p) { return graph::Square(graph::Clip(p[0], -1.0, 0.25)); }),
        {L.Distinct({6}, -1.5, 1.5)});
  L.Add("Clip/empty", P([](const Nodes& p) { return graph::Clip(p[0], -1.0, 1.0); }), {L.Rand({0, 2})});
}

/// mean over rows of -sum(labels * log_softmax(tanh(x W1 + b1) W2 + b2)), labels a constant one-hot.
void AddMlpRows(GradList& L) {
  L.Add("MLP/softmax_cross_entropy", GP([](Graph& g, const Nodes& p) {
          const Tensor labels = Tensor::FromFlat(Shape(DType::Float64, {4, 3}),
                                                 std::vector<double>{0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0});
          Node hidden = graph::Tanh(graph::MatMul(p[0], p[1]) + graph::ExpandAxes(p[2], {0}));
          Node logits = graph::MatMul(hidden, p[3]) + graph::ExpandAxes(p[4], {0});
          Node per_row = graph::ReduceSum(graph::Const(g, labels) * graph::LogSoftmax(logits, {-1}), {1});
          return graph::Neg(graph::ReduceAllMean(per_row));
        }),
        {L.Rand({4, 3}), L.Rand({3, 5}), L.Rand({5}), L.Rand({5, 3}), L.Rand({3})});
  L.Add("MLP/softmax_probabilities", P([](const Nodes& p) {
          return graph::Softmax(graph::MatMul(graph::Sigmoid(graph::MatMul(p[0], p[1])), p[2]), {-1});
        }),
        {L.Rand({2, 3}), L.Rand({3, 4}), L.Rand({4, 3})});
}

/// Convolution + pooling + dense stacks (channels last): x [batch, h, w, c].
void AddConvStackRows(GradList& L) {
  L.Add("ConvStack/conv_maxpool_dense", P([](const Nodes& p) {
          Node h = graph::Tanh(graph::Convolve(p[0], p[1]).PadSame().Done());
          Node pooled = graph::MaxPool(h).Window(2).Done();  // [2, 2, 2, 3]
          return graph::MatMul(graph::Reshape(pooled, {2, 12}), p[2]) + graph::ExpandAxes(p[3], {0});
        }),
        {L.Rand({2, 4, 4, 2}), L.Rand({3, 3, 2, 3}), L.Rand({12, 2}), L.Rand({2})});
  L.Add("ConvStack/strided_conv_meanpool_dense", P([](const Nodes& p) {
          Node h = graph::Sigmoid(graph::Convolve(p[0], p[1]).Strides(2).PadValid().Done());  // [1, 3, 3, 2]
          Node pooled = graph::MeanPool(h).Window(2).Strides(1).Done();                       // [1, 2, 2, 2]
          return graph::LogSoftmax(graph::MatMul(graph::Reshape(pooled, {1, 8}), p[2]), {-1});
        }),
        {L.Rand({1, 7, 7, 1}), L.Rand({3, 3, 1, 2}), L.Rand({8, 3})});
  L.Add("ConvStack/channels_first_sumpool", P([](const Nodes& p) {
          Node h = graph::Convolve(p[0], p[1]).ChannelsFirst().PadSame().Done();  // [1, 2, 4, 3]
          Node pooled = graph::SumPool(graph::Square(h)).ChannelsFirst().Window({2, 3}).Done();
          return graph::Reshape(pooled, {1, 4});
        }),
        {L.Rand({1, 2, 4, 3}), L.Rand({2, 2, 3, 3})});
}

}  // namespace

void AddCompositeGrads(std::vector<GradCase>& out) {
  GradList L(out, "composite");
  AddSoftmaxRows(L);
  AddMaskedSoftmaxRows(L);
  AddEinsumRows(L);
  AddLogSumExpRows(L);
  AddClampRows(L);
  AddMlpRows(L);
  AddConvStackRows(L);
}

}  // namespace kiln::conformance::internal
