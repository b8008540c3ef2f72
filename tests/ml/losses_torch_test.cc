// Tests for the losses against PyTorch (fixtures from make_loss_fixtures.py): values, weighted and
// masked variants, gradients against torch's autograd and against central differences, on the
// cpu and ref backends, in float32 and float64.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "kiln/io/npy.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

const std::map<std::string, Tensor>& Fixtures() {
  return kiln::test::Fixtures("tests/ml/fixtures/losses.npz");
}

const Tensor& Fix(const std::string& name) { return Fixtures().at(name); }
double Value(const std::string& name) { return Fix(name).ToVector<double>()[0]; }

/// A float64 fixture as `dtype` (Float32 or Float64); other fixtures unchanged.
Tensor As(const Tensor& t, DType dtype) {
  if (t.dtype() != DType::Float64 || dtype == DType::Float64) return t;
  std::vector<double> v = t.ToVector<double>();
  return Tensor::FromFlat(Shape(DType::Float32, t.shape().Dimensions()),
                          std::vector<float>(v.begin(), v.end()));
}

struct Case {
  std::string name;  // Fixture prefix.
  train::LossFn fn;
  std::string labels, predictions;
};

std::vector<Case> Cases() {
  return {
      {"mse", losses::MeanSquaredError, "reg_labels", "reg_pred"},
      {"l1", losses::MeanAbsoluteError, "reg_labels", "reg_pred"},
      {"huber", losses::Huber, "reg_labels", "reg_pred"},
      {"huber_d2", losses::MakeHuberLoss(2.0), "reg_labels", "reg_pred"},
      {"huber_d05", losses::MakeHuberLoss(0.5), "reg_labels", "reg_pred"},
      {"triplet_semihard", losses::MakeTripletLoss(), "trip_labels", "trip_emb"},
      {"triplet_hard", losses::MakeTripletLoss(losses::TripletMiningStrategy::Hard), "trip_labels",
       "trip_emb"},
      {"triplet_all_sq",
       losses::MakeTripletLoss(losses::TripletMiningStrategy::All, 0.5,
                               losses::PairwiseDistanceMetric::SquaredL2),
       "trip_labels", "trip_emb"},
      {"triplet_hard_cos_soft",
       losses::MakeTripletLoss(losses::TripletMiningStrategy::Hard, 0,
                               losses::PairwiseDistanceMetric::Cosine),
       "trip_labels", "trip_emb"},
      {"bce", losses::BinaryCrossentropy, "bce_labels", "bce_pred"},
      {"bce_logits", losses::BinaryCrossentropyLogits, "bcel_labels", "bcel_pred"},
      {"ce_sparse", losses::SparseCategoricalCrossEntropyLogits, "ce_ids", "ce_logits"},
      {"ce_soft", losses::CategoricalCrossEntropyLogits, "ce_soft_labels", "ce_logits"},
      {"cce", losses::CategoricalCrossEntropy, "ce_soft_labels", "cce_probs"},
  };
}

std::vector<compute::BackendPtr> Backends() { return {compute::New(), compute::NewWithConfig("ref")}; }

TEST(LossesTorch, ValuesWeightsMasksAndGradients) {
  for (const compute::BackendPtr& backend : Backends()) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      const double tol = dtype == DType::Float64 ? 1e-12 : 2e-6;
      for (const Case& c : Cases()) {
        SCOPED_TRACE(backend->Name() + " " + std::string(DTypeName(dtype)) + " " + c.name);
        Exec f = NewExec(backend, [fn = c.fn](Node y, Node p, Node w, Node m) -> std::vector<Node> {
          Node l = fn({y}, {p});
          return {l, fn({y, w}, {p}), fn({y, Node(), m}, {p}), fn({y, w, m}, {p}), Gradient(l, {p})[0]};
        });
        std::vector<Tensor> r = f.Call(As(Fix(c.labels), dtype), As(Fix(c.predictions), dtype),
                                       As(Fix("weights"), dtype), Fix("mask"));
        const char* suffixes[] = {"", "_weighted", "_masked", "_weighted_masked"};
        for (size_t i = 0; i < 4; ++i) {
          const double want = Value(c.name + suffixes[i]);
          const double got = dtype == DType::Float64 ? r[i].Item<double>() : r[i].Item<float>();
          EXPECT_NEAR(got, want, tol * std::max(1.0, std::abs(want))) << suffixes[i];
        }
        const std::vector<double> want_grad = Fix(c.name + "_grad").ToVector<double>();
        std::vector<double> grad = dtype == DType::Float64 ? r[4].ToVector<double>() : [&] {
          std::vector<float> g = r[4].ToVector<float>();
          return std::vector<double>(g.begin(), g.end());
        }();
        ASSERT_EQ(grad.size(), want_grad.size());
        for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], want_grad[i], tol) << "gradient " << i;
      }
    }
  }
}

