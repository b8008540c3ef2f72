// Tests for data::FromNpz and data::FromNpy: arrays written by the test with kiln::io, read
// back as datasets on both backends; missing arrays and mismatched example counts rejected.

#include "kiln/data/npz.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::TempDir;
using kiln::test::Throws;

TEST(NpzDataset, ArraysByName) {
  TempDir dir;
  const Tensor x = Tensor::FromValue(std::vector<std::vector<float>>{{1, 2}, {3, 4}, {5, 6}});
  const Tensor y = Tensor::FromValue(std::vector<int64_t>{7, 8, 9});
  const Tensor other = Tensor::FromValue(std::vector<int32_t>{1, 2});
  io::WriteNpz(dir / "train.npz", {{"x", x}, {"y", y}, {"other", other}}, true);
  for (const char* config : {"cpu", "ref"}) {
    SCOPED_TRACE(config);
    auto ds = data::FromNpz(compute::NewWithConfig(config), dir / "train.npz", {"x"}, {"y"});
    EXPECT_EQ(ds->Name(), "train");
    EXPECT_EQ(ds->NumExamples(), 3);
    ds->BatchSize(2, false);
    std::any spec;
    std::vector<Tensor> xs, ys;
    ASSERT_TRUE(ds->Yield(spec, xs, ys));
    EXPECT_EQ(xs[0].Value<std::vector<std::vector<float>>>(),
              (std::vector<std::vector<float>>{{1, 2}, {3, 4}}));
    EXPECT_EQ(ys[0].ToVector<int64_t>(), (std::vector<int64_t>{7, 8}));
    ASSERT_TRUE(ds->Yield(spec, xs, ys));
    EXPECT_EQ(xs[0].ToVector<float>(), (std::vector<float>{5, 6}));
    EXPECT_FALSE(ds->Yield(spec, xs, ys));
  }
  // Labels are optional; two inputs.
  auto two = data::FromNpz(compute::New(), dir / "train.npz", {"y", "x"}, {});
  std::any spec;
  std::vector<Tensor> xs, ys;
  ASSERT_TRUE(two->Yield(spec, xs, ys));
  EXPECT_EQ(xs.size(), 2u);
  EXPECT_TRUE(ys.empty());
  EXPECT_TRUE(Throws([&] { data::FromNpz(compute::New(), dir / "train.npz", {"x"}, {"z"}); },
                     {"train.npz", "no array \"z\"", "other, x, y"}));
  EXPECT_TRUE(Throws([&] { data::FromNpz(compute::New(), dir / "train.npz", {"x"}, {"other"}); },
                     {"train.npz", "\"other\"", "2 examples", "\"x\"", "has 3"}));
  EXPECT_TRUE(
      Throws([&] { data::FromNpz(compute::New(), dir / "missing.npz", {"x"}, {}); }, {"missing.npz"}));
}

TEST(NpzDataset, NpyFiles) {
  TempDir dir;
  io::WriteNpy(dir / "images.npy", Tensor::FromValue(std::vector<std::vector<uint8_t>>{{1, 2}, {3, 4}}));
  io::WriteNpy(dir / "labels.npy", Tensor::FromValue(std::vector<int32_t>{0, 1}));
  io::WriteNpy(dir / "scalar.npy", Tensor::FromValue(3.0));
  auto ds = data::FromNpy(compute::New(), {dir / "images.npy"}, {dir / "labels.npy"});
  EXPECT_EQ(ds->Name(), "images");
  ds->BatchSize(2, false);
  std::any spec;
  std::vector<Tensor> xs, ys;
  ASSERT_TRUE(ds->Yield(spec, xs, ys));
  EXPECT_EQ(xs[0].ToVector<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(ys[0].ToVector<int32_t>(), (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(Throws([&] { data::FromNpy(compute::New(), {dir / "images.npy"}, {dir / "scalar.npy"}); },
                     {"scalar.npy", "scalar"}));
  EXPECT_TRUE(Throws([&] { data::FromNpy(compute::New(), {}, {}); }, {"no input files"}));
}

}  // namespace
