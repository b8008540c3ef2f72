// Metrics: batch functions, mean metrics and moving averages with state in the store.

#include "kiln/ml/metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>

#include "core/check.h"
#include "ml/losses_internal.h"

namespace kiln::metrics {

std::vector<double> Aggregator::Gathered() const {
  kiln::detail::Throw(
      "this metric's aggregator cannot combine the evaluations of several processes (it does not "
      "implement Aggregator::Gathered and Merge)");
}

void Aggregator::Merge(std::span<const double>) {
  kiln::detail::Throw(
      "this metric's aggregator cannot combine the evaluations of several processes (it does not "
      "implement Aggregator::Gathered and Merge)");
}

namespace {

class MeanMetric final : public Interface {
 public:
  MeanMetric(std::string name, std::string short_name, BatchFn batch)
      : name_(std::move(name)), short_(std::move(short_name)), batch_(std::move(batch)) {}
  const std::string& Name() const override { return name_; }
  const std::string& ShortName() const override { return short_; }
  bool IsMovingAverage() const override { return false; }
  Node UpdateGraph(model::Scope, const std::vector<Node>& labels,
                   const std::vector<Node>& predictions) override {
    return graph::ConvertDType(batch_(labels, predictions), DType::Float32);
  }

 private:
  std::string name_, short_;
  BatchFn batch_;
};

class MedianAggregator final : public Aggregator {
 public:
  MedianAggregator(const std::string& name, size_t capacity) : name_(name), capacity_(capacity) {}
  void Add(const Tensor& value, double) override {
    for (double x : value.ToDoubles()) {
      if (std::isnan(x)) kiln::detail::Throw("metric \"{}\": a NaN sample", name_);
      ++seen_;
      if (samples_.size() < capacity_) {
        samples_.push_back(x);
        continue;
      }
      // Reservoir sampling: the seen_-th sample replaces a random one with probability capacity/seen.
      std::uniform_int_distribution<uint64_t> pick(0, seen_ - 1);
      const uint64_t j = pick(rng_);
      if (j < capacity_) samples_[static_cast<size_t>(j)] = x;
    }
  }
  /// {samples seen, the samples kept...}.
  std::vector<double> Gathered() const override {
    std::vector<double> g = {static_cast<double>(seen_)};
    g.insert(g.end(), samples_.begin(), samples_.end());
    return g;
  }
  /// Keeps every sample while both sides together fit the sample size; beyond it, a sample of
  /// that size drawn from each side in proportion to the samples each side has seen.
  void Merge(std::span<const double> g) override {
    if (g.empty() || !(g[0] >= static_cast<double>(g.size() - 1)))
      kiln::detail::Throw(
          "metric \"{}\": a gathered median of {} numbers whose count of samples seen ({}) is "
          "below its samples",
          name_, g.size(), g.empty() ? 0.0 : g[0]);
    std::vector<double> other(g.begin() + 1, g.end());
    const uint64_t other_seen = static_cast<uint64_t>(g[0]);
    if (samples_.size() + other.size() <= capacity_) {
      samples_.insert(samples_.end(), other.begin(), other.end());
      seen_ += other_seen;
      return;
    }
    const double share = static_cast<double>(seen_) / static_cast<double>(seen_ + other_seen);
    size_t mine =
        std::min(samples_.size(), static_cast<size_t>(std::llround(share * static_cast<double>(capacity_))));
    const size_t theirs = std::min(other.size(), capacity_ - mine);
    mine = std::min(samples_.size(), capacity_ - theirs);
    std::shuffle(samples_.begin(), samples_.end(), rng_);
    std::shuffle(other.begin(), other.end(), rng_);
    samples_.resize(mine);
    samples_.insert(samples_.end(), other.begin(), other.begin() + static_cast<long>(theirs));
    seen_ += other_seen;
  }
  double Result() override {
    if (samples_.empty()) kiln::detail::Throw("metric \"{}\": no samples to take the median of", name_);
    const size_t mid = samples_.size() / 2;
    std::nth_element(samples_.begin(), samples_.begin() + static_cast<long>(mid), samples_.end());
    return samples_[mid];
  }

