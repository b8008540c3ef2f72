#pragma once
// Matrix products with linearly quantized weights, dequantized in registers (quant_matmul.cc,
// Highway with dynamic dispatch): the weights are streamed once, row by row, and never stored as
// floats. For few rows of x (a batch of one to a few), where the product is bound by reading the
// weights: int8 weights read a quarter of float32's bytes, int4 an eighth.

#include <cstdint>

namespace kiln::compute::cpu {

/// y [m, n] = x [m, k] · W [k, n], W[i, j] = q[i, j] · scale[i / block, j] (+ zero[i / block, j]),
/// or table[q[i, j]] · scale[i / block, j] for NF4.
struct LinearQuantMatmul {
  const float* x = nullptr;  ///< [m, k], row-major.
  int64_t m = 0, k = 0, n = 0;
  /// The integer weights [k, n], row-major: one int8 per byte, or (four_bit) two int4 per byte,
  /// the first in the low nibble (n even).
  const uint8_t* q = nullptr;
  bool four_bit = false;
  /// NF4 (four_bit weights only): the 16 values the unsigned 4-bit codes stand for, W[i, j] =
  /// table[q[i, j]] · scale[i / block, j]; nullptr for linear weights.
  const float* table = nullptr;
  const float* scale = nullptr;  ///< [k / block, n].
  const float* zero = nullptr;   ///< [k / block, n], or nullptr.
  int64_t block = 0;             ///< Rows of W per scale row; divides k.
  const float* bias = nullptr;   ///< [n], or nullptr.
  float* y = nullptr;            ///< [m, n], written.
};

/// Computes columns [n_begin, n_end) of y (both even for four_bit weights); `scratch` holds
/// m · (n_end - n_begin) floats. Threads may run disjoint column ranges at once.
void RunLinearQuantMatmul(const LinearQuantMatmul& p, int64_t n_begin, int64_t n_end, float* scratch);

/// W[k_begin:k_end, n_begin:n_end] as floats into `out` (row stride n_end - n_begin; n_begin
/// even for four_bit weights): for many rows of x, where the product is bound by arithmetic, a
/// tile of the weights at a time goes through a float matrix product.
void DequantizeLinearTile(const LinearQuantMatmul& p, int64_t k_begin, int64_t k_end, int64_t n_begin,
                          int64_t n_end, float* out);

}  // namespace kiln::compute::cpu
