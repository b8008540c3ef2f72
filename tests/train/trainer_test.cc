// Tests for datasets and the Trainer: batching, shuffling and epochs of the in-memory dataset;
// a regression that trains; Eval weighted by examples; the training flag; AddLoss; donation.

#include "kiln/train/trainer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

Tensor Column(const std::vector<float>& v) {
  return Tensor::FromFlat(Shape(DType::Float32, {static_cast<int64_t>(v.size()), 1}), v);
}

TEST(InMemoryDataset, BatchesEpochsAndShuffling) {
  std::vector<float> xs;
  for (int i = 0; i < 10; ++i) xs.push_back(static_cast<float>(i));
  auto ds = data::InMemoryFromData(compute::New(), "ten", {Column(xs)}, {Column(xs)});
  ds->BatchSize(4, false);
  std::any spec;
  std::vector<Tensor> in, lab;
  std::vector<int64_t> sizes;
  std::vector<float> seen;
  while (ds->Yield(spec, in, lab)) {
    sizes.push_back(in[0].shape().Dim(0));
    for (float v : in[0].ToVector<float>()) seen.push_back(v);
    EXPECT_TRUE(in[0].Equal(lab[0]));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(seen, xs);
  EXPECT_EQ(std::any_cast<std::string>(spec), "ten");
  // Dropping the incomplete batch, two epochs.
  ds->BatchSize(4, true).Epochs(2).Reset();
  sizes.clear();
  while (ds->Yield(spec, in, lab)) sizes.push_back(in[0].shape().Dim(0));
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 4, 4}));
  // Infinite and shuffled: full batches forever, each epoch a permutation.
  ds->Epochs(1).BatchSize(5, true).Shuffle(7).Infinite(true);
  std::multiset<float> first_epoch;
  for (int b = 0; b < 2; ++b) {
    ASSERT_TRUE(ds->Yield(spec, in, lab));
    for (float v : in[0].ToVector<float>()) first_epoch.insert(v);
  }
  EXPECT_EQ(first_epoch, std::multiset<float>(xs.begin(), xs.end()));
  for (int b = 0; b < 7; ++b) ASSERT_TRUE(ds->Yield(spec, in, lab));
  // A batch larger than the dataset: an infinite one joins epochs (every example once in the first
  // ten rows); a finite one that drops incomplete batches would yield nothing, an error.
  ds->BatchSize(13, true).Reset();
  ASSERT_TRUE(ds->Yield(spec, in, lab));
  const std::vector<float> big = in[0].ToVector<float>();
  ASSERT_EQ(big.size(), 13u);
  EXPECT_EQ(std::multiset<float>(big.begin(), big.begin() + 10), std::multiset<float>(xs.begin(), xs.end()));
  ds->Infinite(false).Reset();
  EXPECT_TRUE(Throws([&] { ds->Yield(spec, in, lab); }, {"\"ten\"", "batch size 13", "10 examples"}));
  EXPECT_TRUE(Throws(
      [&] {
        data::InMemoryFromData(compute::New(), "bad", {Column(xs)}, {Column({1, 2})});
      },
      {"\"bad\"", "2 examples", "10"}));
}

/// y = 3x - 1 learned by one dense unit.
std::vector<Node> Linear(model::Scope scope, const std::any&, std::vector<Node> in) {
  return {layers::Dense(scope.In("dense"), in[0], true, 1)};
}

