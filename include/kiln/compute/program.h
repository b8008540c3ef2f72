#pragma once
/// @file
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

/// Number of primitive operations (counted from ops.def). @hideinitializer
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
  Complex,         ///< Complex, Real, Imag, Conj, Fft.
  Control,         ///< While, If, OptimizationBarrier, Composite (tuple results), GetTupleElement.
  Collective,      ///< AllReduce, AllGather, ReduceScatter, CollectiveBroadcast: between replicas.
};

/// The element dtypes an op takes (the DTypes column of ops.def): its operands' dtype (the values'
/// for Where, the result's for Iota).
enum class DTypeClass {
  Float,           ///< Float16, BFloat16, Float32, Float64.
  Bool,            ///< Bool alone.
  Int,             ///< Signed and unsigned integers, not the packed ones.
  Numeric,         ///< Integers and floats, not Bool or the packed integers.
  Complex,         ///< Complex64, Complex128.
  FloatComplex,    ///< Float and Complex.
  NumericComplex,  ///< Numeric and Complex.
  Unpacked,        ///< Every dtype but the packed storage-only ones.
  Any,             ///< Every dtype, packed ones included: ops that only hold or reinterpret bytes.
};

/// The op's name as in ops.def ("Add", "DotGeneral"...).
std::string_view OpName(OpType op);
/// Operand count from ops.def (-1 for variadic ops).
int OpArity(OpType op);
/// The op's family (the Category column of ops.def).
OpCategory GetOpCategory(OpType op);
/// The element dtypes the op takes (the DTypes column of ops.def).
DTypeClass OpDTypeClass(OpType op);
/// Whether `dtype` belongs to `dtypes`.
bool InDTypeClass(DType dtype, DTypeClass dtypes);
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
  int64_t low = 0;       ///< Elements added before the first (negative: removed from the start).
  int64_t high = 0;      ///< Elements added after the last (negative: removed from the end).
  int64_t interior = 0;  ///< Elements added between each two neighbours (>= 0).
  /// Equal low, high and interior.
  friend bool operator==(const PadAxis&, const PadAxis&) = default;
};

/// How windows and scatters combine values.
enum class ReduceKind {
  Sum,      ///< Adds.
  Product,  ///< Multiplies.
  Max,      ///< Keeps the largest (NaN propagates).
  Min,      ///< Keeps the smallest (NaN propagates).
  Set,      ///< Scatter only: the update replaces the value.
};

/// ConvGeneral's axis layout (XLA's dimension numbers): which axes of the input, kernel and
/// output hold the batch, the features and the spatial dimensions.
struct ConvDims {
  int64_t input_batch = 0;              ///< The input's batch axis.
  int64_t input_feature = 0;            ///< The input's channel axis.
  std::vector<int64_t> input_spatial;   ///< The input's spatial axes, in order.
  int64_t kernel_input_feature = 0;     ///< The kernel's input-channel axis.
  int64_t kernel_output_feature = 0;    ///< The kernel's output-channel axis.
  std::vector<int64_t> kernel_spatial;  ///< The kernel's spatial axes, matching input_spatial.
  int64_t output_batch = 0;             ///< The output's batch axis.
  int64_t output_feature = 0;           ///< The output's channel axis.
  std::vector<int64_t> output_spatial;  ///< The output's spatial axes, matching input_spatial.
  /// Equal axis numbers everywhere.
  friend bool operator==(const ConvDims&, const ConvDims&) = default;
};

/// Gather's dimension numbers (XLA's): offset_dims are the result axes of the slice, collapsed
/// slice axes are dropped, start_index_map maps index vector entries to operand axes.
struct GatherDims {
  std::vector<int64_t> offset_dims;           ///< Result axes that hold the slice's (uncollapsed) axes.
  std::vector<int64_t> collapsed_slice_dims;  ///< Operand axes sliced with size 1 and dropped.
  std::vector<int64_t> start_index_map;       ///< Operand axis each index-vector entry starts.
  std::vector<int64_t> slice_sizes;           ///< Size of the slice along every operand axis.
  int64_t index_vector_dim = 0;               ///< The indices' axis that holds the index vectors.
  /// Equal dimension numbers everywhere.
  friend bool operator==(const GatherDims&, const GatherDims&) = default;
};

/// Scatter's dimension numbers (XLA's).
struct ScatterDims {
  std::vector<int64_t> update_window_dims;            ///< Update axes that run over the window.
  std::vector<int64_t> inserted_window_dims;          ///< Operand axes the window has size 1 in.
  std::vector<int64_t> scatter_dims_to_operand_dims;  ///< Operand axis each index-vector entry starts.
  int64_t index_vector_dim = 0;                       ///< The indices' axis that holds the index vectors.
  /// Equal dimension numbers everywhere.
  friend bool operator==(const ScatterDims&, const ScatterDims&) = default;
};

