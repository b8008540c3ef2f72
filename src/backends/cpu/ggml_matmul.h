#pragma once
// Matrix products with weights in ggml's Q8_0, Q4_0, Q4_K and Q6_K blocks (ggml_matmul.cc, Highway with
// dynamic dispatch): W is stored as ggml keeps it, one row of blocks per output feature, and
// each block is decoded in registers next to the slice of x it multiplies.

#include <cstdint>
#include <cstring>

#include "kiln/core/half.h"

namespace kiln::compute::cpu {

/// ggml's numbers for the block types these kernels read.
inline constexpr int kGGMLQ4_0 = 2, kGGMLQ8_0 = 8, kGGMLQ4_K = 12, kGGMLQ6_K = 14;

/// y [m, n] = x [m, k] · Wᵀ, W [n, k] given as n rows of blocks in ggml's layouts: block_q8_0 (a
/// float16 scale d and 32 int8 q: d · q), block_q4_0 (d and 16 bytes of nibbles, value l < 16 in
/// the low nibble of byte l and value l + 16 in its high nibble: d · (q - 8)), block_q4_K and
/// block_q6_K (256 values with sub-block scales).
struct GGMLMatmul {
  const float* x = nullptr;  ///< [m, k], row-major.
  int64_t m = 0, k = 0, n = 0;
  const uint8_t* w = nullptr;  ///< [n, k / block values · block bytes].
  int type = kGGMLQ8_0;        ///< kGGMLQ8_0, kGGMLQ4_0, kGGMLQ4_K or kGGMLQ6_K.
  float* y = nullptr;          ///< [m, n], written.
};

/// The float16 at `p` (a block's scale; any alignment).
inline float GGMLHalfAt(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return kiln::detail::HalfBitsToFloat(bits);
}

/// Bytes of one block of `type` (34, 18, 144 or 210).
int64_t GGMLBlockBytesOf(int type);
/// Values of one block of `type` (32, or 256 for the K-quants).
int64_t GGMLBlockValuesOf(int type);

/// Computes columns [n_begin, n_end) of y. Threads may run disjoint ranges at once.
void RunGGMLMatmul(const GGMLMatmul& p, int64_t n_begin, int64_t n_end);

/// W[n_begin:n_end, k_begin:k_end] as floats into `out` (row stride k_end - k_begin; k_begin and
/// k_end multiples of the block's values), for the batched path (a tile through a float matrix
/// product).
void DecodeGGMLTile(const GGMLMatmul& p, int64_t n_begin, int64_t n_end, int64_t k_begin, int64_t k_end,
                    float* out);

}  // namespace kiln::compute::cpu