TEST(Trainer, LearnsALineAndEvaluatesByExamples) {
  std::vector<float> xs, ys;
  for (int i = 0; i < 50; ++i) {
    xs.push_back(static_cast<float>(i) / 25 - 1);
    ys.push_back(3 * xs.back() - 1);
  }
  model::Store store;
  compute::BackendPtr backend = compute::New();
  train::Trainer trainer(backend, store, Linear, losses::MeanSquaredError,
                         optimizers::StochasticGradientDescent().LearningRate(0.3).Done(),
                         {metrics::NewMovingAverageMeanAbsoluteError("Moving MAE", "~mae", 0.1)},
                         {metrics::NewMeanAbsoluteError("MAE", "mae")});
  EXPECT_EQ(trainer.TrainMetricShortNames(), (std::vector<std::string>{"loss", "~loss", "~mae"}));
  auto ds = data::InMemoryFromData(backend, "line", {Column(xs)}, {Column(ys)});
  ds->BatchSize(16, true).Shuffle().Infinite(true);
  std::any spec;
  std::vector<Tensor> in, lab;
  std::vector<Tensor> m;
  float first = 0;
  for (int step = 0; step < 300; ++step) {
    ASSERT_TRUE(ds->Yield(spec, in, lab));
    m = trainer.TrainStep(spec, in, lab);
    if (step == 0) first = m[0].Item<float>();
    // Donated to the step (the dataset's buffers belong to the trainer's backend).
    EXPECT_EQ(in[0].Ok(), !backend->HasSharedBuffers());
  }
  ASSERT_EQ(m.size(), 3u);
  EXPECT_LT(m[0].Item<float>(), 1e-4f);
  EXPECT_LT(m[0].Item<float>(), first / 1000);
  EXPECT_EQ(store.GlobalStep().Value().Item<int64_t>(), 300);
  EXPECT_NEAR(store.GetVariable("/dense/weights").Value().ToVector<float>()[0], 3.0f, 1e-2);
  // Eval: batches of 16, 16, 16, 2 weighted by examples equal the loss over all 50 at once.
  auto test = data::InMemoryFromData(compute::New(), "test", {Column(xs)}, {Column(ys)});
  test->BatchSize(16, false);
  std::vector<Tensor> e = trainer.Eval(test);
  ASSERT_EQ(e.size(), 2u);
  std::vector<Tensor> whole = trainer.EvalStep(spec, {Column(xs)}, {Column(ys)});
  EXPECT_NEAR(e[0].Item<float>(), whole[0].Item<float>(), 1e-7);
  EXPECT_NEAR(e[1].Item<float>(), whole[1].Item<float>(), 1e-6);
  ds->Infinite(true);
  EXPECT_TRUE(Throws([&] { trainer.Eval(ds); }, {"infinite"}));
}

// pred = x * w, w = 1 (an initial value, no training): the predictions are the inputs.
std::vector<Node> Identity(model::Scope scope, const std::any&, std::vector<Node> in) {
  model::Variable w = scope.VariableWithValue("w", 1.0f);
  return {in[0] * w.NodeValue(in[0].graph())};
}

