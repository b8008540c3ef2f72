#pragma once
/// compute::Program: the immutable IR a backend compiles. A topologically ordered list of
/// instructions (op, operands, attributes, result shape), parameter and output lists, and which
/// parameters may be donated. Instructions may own sub-programs (loop bodies, branches).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/shape.h"
#include "kiln/core/tensor.h"

namespace kiln::compute {

/// The primitive operations (see ops.def).
enum class OpType : uint16_t {
#define KILN_OP(name, ...) name,
#include "kiln/compute/ops.def"
#undef KILN_OP
};

/// Number of primitive operations.
inline constexpr int kNumOps = 0
#define KILN_OP(name, ...) +1
#include "kiln/compute/ops.def"
#undef KILN_OP
    ;

/// Families of ops sharing a shape rule and a kernel driver (the Category column of ops.def).
enum class OpCategory {
  Leaf,            ///< No operands: Parameter, Constant, Iota.
  Unary,           ///< Elementwise, result of the operand's shape.
  UnaryPredicate,  ///< Elementwise, Bool result.
  Binary,          ///< Elementwise on equal shapes.
  Compare,         ///< Elementwise on equal shapes, Bool result.
  Select,          ///< Where.
  Reduce,          ///< Reductions over axes.
  ArgReduce,       ///< ArgMax, ArgMin.
  Movement,        ///< Data movement: reshape, transpose, broadcast, slice, pad...
  Convert,         ///< DType conversion and bit casts.
  Contraction,     ///< DotGeneral.
  Convolution,     ///< ConvGeneral.
  Window,          ///< ReduceWindow, SelectAndScatter.
  Indexing,        ///< Gather, Scatter, DynamicSlice, DynamicUpdateSlice.
  SortScan,        ///< ArgSort, CumSum.
  Control,         ///< While, If, OptimizationBarrier (tuple results), GetTupleElement.
};

/// The op's name as in ops.def ("Add", "DotGeneral"...).
std::string_view OpName(OpType op);
/// Operand count from ops.def (-1 for variadic ops).
int OpArity(OpType op);
OpCategory GetOpCategory(OpType op);
/// The op with its attributes, as printed in listings: "Slice{starts=[0], limits=[2], strides=[1]}".
std::string FormatOp(OpType op, const struct OpAttributes& attrs);
/// Whether `a` and `b` agree on every attribute slot `op` uses (what common-subexpression
/// elimination compares; a Constant's literal by shape and bytes).
bool AttributesEqual(OpType op, const OpAttributes& a, const OpAttributes& b);
/// All ops, in ops.def order.
const std::vector<OpType>& AllOps();

/// One dimension's padding: `low` and `high` edge padding (negative crops) and `interior`
/// padding between elements.
struct PadAxis {
  int64_t low = 0, high = 0, interior = 0;
  friend bool operator==(const PadAxis&, const PadAxis&) = default;
};

/// How windows and scatters combine values.
enum class ReduceKind { Sum, Product, Max, Min, Set };

/// ConvGeneral's axis layout (XLA's dimension numbers): which axes of the input, kernel and
/// output hold the batch, the features and the spatial dimensions.
struct ConvDims {
  int64_t input_batch = 0, input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> output_spatial;
  friend bool operator==(const ConvDims&, const ConvDims&) = default;
};

/// Gather's dimension numbers (XLA's): offset_dims are the result axes of the slice, collapsed
/// slice axes are dropped, start_index_map maps index vector entries to operand axes.
struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map, slice_sizes;
  int64_t index_vector_dim = 0;
  friend bool operator==(const GatherDims&, const GatherDims&) = default;
};

/// Scatter's dimension numbers (XLA's).
struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  friend bool operator==(const ScatterDims&, const ScatterDims&) = default;
};

/// Typed attribute slots; each op uses the ones its ops.def entry names.
struct OpAttributes {
  int64_t index = 0;                 ///< Parameter: its position.
  Shape shape;                       ///< Parameter, Iota, Reshape, BroadcastInDim: the result shape.
  Tensor literal;                    ///< Constant: the value (host tensor).
  int64_t axis = 0;                  ///< Iota, Concatenate, ArgMax/ArgMin.
  DType dtype = DType::Invalid;      ///< ConvertDType, Bitcast, ArgMax/ArgMin: the result dtype.
  std::vector<int64_t> axes;         ///< Reductions, Reverse; BroadcastInDim: operand axis -> output axis.
  std::vector<int64_t> permutation;  ///< Transpose: output axis i is operand axis permutation[i].
  std::vector<int64_t> starts, limits, strides;                                 ///< Slice.
  std::vector<PadAxis> padding;                                                 ///< Pad.
  std::vector<int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;  ///< DotGeneral.
  ConvDims conv;                                                                ///< ConvGeneral.
  std::vector<int64_t> window;                   ///< ReduceWindow, SelectAndScatter: window sizes.
  std::vector<int64_t> input_dilations;          ///< ConvGeneral (transposed conv), ReduceWindow (base).
  std::vector<int64_t> kernel_dilations;         ///< ConvGeneral, ReduceWindow (window dilations).
  int64_t feature_groups = 1, batch_groups = 1;  ///< ConvGeneral.
  ReduceKind reduce_kind = ReduceKind::Sum;      ///< ReduceWindow, SelectAndScatter, Scatter.
  GatherDims gather;                             ///< Gather.
  ScatterDims scatter;                           ///< Scatter.
  std::vector<int64_t> sizes;                    ///< DynamicSlice: the slice sizes.
  bool reverse = false;                          ///< ArgSort: descending; CumSum: from the end.
  int64_t trip_count = -1;  ///< While: the static iteration count, -1 when data-dependent.
};

/// One instruction: its result is value number `id` (its position in the program).
struct Instruction {
  OpType op;
  std::vector<int> operands;  ///< Value numbers of earlier instructions.
  OpAttributes attrs;
  Shape shape;  ///< Result shape (an invalid Shape() for tuple-producing ops).
  /// Programs the op runs (loop condition and body, branches, comparators), in op order.
  std::vector<std::shared_ptr<const class Program>> subprograms;
  /// The results of a tuple-producing op (While, If, OptimizationBarrier); empty otherwise.
  std::vector<Shape> tuple_shapes = {};
  bool IsTuple() const { return !tuple_shapes.empty(); }
};

/// A compiled-unit description: built once by the graph layer, then read-only.
class Program {
 public:
  Program(std::vector<Instruction> instructions, std::vector<int> outputs, std::vector<bool> donatable);

  const std::vector<Instruction>& Instructions() const { return instructions_; }
  /// Value numbers of the Parameter instructions, by parameter index.
  const std::vector<int>& Parameters() const { return parameters_; }
  const std::vector<int>& Outputs() const { return outputs_; }
  /// Per parameter: may the execution reuse its buffer (when the caller donates it).
  const std::vector<bool>& Donatable() const { return donatable_; }
  const Shape& ParameterShape(int i) const { return instructions_[parameters_[i]].shape; }
  const Shape& OutputShape(int i) const { return instructions_[outputs_[i]].shape; }

  /// Re-checks every instruction's operands and shape against the shape rules; throws
  /// kiln::Error naming the instruction. Backends call it before compiling.
  void Verify() const;
  /// Readable listing, one instruction per line: "%3 = Add(%1, %2) : (Float32)[2, 3]".
  std::string ToString() const;

 private:
  std::vector<Instruction> instructions_;
  std::vector<int> parameters_;
  std::vector<int> outputs_;
  std::vector<bool> donatable_;
};

}  // namespace kiln::compute
