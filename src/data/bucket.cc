// Bucketing sizes for static-shape backends.

#include "kiln/data/bucket.h"

#include <cmath>

#include "core/check.h"

namespace kiln::data {

namespace {
constexpr int64_t kMaxBucket = int64_t{1} << 62;
}  // namespace

int64_t BucketPow2(int64_t n) {
  if (n > kMaxBucket) detail::Throw("BucketPow2: {} is beyond the largest bucket, 2^62", n);
  int64_t b = 1;
  while (b < n) b <<= 1;
  return b;
}

int64_t BucketLinear(int64_t n, int64_t step) {
  if (step < 1) detail::Throw("BucketLinear: step {} must be at least 1", step);
  if (n <= 0) return 0;
  if (n > kMaxBucket) detail::Throw("BucketLinear: {} is beyond the largest bucket, 2^62", n);
  return (n + step - 1) / step * step;
}

int64_t BucketExponential(int64_t n, double base) {
  if (!(base > 1.0) || !std::isfinite(base))
    detail::Throw("BucketExponential: base {} must be a number above 1", base);
  if (n > kMaxBucket) detail::Throw("BucketExponential: {} is beyond the largest bucket, 2^62", n);
  double power = 1.0;
  int64_t bucket = 1;
  while (bucket < n) {
    power *= base;
    // Buckets grow by at least one, whatever the base's rounding.
    bucket = std::max(bucket + 1, static_cast<int64_t>(std::ceil(power - 1e-9 * power)));
  }
  return bucket;
}

}  // namespace kiln::data
