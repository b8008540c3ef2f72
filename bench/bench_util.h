#pragma once
// Shared helpers of kiln's benchmarks: the backend under test, deterministic data (the same
// counter-based hash torch_bench.py implements, so both sides see identical values), and the
// counters every case reports.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/kiln.h>

namespace kiln::bench {

/// The backend configuration under test: --backend=..., else $KILN_BACKEND, else
/// "cpu:threads=2". Set once by main before any case runs.
void SetBackendConfig(const std::string& config);
/// The backend under test (one instance shared by all cases).
const compute::BackendPtr& Backend();
/// The thread count cases use for direct library calls and hand-written loops (2).
int BenchThreads();

/// The 32-bit hash of element `index` of stream `seed` (lowbias32 variant; see torch_bench.py).
uint32_t HashAt(uint64_t seed, uint64_t index);
/// `count` floats uniform in [lo, hi): lo + (hi - lo) * u with u = (hash >> 8) / 2^24.
std::vector<float> UniformValues(uint64_t seed, int64_t count, float lo, float hi);
/// A Float32 tensor of `dims` filled by UniformValues.
Tensor UniformTensor(uint64_t seed, const std::vector<int64_t>& dims, float lo, float hi);
/// An Int32 tensor of `count` class labels hash % classes.
Tensor LabelTensor(uint64_t seed, int64_t count, int classes);

/// Sets a rate counter: `value` units per iteration (FLOPs, bytes, examples), reported per second.
void SetRate(benchmark::State& state, const std::string& name, double per_iteration);
/// Peak resident set size of this process so far, in bytes (getrusage).
int64_t PeakRssBytes();
/// The median of `v` (the upper one of an even count); v must not be empty.
double Median(std::vector<double> v);

}  // namespace kiln::bench
