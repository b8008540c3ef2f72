#pragma once
// What the cpu fusion tests share: ulp distances between tensors, runs against the reference
// backend, and the module the fusion pass makes of a graph.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cost_model.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fused_eval.h"
#include "backends/cpu/fused_simd.h"
#include "backends/cpu/passes.h"
#include "backends/cpu_test_util.h"
#include "kiln/kiln.h"

namespace kiln::fusion_test {

using compute::cpu::FOp;
using graph::Graph;
using graph::Node;

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

inline compute::BackendPtr Backend(const std::string& config) { return compute::NewWithConfig(config); }

/// Float32 values uniform in [lo, hi) of the given dims.
inline Tensor Random(std::vector<int64_t> dims, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return Tensor::FromBytes(
      Shape(DType::Float32, dims),
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
}

/// Element i of `t` as an integer ordered like the float values (for ulp distances); NaNs map
/// to one value, -0 sits one below +0. Bool and other dtypes use their raw bytes.
inline int64_t OrderedBits(DType d, const uint8_t* p, int64_t i) {
  int64_t bits = 0, sign = 0, width = 0;
  if (d == DType::Float32) {
    uint32_t b;
    std::memcpy(&b, p + i * 4, 4);
    if (std::isnan(std::bit_cast<float>(b))) return std::numeric_limits<int64_t>::max();
    bits = b, width = 32;
  } else if (d == DType::Float16 || d == DType::BFloat16) {
    uint16_t b;
    std::memcpy(&b, p + i * 2, 2);
    const bool nan = d == DType::Float16 ? (b & 0x7C00) == 0x7C00 && (b & 0x3FF) != 0
                                         : (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
    if (nan) return std::numeric_limits<int64_t>::max();
    bits = b, width = 16;
  } else {
    return p[i];
  }
  sign = bits >> (width - 1);
  const int64_t mag = bits & ((int64_t{1} << (width - 1)) - 1);
  return sign ? -mag - 1 : mag;  // -0 and +0 one apart.
}

/// The largest ulp distance between `a` and `b` (same shape; NaN equals NaN only).
inline int64_t MaxUlps(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  std::vector<uint8_t> x, y;
  a.ConstBytes([&](std::span<const uint8_t> s) { x.assign(s.begin(), s.end()); });
  b.ConstBytes([&](std::span<const uint8_t> s) { y.assign(s.begin(), s.end()); });
  int64_t worst = 0;
  for (int64_t i = 0; i < a.shape().Size(); ++i) {
    const int64_t p = OrderedBits(a.shape().dtype(), x.data(), i),
                  q = OrderedBits(a.shape().dtype(), y.data(), i);
    const bool nan_p = p == std::numeric_limits<int64_t>::max(),
               nan_q = q == std::numeric_limits<int64_t>::max();
    if (nan_p || nan_q) {
      if (nan_p != nan_q) return std::numeric_limits<int64_t>::max();
      continue;
    }
    worst = std::max(worst, std::abs(p - q));
  }
  return worst;
}

/// Whether every element of the Float32 tensors is within scale * (1 + max |b|) of b's (NaN
/// matching NaN): the error of a composite chain, where cancellation magnifies ulps.
inline bool WithinScaled(const Tensor& a, const Tensor& b, double scale) {
  if (a.shape().dtype() != DType::Float32) return false;
  const std::vector<float> x = a.ToVector<float>(), y = b.ToVector<float>();
  double top = 0;
  for (float v : y)
    if (std::isfinite(v)) top = std::max(top, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (std::isnan(x[i]) != std::isnan(y[i])) return false;
      continue;
    }
    if (x[i] != y[i] && std::fabs(static_cast<double>(x[i]) - y[i]) > scale * (1 + top)) return false;
  }
  return true;
}

/// Runs `fn` on the backend `config` and on ref; the outputs must be within `ulps` (or, when
/// `scale` > 0, Float32 outputs within WithinScaled).
inline void ExpectMatchesRef(const std::string& config, const graph::GraphFn& fn,
                             const std::vector<Tensor>& inputs, int64_t ulps, double scale = 0) {
  graph::Exec got(Backend(config), fn, static_cast<int>(inputs.size()));
  graph::Exec want(Backend("ref"), fn, static_cast<int>(inputs.size()));
  const std::vector<Tensor> a = got.Call(inputs), b = want.Call(inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (scale > 0 && WithinScaled(a[i], b[i], scale)) continue;
    EXPECT_LE(MaxUlps(a[i], b[i]), ulps) << config << " output " << i << ": got " << a[i] << ", ref " << b[i];
  }
}

/// The module the cpu pipeline fuses for `fn` on inputs of `shapes`, and the fusion report.
inline compute::cpu::Module Fused(const graph::GraphFn& fn, const std::vector<Shape>& shapes,
                                  std::string* report) {
  graph::Exec exec(Backend("ref"), fn, static_cast<int>(shapes.size()));
  compute::cpu::Module m = kiln::test::CleanedModule(*exec.ProgramFor(shapes));
  *report = compute::cpu::FuseElementwise(m).log;
  compute::cpu::EliminateDeadCode(m);
  return m;
}

inline int CountFused(const compute::cpu::Module& m) {
  int n = 0;
  for (const compute::cpu::Node& node : m.nodes) n += node.fused != nullptr;
  return n;
}

/// The benchmark chain: exp(relu(x * 2 + 1)) * 0.5 - x.
inline Node Chain(Node x) { return graph::Exp(graph::Max(x * 2.0f + 1.0f, graph::ZerosLike(x))) * 0.5f - x; }

inline const char* const kConfigs[] = {"cpu", "cpu:simd=scalar", "cpu:threads=2,serial_work=0",
                                       "cpu:fusion=false"};

/// A random chain of `ops` elementwise ops over two inputs, in `dtype` (inputs converted).
inline std::vector<Node> RandomChain(const std::vector<Node>& p, DType dtype, uint32_t seed, int ops) {
  std::mt19937 rng(seed);
  std::vector<Node> values = {graph::ConvertDType(p[0], dtype), graph::ConvertDType(p[1], dtype)};
  auto pick = [&]() { return values[rng() % values.size()]; };
  for (int i = 0; i < ops; ++i) {
    Node a = pick(), b = pick();
    Node r = a;
    switch (rng() % 14) {
      case 0:
        r = a + b;
        break;
      case 1:
        r = a - b;
        break;
      case 2:
        r = a * b;
        break;
      case 3:
        r = a / (graph::Abs(b) + 1.0f);
        break;
      case 4:
        r = graph::Max(a, b);
        break;
      case 5:
        r = graph::Min(a, b);
        break;
      case 6:
        r = graph::Tanh(a);
        break;
      case 7:
        r = graph::Exp(graph::Min(a, graph::ScalarLike(a, 3.0f)));
        break;
      case 8:
        r = graph::Where(graph::Greater(a, b), a, b * 0.5f);
        break;
      case 9:
        r = graph::Neg(a) + 0.25f;
        break;
      case 10:
        r = graph::Sigmoid(a);
        break;
      case 11:
        r = graph::Log1p(graph::Abs(a));
        break;
      case 12:
        r = graph::ConvertDType(graph::ConvertDType(a, DType::BFloat16), dtype) * 3.0f;
        break;
      default:
        r = graph::Sin(a) * b;
        break;
    }
    values.push_back(r);
  }
  return {graph::ConvertDType(values.back(), DType::Float32),
          graph::ConvertDType(values[values.size() - 2], dtype)};
}

}  // namespace kiln::fusion_test