 private:
  std::string name_;
  size_t capacity_;
  uint64_t seen_ = 0;
  std::vector<double> samples_;
  std::mt19937_64 rng_{0x6b696c6eu};
};

class MedianMetric final : public Interface {
 public:
  MedianMetric(std::string name, std::string short_name, BatchFn batch, int sample_size)
      : name_(std::move(name)), short_(std::move(short_name)), batch_(std::move(batch)), size_(sample_size) {
    if (sample_size < 1) kiln::detail::Throw("metric \"{}\": sample size {} is below 1", name_, sample_size);
  }
  const std::string& Name() const override { return name_; }
  const std::string& ShortName() const override { return short_; }
  bool IsMovingAverage() const override { return false; }
  Node UpdateGraph(model::Scope, const std::vector<Node>& labels,
                   const std::vector<Node>& predictions) override {
    Node v = batch_(labels, predictions);
    if (!v.Ok()) kiln::detail::Throw("metric \"{}\": the batch function returned an invalid node", name_);
    return IsFloat(v.dtype()) && v.dtype() != DType::Float64 ? graph::ConvertDType(v, DType::Float32) : v;
  }
  std::unique_ptr<Aggregator> NewAggregator() const override {
    return std::make_unique<MedianAggregator>(name_, static_cast<size_t>(size_));
  }

 private:
  std::string name_, short_;
  BatchFn batch_;
  int size_;
};

/// A variable-name-safe form of a short name ("~acc" -> "_acc").
std::string SafeName(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out.empty() ? "metric" : out;
}

class MovingAverage final : public Interface {
 public:
  MovingAverage(std::string name, std::string short_name, double factor, BatchFn batch)
      : name_(std::move(name)), short_(std::move(short_name)), factor_(factor), batch_(std::move(batch)) {
    if (!(factor > 0 && factor <= 1))
      kiln::detail::Throw("metric \"{}\": factor {} is not in (0, 1]", name_, factor);
  }
  const std::string& Name() const override { return name_; }
  const std::string& ShortName() const override { return short_; }
  bool IsMovingAverage() const override { return true; }
  Node UpdateGraph(model::Scope scope, const std::vector<Node>& labels,
                   const std::vector<Node>& predictions) override {
    Node value = graph::ConvertDType(batch_(labels, predictions), DType::Float32);
    graph::Graph& g = value.graph();
    model::Scope at(scope.store(), "/#metrics/" + SafeName(short_), scope.graph());
    model::Variable avg = at.VariableWithValue("average", 0.0f);
    model::Variable count = at.VariableWithValue("count", 0.0f);
    avg.SetTrainable(false);
    count.SetTrainable(false);
    Node n = count.NodeValue(g) + 1.0f;
    Node f = graph::Max(graph::Scalar(g, DType::Float32, factor_), graph::Reciprocal(n));
    Node old = avg.NodeValue(g);
    Node updated = old + f * (value - old);
    count.SetNodeValue(n);
    avg.SetNodeValue(updated);
    return updated;
  }

