// Tests for post-training quantization of a model::Store: layers::Dense and layers::Embedding
// read the quantized variables, the outputs stay close to the float model's, checkpoints keep
// them, and a layer that cannot read them fails with an error naming the variable.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/model/checkpoint.h"
#include "kiln/quant/quant.h"
#include "test_util.h"

namespace {

using namespace kiln;
using graph::Node;
using kiln::test::TempDir;
using kiln::test::Throws;

/// ids [b, 4] -> embedding (vocab 50, 32) -> mean over tokens -> dense 64 -> relu -> dense 10.
Node Model(model::Scope scope, Node ids) {
  Node e = layers::Embedding(scope.In("embed"), ids, 50, 32);
  Node h = graph::ReduceMean(e, {1});
  h = activations::Relu(layers::Dense(scope.In("hidden"), h, true, 64));
  return layers::Dense(scope.In("out"), h, true, 10);
}

Tensor Ids() {
  std::vector<int32_t> v(6 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 7 + 3) % 50);
  return Tensor::FromFlat(Shape(DType::Int32, {6, 4}), v);
}

double MaxRelativeDifference(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.ToVector<float>(), y = b.ToVector<float>();
  double m = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    m = std::max(m, static_cast<double>(std::abs(x[i] - y[i])));
    scale = std::max(scale, static_cast<double>(std::abs(y[i])));
  }
  return m / scale;
}

TEST(QuantizeStore, LayersUseTheQuantizedWeights) {
  for (auto [scheme, block, tolerance] : std::vector<std::tuple<quant::Scheme, int64_t, double>>{
           {quant::Scheme::Int8, 0, 0.02},
           {quant::Scheme::Int4, 32, 0.2},
           {quant::Scheme::NF4, 32, 0.3},  // NF4 fits normal weights; these start uniform
           {quant::Scheme::Q8_0, 0, 0.02},
           {quant::Scheme::Q4_0, 0, 0.2}}) {
    SCOPED_TRACE(quant::SchemeName(scheme));
    kiln::test::ForEachBackend([&](const compute::BackendPtr& backend) {
      model::Store store;
      store.SetRNGStateFromSeed(3);
      model::Exec exec = model::NewExec(backend, store, Model);
      const Tensor before = exec.Call1(Ids());
      const int64_t float_bytes = store.ByteSize();
      // Q8_0/Q4_0 need K a multiple of 32: every matrix here has one (32, 64 rows; 32 columns).
      quant::StoreQuantization r = quant::QuantizeStore(store, scheme, block);
      EXPECT_EQ(r.paths, (std::vector<std::string>{"/embed/embeddings", "/hidden/weights", "/out/weights"}));
      EXPECT_EQ(r.bytes_before, (50 * 32 + 32 * 64 + 64 * 10) * 4);
      EXPECT_LT(r.bytes_after, r.bytes_before / 3);
      EXPECT_LT(store.ByteSize(), float_bytes);
      EXPECT_FALSE(store.FindVariable("/hidden/weights").Ok());
      EXPECT_FALSE(store.GetVariable("/hidden/weights_quantized").Trainable());
      EXPECT_TRUE(store.FindVariable("/hidden/biases").Ok());
      model::Exec quantized = model::NewExec(backend, store, Model);
      const Tensor after = quantized.Call1(Ids());
      EXPECT_LT(MaxRelativeDifference(after, before), tolerance);
      EXPECT_GT(MaxRelativeDifference(after, before), 0);
    });
  }
}

TEST(QuantizeStore, CheckpointsKeepTheQuantizedModel) {
  TempDir dir;
  const compute::BackendPtr backend = kiln::test::Backend("cpu");
  model::Store store;
  store.SetRNGStateFromSeed(4);
  model::NewExec(backend, store, Model).Call1(Ids());
  quant::QuantizeStore(store, quant::Scheme::Int4Asymmetric, 16);
  const Tensor want = model::NewExec(backend, store, Model).Call1(Ids());
  checkpoint::Build(store).Dir(dir.str()).Done().Save();
  model::Store loaded;
  checkpoint::Build(loaded).Dir(dir.str()).Done();
  EXPECT_EQ(loaded.GetVariable("/hidden/weights_quantized").dtype(), DType::Int4);
  EXPECT_TRUE(model::NewExec(backend, loaded, Model).Call1(Ids()).Equal(want));
}

TEST(QuantizeStore, FilterAndErrors) {
  model::Store store;
  model::NewExec(kiln::test::Backend("ref"), store, Model).Call1(Ids());
  quant::StoreQuantization r = quant::QuantizeStore(
      store, quant::Scheme::Int8, 0, [](const model::Variable& v) { return v.ScopePath() == "/hidden"; });
  EXPECT_EQ(r.paths, std::vector<std::string>{"/hidden/weights"});
  EXPECT_TRUE(store.FindVariable("/out/weights").Ok());
  // A layer that reads the replaced float variable is told so.
  EXPECT_TRUE(Throws(
      [&] {
        store.RootScope().At("hidden").VariableWithShape("weights", Shape(DType::Float32, {32, 64}));
      },
      {"/hidden/weights", "quantized"}));
  // A scheme that cannot take a matrix names the variable: K = 50 is not whole Q4_K blocks.
  model::Store other;
  model::NewExec(kiln::test::Backend("ref"), other, Model).Call1(Ids());
  EXPECT_TRUE(
      Throws([&] { quant::QuantizeStore(other, quant::Scheme::Q4_K); }, {"/embed/embeddings", "Q4_K"}));
}

}  // namespace