TEST(LossesTorch, GradientsMatchCentralDifferences) {
  for (const compute::BackendPtr& backend : Backends()) {
    for (const Case& c : Cases()) {
      SCOPED_TRACE(backend->Name() + " " + c.name);
      Exec value = NewExec(backend, [fn = c.fn](Node y, Node p) { return fn({y}, {p}); });
      Exec grad = NewExec(backend, [fn = c.fn](Node y, Node p) { return Gradient(fn({y}, {p}), {p})[0]; });
      const Tensor& labels = Fix(c.labels);
      const Tensor& pred = Fix(c.predictions);
      std::vector<double> p = pred.ToVector<double>();
      std::vector<double> analytic = grad.Call1(labels, pred).ToVector<double>();
      const double eps = 1e-6;
      for (size_t i = 0; i < p.size(); ++i) {
        std::vector<double> plus = p, minus = p;
        plus[i] += eps;
        minus[i] -= eps;
        const double numeric = (value.Call1(labels, Tensor::FromFlat(pred.shape(), plus)).Item<double>() -
                                value.Call1(labels, Tensor::FromFlat(pred.shape(), minus)).Item<double>()) /
                               (2 * eps);
        EXPECT_NEAR(analytic[i], numeric, 1e-8) << "element " << i;
      }
    }
  }
}

TEST(LossesTorch, SparseIdsOutsideTheClassesCountAsZero) {
  // Two examples: the first with its fixture class, the second with id 7 of 5 classes.
  std::vector<double> logits = Fix("ce_logits").ToVector<double>();
  logits.resize(10);
  const int64_t id0 = Fix("ce_ids").ToVector<int64_t>()[0];
  double lse = 0;
  for (size_t k = 0; k < 5; ++k) lse += std::exp(logits[k]);
  const double loss0 = std::log(lse) - logits[static_cast<size_t>(id0)];
  for (const compute::BackendPtr& backend : Backends()) {
    Exec f = NewExec(backend,
                     [](Node y, Node p) { return losses::SparseCategoricalCrossEntropyLogits({y}, {p}); });
    const double got =
        f.Call1(std::vector<int64_t>{id0, 7}, Tensor::FromFlat(Shape(DType::Float64, {2, 5}), logits))
            .Item<double>();
    EXPECT_NEAR(got, loss0 / 2, 1e-12) << backend->Name();
  }
}

TEST(LossesTorch, TripletLossEdgesAndErrors) {
  for (const compute::BackendPtr& backend : Backends()) {
    SCOPED_TRACE(backend->Name());
    // Every example of its own class: no anchor has a positive, so no triplet, and the loss is 0.
    Exec f = NewExec(backend, [](Node y, Node p) { return losses::TripletLoss({y}, {p}); });
    EXPECT_EQ(f.Call1(std::vector<int32_t>{0, 1, 2}, std::vector<std::vector<float>>{{0, 1}, {1, 0}, {2, 2}})
                  .Item<float>(),
              0.0f);
    // Two classes on a line, [batch, 1] labels: anchor 0 at 0 (positive 1 at 1, negative 2 at 3):
    // hard: max(1 - 3 + 1, 0) = 0; anchor 1: positive 0 at 1, negative at 2: max(1 - 2 + 1, 0) = 0;
    // anchor 2 has no positive. A margin of 2.5 gives (0.5 + 1.5) / 2.
    Exec h = NewExec(backend, [](Node y, Node p) {
      return losses::TripletLoss({y}, {p}, losses::TripletMiningStrategy::Hard, 2.5);
    });
    EXPECT_NEAR(h.Call1(std::vector<std::vector<int64_t>>{{4}, {4}, {9}},
                        std::vector<std::vector<double>>{{0}, {1}, {3}})
                    .Item<double>(),
                1.0, 1e-12);
  }
  Graph g;
  Node emb = Zeros(g, Shape(DType::Float32, {3, 2}));
  EXPECT_TRUE(test::Throws([&] { losses::TripletLoss({Zeros(g, Shape(DType::Float32, {3}))}, {emb}); },
                           {"TripletLoss", "integer class ids"}));
  EXPECT_TRUE(test::Throws([&] { losses::TripletLoss({Zeros(g, Shape(DType::Int32, {4}))}, {emb}); },
                           {"TripletLoss", "batch 3"}));
  EXPECT_TRUE(test::Throws(
      [&] {
        losses::TripletLoss({Zeros(g, Shape(DType::Int32, {3}))}, {Zeros(g, Shape(DType::Float32, {3}))});
      },
      {"TripletLoss", "[batch, dim]"}));
  EXPECT_TRUE(test::Throws([] { losses::MakeHuberLoss(0); }, {"MakeHuberLoss", "delta"}));
}

}  // namespace
