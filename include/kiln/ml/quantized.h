#pragma once
/// @file
/// Quantized weights in a graph (kiln::nn): a dense layer and an embedding lookup whose weights
/// are low-bit integers with scale factors (see kiln/quant/quant.h for making them).
///
///   nn::Quantization q = nn::Quantization::Linear(scales, Node(), /*block_axis=*/0, /*block_size=*/32);
///   Node y = nn::QuantizedDense(x, int4_weights, q, bias, activations::Relu);  // scales [K/32, N]
///
/// The dequantization is built from graph primitives, so it runs (and differentiates with
/// respect to x) on every backend.

#include <cstdint>
#include <functional>

#include "kiln/graph/ops.h"

namespace kiln::nn {

using graph::Node;

/// How integer weights map to float values (GoMLX's QuantizationScheme).
enum class QuantizationScheme {
  /// value = q · scale + zero_point (zero_point optional), q stored as Int8, Int4, Uint8 or Uint4.
  Linear,
  /// value = kNF4Table[q] · scale, q a Uint4 (or Int4, read as its low 4 bits) index.
  NF4,
  /// ggml blocks: the weights are Uint8 [N, bytes per row], their scales inside the blocks.
  GGML,
};

/// ggml's tensor types (their numbers in ggml and GGUF files).
enum class GGMLType : int32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q8_0 = 8,
  Q4_K = 12,
  Q6_K = 14,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

/// "Q4_K", "F16", ... ("GGMLType(<n>)" for numbers kiln does not name).
const char* GGMLTypeName(GGMLType type);

/// The metadata that turns quantized weights [K, N] (input features, output features) back
/// into floats.
struct Quantization {
  /// How the integers map to floats.
  QuantizationScheme scheme = QuantizationScheme::Linear;
  /// Linear and NF4: float scales shaped as the weights with the block axis's size divided by
  /// block_size (e.g. [K / block_size, N] for blocks along K). Unused for GGML.
  Node scale;
  /// Linear only, optional: float offsets shaped as `scale`.
  Node zero_point;
  /// The weights' axis along which blocks run: 0 (K, the contracted axis) or 1 (N).
  int block_axis = 0;
  /// Elements per block along block_axis; 0 means the whole axis.
  int64_t block_size = 0;
  /// GGML only: the block format.
  GGMLType ggml_type = GGMLType::Q8_0;

  /// Linear weights with `scale` (and optionally `zero_point`) per block.
  static Quantization Linear(Node scale, Node zero_point = Node(), int block_axis = 0,
                             int64_t block_size = 0) {
    return {QuantizationScheme::Linear, scale, zero_point, block_axis, block_size, GGMLType::Q8_0};
  }
  /// NF4 weights with `scale` per block.
  static Quantization NF4(Node scale, int block_axis = 0, int64_t block_size = 0) {
    return {QuantizationScheme::NF4, scale, Node(), block_axis, block_size, GGMLType::Q8_0};
  }
  /// ggml blocks of `type`.
  static Quantization GGML(GGMLType type) { return {QuantizationScheme::GGML, Node(), Node(), 0, 0, type}; }
};

/// The float matrix [K, N] that `weights` and `quantization` stand for, in `dtype` (a float
/// dtype), built from graph primitives. For GGML weights [N, bytes] K comes from the row size.
Node Dequantized(Node weights, const Quantization& quantization, DType dtype = DType::Float32);

/// activation(x · dequantized(weights) + bias): x [..., K] (float), weights [K, N] (Linear,
/// NF4) or Uint8 [N, bytes per row] (GGML), bias [N] or an invalid Node; the result is
/// [..., N] in x's dtype. kiln::Error naming the problem for scales of the wrong shape, a block
/// size that does not divide its axis, a weights dtype the scheme does not store, or K that
/// differs from x's last axis.
Node QuantizedDense(Node x, Node weights, const Quantization& quantization, Node bias = Node(),
                    const std::function<Node(Node)>& activation = {});

/// Rows `ids` of a quantized table [vocab, dims]: ids [...] (integer) -> [..., dims] float32.
/// Only the gathered rows are dequantized. Linear/NF4 tables have blocks along the row
/// (block_axis 1: scale [vocab, dims / block]) or down the columns (block_axis 0: scale
/// [vocab / block, dims]); GGML tables are Uint8 [vocab, bytes per row], one row per id.
Node QuantizedEmbedding(Node ids, Node table, const Quantization& quantization);

}  // namespace kiln::nn
