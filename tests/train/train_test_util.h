#pragma once
// A one-weight model the loop and progress/plot tests train: y = w·x with w starting at 0.5,
// SGD on the mean squared error, and a dataset of ones.

#include <any>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::test {

/// (Float32)[n, 1] holding `v`.
inline Tensor Column(const std::vector<float>& v) {
  return Tensor::FromFlat(Shape(DType::Float32, {static_cast<int64_t>(v.size()), 1}), v);
}

/// The model: its input times the variable "w" (initially 0.5).
inline std::vector<graph::Node> Scale(model::Scope scope, const std::any&, std::vector<graph::Node> in) {
  graph::Node w =
      scope.VariableWithValue("w", std::vector<std::vector<float>>{{0.5f}}).NodeValue(in[0].graph());
  return {in[0] * w};
}

/// A trainer of Scale with SGD (learning rate 0.01) on the mean squared error, and datasets of
/// ones for it.
struct ScaleFixture {
  explicit ScaleFixture(std::vector<metrics::Metric> train_metrics = {},
                        std::vector<metrics::Metric> eval_metrics = {})
      : trainer(backend, store, Scale, losses::MeanSquaredError,
                optimizers::StochasticGradientDescent().LearningRate(0.01).Done(), std::move(train_metrics),
                std::move(eval_metrics)) {}
  /// `n` examples of x = 1, y = 1 in batches of `batch`.
  data::DatasetPtr Data(int n, int batch) {
    std::vector<float> xs(static_cast<size_t>(n), 1.0f);
    auto ds = data::InMemoryFromData(backend, "ones", {Column(xs)}, {Column(xs)});
    ds->BatchSize(batch, false);
    return ds;
  }

  compute::BackendPtr backend = compute::New();
  model::Store store;
  train::Trainer trainer;
};

}  // namespace kiln::test
