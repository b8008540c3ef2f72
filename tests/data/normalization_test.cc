// Tests for the dataset helpers: data::Normalization (per-feature mean and standard deviation over
// a whole dataset, computed here by hand), data::ReplaceZerosByOnes and data::Take.

#include "kiln/data/normalization.h"
#include "kiln/data/take.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::Throws;

// 7 examples of 2 features in batches of 3 (the last batch holds one): feature 0 is i, feature 1
// is 10 + 2i for i in 0..6, except a constant third input.
std::shared_ptr<data::InMemoryDataset> Examples() {
  std::vector<float> x;
  std::vector<int32_t> ids;
  for (int i = 0; i < 7; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(10 + 2 * i));
    ids.push_back(i * i);
  }
  auto ds =
      data::InMemoryFromData(compute::New(), "examples",
                             {Tensor::FromFlat(Shape(DType::Float32, {7, 2}), x), Tensor::FromValue(ids),
                              Tensor::FromFlat(Shape(DType::Float64, {7, 1}), std::vector<double>(7, 5.0))},
                             {});
  ds->BatchSize(3, false);
  return ds;
}

TEST(DataNormalization, PerFeatureAndOverEverything) {
  auto ds = Examples();
  // Per feature (the last axis): mean 3 and 16; population stddev 2 and 4.
  auto [mean, stddev] = data::Normalization(ds, 0, {-1});
  EXPECT_EQ(mean.shape(), Shape(DType::Float32, {1, 2}));
  EXPECT_EQ(mean.ToVector<float>(), (std::vector<float>{3, 16}));
  EXPECT_NEAR(stddev.ToVector<float>()[0], 2.0f, 1e-6);
  EXPECT_NEAR(stddev.ToVector<float>()[1], 4.0f, 1e-6);
  // Both features together: 14 values, mean 9.5; E[x²] = (91 + 1904) / 14.
  auto [m_all, s_all] = data::Normalization(ds, 0);
  EXPECT_EQ(m_all.shape(), Shape(DType::Float32, {1, 1}));
  EXPECT_NEAR(m_all.ToVector<float>()[0], 9.5f, 1e-6);
  EXPECT_NEAR(s_all.ToVector<float>()[0], std::sqrt(1995.0 / 14 - 9.5 * 9.5), 1e-5);
  // An integer input gives Float64 statistics: i² for i in 0..6 -> mean 13, E[x²] = 2275 / 7.
  auto [m_int, s_int] = data::Normalization(ds, 1);
  EXPECT_EQ(m_int.shape(), Shape(DType::Float64, {1}));
  EXPECT_DOUBLE_EQ(m_int.Item<double>(), 13.0);
  EXPECT_NEAR(s_int.Item<double>(), std::sqrt(2275.0 / 7 - 169), 1e-12);
  // A constant input: stddev 0, which ReplaceZerosByOnes makes safe to divide by.
  auto [m_const, s_const] = data::Normalization(ds, 2, {-1});
  EXPECT_EQ(m_const.shape(), Shape(DType::Float64, {1, 1}));
  EXPECT_EQ(m_const.ToVector<double>(), std::vector<double>(1, 5.0));
  EXPECT_EQ(s_const.ToVector<double>(), std::vector<double>(1, 0.0));
  EXPECT_EQ(data::ReplaceZerosByOnes(s_const).ToVector<double>(), std::vector<double>(1, 1.0));
  EXPECT_EQ(data::ReplaceZerosByOnes(Tensor::FromValue(std::vector<float>{0, 2, -0.0f})).ToVector<float>(),
            (std::vector<float>{1, 2, 1}));
  // The dataset is left at its start.
  std::any spec;
  std::vector<Tensor> in, lab;
  ASSERT_TRUE(ds->Yield(spec, in, lab));
  EXPECT_EQ(in[0].ToVector<float>()[0], 0.0f);
}

TEST(DataNormalization, BadInputIsAnError) {
  auto ds = Examples();
  EXPECT_TRUE(
      Throws([&] { data::Normalization(ds, 3); }, {"data::Normalization(examples)", "input index 3"}));
  EXPECT_TRUE(Throws([&] { data::Normalization(ds, 0, {2}); }, {"axis 2 out of range"}));
  EXPECT_TRUE(Throws([&] { data::Normalization(nullptr, 0); }, {"no dataset"}));
  auto forever = Examples();
  forever->Infinite(true);
  EXPECT_TRUE(Throws([&] { data::Normalization(forever, 0); }, {"infinite"}));
  EXPECT_TRUE(
      Throws([] { data::ReplaceZerosByOnes(Tensor::FromValue(std::vector<int32_t>{0})); }, {"not float"}));
}

TEST(DataTake, FirstBatchesThenTheEnd) {
  auto count = [](const data::DatasetPtr& ds) {
    std::any spec;
    std::vector<Tensor> in, lab;
    std::vector<float> firsts;
    while (ds->Yield(spec, in, lab)) firsts.push_back(in[0].ToVector<float>()[0]);
    return firsts;
  };
  auto two = data::Take(Examples(), 2);
  EXPECT_EQ(two->Name(), "examples [Take 2]");
  EXPECT_EQ(count(two), (std::vector<float>{0, 3}));  // Batches of 3 examples; feature 0 is i.
  EXPECT_TRUE(count(two).empty());                    // Ended until Reset.
  two->Reset();
  EXPECT_EQ(count(two), (std::vector<float>{0, 3}));
  // More than the source has: the source's 3 batches.
  EXPECT_EQ(count(data::Take(Examples(), 10)), (std::vector<float>{0, 3, 6}));
  // Over an infinite source: finite.
  auto forever = Examples();
  forever->Infinite(true);
  auto taken = data::Take(forever, 4);
  EXPECT_FALSE(taken->IsInfinite());
  EXPECT_EQ(count(taken).size(), 4u);
  EXPECT_TRUE(count(data::Take(Examples(), 0)).empty());
  EXPECT_TRUE(Throws([] { data::Take(nullptr, 1); }, {"no source"}));
  EXPECT_TRUE(Throws([] { data::Take(Examples(), -1); }, {"examples", "n = -1"}));
}

}  // namespace
