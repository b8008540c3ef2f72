#pragma once
/// @file
/// Bucketing, for backends with static shapes only: rounding a size up to one of a few sizes, so
/// that inputs of any size compile a handful of programs instead of one per size.

#include <cstdint>

namespace kiln::data {

/// The smallest power of two >= n (1 for n <= 1). kiln::Error above 2^62.
int64_t BucketPow2(int64_t n);
/// n rounded up to a multiple of `step` (>= 1): BucketLinear(37, 16) == 48; 0 stays 0.
int64_t BucketLinear(int64_t n, int64_t step);
/// The smallest bucket >= n among ceil(base^k), k = 0, 1, 2... (`base` > 1; 1 for n <= 1):
/// BucketExponential(37, 1.5) == 39 (1.5^9 = 38.4); kiln::Error beyond 2^62.
int64_t BucketExponential(int64_t n, double base);

}  // namespace kiln::data
