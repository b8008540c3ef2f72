// The catalogue of graph functions and the rule deciding which cells are not applicable: a cell
// (function, dtype) is n/a exactly when compute::InferShape rejects the dtype for one of the
// primitives the function lowers to.

#include <algorithm>
#include <map>
#include <stdexcept>

#include "internal.h"
#include "kiln/compute/shape_inference.h"
#include "kiln/core/error.h"

namespace kiln::conformance {

using compute::OpType;

const std::vector<CatalogueEntry>& Catalogue() {
  static const std::vector<CatalogueEntry> catalogue = {
      // Constants.
      {"Const", {OpType::Constant}},
      {"Scalar", {OpType::Constant}, false, true},
      {"Zeros", {OpType::Constant}},
      {"Ones", {OpType::Constant}},
      {"ZerosLike", {OpType::Constant}},
      {"OnesLike", {OpType::Constant}},
      {"Iota", {OpType::Iota}},
      // Unary.
      {"Neg", {OpType::Neg}},
      {"Abs", {OpType::Abs}},
      {"Sign", {OpType::Sign}},
      {"Sqrt", {OpType::Sqrt}},
      {"Rsqrt", {OpType::Rsqrt}},
      {"Square", {OpType::Mul}},
      {"Reciprocal", {OpType::Div}},
      {"Exp", {OpType::Exp}},
      {"Expm1", {OpType::Expm1}},
      {"Log", {OpType::Log}},
      {"Log1p", {OpType::Log1p}},
      {"Sin", {OpType::Sin}},
      {"Cos", {OpType::Cos}},
      {"Tanh", {OpType::Tanh}},
      {"Sigmoid", {OpType::Logistic}},
      {"Erf", {OpType::Erf}},
      {"Tan", {OpType::Tan}},
      {"Asin", {OpType::Asin}},
      {"Acos", {OpType::Acos}},
      {"Atan", {OpType::Atan}},
      {"Sinh", {OpType::Sinh}},
      {"Cosh", {OpType::Cosh}},
      {"Asinh", {OpType::Asinh}},
      {"Acosh", {OpType::Acosh}},
      {"Atanh", {OpType::Atanh}},
      {"Floor", {OpType::Floor}},
      {"Ceil", {OpType::Ceil}},
      {"Round", {OpType::Round}},
      {"IsFinite", {OpType::IsFinite}},
      {"IsNaN", {OpType::IsNaN}},
      {"LogicalNot", {OpType::LogicalNot}},
      {"BitwiseNot", {OpType::BitwiseNot}},
      {"BitCount", {OpType::BitCount}},
      {"Clz", {OpType::Clz}},
      {"Identity", {OpType::Parameter}},
      {"StopGradient", {OpType::StopGradient}},
      // Binary and their scalar forms.
      {"Add", {OpType::Add}},
      {"Sub", {OpType::Sub}},
      {"Mul", {OpType::Mul}},
      {"Div", {OpType::Div}},
      {"Rem", {OpType::Rem}},
      {"Pow", {OpType::Pow}},
      {"Max", {OpType::Max}},
      {"Min", {OpType::Min}},
      {"Atan2", {OpType::Atan2}},
      {"LogicalAnd", {OpType::LogicalAnd}},
      {"LogicalOr", {OpType::LogicalOr}},
      {"LogicalXor", {OpType::LogicalXor}},
      {"BitwiseAnd", {OpType::BitwiseAnd}},
      {"BitwiseOr", {OpType::BitwiseOr}},
      {"BitwiseXor", {OpType::BitwiseXor}},
      {"BitwiseShiftLeft", {OpType::ShiftLeft}},
      {"BitwiseShiftRightArithmetic", {OpType::ShiftRightArithmetic}},
      {"BitwiseShiftRightLogical", {OpType::ShiftRightLogical}},
      {"AddScalar", {OpType::Add}},
      {"SubScalar", {OpType::Sub}},
      {"MulScalar", {OpType::Mul}},
      {"DivScalar", {OpType::Div}},
      {"PowScalar", {OpType::Pow}},
      {"MaxScalar", {OpType::Max}},
      {"MinScalar", {OpType::Min}},
      {"ModScalar", {OpType::Rem}},
      // Comparisons and selection.
      {"Equal", {OpType::Equal}},
      {"NotEqual", {OpType::NotEqual}},
      {"Less", {OpType::Less}},
      {"LessOrEqual", {OpType::LessOrEqual}},
      {"Greater", {OpType::Greater}},
      {"GreaterOrEqual", {OpType::GreaterOrEqual}},
      {"IsZero", {OpType::Equal}},
      {"Where", {OpType::Where}},
      {"Clamp", {OpType::Max, OpType::Min}},
      {"Clip", {OpType::Max, OpType::Min}},
      // Reductions.
      {"ReduceSum", {OpType::ReduceSum}},
      {"ReduceMean", {OpType::ReduceSum, OpType::Div}, true},
      {"ReduceMax", {OpType::ReduceMax}},
      {"ReduceMin", {OpType::ReduceMin}},
      {"ReduceProduct", {OpType::ReduceProduct}},
      {"ReduceLogicalAnd", {OpType::ReduceLogicalAnd}},
      {"ReduceLogicalOr", {OpType::ReduceLogicalOr}},
      {"ReduceLogicalXor", {OpType::ReduceLogicalXor}},
      {"ReduceBitwiseAnd", {OpType::ReduceBitwiseAnd}},
      {"ReduceBitwiseOr", {OpType::ReduceBitwiseOr}},
      {"ReduceBitwiseXor", {OpType::ReduceBitwiseXor}},
      {"ReduceLogSumExp", {OpType::ReduceMax, OpType::Sub, OpType::Exp, OpType::ReduceSum, OpType::Log}},
      {"Softmax", {OpType::ReduceMax, OpType::Sub, OpType::Exp, OpType::ReduceSum, OpType::Div}, true},
      {"LogSoftmax",
       {OpType::ReduceMax, OpType::Sub, OpType::Exp, OpType::ReduceSum, OpType::Div, OpType::Log},
       true},
      {"MaskedSoftmax",
       {OpType::ReduceMax, OpType::Sub, OpType::Exp, OpType::ReduceSum, OpType::Div, OpType::Where},
       true},
      {"ReduceVariance", {OpType::ReduceSum, OpType::Sub, OpType::Mul, OpType::Div}, true},
      {"ReduceAllSum", {OpType::ReduceSum}},
      {"ReduceAllMean", {OpType::ReduceSum, OpType::Div}, true},
      {"ReduceAllMax", {OpType::ReduceMax}},
      {"ReduceAllMin", {OpType::ReduceMin}},
      {"ReduceAllProduct", {OpType::ReduceProduct}},
      {"ReduceAndKeep", {OpType::ReduceSum, OpType::Reshape}},
      {"MaskedReduceSum", {OpType::Where, OpType::ReduceSum}},
      {"MaskedReduceMean", {OpType::Where, OpType::ReduceSum, OpType::Div}, true},
      {"MaskedReduceMax", {OpType::Where, OpType::ReduceMax}},
      {"MaskedReduceMin", {OpType::Where, OpType::ReduceMin}},
      {"ArgMax", {OpType::ArgMax}},
      {"ArgMin", {OpType::ArgMin}},
      // Shape.
      {"Reshape", {OpType::Reshape}},
      {"Transpose", {OpType::Transpose}},
      {"TransposeAllAxes", {OpType::Transpose}},
      {"ExpandAxes", {OpType::Reshape}},
      {"InsertAxes", {OpType::Reshape}},
      {"ExpandLeftToRank", {OpType::Reshape}},
      {"Squeeze", {OpType::Reshape}},
      {"BroadcastToDims", {OpType::BroadcastInDim}},
      {"BroadcastPrefix", {OpType::BroadcastInDim}},
      {"Concatenate", {OpType::Concatenate}},
      {"Stack", {OpType::Concatenate, OpType::Reshape}},
      {"Split", {OpType::Slice}},
      {"Slice", {OpType::Slice}},
      {"Pad", {OpType::Pad}},
      {"Reverse", {OpType::Reverse}},
      {"ConvertDType", {OpType::ConvertDType}},
      {"Bitcast", {OpType::Bitcast}},
      {"OneHot", {OpType::Equal, OpType::ConvertDType}},
      // Contractions.
      {"Dot.Product", {OpType::DotGeneral}},
      {"Dot.General", {OpType::DotGeneral}},
      {"DotProduct", {OpType::DotGeneral}},
      {"MatMul", {OpType::DotGeneral}},
      {"Einsum", {OpType::DotGeneral}},
  };
  static const std::vector<CatalogueEntry> all = [] {
    std::vector<CatalogueEntry> entries = catalogue;
    // Each op family appends its functions (cases_<family>.cc).
    internal::AddConvCatalogue(entries);
    internal::AddIndexingCatalogue(entries);
    internal::AddRandomControlCatalogue(entries);
    internal::AddUtilCatalogue(entries);
    internal::AddComplexCatalogue(entries);
    internal::AddCollectiveCatalogue(entries);
    return entries;
  }();
  return all;
}

namespace internal {

const std::vector<OpType>& RuleOf(const std::string& name) {
  static const std::map<std::string, const CatalogueEntry*> index = [] {
    std::map<std::string, const CatalogueEntry*> m;
    for (const CatalogueEntry& e : Catalogue()) m[e.name] = &e;
    return m;
  }();
  auto it = index.find(name);
  if (it == index.end())
    throw std::logic_error("conformance table: \"" + name + "\" is not in the catalogue");
  return it->second->rule;
}

}  // namespace internal

bool PrimitiveAccepts(OpType op, DType dtype) {
  const Shape s(dtype, {2});
  compute::OpAttributes at;
  std::vector<Shape> in;
  switch (compute::GetOpCategory(op)) {
    case compute::OpCategory::Leaf:
      at.shape = s;
      if (op == OpType::Constant) at.literal = Tensor::FromShape(s);
      break;
    case compute::OpCategory::Unary:
    case compute::OpCategory::UnaryPredicate:
      in = {s};
      break;
    case compute::OpCategory::Binary:
    case compute::OpCategory::Compare:
    case compute::OpCategory::Contraction:
      in = {s, s};
      at.lhs_contracting = at.rhs_contracting = {0};
      break;
    case compute::OpCategory::Select:
      in = {Shape(DType::Bool, {2}), s, s};
      break;
    case compute::OpCategory::Reduce:
      in = {s};
      at.axes = {0};
      break;
    case compute::OpCategory::ArgReduce:
      in = {s};
      at.dtype = DType::Int32;
      break;
    case compute::OpCategory::Movement:
      in = {s};
      at.shape = s;
      at.permutation = {0};
      at.axes = {0};
      at.starts = {0};
      at.limits = {2};
      at.strides = {1};
      at.padding = {compute::PadAxis{}};
      if (op == OpType::Concatenate) in = {s, s};
      if (op == OpType::Pad) in = {s, Shape(dtype)};
      break;
    case compute::OpCategory::Convert:
      if (op == OpType::ConvertDType) {
        // From `dtype` or to it.
        bool from = false, to = false;
        try {
          at.dtype = DType::Float32;
          compute::InferShape(op, {s}, at);
          from = true;
        } catch (const kiln::Error&) {
        }
        try {
          at.dtype = dtype;
          compute::InferShape(op, {Shape(DType::Float32, {2})}, at);
          to = true;
        } catch (const kiln::Error&) {
        }
        return from || to;
      }
      in = {s};
      at.dtype = dtype;
      break;
    // These families probe their own primitives (cases_<family>.cc).
    case compute::OpCategory::Convolution:
    case compute::OpCategory::Window:
      return internal::ConvPrimitiveAccepts(op, dtype);
    case compute::OpCategory::Indexing:
    case compute::OpCategory::SortScan:
      return internal::IndexingPrimitiveAccepts(op, dtype);
    case compute::OpCategory::Control:
      return internal::ControlPrimitiveAccepts(op, dtype);
    case compute::OpCategory::Collective:
      if (op == OpType::ReplicaId) return dtype == DType::Int32;
      in = {s};
      break;
    case compute::OpCategory::Complex:
      in = {s};
      if (op == OpType::Complex) in = {s, s};
      if (op == OpType::Fft) {
        // A real operand for the real transform, a complex one for the others.
        at.fft_length = 2;
        at.fft_type = IsComplex(dtype) ? compute::FftType::Forward : compute::FftType::ForwardReal;
      }
      break;
  }
  return internal::ShapeRuleAccepts(op, in, at);
}

bool internal::ShapeRuleAccepts(OpType op, const std::vector<Shape>& in, const compute::OpAttributes& at) {
  try {
    compute::InferShape(op, in, at);
    return true;
  } catch (const kiln::Error&) {
    return false;
  }
}

bool Applicable(const CatalogueEntry& entry, DType dtype) {
  if (entry.float_only && !IsFloat(dtype)) return false;
  if (entry.unpacked_only && IsStorageOnly(dtype)) return false;
  if (entry.real_only && IsComplex(dtype)) return false;
  if (!entry.only.empty() && std::find(entry.only.begin(), entry.only.end(), dtype) == entry.only.end())
    return false;
  for (OpType op : entry.rule) {
    if (!PrimitiveAccepts(op, dtype)) return false;
  }
  return true;
}

}  // namespace kiln::conformance