 private:
  std::string name_, short_;
  double factor_;
  BatchFn batch_;
};

void CheckArgs(const char* fn, const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  if (labels.empty() || !labels[0].Ok()) kiln::detail::Throw("{}: no labels", fn);
  if (predictions.empty() || !predictions[0].Ok()) kiln::detail::Throw("{}: no predictions", fn);
}

Node FractionTrue(Node hits) { return graph::ReduceAllMean(graph::ConvertDType(hits, DType::Float32)); }

}  // namespace

Metric NewMean(std::string name, std::string short_name, BatchFn batch) {
  return std::make_shared<MeanMetric>(std::move(name), std::move(short_name), std::move(batch));
}

Metric NewMedian(std::string name, std::string short_name, BatchFn batch, int sample_size) {
  return std::make_shared<MedianMetric>(std::move(name), std::move(short_name), std::move(batch),
                                        sample_size);
}

Node AbsoluteErrors(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("AbsoluteErrors", labels, predictions);
  Node p = graph::ConvertDType(predictions[0], DType::Float32);
  Node y = graph::ConvertDType(labels[0], DType::Float32);
  if (y.shape().Dimensions() != p.shape().Dimensions())
    kiln::detail::Throw("AbsoluteErrors: labels {} and predictions {} differ in shape", labels[0].shape(),
                        predictions[0].shape());
  return graph::Abs(p - y);
}

Metric NewMovingAverage(std::string name, std::string short_name, double factor, BatchFn batch) {
  return std::make_shared<MovingAverage>(std::move(name), std::move(short_name), factor, std::move(batch));
}

Node SparseCategoricalAccuracy(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  const char* fn = "SparseCategoricalAccuracy";
  CheckArgs(fn, labels, predictions);
  Node logits = predictions[0];
  if (logits.rank() < 2)
    kiln::detail::Throw("{}: predictions {} must be [..., classes] with a batch axis", fn, logits.shape());
  // Logits [batch, classes] with labels [batch] or [batch, 1], or leading axes [..., classes]
  // with labels [...] or [..., 1]: the fraction of positions whose largest logit is the label.
  Node ids = losses::internal::PositionLabels(fn, labels[0], logits);
  Node pred = graph::ArgMax(logits, logits.rank() - 1, ids.dtype());
  return FractionTrue(graph::Equal(pred, ids));
}

Node BinaryLogitsAccuracy(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("BinaryLogitsAccuracy", labels, predictions);
  Node z = predictions[0];
  Node y = labels[0].dtype() == z.dtype() ? labels[0] : graph::ConvertDType(labels[0], z.dtype());
  return FractionTrue(
      graph::Equal(graph::Greater(z, graph::ScalarLike(z, 0)), graph::Greater(y, graph::ScalarLike(y, 0.5))));
}

Node BinaryAccuracy(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("BinaryAccuracy", labels, predictions);
  Node p = predictions[0];
  Node y = labels[0].dtype() == p.dtype() ? labels[0] : graph::ConvertDType(labels[0], p.dtype());
  return FractionTrue(graph::Equal(graph::Greater(p, graph::ScalarLike(p, 0.5)),
                                   graph::Greater(y, graph::ScalarLike(y, 0.5))));
}

Node MeanAbsoluteErrorValue(const std::vector<Node>& labels, const std::vector<Node>& predictions) {
  CheckArgs("MeanAbsoluteError", labels, predictions);
  Node p = predictions[0];
  Node y = labels[0].dtype() == p.dtype() ? labels[0] : graph::ConvertDType(labels[0], p.dtype());
  return graph::ReduceAllMean(graph::Abs(p - y));
}

Metric NewSparseCategoricalAccuracy(std::string name, std::string short_name) {
  return NewMean(std::move(name), std::move(short_name), SparseCategoricalAccuracy);
}
Metric NewMovingAverageSparseCategoricalAccuracy(std::string name, std::string short_name, double factor) {
  return NewMovingAverage(std::move(name), std::move(short_name), factor, SparseCategoricalAccuracy);
}
Metric NewMeanBinaryLogitsAccuracy(std::string name, std::string short_name) {
  return NewMean(std::move(name), std::move(short_name), BinaryLogitsAccuracy);
}
Metric NewMovingAverageBinaryLogitsAccuracy(std::string name, std::string short_name, double factor) {
  return NewMovingAverage(std::move(name), std::move(short_name), factor, BinaryLogitsAccuracy);
}
Metric NewMeanBinaryAccuracy(std::string name, std::string short_name) {
  return NewMean(std::move(name), std::move(short_name), BinaryAccuracy);
}
Metric NewMovingAverageBinaryAccuracy(std::string name, std::string short_name, double factor) {
  return NewMovingAverage(std::move(name), std::move(short_name), factor, BinaryAccuracy);
}
Metric NewMeanAbsoluteError(std::string name, std::string short_name) {
  return NewMean(std::move(name), std::move(short_name), MeanAbsoluteErrorValue);
}
Metric NewMovingAverageMeanAbsoluteError(std::string name, std::string short_name, double factor) {
  return NewMovingAverage(std::move(name), std::move(short_name), factor, MeanAbsoluteErrorValue);
}

}  // namespace kiln::metrics