TEST(Trainer, MedianMetricAndReportEval) {
  // Absolute errors |x - y| of the 7 examples: 5, 1, 4, 0.5, 9, 2, 3 -> sorted 0.5 1 2 3 4 5 9.
  const std::vector<float> xs{5, 1, 4, 0.5f, 9, 2, 3}, ys(7, 0.0f);
  model::Store store;
  compute::BackendPtr backend = compute::New();
  train::Trainer trainer(backend, store, Identity, losses::MeanSquaredError,
                         optimizers::StochasticGradientDescent().Done(), {},
                         {metrics::NewMedian("Median Absolute Error", "~mae", metrics::AbsoluteErrors),
                          metrics::NewMeanAbsoluteError("Mean Absolute Error", "mae")});
  auto ds = data::InMemoryFromData(backend, "seven", {Column(xs)}, {Column(ys)});
  ds->BatchSize(3, false);  // Batches of 3, 3 and 1 examples.
  std::vector<Tensor> r = trainer.Eval(ds);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_FLOAT_EQ(r[1].Item<float>(), 3.0f);            // The median over examples, not batches.
  EXPECT_FLOAT_EQ(r[2].Item<float>(), 24.5f / 7.0f);    // The mean, weighted by examples.
  EXPECT_FLOAT_EQ(r[0].Item<float>(), 136.25f / 7.0f);  // The loss: the mean of x^2 over the 7 examples.
  std::ostringstream out;
  train::ReportEval(trainer, {ds}, out);
  EXPECT_EQ(out.str(), fmt::format("Results on seven:\n\tLoss (loss): {}\n\tMedian Absolute Error (~mae): 3\n"
                                   "\tMean Absolute Error (mae): {}\n",
                                   r[0].Item<float>(), r[2].Item<float>()));
  // An even count: the upper middle (as GoMLX).
  std::unique_ptr<metrics::Aggregator> agg =
      metrics::NewMedian("m", "m", metrics::AbsoluteErrors)->NewAggregator();
  agg->Add(Tensor::FromValue(std::vector<float>{4, 1, 3, 2}), 4);
  EXPECT_EQ(agg->Result(), 3.0);
  // Beyond the sample size a reservoir estimates it: 0..9999 in a scrambled order, 1001 kept.
  agg = metrics::NewMedian("m", "m", metrics::AbsoluteErrors, 1001)->NewAggregator();
  std::vector<double> many;
  for (int i = 0; i < 10000; ++i) many.push_back(static_cast<double>((i * 7919) % 10000));
  agg->Add(Tensor::FromValue(many), 10000);
  EXPECT_NEAR(agg->Result(), 5000, 300);
  // Processes' evaluations combine (Trainer::Eval under mpirun): what each gathered, merged in
  // rank order into a fresh aggregator, gives the median of all their samples while they fit.
  metrics::Metric median = metrics::NewMedian("m", "m", metrics::AbsoluteErrors, 1001);
  std::unique_ptr<metrics::Aggregator> part0 = median->NewAggregator(), part1 = median->NewAggregator(),
                                       merged = median->NewAggregator();
  part0->Add(Tensor::FromValue(std::vector<float>{9, 1, 7}), 3);
  part1->Add(Tensor::FromValue(std::vector<float>{4, 2, 8, 3}), 4);
  merged->Merge(part0->Gathered());
  merged->Merge(part1->Gathered());
  EXPECT_EQ(merged->Gathered(), (std::vector<double>{7, 9, 1, 7, 4, 2, 8, 3}));  // Seen, then the samples.
  EXPECT_EQ(merged->Result(), 4.0);                                              // 1 2 3 4 7 8 9.
  // Beyond the sample size, each side contributes in proportion to the samples it saw: 0..9999 over
  // two processes (3000 and 7000 of them) still give about 5000.
  part0 = median->NewAggregator();
  part1 = median->NewAggregator();
  merged = median->NewAggregator();
  part0->Add(Tensor::FromValue(std::vector<double>(many.begin(), many.begin() + 3000)), 3000);
  part1->Add(Tensor::FromValue(std::vector<double>(many.begin() + 3000, many.end())), 7000);
  merged->Merge(part0->Gathered());
  merged->Merge(part1->Gathered());
  EXPECT_EQ(merged->Gathered().size(), 1002u);
  EXPECT_EQ(merged->Gathered()[0], 10000.0);
  EXPECT_NEAR(merged->Result(), 5000, 300);
  EXPECT_TRUE(Throws([&] { merged->Merge(std::vector<double>{1, 2, 3}); }, {"\"m\"", "below its samples"}));
  agg = metrics::NewMedian("empty", "e", metrics::AbsoluteErrors)->NewAggregator();
  EXPECT_TRUE(Throws([&] { agg->Result(); }, {"\"empty\"", "no samples"}));
  EXPECT_TRUE(Throws([&] { agg->Add(Tensor::FromValue(std::vector<float>{NAN}), 1); }, {"NaN"}));
  EXPECT_TRUE(Throws(
      [&] {
        train::Trainer bad(backend, store, Identity, losses::MeanSquaredError,
                           optimizers::StochasticGradientDescent().Done(),
                           {metrics::NewMedian("Median", "med", metrics::AbsoluteErrors)}, {});
      },
      {"\"Median\"", "eval metric"}));
}

TEST(Trainer, AggregatorsWithoutGatheredSayTheyCannotCombineProcesses) {
  struct Last final : metrics::Aggregator {
    double value = 0;
    void Add(const Tensor& t, double) override { value = t.ToDoubles().at(0); }
    double Result() override { return value; }
  } last;
  last.Add(Tensor::FromValue(std::vector<float>{2}), 1);
  EXPECT_EQ(last.Result(), 2.0);
  EXPECT_TRUE(Throws([&] { last.Gathered(); }, {"cannot combine", "Aggregator::Gathered"}));
  EXPECT_TRUE(Throws([&] { last.Merge(std::vector<double>{1}); }, {"cannot combine"}));
}

