#pragma once
/// @file
/// Weight quantization on the host (kiln::quant): a float matrix becomes low-bit integers plus
/// the scale factors that map them back, in a few bytes per weight; nn::QuantizedDense and
/// nn::QuantizedEmbedding use them in a graph.
///
///   quant::Quantized q = quant::Quantize(w, quant::Scheme::Int4, /*block_size=*/32);  // w [K, N]
///   Node y = nn::QuantizedDense(x, q.WeightsIn(g), q.QuantizationIn(g));             // ≈ x·w
///   Tensor back = quant::Dequantize(q);                                              // float32 [K, N]
///
/// Schemes:
/// - Linear (Int8, Int4, and their asymmetric forms): value = q · scale (+ zero_point), one
///   scale (and zero point) per block of `block_size` consecutive elements along `block_axis`.
///   Symmetric: scale = max|w| / 127 (Int8) or / 7 (Int4). Asymmetric: the block's [min, max]
///   spread over the whole integer range, the zero point a float offset (GoMLX's convention).
/// - NF4 (QLoRA's 4-bit NormalFloat): value = kNF4Table[q] · scale, scale = the block's max|w|.
/// - GGML blocks (Q8_0, Q4_0, Q4_K, Q6_K), with ggml's exact byte layouts: the matrix is
///   stored transposed, one row of bytes per output feature, each row a sequence of blocks along
///   the input axis (32 values per block for Q8_0/Q4_0, 256 for the K-quants). The scales live
///   inside the blocks, so `scales` is empty.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/graph/graph.h"
#include "kiln/ml/quantized.h"
#include "kiln/model/store.h"

namespace kiln::quant {

/// What a quantized matrix stores.
enum class Scheme {
  Int8,            ///< Linear, symmetric, Int8 values in [-127, 127].
  Int8Asymmetric,  ///< Linear with a zero point, Int8 values in [-128, 127].
  Int4,            ///< Linear, symmetric, packed Int4 values in [-7, 7].
  Int4Asymmetric,  ///< Linear with a zero point, packed Int4 values in [-8, 7].
  NF4,             ///< Packed Uint4 indices into kNF4Table, times the block's max|w|.
  Q8_0,            ///< ggml block_q8_0: 32 values, a float16 scale and 32 int8 (34 bytes).
  Q4_0,            ///< ggml block_q4_0: 32 values, a float16 scale and 16 bytes of nibbles (18 bytes).
  Q4_K,            ///< ggml block_q4_K: 256 values in 8 sub-blocks with 6-bit scales and mins (144 bytes).
  Q6_K,            ///< ggml block_q6_K: 256 values of 6 bits in 16 sub-blocks with int8 scales (210 bytes).
};

/// "Int8", "Q4_K", ...
std::string SchemeName(Scheme scheme);
/// The scheme named `name` (as SchemeName writes it); kiln::Error for an unknown name.
Scheme SchemeFromName(const std::string& name);
/// Whether `scheme` stores zero points (Int8Asymmetric, Int4Asymmetric).
bool IsAsymmetric(Scheme scheme);
/// Whether `scheme` is one of ggml's block formats.
bool IsGGML(Scheme scheme);
/// The graph-side scheme (nn::QuantizationScheme) of a host scheme.
nn::QuantizationScheme GraphScheme(Scheme scheme);
/// The ggml type of a GGML scheme (kiln::Error for the others).
nn::GGMLType GGMLTypeOf(Scheme scheme);
/// The GGML scheme of a ggml type (kiln::Error for the types that are not quantized blocks).
Scheme SchemeOf(nn::GGMLType type);

/// The 16 values of QLoRA's NormalFloat4 code, ascending from -1 to 1.
extern const std::array<float, 16> kNF4Table;

/// A quantized matrix, logically float [K, N] (dims): K input features, N output features.
struct Quantized {
  /// The scheme the weights are stored in.
  Scheme scheme = Scheme::Int8;
  /// The logical (float) dimensions [K, N].
  std::vector<int64_t> dims;
  /// Linear: Int8 or Int4 [K, N]; NF4: Uint4 [K, N]; GGML: Uint8 [N, bytes per row].
  Tensor weights;
  /// Float32, `dims` with the block axis divided by the block size (Linear and NF4); empty for GGML.
  Tensor scales;
  /// Float32, the shape of `scales`: asymmetric Linear only; empty otherwise.
  Tensor zero_points;
  /// The axis of `dims` along which blocks run (GGML: 0, the input axis).
  int block_axis = 0;
  /// Elements per block along block_axis (GGML: the format's block size).
  int64_t block_size = 0;

