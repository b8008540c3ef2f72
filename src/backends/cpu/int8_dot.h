#pragma once
// Quantized products through integer dot products (int8_dot.cc): each row of x is quantized to
// int8 in blocks of 32 along K, as ggml's block_q8_0 (d = max|x| / 127, q = x / d rounded to
// the nearest, ties to even), and each block of W times each block of x is an exact int32 sum
// (AVX-512 VNNI's vpdpbusd, AVX2's vpmaddubsw + vpmaddwd, or plain C++), scaled by the two
// blocks' scales into float sums. That is how ggml's CPU backend multiplies its Q4_0 and Q8_0
// weights: a block of activations costs a quarter of its float bytes and its products one
// instruction per 32 (VNNI) instead of a conversion and a multiply-add per 16.
//
// The three instruction sets give the same bits: the same eight int32 lanes per block (bytes
// 4l..4l+3 summed into lane l), the same float steps per lane, the same order of the final sum.

#include <cstdint>
#include <vector>

#include "backends/cpu/ggml_matmul.h"
#include "backends/cpu/quant_matmul.h"

namespace kiln::compute::cpu {

/// The instructions the integer dot products run on.
enum class Int8DotIsa { kScalar, kAvx2, kAvx512Vnni };

/// The best this CPU has within the SIMD target now in force (simd_target.h): VNNI under an
/// AVX-512 target on a CPU with AVX512_VNNI, AVX2's under AVX2 or AVX-512, plain C++ otherwise.
Int8DotIsa CurrentInt8DotIsa();
/// "avx512_vnni", "avx2" or "scalar".
const char* Int8DotIsaName(Int8DotIsa isa);

/// Rows of x quantized in blocks of 32 along K. A block whose max|x| is so small (below about
/// 1e-38) that 127 / max|x| overflows holds zeros (d = 0).
struct Q8Rows {
  int64_t m = 0, k = 0, blocks = 0;  ///< blocks = k / 32.
  std::vector<int8_t> q;             ///< [m, k], each in [-127, 127].
  std::vector<float> d;              ///< [m, blocks]: the block's scale (NaN where x held a NaN or Inf).
  std::vector<int32_t> sum;          ///< [m, blocks]: the block's sum of q.
};

/// Quantizes x [m, k] (k a multiple of 32) into `out`.
void QuantizeRowsQ8(const float* x, int64_t m, int64_t k, Int8DotIsa isa, Q8Rows& out);

/// y[r, j] = Σ_b dw[j, b] · dx[r, b] · Σ_l w[j, b, l] · q[r, b, l] for columns [n_begin, n_end),
/// W given as GGMLMatmul's rows of Q4_0 (w = nibble − 8) or Q8_0 blocks; x from QuantizeRowsQ8
/// (p.x is not read).
void RunGGMLInt8(const GGMLMatmul& p, const Q8Rows& x, int64_t n_begin, int64_t n_end, Int8DotIsa isa);

/// Whether RunGGMLInt8 runs this block type (Q4_0 and Q8_0).
inline bool GGMLInt8Runs(int type) { return type == kGGMLQ4_0 || type == kGGMLQ8_0; }

/// Whether RunLinearInt8 runs these weights: int8 (not 4-bit, not NF4) whose blocks of scales
/// along K are whole blocks of x (a multiple of 32 rows; per channel: K itself).
inline bool LinearInt8Runs(const LinearQuantMatmul& p) {
  return !p.four_bit && p.table == nullptr && p.block > 0 && p.block % 32 == 0 && p.k % p.block == 0;
}

/// x's sums over each block of W's rows [m, k / block] (float, in order), for the zero points.
std::vector<float> BlockSumsOf(const LinearQuantMatmul& p);

/// LinearQuantMatmul's product for columns [n_begin, n_end) with x from QuantizeRowsQ8 (p.x is
/// not read): y[r, j] = Σ_blocks (s · Σ_(x blocks in it) dx · Σ_l w · q + z · xsum) + bias;
/// `xsum` from BlockSumsOf when p.zero is set, else nullptr.
void RunLinearInt8(const LinearQuantMatmul& p, const Q8Rows& x, const float* xsum, int64_t n_begin,
                   int64_t n_end, Int8DotIsa isa);

}  // namespace kiln::compute::cpu