/// The kind of a Fourier transform (Fft's `fft_type`), as GoMLX names them.
enum class FftType {
  Forward,      ///< Complex to complex.
  Inverse,      ///< Complex to complex, scaled by 1/n.
  ForwardReal,  ///< Float to complex: the n/2+1 non-negative frequencies.
  InverseReal,  ///< Complex (n/2+1 frequencies of a real signal) to float.
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
  std::vector<int64_t> starts;       ///< Slice: first index per axis.
  std::vector<int64_t> limits;       ///< Slice: end index (exclusive) per axis.
  std::vector<int64_t> strides;      ///< Slice, ConvGeneral, ReduceWindow, SelectAndScatter.
  std::vector<PadAxis> padding;      ///< Pad, ConvGeneral, ReduceWindow, SelectAndScatter.
  std::vector<int64_t> lhs_contracting;      ///< DotGeneral: the first operand's contracted axes.
  std::vector<int64_t> rhs_contracting;      ///< DotGeneral: the second operand's contracted axes.
  std::vector<int64_t> lhs_batch;            ///< DotGeneral: the first operand's batch axes.
  std::vector<int64_t> rhs_batch;            ///< DotGeneral: the second operand's batch axes.
  ConvDims conv;                             ///< ConvGeneral: the axis layout.
  std::vector<int64_t> window;               ///< ReduceWindow, SelectAndScatter: window sizes.
  std::vector<int64_t> input_dilations;      ///< ConvGeneral (transposed conv), ReduceWindow (base).
  std::vector<int64_t> kernel_dilations;     ///< ConvGeneral, ReduceWindow (window dilations).
  int64_t feature_groups = 1;                ///< ConvGeneral: channel groups (grouped conv).
  int64_t batch_groups = 1;                  ///< ConvGeneral: batch groups (kernel gradients).
  ReduceKind reduce_kind = ReduceKind::Sum;  ///< ReduceWindow, SelectAndScatter, Scatter.
  GatherDims gather;                         ///< Gather.
  ScatterDims scatter;                       ///< Scatter.
  std::vector<int64_t> sizes;                ///< DynamicSlice: the slice sizes.
  bool reverse = false;                      ///< ArgSort: descending; CumSum: from the end.
  int64_t trip_count = -1;                   ///< While: the static iteration count, -1 when data-dependent.
  std::string name;                          ///< Composite: the operation's name ("kiln.quantized_matmul").
  std::vector<int64_t> values;               ///< Composite: its integer attributes.
  FftType fft_type = FftType::Forward;       ///< Fft: the transform's kind.
  int64_t fft_length = 0;                    ///< Fft: the signal's length n.
  int64_t replicas = 1;                      ///< Collectives: the replicas the program runs on.
};

/// One instruction: its result is value number `id` (its position in the program).
struct Instruction {
  OpType op;                  ///< The primitive.
  std::vector<int> operands;  ///< Value numbers of earlier instructions.
  OpAttributes attrs;         ///< The slots `op` uses (see ops.def); the others keep their defaults.
  Shape shape;                ///< Result shape (an invalid Shape() for tuple-producing ops).
  /// Programs the op runs (loop condition and body, branches, comparators), in op order.
  std::vector<std::shared_ptr<const class Program>> subprograms;
  /// The results of a tuple-producing op (While, If, OptimizationBarrier, Composite); empty otherwise.
  std::vector<Shape> tuple_shapes = {};
  /// True for a tuple-producing op (its results are read through GetTupleElement).
  bool IsTuple() const { return !tuple_shapes.empty(); }
};

/// A compiled-unit description: built once by the graph layer, then read-only.
class Program {
 public:
  /// Takes `instructions` in topological order and the value numbers of the `outputs`.
  /// `donatable` has one flag per parameter, or is empty (none donatable). Throws kiln::Error
  /// when parameter indices are missing or repeated, the flags do not match the parameters, or
  /// an output does not exist. Shapes are checked by Verify(), not here.
  Program(std::vector<Instruction> instructions, std::vector<int> outputs, std::vector<bool> donatable);

  /// The instructions; instruction i's result is value number i.
  const std::vector<Instruction>& Instructions() const { return instructions_; }
  /// Value numbers of the Parameter instructions, by parameter index.
  const std::vector<int>& Parameters() const { return parameters_; }
  /// Value numbers of the results, in order.
  const std::vector<int>& Outputs() const { return outputs_; }
  /// Per parameter: may the execution reuse its buffer (when the caller donates it).
  const std::vector<bool>& Donatable() const { return donatable_; }
  /// Shape of parameter `i` (0 <= i < Parameters().size(), unchecked).
  const Shape& ParameterShape(int i) const { return instructions_[parameters_[i]].shape; }
  /// Shape of output `i` (0 <= i < Outputs().size(), unchecked).
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
