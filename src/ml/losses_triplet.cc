// The triplet loss over a batch of embeddings (GoMLX's losses.TripletLoss): pairwise distances,
// positive and negative masks from the class ids, the mining strategies, and the per-anchor
// weighted mean over the chosen triplets.

#include "core/check.h"
#include "kiln/graph/ops.h"
#include "kiln/ml/losses.h"
#include "ml/losses_internal.h"

namespace kiln::losses {

namespace {

using graph::Graph;

/// Distances between every pair of rows of `x` [batch, dim]: [batch, batch].
Node PairwiseDistances(Node x, PairwiseDistanceMetric metric) {
  if (metric == PairwiseDistanceMetric::Cosine) {
    // Rows scaled to unit norm (a zero row stays zero), then 1 - their dot products.
    Node norm = graph::Sqrt(graph::ReduceSum(graph::Square(x), {1}));
    Node safe = graph::Where(graph::Greater(norm, graph::ScalarLike(norm, 0)), norm, graph::OnesLike(norm));
    Node unit = x / graph::InsertAxes(safe, {1});
    Node similarity = graph::ReduceSum(graph::InsertAxes(unit, {1}) * graph::InsertAxes(unit, {0}), {2});
    return graph::Max(graph::ScalarLike(similarity, 1) - similarity, graph::ScalarLike(similarity, 0));
  }
  // Differences first (no cancellation, and exactly 0 on the diagonal).
  Node diff = graph::InsertAxes(x, {1}) - graph::InsertAxes(x, {0});
  Node squared = graph::ReduceSum(graph::Square(diff), {2});
  if (metric == PairwiseDistanceMetric::SquaredL2) return squared;
  // sqrt where positive; 0 elsewhere, with no infinite derivative of sqrt at 0 reaching the gradient.
  Node positive = graph::Greater(squared, graph::ScalarLike(squared, 0));
  return graph::Where(positive, graph::Sqrt(graph::Where(positive, squared, graph::OnesLike(squared))),
                      graph::ZerosLike(squared));
}

/// Per row of `d` [batch, batch], the largest entry where `mask` holds (the row's smallest where
/// the mask is empty).
Node MaskedRowMax(Node d, Node mask) {
  Node fill = graph::InsertAxes(graph::ReduceMin(d, {1}), {1});
  return graph::ReduceMax(graph::Where(mask, d, graph::BroadcastToDims(fill, d.shape().Dimensions())), {1});
}

/// Per row, the smallest entry where `mask` holds (the row's largest where it is empty).
Node MaskedRowMin(Node d, Node mask) {
  Node fill = graph::InsertAxes(graph::ReduceMax(d, {1}), {1});
  return graph::ReduceMin(graph::Where(mask, d, graph::BroadcastToDims(fill, d.shape().Dimensions())), {1});
}

/// max(v + margin, 0), or softplus(v) (stable) for a soft margin (margin <= 0).
Node Hinge(Node v, double margin) {
  if (margin > 0) return graph::Max(v + graph::ScalarLike(v, margin), graph::ScalarLike(v, 0));
  return graph::Max(v, graph::ScalarLike(v, 0)) + graph::Log1p(graph::Exp(graph::Neg(graph::Abs(v))));
}

}  // namespace

Node TripletLoss(const std::vector<Node>& labels, const std::vector<Node>& predictions,
                 TripletMiningStrategy mining, double margin, PairwiseDistanceMetric metric) {
  const char* fn = "TripletLoss";
  internal::CheckArgs(fn, labels, predictions);
  Node x = predictions[0];
  if (x.rank() != 2) kiln::detail::Throw("{}: embeddings {} must be [batch, dim]", fn, x.shape());
  const int64_t batch = x.shape().Dim(0);
  Node ids = labels[0];
  if (ids.rank() == 2 && ids.shape().Dim(1) == 1) ids = graph::Reshape(ids, {ids.shape().Dim(0)});
  if (ids.rank() != 1 || ids.shape().Dim(0) != batch || IsFloat(ids.dtype()) || ids.dtype() == DType::Bool) {
    kiln::detail::Throw("{}: labels {} must be integer class ids, [batch] or [batch, 1] with batch {}", fn,
                        labels[0].shape(), batch);
  }
  Graph& g = x.graph();
  const DType dt = x.dtype();
  Node d = PairwiseDistances(x, metric);

  // positive[a][p]: same class, p != a; negative[a][n]: another class.
  Node same = graph::Equal(graph::InsertAxes(ids, {1}), graph::InsertAxes(ids, {0}));
  Shape square(DType::Int32, {batch, batch});
  Node off_diagonal = graph::NotEqual(graph::Iota(g, square, 0), graph::Iota(g, square, 1));
  Node positive = graph::LogicalAnd(same, off_diagonal);
  Node negative = graph::LogicalNot(same);

  // Per anchor: the sum of its triplets' losses and how many triplets it has.
  Node sums, counts;
  if (mining == TripletMiningStrategy::All) {
    Node loss = Hinge(graph::InsertAxes(d, {2}) - graph::InsertAxes(d, {1}), margin);  // [a, p, n]
    Node valid = graph::LogicalAnd(graph::InsertAxes(positive, {2}), graph::InsertAxes(negative, {1}));
    sums = graph::ReduceSum(graph::Where(valid, loss, graph::ZerosLike(loss)), {1, 2});
    counts = graph::ReduceSum(graph::ConvertDType(valid, dt), {1, 2});
  } else {
    Node hardest_positive = MaskedRowMax(d, positive);
    Node chosen;
    if (mining == TripletMiningStrategy::Hard) {
      chosen = MaskedRowMin(d, negative);
    } else {
      // The closest negative farther than the hardest positive; the farthest negative if none is.
      Node beyond = graph::LogicalAnd(negative, graph::Greater(d, graph::InsertAxes(hardest_positive, {1})));
      chosen = graph::Where(graph::ReduceLogicalOr(beyond, {1}), MaskedRowMin(d, beyond),
                            MaskedRowMax(d, negative));
    }
    Node valid =
        graph::LogicalAnd(graph::ReduceLogicalOr(positive, {1}), graph::ReduceLogicalOr(negative, {1}));
    Node loss = Hinge(hardest_positive - chosen, margin);
    sums = graph::Where(valid, loss, graph::ZerosLike(loss));
    counts = graph::ConvertDType(valid, dt);
  }
  Node weight = internal::ExampleWeights(fn, labels, batch, dt);
  if (weight.Ok()) {
    sums = sums * weight;
    counts = counts * weight;
  }
  Node total = graph::ReduceAllSum(counts);
  Node none = graph::Equal(total, graph::ScalarLike(total, 0));
  return graph::Where(none, graph::ScalarLike(total, 0),
                      graph::ReduceAllSum(sums) / graph::Where(none, graph::ScalarLike(total, 1), total));
}

LossFn MakeTripletLoss(TripletMiningStrategy mining, double margin, PairwiseDistanceMetric metric) {
  return [=](const std::vector<Node>& labels, const std::vector<Node>& predictions) {
    return TripletLoss(labels, predictions, mining, margin, metric);
  };
}

}  // namespace kiln::losses
