#pragma once
// The synthetic regression the data-parallel tests train on: n examples of 8 features in
// [-1, 1] from a fixed linear congruential generator, with y = sum_j (j+1) x_j / 8 (or x_j² for
// `squared`), as an in-memory dataset.

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/data/dataset.h"

namespace kiln::test {

inline std::shared_ptr<data::InMemoryDataset> Regression(const compute::BackendPtr& backend, int64_t n,
                                                         uint64_t seed, bool squared) {
  const int64_t f = 8;
  std::vector<float> xs(static_cast<size_t>(n * f)), ys(static_cast<size_t>(n));
  uint64_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    float y = 0;
    for (int64_t j = 0; j < f; ++j) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      const float v = static_cast<float>((s >> 40) % 2001) / 1000.0f - 1.0f;
      xs[static_cast<size_t>(i * f + j)] = v;
      y += static_cast<float>(j + 1) * (squared ? v * v : v) / 8;
    }
    ys[static_cast<size_t>(i)] = y;
  }
  return data::InMemoryFromData(backend, "regression", {Tensor::FromFlat(Shape(DType::Float32, {n, f}), xs)},
                                {Tensor::FromFlat(Shape(DType::Float32, {n, 1}), ys)});
}

}  // namespace kiln::test
