// Shared helpers of kiln's benchmarks: backend selection, deterministic data, counters.

#include "bench_util.h"

#include <algorithm>

#include <sys/resource.h>

#include <cstdlib>
#include <memory>

namespace kiln::bench {
namespace {

// The configuration chosen by main (empty: not set yet).
std::string& ConfigString() {
  static std::string config;
  return config;
}

}  // namespace

// Records the backend configuration to use.
void SetBackendConfig(const std::string& config) { ConfigString() = config; }

// Creates the backend on first use from the recorded configuration.
const compute::BackendPtr& Backend() {
  static const compute::BackendPtr backend = [] {
    std::string config = ConfigString();
    if (config.empty()) {
      const char* env = std::getenv("KILN_BACKEND");
      config = env != nullptr && *env != '\0' ? env : "cpu:threads=2";
    }
    return compute::NewWithConfig(config);
  }();
  return backend;
}

// Two threads, as the peer (PyTorch) gets.
int BenchThreads() { return 2; }

// lowbias32 with multipliers below 2^31 (so that torch's int64 arithmetic never overflows).
uint32_t HashAt(uint64_t seed, uint64_t index) {
  uint32_t x = static_cast<uint32_t>(index) + static_cast<uint32_t>(seed) * 0x9E3779B9U;
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x5bd1e995U;
  x ^= x >> 16;
  return x;
}

// Uniform floats from the hash, computed in float32 exactly as torch_bench.py does.
std::vector<float> UniformValues(uint64_t seed, int64_t count, float lo, float hi) {
  std::vector<float> out(static_cast<size_t>(count));
  const float span = hi - lo;
  for (int64_t i = 0; i < count; ++i) {
    const float u = static_cast<float>(HashAt(seed, static_cast<uint64_t>(i)) >> 8) * (1.0F / 16777216.0F);
    const float scaled = span * u;
    out[static_cast<size_t>(i)] = scaled + lo;
  }
  return out;
}

// Wraps UniformValues in a tensor.
Tensor UniformTensor(uint64_t seed, const std::vector<int64_t>& dims, float lo, float hi) {
  const Shape shape(DType::Float32, dims);
  return Tensor::FromFlat(shape, UniformValues(seed, shape.Size(), lo, hi));
}

// Labels hash % classes.
Tensor LabelTensor(uint64_t seed, int64_t count, int classes) {
  std::vector<int32_t> labels(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    labels[static_cast<size_t>(i)] =
        static_cast<int32_t>(HashAt(seed, static_cast<uint64_t>(i)) % static_cast<uint32_t>(classes));
  return Tensor::FromFlat(Shape(DType::Int32, {count}), labels);
}

// A per-second rate counter.
void SetRate(benchmark::State& state, const std::string& name, double per_iteration) {
  state.counters[name] = benchmark::Counter(per_iteration * static_cast<double>(state.iterations()),
                                            benchmark::Counter::kIsRate);
}

// ru_maxrss is in KiB on Linux.
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace kiln::bench
