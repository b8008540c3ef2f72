#pragma once
// Matrix products with weights in ggml's Q8_0 and Q4_0 blocks (ggml_matmul.cc, Highway with
// dynamic dispatch): W is stored as ggml keeps it, one row of blocks per output feature, and
// each block is decoded in registers next to the slice of x it multiplies.

#include <cstdint>

namespace kiln::compute::cpu {

/// ggml's numbers for the block types these kernels read.
inline constexpr int kGGMLQ4_0 = 2, kGGMLQ8_0 = 8;

/// y [m, n] = x [m, k] · Wᵀ, W [n, k] given as n rows of k / 32 blocks: block_q8_0 (a float16
/// scale d and 32 int8 q: d · q) or block_q4_0 (d and 16 bytes of nibbles, value l < 16 in the
/// low nibble of byte l and value l + 16 in its high nibble: d · (q - 8)).
struct GGMLMatmul {
  const float* x = nullptr;  ///< [m, k], row-major.
  int64_t m = 0, k = 0, n = 0;
  const uint8_t* w = nullptr;  ///< [n, k / 32 · block bytes].
  int type = kGGMLQ8_0;        ///< kGGMLQ8_0 or kGGMLQ4_0.
  float* y = nullptr;          ///< [m, n], written.
};

/// Bytes of one block of `type` (34 or 18).
int64_t GGMLBlockBytesOf(int type);

/// Computes columns [n_begin, n_end) of y. Threads may run disjoint ranges at once.
void RunGGMLMatmul(const GGMLMatmul& p, int64_t n_begin, int64_t n_end);

/// W[n_begin:n_end, k_begin:k_end] as floats into `out` (row stride k_end - k_begin; k_begin and
/// k_end multiples of 32), for the batched path (a tile through a float matrix product).
void DecodeGGMLTile(const GGMLMatmul& p, int64_t n_begin, int64_t n_end, int64_t k_begin, int64_t k_end,
                    float* out);

}  // namespace kiln::compute::cpu
