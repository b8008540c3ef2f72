#pragma once
// The SIMD primitives of the fused machine (Highway with dynamic dispatch): one op over a piece,
// a whole vector program per block of vectors, conversions and fills (fused_simd.cc), and the
// reductions' folds (fused_fold_simd.cc).

#include <cstddef>
#include <cstdint>
#include <functional>

#include "backends/cpu/fused_program.h"
#include "kiln/core/dtype.h"

namespace kiln::compute::cpu {

/// The widest vector any compiled target has, in float lanes (AVX-512's 16, with room).
inline constexpr size_t kMaxSimdLanes = 64;

/// Runs `prog` over n elements (fused_simd.cc): `in[i]` points at input i's n values, `out`
/// receives the results (it may be one of the inputs). `slots` and `tail` are scratch of
/// SlotFloats() and TailFloats(); `tail_in` has room for num_inputs pointers. The ops are the
/// same SIMD forms as RunFusedOpSimd's, so results are the same bits.
void RunVProgramSimd(const VProgram& prog, const float* const* in, float* out, size_t n, float* slots,
                     float* tail, const float** tail_in);

/// Whether the SIMD target in use runs vector programs (AVX3: a block of four vectors stays in its
/// 32 registers); elsewhere one pass per instruction costs fewer instructions per element.
bool UseVProgramSimd();

/// Runs one compute instruction of `op` over n elements with Highway (fused_simd.cc): operands
/// `a`, `b`, `c` as the op needs; `out` may alias an operand.
void RunFusedOpSimd(FOp op, const float* a, const float* b, const float* c, float* out, size_t n);
/// dst[i] = src[i] as float32 for a Float32, Float16, BFloat16 or Bool source (SIMD).
void ConvertToF32Simd(DType dtype, const uint8_t* src, float* dst, size_t n);
/// dst[i] = src[i] in `dtype` (Float32, Float16 or BFloat16 rounded to nearest even, Bool as
/// src[i] != 0), as kiln's half types convert (SIMD).
void ConvertFromF32Simd(DType dtype, const float* src, uint8_t* dst, size_t n);
/// Stores `len` float32 values v at element `start` of `data`, of `dtype` (a copy, or
/// ConvertFromF32Simd; nothing when v is already there).
void StorePieceSimd(DType dtype, const float* v, uint8_t* data, int64_t start, int64_t len);
/// dst[0, n) = v.
void FillSimd(float* dst, float v, size_t n);
/// The sum of v[0, n) accumulated in double (lane-wise partial sums, then added up).
double SumSimd(const float* v, size_t n);
/// acc[i] += v[i] in double.
void AddIntoSimd(double* acc, const float* v, size_t n);
/// acc[j] += v[k * cols + j] for j < cols, over rows k = 0, 1, ... rows - 1 in order, in double
/// (the same sums as AddIntoSimd row by row; blocks of columns held in registers over the rows).
void AddRowsIntoSimd(double* acc, const float* v, size_t rows, size_t cols);
/// The maximum (is_max) or minimum of init and v[0, n); NaN propagates as in the reference.
float ExtremeSimd(bool is_max, const float* v, size_t n, float init);
/// acc[i] = max(acc[i], v[i]) (or min), NaN propagating.
void ExtremeIntoSimd(bool is_max, float* acc, const float* v, size_t n);

/// The Highway target the SIMD kernels dispatch to ("AVX2", "EMU128"...).
const char* FusedSimdTarget();
/// For tests: calls `fn` with each compiled SIMD target this machine supports forced in turn
/// (each under a SimdTargetScope, so cpu executions elsewhere wait), then the normal dispatch.
void ForEachFusedSimdTarget(const std::function<void(const char* target)>& fn);

}  // namespace kiln::compute::cpu
