#pragma once
// Helpers shared by the reference backend's tests: one op run on ref, tensor construction
// shorthands, elements read back as doubles or int64, and exact float comparison. The tests'
// expected values are computed by hand (or with <cmath> on the same inputs), never by kiln.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln::ref_test {

using kiln::test::RunProgram;

using compute::OpAttributes;
using compute::OpType;
using graph::Graph;
using graph::Node;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
inline constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
inline constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

inline const compute::BackendPtr& Ref() { return kiln::test::Backend("ref"); }

/// One op over parameters holding `inputs`.
inline Tensor RunOp(OpType op, const std::vector<Tensor>& inputs, OpAttributes attrs = {}) {
  Graph g;
  std::vector<Node> params;
  for (const Tensor& t : inputs) params.push_back(g.Parameter(t.shape()));
  Node out = g.AddOp(op, params, std::move(attrs));
  return RunProgram(Ref(), g.Build({out}), inputs)[0];
}

template <typename T>
Tensor V(const std::vector<T>& values) {
  return Tensor::FromValue(values);
}
template <typename T>
Tensor V(const std::vector<T>& values, const std::vector<int64_t>& dims) {
  return Tensor::FromValue(values).Reshape(dims);
}
inline float16 H(float x) { return float16(x); }
inline bfloat16 B(float x) { return bfloat16(x); }

/// The elements of a tensor of any float dtype, as doubles.
inline std::vector<double> Floats(const Tensor& t) {
  std::vector<double> out;
  DispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      out = t.ToVector<double>();
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16> ||
                         std::is_same_v<T, float>) {
      for (T x : t.ToVector<T>()) out.push_back(static_cast<double>(static_cast<float>(x)));
    } else {
      ADD_FAILURE() << "not a float tensor: " << t.shape();
    }
  });
  return out;
}

/// The elements of an integer or Bool tensor, as int64 (Uint64 wraps).
inline std::vector<int64_t> Ints(const Tensor& t) {
  std::vector<int64_t> out;
  DispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      for (T x : t.ToVector<T>()) out.push_back(static_cast<int64_t>(x));
    } else {
      ADD_FAILURE() << "not an integer tensor: " << t.shape();
    }
  });
  return out;
}

/// Exact float comparison: NaN matches NaN, and zeros must carry the expected sign.
inline ::testing::AssertionResult SameFloats(const Tensor& t, const std::vector<double>& want) {
  const std::vector<double> got = Floats(t);
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " elements, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(want[i])
                          ? std::isnan(got[i])
                          : got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]);
    if (!same)
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::ref_test
