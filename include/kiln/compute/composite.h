#pragma once
/// @file
/// The named Composite operations kiln's own libraries emit, and the layout of their integer
/// attributes (OpAttributes::values): the contract between the graph code that builds them and
/// the backends that have kernels for them. A backend without a kernel runs the decomposition.

#include <array>
#include <cstdint>

namespace kiln::compute::composite {

/// y [M, N] = x [M, K] · dequantized(weights): nn::QuantizedDense's contraction. Operands: x
/// (float), the weights, then (Linear, NF4) the scale and, when kHasZero, the zero point.
inline constexpr const char* kQuantizedMatmul = "kiln.quantized_matmul";

/// Positions in kQuantizedMatmul's values.
enum QuantizedMatmulValue : int {
  kScheme = 0,     ///< A QuantizedMatmulScheme.
  kGGMLType = 1,   ///< kSchemeGGML: ggml's type number (8 = Q8_0, 2 = Q4_0, ...).
  kBlockAxis = 2,  ///< 0: blocks run along K (the scale is [K / block, N]); 1: along N.
  kBlockSize = 3,  ///< Elements per block along the block axis (the whole axis: its size).
  kHasZero = 4,    ///< 1 when a zero-point operand follows the scale.
  kNumQuantizedMatmulValues = 5,
};

/// The schemes of kQuantizedMatmul (nn::QuantizationScheme's order).
enum QuantizedMatmulScheme : int64_t { kSchemeLinear = 0, kSchemeNF4 = 1, kSchemeGGML = 2 };

/// kSchemeNF4: the values of the 16 codes (QLoRA's NormalFloat4; quant::kNF4Table).
inline constexpr std::array<float, 16> kNF4Values = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020725250244f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

/// Adam's (and AdamW's) update of one Float32 variable, elementwise (optimizers::Adam):
///   m' = m·b1 + g·(1 − b1),  v' = v·b2 + (g·g)·(1 − b2),
///   w' = base − (step_size·m') / (sqrt(v') / sqrt_bc2 + eps),  base = w (or w·decay with kHasDecay)
/// each operation rounded to Float32 in this order. Operands: w, g, m, v (one shape), then the
/// Float32 scalars step_size and sqrt_bc2, then decay when kHasDecay. Results: m', v', w'.
inline constexpr const char* kAdamUpdate = "kiln.adam_update";

/// Positions in kAdamUpdate's values: the Float32 constants as their bit patterns.
enum AdamUpdateValue : int {
  kAdamBeta1 = 0,          ///< b1.
  kAdamOneMinusBeta1 = 1,  ///< 1 − b1, rounded once to Float32.
  kAdamBeta2 = 2,          ///< b2.
  kAdamOneMinusBeta2 = 3,  ///< 1 − b2, rounded once to Float32.
  kAdamEpsilon = 4,        ///< eps.
  kAdamHasDecay = 5,       ///< 1 when the decay operand follows (AdamW's decoupled weight decay).
  kNumAdamUpdateValues = 6,
};

}  // namespace kiln::compute::composite
