// Tests for layers::Embedding: rows gathered from the stored table for ids of several dtypes and
// shapes, zeros (and no gradient) for out-of-range ids, gradients that add up for repeated ids,
// the table's default and scope initializers, and errors.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

using kiln::test::ForEachBackend;
/// Row `id` of the [vocab, dims] table, or zeros when id is out of range.
std::vector<float> Row(const std::vector<float>& table, int64_t dims, int64_t vocab, int64_t id) {
  if (id < 0 || id >= vocab) return std::vector<float>(static_cast<size_t>(dims), 0.0f);
  return {table.begin() + id * dims, table.begin() + (id + 1) * dims};
}

TEST(Embedding, GathersRowsForAnyIntegerIds) {
  ForEachBackend([](const compute::BackendPtr& backend) {
    model::Store store;
    model::Exec e = model::NewExec(backend, store, [](model::Scope scope, Node ids) {
      return layers::Embedding(scope.In("emb"), ids, 10, 4);
    });
    const std::vector<std::vector<int32_t>> ids = {{0, 3, 9}, {3, 1, 7}};
    Tensor y = e.Call1(ids);
    ASSERT_EQ(y.shape(), Shape(DType::Float32, {2, 3, 4}));
    model::Variable table = store.GetVariable("/emb/embeddings");
    ASSERT_EQ(table.shape(), Shape(DType::Float32, {10, 4}));
    std::vector<float> t = table.Value().ToVector<float>(), yv = y.ToVector<float>();
    for (float v : t) EXPECT_LE(std::abs(v), 0.05f);  // the default: uniform in ±0.05
    for (size_t i = 0; i < 6; ++i) {
      std::vector<float> want = Row(t, 4, 10, ids[i / 3][i % 3]);
      EXPECT_EQ(std::vector<float>(yv.begin() + static_cast<long>(i * 4),
                                   yv.begin() + static_cast<long>(i * 4 + 4)),
                want)
          << "id " << i;
    }
    // Other dtypes and shapes: a Uint8 vector and an Int64 scalar.
    Tensor y8 = e.Call1(std::vector<uint8_t>{9, 0});
    ASSERT_EQ(y8.shape(), Shape(DType::Float32, {2, 4}));
    std::vector<float> y8v = y8.ToVector<float>();
    EXPECT_EQ(std::vector<float>(y8v.begin(), y8v.begin() + 4), Row(t, 4, 10, 9));
    Tensor ys = e.Call1(int64_t{5});
    EXPECT_EQ(ys.shape(), Shape(DType::Float32, {4}));
    EXPECT_EQ(ys.ToVector<float>(), Row(t, 4, 10, 5));
  });
}

TEST(Embedding, OutOfRangeIdsGiveZeroRows) {
  ForEachBackend([](const compute::BackendPtr& backend) {
    model::Store store;
    model::Exec e = model::NewExec(backend, store, [](model::Scope scope, Node ids) {
      return layers::Embedding(scope.WithInitializer(initializers::Ones()).In("emb"), ids, 5, 3);
    });
    const std::vector<int64_t> ids = {-1, 0, 5, 4, 1000, -7};
    std::vector<float> y = e.Call1(ids).ToVector<float>();
    for (size_t i = 0; i < ids.size(); ++i) {
      const float want = ids[i] >= 0 && ids[i] < 5 ? 1.0f : 0.0f;
      for (size_t d = 0; d < 3; ++d) EXPECT_EQ(y[i * 3 + d], want) << "id " << ids[i];
    }
    // A Uint64 beyond Int64's range is out of range too.
    std::vector<float> yu = e.Call1(std::vector<uint64_t>{~uint64_t{0}, 2}).ToVector<float>();
    EXPECT_EQ(yu, (std::vector<float>{0, 0, 0, 1, 1, 1}));
  });
}

TEST(Embedding, GradientsAddUpPerRow) {
  ForEachBackend([](const compute::BackendPtr& backend) {
    model::Store store;
    // d/dtable of sum(Embedding(ids) · c), c = [1, 10]: each selection of a row adds c to it;
    // out-of-range ids add nothing.
    model::Exec e = model::NewExec(backend, store, [](model::Scope scope, Node ids) {
      Node y = layers::Embedding(scope.In("emb"), ids, 4, 2);
      Node table = scope.Shared("emb").InspectVariable("embeddings").NodeValue(ids.graph());
      Node c = Reshape(Const(ids.graph(), std::vector<float>{1, 10}), {1, 2});
      return Gradient(ReduceAllSum(y * c), {table})[0];
    });
    std::vector<float> g = e.Call1(std::vector<int32_t>{2, 0, 2, 2, -1, 4}).ToVector<float>();
    EXPECT_EQ(g, (std::vector<float>{1, 10, 0, 0, 3, 30, 0, 0}));
  });
}

TEST(Embedding, BadInputIsAnError) {
  model::Store store;
  model::Exec floats = model::NewExec(compute::New(), store, [](model::Scope scope, Node ids) {
    return layers::Embedding(scope.In("emb"), ids, 4, 2);
  });
  EXPECT_TRUE(Throws(
      [&] {
        floats.Call(std::vector<float>{1, 2});
      },
      {"layers::Embedding(/emb)", "integer dtype"}));
  model::Exec empty = model::NewExec(compute::New(), store, [](model::Scope scope, Node ids) {
    return layers::Embedding(scope.In("bad"), ids, 0, 2);
  });
  EXPECT_TRUE(
      Throws([&] { empty.Call(std::vector<int32_t>{1}); }, {"layers::Embedding(/bad)", "vocab_size 0"}));
}

}  // namespace
