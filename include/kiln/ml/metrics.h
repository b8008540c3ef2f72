#pragma once
/// @file
/// Metrics (kiln::metrics): values computed per batch from labels and predictions, with a name
/// and a short name for progress bars. Mean metrics are averaged by the trainer over an
/// evaluation, weighted by examples; moving-average metrics keep their state in the store and
/// update it at every training step.
///
///   trainer(..., {metrics::NewMovingAverageSparseCategoricalAccuracy("Moving Average Accuracy", "~acc",
///   0.01)},
///                {metrics::NewSparseCategoricalAccuracy("Mean Accuracy", "#acc")});

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/graph/ops.h"
#include "kiln/model/store.h"

namespace kiln::metrics {

using graph::Node;

/// A metric's batch value: labels and predictions in, a float scalar (the batch's mean) out.
using BatchFn = std::function<Node(const std::vector<Node>& labels, const std::vector<Node>& predictions)>;

/// How Trainer::Eval combines a metric's batch values over an evaluation, for metrics that are
/// not means of their batches (a median).
class Aggregator {
 public:
  virtual ~Aggregator() = default;
  /// Adds the value a batch of `examples` examples gave (what the metric's UpdateGraph built).
  virtual void Add(const Tensor& value, double examples) = 0;
  /// The evaluation's value; kiln::Error naming the metric when nothing was added.
  virtual double Result() = 0;
  /// What this aggregator holds, as numbers, so that the evaluations of several processes
  /// (Trainer::Eval in a job under mpirun, each process on its shard) combine into one value:
  /// every process merges every process's Gathered(), in rank order, into a fresh aggregator.
  /// The default is a kiln::Error saying the aggregator cannot be combined.
  virtual std::vector<double> Gathered() const;
  /// Adds what another aggregator of the same metric gathered (its Gathered()).
  virtual void Merge(std::span<const double> gathered);
};

/// A metric (GoMLX's metrics.Interface): the trainer builds its value in each training or
/// evaluation graph and reports it under Name() and ShortName().
class Interface {
 public:
  virtual ~Interface() = default;
  /// The full name ("Mean Accuracy"), in evaluation reports and plots.
  virtual const std::string& Name() const = 0;
  /// The short name ("#acc"), in progress bars; also keys a moving average's state.
  virtual const std::string& ShortName() const = 0;
  /// The value reported for this step, built in the graph `scope` is bound to: the batch value
  /// (mean metrics) or the updated moving average (whose state it sets in the store).
  virtual Node UpdateGraph(model::Scope scope, const std::vector<Node>& labels,
                           const std::vector<Node>& predictions) = 0;
  /// True for moving averages (state in the store), false for metrics averaged over an evaluation.
  virtual bool IsMovingAverage() const = 0;
  /// A fresh aggregator for one evaluation, or nullptr (the default): the batch values' mean
  /// weighted by the examples of each batch. Metrics with an aggregator are evaluation metrics.
  virtual std::unique_ptr<Aggregator> NewAggregator() const { return nullptr; }
};
/// Shared handle to a metric (one metric may serve several trainers).
using Metric = std::shared_ptr<Interface>;

/// A mean metric from a batch function.
Metric NewMean(std::string name, std::string short_name, BatchFn batch);
/// A moving average of a batch function: avg += f·(value - avg), with f = max(factor, 1/n) at the
/// n-th update (so early values are a plain mean). State under "/#metrics/<short name>".
Metric NewMovingAverage(std::string name, std::string short_name, double factor, BatchFn batch);

/// A streaming median (GoMLX's NewMedianMetric), an evaluation metric: each element of the
/// batch function's value is one sample (a function returning per-example values, shape
/// [batch], gives the median over the examples; a scalar one, the median of the batch values).
/// Up to `sample_size` samples are kept, a uniform reservoir sample beyond that (seeded: the
/// same data gives the same estimate), and the median is the middle of the sorted samples (the
/// upper middle for an even count, as GoMLX). A NaN sample is a kiln::Error.
Metric NewMedian(std::string name, std::string short_name, BatchFn batch, int sample_size = 10001);

// Batch functions.
/// Fraction of examples whose logits' arg-max equals the integer label ([batch, 1] or [batch]);
/// for logits with leading axes [batch, ..., classes], the fraction of positions (labels
/// [batch, ...] or [batch, ..., 1]).
Node SparseCategoricalAccuracy(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Fraction of examples with (logit > 0) == (label > 0.5).
Node BinaryLogitsAccuracy(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Fraction of examples with (probability > 0.5) == (label > 0.5).
Node BinaryAccuracy(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// |label - prediction| per element, Float32, the predictions' shape (for NewMedian: the median
/// absolute error).
Node AbsoluteErrors(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Mean absolute difference.
Node MeanAbsoluteErrorValue(const std::vector<Node>& labels, const std::vector<Node>& predictions);

// The batch functions above as mean metrics (NewMean) and moving averages (NewMovingAverage).

/// NewMean of SparseCategoricalAccuracy.
Metric NewSparseCategoricalAccuracy(std::string name, std::string short_name);
/// NewMovingAverage of SparseCategoricalAccuracy.
Metric NewMovingAverageSparseCategoricalAccuracy(std::string name, std::string short_name, double factor);
/// NewMean of BinaryLogitsAccuracy.
Metric NewMeanBinaryLogitsAccuracy(std::string name, std::string short_name);
/// NewMovingAverage of BinaryLogitsAccuracy.
Metric NewMovingAverageBinaryLogitsAccuracy(std::string name, std::string short_name, double factor);
/// NewMean of BinaryAccuracy.
Metric NewMeanBinaryAccuracy(std::string name, std::string short_name);
/// NewMovingAverage of BinaryAccuracy.
Metric NewMovingAverageBinaryAccuracy(std::string name, std::string short_name, double factor);
/// NewMean of MeanAbsoluteErrorValue.
Metric NewMeanAbsoluteError(std::string name, std::string short_name);
/// NewMovingAverage of MeanAbsoluteErrorValue.
Metric NewMovingAverageMeanAbsoluteError(std::string name, std::string short_name, double factor);

}  // namespace kiln::metrics