  /// Bytes of weights, scales and zero points together.
  int64_t ByteSize() const;
  /// The weights as a graph constant.
  graph::Node WeightsIn(graph::Graph& g) const;
  /// The scheme with its scales and zero points as graph constants, for nn::QuantizedDense.
  nn::Quantization QuantizationIn(graph::Graph& g) const;
};

/// Quantizes the float matrix `w` [K, N] (any float dtype, read as float32) with `scheme`, in
/// blocks of `block_size` elements along `block_axis` (0: the input axis K; 1: the output axis
/// N). block_size 0 means the whole axis (one scale per output channel when block_axis is 0).
/// GGML schemes take block_axis 0 and their own block size (block_size 0 or that size), and
/// need K to be a multiple of it. kiln::Error for a block size that does not divide the axis, a
/// matrix that is not rank 2 or not float, or non-finite values.
Quantized Quantize(const Tensor& w, Scheme scheme, int64_t block_size = 0, int block_axis = 0);

/// The float32 [K, N] matrix that `q` stands for (exactly what nn::QuantizedDense multiplies by).
/// kiln::Error when the parts of `q` do not fit together.
Tensor Dequantize(const Quantized& q);

/// Checks that the parts of `q` fit together (dtypes, shapes, block size); kiln::Error naming
/// what is wrong otherwise.
void Validate(const Quantized& q);

// ---- post-training quantization of a model ------------------------------------------------------

/// What QuantizeStore replaced.
struct StoreQuantization {
  std::vector<std::string> paths;  ///< The float variables replaced ("/dense_1/weights", ...).
  int64_t bytes_before = 0;        ///< Their float bytes.
  int64_t bytes_after = 0;         ///< The bytes of their quantized forms.
};

/// Post-training quantization: replaces the float weight matrices of the store's dense layers
/// (rank-2 variables named "weights") and embedding tables (rank-2 "embeddings") that `filter`
/// accepts (all when empty) by their quantized forms, which layers::Dense and layers::Embedding
/// then use: variables "<name>_quantized" (the integer weights), "<name>_scales" and, for the
/// asymmetric schemes, "<name>_zero_points" (none trainable), and the scope hyperparameters
/// "quantization_scheme", "quantization_block_size" and "quantization_block_axis". Dense
/// weights get blocks along K (block_size 0: one scale per output feature); embedding tables
/// along their rows (GGML: one row of blocks per id). Checkpoints save the quantized variables.
/// A layer that does not read quantized weights fails with a kiln::Error naming the variable.
StoreQuantization QuantizeStore(model::Store& store, Scheme scheme, int64_t block_size = 0,
                                const std::function<bool(const model::Variable&)>& filter = {});

/// The quantized variable `name` of `scope` (as QuantizeStore lays it out) as graph nodes of
/// `g`: the weights and their nn::Quantization; std::nullopt when the scope has none.
std::optional<std::pair<graph::Node, nn::Quantization>> QuantizedVariableIn(const model::Scope& scope,
                                                                            const std::string& name,
                                                                            graph::Graph& g);

// ---- ggml blocks on the host ----------------------------------------------------------------

/// What kiln knows of one of ggml's tensor types.
struct GGMLTypeInfo {
  int32_t type;          ///< Its number in ggml and GGUF files.
  const char* name;      ///< "Q4_K", "F16", ...
  int64_t block_values;  ///< Values per block (1 for plain types).
  int64_t block_bytes;   ///< Bytes per block.
  bool decodable;        ///< Whether EncodeGGML/DecodeGGML take it (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K).
};
/// The ggml type numbered `type`, or nullptr for a number kiln does not know.
const GGMLTypeInfo* FindGGMLType(int32_t type);

/// Values per block of a ggml type (32 or 256).
int64_t GGMLBlockValues(nn::GGMLType type);
/// Bytes per block of a ggml type (34, 18, 144, 210).
int64_t GGMLBlockBytes(nn::GGMLType type);
/// Encodes `n` floats (a multiple of the block's values) as ggml blocks of `type` into `out`
/// (n / values · bytes bytes).
void EncodeGGML(nn::GGMLType type, const float* in, int64_t n, uint8_t* out);
/// Decodes `n` values from ggml blocks of `type`, as ggml's dequantize_row functions define them.
void DecodeGGML(nn::GGMLType type, const uint8_t* in, int64_t n, float* out);

}  // namespace kiln::quant