TEST(Trainer, MixedPrecisionKeepsFloat32MastersAndLearnsAsFloat32) {
  // y = sum of 4 features squared-ish, learned in float32 and with bfloat16 compute: the masters,
  // the optimizer state and the checkpointable values stay Float32, the model computes in
  // BFloat16, and the final loss is within what bfloat16's 8 bits of precision allow.
  std::vector<std::vector<float>> rows;
  std::vector<float> ys;
  std::vector<float> flat;
  for (int i = 0; i < 256; ++i) {
    float y = 0;
    for (int f = 0; f < 4; ++f) {
      const float v = std::sin(0.37f * static_cast<float>(i * 4 + f));
      flat.push_back(v);
      y += (f % 2 == 0 ? 1.0f : -0.5f) * v;
    }
    ys.push_back(std::tanh(y));
  }
  const Tensor x = Tensor::FromFlat(Shape(DType::Float32, {256, 4}), flat);
  const Tensor y = Tensor::FromFlat(Shape(DType::Float32, {256, 1}), ys);
  auto train = [&](bool mixed) {
    model::Store store;
    store.SetRNGStateFromSeed(7);
    compute::BackendPtr backend = compute::New();
    std::vector<DType> input_dtypes;
    train::ModelFn fn = [&](model::Scope scope, const std::any&, std::vector<Node> in) {
      input_dtypes.push_back(in[0].dtype());
      Node h = activations::Tanh(layers::Dense(scope.In("hidden"), in[0], true, 16));
      return std::vector<Node>{layers::Dense(scope.In("out"), h, true, 1)};
    };
    train::Trainer trainer(backend, store, fn, losses::MeanSquaredError,
                           optimizers::Adam().LearningRate(0.01).Done(), {}, {});
    if (mixed) {
      trainer.WithMixedPrecision();
      EXPECT_EQ(trainer.MixedPrecision(), DType::BFloat16);
    }
    std::any spec;
    float loss = 0;
    for (int step = 0; step < 400; ++step)
      loss = trainer.TrainStep(spec, {x.Clone()}, {y.Clone()})[0].Item<float>();
    for (const char* path : {"/hidden/weights", "/hidden/biases", "/out/weights"})
      EXPECT_EQ(store.GetVariable(path).dtype(), DType::Float32) << path;
    for (const model::Variable& v : store.Variables()) {
      if (IsFloat(v.dtype())) {
        EXPECT_EQ(v.dtype(), DType::Float32) << v.Path();
      }
    }
    EXPECT_FALSE(input_dtypes.empty());
    for (DType d : input_dtypes) EXPECT_EQ(d, mixed ? DType::BFloat16 : DType::Float32);
    return loss;
  };
  const float f32 = train(false), bf16 = train(true);
  EXPECT_LT(f32, 2e-3f);
  EXPECT_LT(bf16, 5e-3f) << "float32 reached " << f32;
}

TEST(Trainer, MixedPrecisionErrors) {
  model::Store store;
  train::Trainer trainer(compute::New(), store, Linear, losses::MeanSquaredError,
                         optimizers::StochasticGradientDescent().Done(), {}, {});
  EXPECT_TRUE(Throws([&] { trainer.WithMixedPrecision(DType::Float16); }, {"Float16", "loss scaling"}));
  EXPECT_TRUE(Throws([&] { trainer.WithMixedPrecision(DType::Float32); }, {"Float32", "not supported"}));
  std::any spec;
  trainer.TrainStep(spec, {Column(std::vector<float>{1, 2})}, {Column(std::vector<float>{1, 2})});
  EXPECT_TRUE(Throws([&] { trainer.WithMixedPrecision(); }, {"started"}));
  // A parameter naming no half dtype is refused where a variable reads it.
  model::Store other;
  other.SetParam("mixed_precision", std::string("bf16"));
  EXPECT_TRUE(Throws([&] { other.RootScope().VariableWithShape("w", Shape(DType::BFloat16, {2})); },
                     {"mixed_precision", "bf16"}));
}

