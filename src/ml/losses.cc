// Loss functions: per-example losses reduced to a (weighted, masked) mean over examples.

#include "kiln/ml/losses.h"

#include "compute/shape_dims.h"
#include "core/check.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/ops.h"
#include "ml/losses_internal.h"

namespace kiln::losses {

void internal::CheckArgs(const char* fn, const std::vector<Node>& labels,
                         const std::vector<Node>& predictions) {
  if (labels.empty() || !labels[0].Ok()) kiln::detail::Throw("{}: no labels", fn);
  if (predictions.empty() || !predictions[0].Ok()) kiln::detail::Throw("{}: no predictions", fn);
  if (!IsFloat(predictions[0].dtype()))
    kiln::detail::Throw("{}: predictions must be float, got {}", fn, predictions[0].shape());
  if (predictions[0].rank() == 0)
    kiln::detail::Throw("{}: predictions {} have no batch axis", fn, predictions[0].shape());
}

/// `v` ([batch] or [batch, 1]) as a [batch] vector of `dtype`; the error names `what`.
Node internal::PerExample(const char* fn, const char* what, Node v, int64_t batch, DType dtype) {
  if (v.rank() == 2 && v.shape().Dim(1) == 1) v = graph::Reshape(v, {v.shape().Dim(0)});
  if (v.rank() != 1 || v.shape().Dim(0) != batch)
    kiln::detail::Throw("{}: {} {} must be [batch] or [batch, 1] with batch {}", fn, what, v.shape(), batch);
  return v.dtype() == dtype ? v : graph::ConvertDType(v, dtype);
}

Node internal::ExampleWeights(const char* fn, const std::vector<Node>& labels, int64_t batch, DType dt) {
  Node weight;
  if (labels.size() > 1 && labels[1].Ok()) {
    if (!IsFloat(labels[1].dtype()))
      kiln::detail::Throw("{}: weights must be float, got {}", fn, labels[1].shape());
    weight = internal::PerExample(fn, "weights", labels[1], batch, dt);
  }
  if (labels.size() > 2 && labels[2].Ok()) {
    if (labels[2].dtype() != DType::Bool)
      kiln::detail::Throw("{}: the mask must be Bool, got {}", fn, labels[2].shape());
    Node m = internal::PerExample(fn, "mask", labels[2], batch, dt);
    weight = weight.Ok() ? weight * m : m;
  }
  return weight;
}

namespace {

using internal::CheckArgs;
using internal::PerExample;

/// The mean over examples of `per_example` ([batch]), weighted by labels[1] and masked by labels[2].
/// sum(values·weight) / sum(weight) (0 when nothing is selected), `weight` broadcast to the
/// values' shape; the plain mean when `weight` is invalid.
Node WeightedMean(Node values, Node weight) {
  if (!weight.Ok()) return graph::ReduceAllMean(values);
  if (weight.shape().Dimensions() != values.shape().Dimensions())
    weight = graph::DynamicBroadcastToShape(weight, values.shape());
  Node total = graph::ReduceAllSum(weight);
  Node safe =
      graph::Where(graph::Equal(total, graph::ScalarLike(total, 0)), graph::ScalarLike(total, 1), total);
  return graph::ReduceAllSum(values * weight) / safe;
}

Node Reduce(const char* fn, Node per_example, const std::vector<Node>& labels) {
  return WeightedMean(per_example,
                      internal::ExampleWeights(fn, labels, per_example.shape().Dim(0), per_example.dtype()));
}

/// Mean over every axis but the first: [batch, ...] -> [batch].
Node MeanPerExample(Node x) {
  if (x.rank() <= 1) return x;
  std::vector<int> axes;
  for (int a = 1; a < x.rank(); ++a) axes.push_back(a);
  return graph::ReduceMean(x, axes);
}

/// labels[0] converted to the predictions' dtype, with the same shape (error naming `fn`).
Node SameShapeLabels(const char* fn, const std::vector<Node>& labels, Node pred) {
  Node y = labels[0];
  if (y.shape().Dimensions() != pred.shape().Dimensions())
    kiln::detail::Throw("{}: labels {} and predictions {} differ in shape", fn, y.shape(), pred.shape());
  return y.dtype() == pred.dtype() ? y : graph::ConvertDType(y, pred.dtype());
}

}  // namespace

Node MeanSquaredError(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("MeanSquaredError", labels, predictions);
  Node p = predictions[0];
  Node d = p - SameShapeLabels("MeanSquaredError", labels, p);
  return Reduce("MeanSquaredError", MeanPerExample(d * d), labels);
}

Node MeanAbsoluteError(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("MeanAbsoluteError", labels, predictions);
  Node p = predictions[0];
  Node d = p - SameShapeLabels("MeanAbsoluteError", labels, p);
  return Reduce("MeanAbsoluteError", MeanPerExample(graph::Abs(d)), labels);
}

namespace {

/// Huber with threshold `delta`: 0.5·min(|d|, delta)² + delta·(|d| - min(|d|, delta)).
Node HuberWith(const char* fn, double delta, const std::vector<Node>& labels,
               const std::vector<Node>& predictions) {
  CheckArgs(fn, labels, predictions);
  Node p = predictions[0];
  Node a = graph::Abs(p - SameShapeLabels(fn, labels, p));
  Node quadratic = graph::Min(a, graph::ScalarLike(a, delta));
  Node linear = a - quadratic;
  Node l = quadratic * quadratic * graph::ScalarLike(a, 0.5) + linear * graph::ScalarLike(a, delta);
  return Reduce(fn, MeanPerExample(l), labels);
}

}  // namespace

Node Huber(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  return HuberWith("Huber", 1.0, labels, predictions);
}

LossFn MakeHuberLoss(double delta) {
  if (!(delta > 0)) kiln::detail::Throw("MakeHuberLoss: delta {} must be > 0 (1 is a good default)", delta);
  return [delta](const std::vector<Node>& labels, const std::vector<Node>& predictions) {
    return HuberWith("Huber", delta, labels, predictions);
  };
}

Node BinaryCrossentropy(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("BinaryCrossentropy", labels, predictions);
  Node p = graph::Clip(predictions[0], 1e-7, 1 - 1e-7);
  Node y = SameShapeLabels("BinaryCrossentropy", labels, p);
  Node l = graph::Neg(y * graph::Log(p) + (graph::ScalarLike(y, 1) - y) * graph::Log1p(graph::Neg(p)));
  return Reduce("BinaryCrossentropy", MeanPerExample(l), labels);
}

Node BinaryCrossentropyLogits(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("BinaryCrossentropyLogits", labels, predictions);
  Node z = predictions[0];
  Node y = SameShapeLabels("BinaryCrossentropyLogits", labels, z);
  Node l =
      graph::Max(z, graph::ScalarLike(z, 0)) - z * y + graph::Log1p(graph::Exp(graph::Neg(graph::Abs(z))));
  return Reduce("BinaryCrossentropyLogits", MeanPerExample(l), labels);
}

Node internal::PositionLabels(const char* fn, Node ids, Node logits) {
  const int r = logits.rank();
  if (r < 2)
    kiln::detail::Throw("{}: logits {} must be [..., classes] with a batch axis", fn, logits.shape());
  if (!ids.Ok() || !IsInt(ids.dtype()) || IsPacked(ids.dtype()))
    kiln::detail::Throw("{}: labels must be integer class ids, got {}", fn, ids.shape());
  if (r == 2) return PerExample(fn, "labels", ids, logits.shape().Dim(0), ids.dtype());
  std::vector<graph::DimensionSpec> lead;
  for (int a = 0; a + 1 < r; ++a) lead.push_back(graph::DimensionSpecFor(logits, a));
  if (ids.rank() == r && ids.shape().Dim(r - 1) == 1) ids = graph::DynamicReshape(ids, lead);
  bool same = ids.rank() == r - 1;
  for (int a = 0; same && a + 1 < r; ++a)
    same = compute::MayBeEqual(ids.shape().Dim(a), logits.shape().Dim(a));
  if (!same)
    kiln::detail::Throw("{}: labels {} must be the logits' leading axes {} (or those and a last axis of 1)",
                        fn, ids.shape(), logits.shape());
  return ids;
}

Node SparseCategoricalCrossEntropyLogits(const std::vector<Node>& labels,
                                         const std::vector<Node>& predictions) {
  const char* fn = "SparseCategoricalCrossEntropyLogits";
  CheckArgs(fn, labels, predictions);
  Node logits = predictions[0];
  Node ids = internal::PositionLabels(fn, labels[0], logits);
  const int r = logits.rank();
  const int64_t classes = logits.shape().Dim(r - 1);
  if (classes < 0)
    kiln::detail::Throw("{}: the classes axis of logits {} must be static", fn, logits.shape());
  Node onehot = graph::OneHot(ids, classes, logits.dtype());
  // -log softmax(z)[id] = logsumexp(z) - z[id]; an id outside [0, classes) selects nothing: 0.
  Node l = graph::Neg(graph::ReduceSum(onehot * graph::LogSoftmax(logits, {-1}), {r - 1}));
  if (r == 2) return Reduce(fn, l, labels);
  // Leading axes: the mean over every position; weights and mask are per example ([batch]) or
  // per position (the labels' shape).
  Node weight;
  for (size_t i = 1; i < 3 && i < labels.size(); ++i) {
    if (!labels[i].Ok()) continue;
    Node w = labels[i];
    const char* what = i == 1 ? "weights" : "mask";
    if (i == 1 && !IsFloat(w.dtype()))
      kiln::detail::Throw("{}: weights must be float, got {}", fn, w.shape());
    if (i == 2 && w.dtype() != DType::Bool)
      kiln::detail::Throw("{}: the mask must be Bool, got {}", fn, w.shape());
    if (w.rank() == r && w.shape().Dim(r - 1) == 1) w = graph::Squeeze(w, {r - 1});
    if (w.rank() == 2 && w.shape().Dim(1) == 1) w = graph::Squeeze(w, {1});
    w = graph::ConvertDType(w, l.dtype());
    if (w.rank() == 1 && compute::MayBeEqual(w.shape().Dim(0), l.shape().Dim(0))) {
      std::vector<int> axes;
      for (int a = 1; a < r - 1; ++a) axes.push_back(a);
      w = graph::ExpandAxes(w, axes);
    } else if (w.rank() != r - 1) {
      kiln::detail::Throw("{}: {} {} must be [batch] or the labels' shape {}", fn, what, labels[i].shape(),
                          ids.shape());
    }
    weight = weight.Ok() ? weight * w : w;
  }
  return WeightedMean(l, weight);
}

Node CategoricalCrossEntropy(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("CategoricalCrossEntropy", labels, predictions);
  Node p = graph::Clip(predictions[0], 1e-7, 1.0);
  Node y = SameShapeLabels("CategoricalCrossEntropy", labels, p);
  // Per position (classes on the last axis), then the mean over leading axes and examples.
  Node l = graph::Neg(graph::ReduceSum(y * graph::Log(p), {p.rank() - 1}));
  return Reduce("CategoricalCrossEntropy", MeanPerExample(l), labels);
}

Node CategoricalCrossEntropyLogits(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("CategoricalCrossEntropyLogits", labels, predictions);
  Node z = predictions[0];
  Node y = SameShapeLabels("CategoricalCrossEntropyLogits", labels, z);
  Node l = graph::Neg(graph::ReduceSum(y * graph::LogSoftmax(z, {-1}), {z.rank() - 1}));
  return Reduce("CategoricalCrossEntropyLogits", MeanPerExample(l), labels);
}

}  // namespace kiln::losses
