// Tests for data::Batch (stacking single examples, concatenating batches, the last batch, errors)
// and data::Buffer (the source's batches, in order, read ahead).

#include "kiln/data/batch.h"

#include <gtest/gtest.h>

#include <any>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using kiln::test::Throws;

// Yields `n` single examples: input i is [i, 10 i] (Float32 [2]), label i is Int32 i (a scalar);
// the spec is "example i". Example `odd` (if any) has an input of shape [3].
class Examples : public data::Dataset {
 public:
  explicit Examples(int n, int odd = -1) : n_(n), odd_(odd) {}
  std::string Name() const override { return "examples"; }
  bool Yield(std::any& spec, std::vector<Tensor>& inputs, std::vector<Tensor>& labels) override {
    if (next_ >= n_) return false;
    const float i = static_cast<float>(next_);
    spec = std::string("example ") + std::to_string(next_);
    inputs = {next_ == odd_ ? Tensor::FromValue(std::vector<float>{i, i, i})
                            : Tensor::FromValue(std::vector<float>{i, 10 * i})};
    labels = {Tensor::FromScalar<int32_t>(next_)};
    ++next_;
    return true;
  }
  void Reset() override { next_ = 0; }

 private:
  int n_, odd_, next_ = 0;
};

TEST(DataBatch, StacksExamplesAlongANewAxis) {
  auto ds = data::Batch(std::make_shared<Examples>(5), 2);
  EXPECT_EQ(ds->Name(), "examples [Batch]");
  std::any spec;
  std::vector<Tensor> in, lab;
  std::vector<std::vector<float>> seen;
  std::vector<std::string> specs;
  while (ds->Yield(spec, in, lab)) {
    ASSERT_EQ(in.size(), 1u);
    ASSERT_EQ(lab.size(), 1u);
    const int64_t n = in[0].shape().Dim(0);
    EXPECT_EQ(in[0].shape(), Shape(DType::Float32, {n, 2}));
    EXPECT_EQ(lab[0].shape(), Shape(DType::Int32, {n}));
    seen.push_back(in[0].ToVector<float>());
    specs.push_back(std::any_cast<std::string>(spec));
  }
  EXPECT_EQ(seen, (std::vector<std::vector<float>>{{0, 0, 1, 10}, {2, 20, 3, 30}, {4, 40}}));
  EXPECT_EQ(specs, (std::vector<std::string>{"example 0", "example 2", "example 4"}));
  // Dropping the incomplete last batch; Reset starts over.
  auto dropped = data::Batch(std::make_shared<Examples>(5), 2, true, true);
  int batches = 0;
  while (dropped->Yield(spec, in, lab)) ++batches;
  EXPECT_EQ(batches, 2);
  dropped->Reset();
  ASSERT_TRUE(dropped->Yield(spec, in, lab));
  EXPECT_EQ(lab[0].ToVector<int32_t>(), (std::vector<int32_t>{0, 1}));
}

TEST(DataBatch, ConcatenatesBatchesAlongAxisZero) {
  std::vector<float> xs{0, 1, 2, 3, 4, 5, 6};
  Tensor col = Tensor::FromFlat(Shape(DType::Float32, {7, 1}), xs);
  auto source = data::InMemoryFromData(compute::New(), "seven", {col}, {col});
  source->BatchSize(2, false);  // 2, 2, 2, 1
  auto ds = data::Batch(source, 3, false);
  std::any spec;
  std::vector<Tensor> in, lab;
  ASSERT_TRUE(ds->Yield(spec, in, lab));
  EXPECT_EQ(in[0].shape(), Shape(DType::Float32, {6, 1}));
  EXPECT_EQ(in[0].ToVector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  ASSERT_TRUE(ds->Yield(spec, in, lab));
  EXPECT_EQ(lab[0].ToVector<float>(), (std::vector<float>{6}));
  EXPECT_FALSE(ds->Yield(spec, in, lab));
}

TEST(DataBatch, Errors) {
  std::any spec;
  std::vector<Tensor> in, lab;
  EXPECT_TRUE(Throws([&] { data::Batch(nullptr, 2); }, {"no source"}));
  EXPECT_TRUE(Throws([&] { data::Batch(std::make_shared<Examples>(3), 0); }, {"examples", "batch size 0"}));
  auto odd = data::Batch(std::make_shared<Examples>(4, 1), 4);
  EXPECT_TRUE(Throws([&] { odd->Yield(spec, in, lab); }, {"examples", "input 0 of item 1", "[3]", "[2]"}));
}

TEST(DataBuffer, YieldsTheSourceInOrder) {
  auto ds = data::Buffer(data::Batch(std::make_shared<Examples>(7), 3), 2);
  std::any spec;
  std::vector<Tensor> in, lab;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<int32_t> labels;
    while (ds->Yield(spec, in, lab))
      for (int32_t v : lab[0].ToVector<int32_t>()) labels.push_back(v);
    EXPECT_EQ(labels, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6}));
    ds->Reset();
  }
  EXPECT_TRUE(Throws([&] { data::Buffer(nullptr); }, {"no source"}));
}

}  // namespace