TEST(Trainer, DynamicBatchBuildsEachStepOnceAndTrainsAsTheStaticOne) {
  std::vector<float> xs, ys;
  for (int i = 0; i < 10; ++i) {
    xs.push_back(static_cast<float>(i) / 5 - 1);
    ys.push_back(3 * xs.back() - 1);
  }
  for (const std::string config : {"ref", "cpu"}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    std::vector<float> weights[2];
    int builds[2] = {0, 0};
    for (int dynamic = 0; dynamic < 2; ++dynamic) {
      model::Store store;
      train::Trainer trainer(backend, store, Linear, losses::MeanSquaredError,
                             optimizers::StochasticGradientDescent().LearningRate(0.1).Done(), {},
                             {metrics::NewMeanAbsoluteError("MAE", "mae")});
      if (dynamic) trainer.WithDynamicBatch();
      // Batches of 4, 4 and a last partial one of 2, three epochs; then evaluations of 3 and 10.
      auto ds = data::InMemoryFromData(backend, "line", {Column(xs)}, {Column(ys)});
      ds->BatchSize(4, false).Epochs(3);
      std::any spec;
      std::vector<Tensor> in, lab;
      while (ds->Yield(spec, in, lab)) trainer.TrainStep(spec, in, lab);
      auto test = data::InMemoryFromData(backend, "test", {Column(xs)}, {Column(ys)});
      test->BatchSize(3, false);
      std::vector<Tensor> e = trainer.Eval(test);
      std::vector<Tensor> whole = trainer.EvalStep(spec, {Column(xs)}, {Column(ys)});
      EXPECT_NEAR(e[0].Item<float>(), whole[0].Item<float>(), 1e-6);
      weights[dynamic] = store.GetVariable("/dense/weights").Value().ToVector<float>();
      builds[dynamic] = trainer.NumBuilds();
    }
    EXPECT_EQ(builds[0], 2 + 3);  // Train: 4 and 2; eval: 3, 1 and 10.
    EXPECT_EQ(builds[1], 1 + 1);
    EXPECT_NEAR(weights[1][0], weights[0][0], 1e-6);
  }
}

TEST(Trainer, TrainingFlagAndAddedLosses) {
  model::Store store;
  bool train_flag = false, eval_flag = true;
  train::ModelFn fn = [&](model::Scope scope, const std::any&, std::vector<Node> in) {
    Node w = scope.VariableWithValue("w", std::vector<std::vector<float>>{{2}}).NodeValue(in[0].graph());
    (model::IsTraining(scope) ? train_flag : eval_flag) = model::IsTraining(scope);
    // An L2 term: 0.5 * w^2 (= 2 at w = 2).
    train::AddLoss(scope, ReduceAllSum(w * w) * 0.5f);
    return std::vector<Node>{in[0] * w};
  };
  train::Trainer trainer(compute::New(), store, fn, losses::MeanSquaredError,
                         optimizers::StochasticGradientDescent().LearningRate(0.0).Done(), {}, {});
  std::vector<Tensor> m = trainer.TrainStep({}, {Column({1})}, {Column({2})});
  EXPECT_TRUE(train_flag);
  EXPECT_NEAR(m[0].Item<float>(), 0 + 2.0f, 1e-6);  // (1*2 - 2)^2 + 0.5 * 4
  std::vector<Tensor> e = trainer.EvalStep({}, {Column({1})}, {Column({3})});
  EXPECT_FALSE(eval_flag);
  EXPECT_NEAR(e[0].Item<float>(), 1 + 2.0f, 1e-6);
  Graph g;
  EXPECT_TRUE(
      Throws([&] { train::AddLoss(store.RootScope(), Scalar(g, DType::Float32, 1)); }, {"AddLoss", "bound"}));
}

}  // namespace
