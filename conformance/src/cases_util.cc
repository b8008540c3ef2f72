// Conformance rows of GoMLX's compositions (graph/ops_util.h) and of the GoMLX names kiln adds
// beside its own (LessThan, Mod, ConvertType...). Expected values are worked by hand from the
// definitions (GoMLX's code for each function) or with NumPy's formulas, as the comments say.

#include <cmath>
#include <string>

#include "internal.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/conv.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/function.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops_util.h"
#include "kiln/graph/ragged.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

void AddUtilCatalogue(std::vector<CatalogueEntry>& e) {
  const std::vector<DType> ints = {DType::Int8,  DType::Int16,  DType::Int32,  DType::Int64,
                                   DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64};
  const std::vector<CatalogueEntry> entries = {
      // Scalars and fills.
      {"ScalarZero", {OpType::Constant}, false, true},
      {"ScalarOne", {OpType::Constant}, false, true},
      {"FillScalar", {OpType::Constant, OpType::BroadcastInDim}, false, true},
      {"Infinity", {OpType::Constant, OpType::Less}},
      {"IotaFull", {OpType::Iota, OpType::Reshape}},
      {"IndicesForShape", {OpType::Iota, OpType::Div, OpType::Rem}, false, true, {DType::Int64}},
      // One-liners and aliases.
      {"OnePlus", {OpType::Add}},
      {"OneMinus", {OpType::Sub}},
      {"MinusOne", {OpType::Sub}},
      {"Inverse", {OpType::Div}},
      {"MirroredLog1p", {OpType::Log1p, OpType::Abs, OpType::Sign, OpType::Mul}},
      {"LogAddExp",
       {OpType::Sub, OpType::IsFinite, OpType::IsNaN, OpType::Max, OpType::Log1p, OpType::Exp,
        OpType::Where}},
      {"Softplus", {OpType::Sub, OpType::IsFinite, OpType::Max, OpType::Log1p, OpType::Exp, OpType::Where}},
      {"ClipScalar", {OpType::Max, OpType::Min}},
      {"Mod", {OpType::Rem}},
      {"Logistic", {OpType::Logistic}},
      {"Log1P", {OpType::Log1p}},
      {"LessThan", {OpType::Less}},
      {"GreaterThan", {OpType::Greater}},
      {"And", {OpType::LogicalAnd}},
      {"Or", {OpType::LogicalOr}},
      {"Not", {OpType::LogicalNot}},
      {"LogicalAll", {OpType::NotEqual}, false, true},
      {"LogicalAny", {OpType::NotEqual}, false, true},
      {"ConvertType", {OpType::ConvertDType}},
      {"ConstAsDType", {OpType::Constant, OpType::ConvertDType}, false, true},
      // Bit shifts with a C++ amount.
      {"BitwiseShiftLeftScalar", {OpType::ShiftLeft}},
      {"BitwiseShiftRightArithmeticScalar", {OpType::ShiftRightArithmetic}},
      {"BitwiseShiftRightLogicalScalar", {OpType::ShiftRightLogical}},
      // Signs and indicators.
      {"SignPlusOrMinus", {OpType::Sign, OpType::GreaterOrEqual, OpType::Where}},
      {"PositiveIndicator", {OpType::Greater, OpType::ConvertDType}},
      {"NonNegativeIndicator", {OpType::GreaterOrEqual, OpType::ConvertDType}},
      {"NegativeIndicator", {OpType::Less, OpType::ConvertDType}},
      {"NonPositiveIndicator", {OpType::LessOrEqual, OpType::ConvertDType}},
      {"IsPositive", {OpType::Greater}},
      {"IsNegative", {OpType::Less}},
      {"IsNonNegative", {OpType::GreaterOrEqual}},
      {"IsNonPositive", {OpType::LessOrEqual}},
      // Norms, similarity, statistics.
      {"L1Norm", {OpType::Abs, OpType::ReduceSum}, false, false, {}, true},
      {"L2NormSquare", {OpType::Mul, OpType::ReduceSum}, false, false, {}, true},
      {"L2Norm", {OpType::Mul, OpType::ReduceSum, OpType::Sqrt}, false, false, {}, true},
      {"L2Normalize", {OpType::Mul, OpType::ReduceSum, OpType::Sqrt, OpType::Div}, false, false, {}, true},
      {"L2NormalizeWithEpsilon",
       {OpType::Mul, OpType::ReduceSum, OpType::Sqrt, OpType::Div},
       false,
       false,
       {},
       true},
      {"CosineSimilarity",
       {OpType::Mul, OpType::ReduceSum, OpType::Sqrt, OpType::Div, OpType::Where},
       false,
       false,
       {},
       true},
      {"CrossCosineSimilarity",
       {OpType::DotGeneral, OpType::Sqrt, OpType::Div, OpType::Where},
       false,
       false,
       {},
       true},
      {"Variance", {OpType::ReduceSum, OpType::Sub, OpType::Mul, OpType::Div}, true},
      {"ReduceSkewness", {OpType::ReduceSum, OpType::Sub, OpType::Mul, OpType::Div, OpType::Sqrt}, true},
      {"Skewness", {OpType::ReduceSum, OpType::Sub, OpType::Mul, OpType::Div, OpType::Sqrt}, true},
      {"MaskedReduceAndKeep", {OpType::Where, OpType::ReduceSum, OpType::Reshape}},
      {"MaskedReduceAllSum", {OpType::Where, OpType::ReduceSum}},
      {"MaskedReduceAllMax", {OpType::Where, OpType::ReduceMax}},
      {"ReduceAllMultiply", {OpType::ReduceProduct}},
      {"MaskedLogSoftmax",
       {OpType::ReduceMax, OpType::Exp, OpType::ReduceSum, OpType::Log, OpType::Where},
       true},
      // Masks and matrices.
      {"LowerTriangular", {OpType::Iota, OpType::LessOrEqual}, false, true, {DType::Int64}},
      {"UpperTriangular", {OpType::Iota, OpType::GreaterOrEqual}, false, true, {DType::Int64}},
      {"Diagonal", {OpType::Iota, OpType::Equal}, false, true, {DType::Int64}},
      {"ShapedLowerTriangular",
       {OpType::Iota, OpType::Add, OpType::LessOrEqual},
       false,
       true,
       {DType::Int64}},
      {"DiagonalWithValue", {OpType::BroadcastInDim, OpType::Where}, false, true},
      {"TakeLowerTriangular", {OpType::Where}, false, true},
      {"TakeUpperTriangular", {OpType::Where}, false, true},
      // Shifts and slices.
      {"ShiftWithScalar", {OpType::Slice, OpType::Concatenate, OpType::BroadcastInDim}, false, true},
      {"ShiftWithValue", {OpType::Slice, OpType::Concatenate, OpType::BroadcastInDim}, false, true},
      {"Shift", {OpType::Slice, OpType::Concatenate, OpType::BroadcastInDim}, false, true},
      {"ShiftLeft", {OpType::Slice, OpType::Concatenate, OpType::BroadcastInDim}, false, true},
      {"ShiftRight", {OpType::Slice, OpType::Concatenate, OpType::BroadcastInDim}, false, true},
      {"GrowLeft", {OpType::Concatenate, OpType::BroadcastInDim}, false, true},
      {"GrowRight", {OpType::Concatenate, OpType::BroadcastInDim}, false, true},
      {"ConsecutiveDifference", {OpType::Slice, OpType::Sub, OpType::Concatenate}},
      {"SliceAxis", {OpType::Slice}, false, true},
      {"ExpandAndBroadcast", {OpType::Reshape, OpType::BroadcastInDim}, false, true},
      {"ExpandDims", {OpType::Reshape}, false, true},
      {"ReshapeWithShape", {OpType::Reshape}, false, true},
      {"TransposeAllDims", {OpType::Transpose}, false, true},
      {"NormalizeIndices", {OpType::Less, OpType::Add, OpType::Where}, false, true, ints},
      // Total order.
      {"EqualTotalOrder", {OpType::Equal}, false, true},
      {"NotEqualTotalOrder", {OpType::NotEqual}, false, true},
      {"LessThanTotalOrder", {OpType::Less}},
      {"LessOrEqualTotalOrder", {OpType::LessOrEqual}},
      {"GreaterThanTotalOrder", {OpType::Greater}},
      {"GreaterOrEqualTotalOrder", {OpType::GreaterOrEqual}},
      // Contractions.
      {"DotGeneral", {OpType::DotGeneral}},
      {"EinsumAxes", {OpType::DotGeneral}},
      {"Dot.MatMul", {OpType::DotGeneral}},
      {"Dot.Einsum", {OpType::DotGeneral}},
      {"Dot.WithAccumulatorDType", {OpType::DotGeneral, OpType::ConvertDType}, true},
      // Sparse, dynamic, barriers, pooling.
      {"ScatterSum", {OpType::Scatter, OpType::Add}},
      {"DynamicShape", {OpType::Reshape}, false, true},
      {"SchedulingBarrier", {OpType::OptimizationBarrier}, false, true},
      {"ConcatPool", {OpType::ConvGeneral}},
      {"SortFunc", {OpType::Less, OpType::Gather}},
      {"NewFunction.Call", {OpType::Mul, OpType::Add}},
      {"While(closures)", {OpType::While, OpType::Add, OpType::Less}},
      {"If(closures)", {OpType::If, OpType::Add, OpType::Sub}},
      {"Ragged2D.ReduceSumCols", {OpType::Scatter, OpType::Add}},
      {"Ragged2D.ReduceMaxCols", {OpType::Scatter, OpType::Max}},
      {"Ragged2D.ReduceMinCols", {OpType::Scatter, OpType::Min}},
      {"Ragged2D.Softmax", {OpType::Scatter, OpType::Gather, OpType::Exp, OpType::Div}, true},
  };
  e.insert(e.end(), entries.begin(), entries.end());
}

namespace {

using Nodes = std::vector<Node>;

void AddScalarRows(CaseList& L) {
  for (DType d : kUnpacked) {
    const bool b = d == DType::Bool;
    L.Add("ScalarZero", "value", d, GP([d](Graph& g, const Nodes&) { return ScalarZero(g, d); }), {},
          {S(d, 0)});
    L.Add("ScalarOne", "value", d, GP([d](Graph& g, const Nodes&) { return ScalarOne(g, d); }), {},
          {S(d, 1)});
    L.Add("FillScalar", "matrix", d, GP([d, b](Graph& g, const Nodes&) {
            return FillScalar(g, Shape(d, {2, 2}), b ? 1 : 3);
          }),
          {}, {V(d, {2, 2}, b ? std::vector<double>{1, 1, 1, 1} : std::vector<double>{3, 3, 3, 3})});
    L.Add("DiagonalWithValue", "dim3", d, P([](const Nodes& p) { return DiagonalWithValue(p[0], 3); }),
          {S(d, 1)}, {V(d, {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1})});
    const Tensor m =
        V(d, {2, 3}, b ? std::vector<double>{1, 1, 1, 1, 1, 1} : std::vector<double>{1, 2, 3, 4, 5, 6});
    const auto keep = [&](std::vector<double> mask) {
      std::vector<double> v = ToDoubles(m);
      for (size_t i = 0; i < v.size(); ++i) v[i] *= mask[i];
      return V(d, {2, 3}, v);
    };
    L.Add("TakeLowerTriangular", "k0", d, P([](const Nodes& p) { return TakeLowerTriangular(p[0], 0); }), {m},
          {keep({1, 0, 0, 1, 1, 0})});
    L.Add("TakeLowerTriangular", "k1", d, P([](const Nodes& p) { return TakeLowerTriangular(p[0], 1); }), {m},
          {keep({1, 1, 0, 1, 1, 1})});
    L.Add("TakeUpperTriangular", "k0", d, P([](const Nodes& p) { return TakeUpperTriangular(p[0], 0); }), {m},
          {keep({1, 1, 1, 0, 1, 1})});
    L.Add("TakeUpperTriangular", "k_minus1_batched", d, P([](const Nodes& p) {
            return TakeUpperTriangular(Stack({p[0], p[0]}, 0), -1);
          }),
          {m}, {V(d, {2, 2, 3}, [&] {
            std::vector<double> one = ToDoubles(keep({1, 1, 1, 1, 1, 1}));
            one.insert(one.end(), one.begin(), one.end());
            return one;
          }())});
  }
  for (DType d : kNumeric) {
    const bool f = IsFloat(d);
    L.Add("Infinity", "positive", d, GP([d](Graph& g, const Nodes&) { return Infinity(g, d, 1); }), {},
          {f ? S(d, kInf) : (IsUnsigned(d) ? W(d, {}, {-1}) : W(d, {}, {MaxI(d)}))});
    L.Add("Infinity", "negative", d, GP([d](Graph& g, const Nodes&) { return Infinity(g, d, -1); }), {},
          {f ? S(d, -kInf) : W(d, {}, {MinI(d)})});
    L.Add("IotaFull", "matrix", d, GP([d](Graph& g, const Nodes&) {
            return IotaFull(g, Shape(d, {2, 3}));
          }),
          {}, {V(d, {2, 3}, {0, 1, 2, 3, 4, 5})});
  }
  L.Add("IndicesForShape", "shape_3x2", DType::Int64, GP([](Graph& g, const Nodes&) {
          return IndicesForShape(g, Shape(DType::Float32, {3, 2}));
        }),
        {}, {V(DType::Int64, {6, 2}, {0, 0, 0, 1, 1, 0, 1, 1, 2, 0, 2, 1})});
  L.Add("IndicesForShape", "rank3", DType::Int64, GP([](Graph& g, const Nodes&) {
          return IndicesForShape(g, Shape(DType::Int8, {1, 2, 2}));
        }),
        {}, {V(DType::Int64, {4, 3}, {0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1})});
  // The masks compare Int64 iotas: their column is Int64, their result Bool.
  const DType B = DType::Bool, I = DType::Int64;
  L.Add("LowerTriangular", "dim3", I, GP([](Graph& g, const Nodes&) { return LowerTriangular(g, 3); }), {},
        {V(B, {3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1})});
  L.Add("UpperTriangular", "dim3", I, GP([](Graph& g, const Nodes&) { return UpperTriangular(g, 3); }), {},
        {V(B, {3, 3}, {1, 1, 1, 0, 1, 1, 0, 0, 1})});
  L.Add("Diagonal", "dim2", I, GP([](Graph& g, const Nodes&) { return Diagonal(g, 2); }), {},
        {V(B, {2, 2}, {1, 0, 0, 1})});
  L.Add("ShapedLowerTriangular", "2x4_k1", I,
        GP([](Graph& g, const Nodes&) { return ShapedLowerTriangular(g, 2, 4, 1); }), {},
        {V(B, {2, 4}, {1, 1, 0, 0, 1, 1, 1, 0})});
  L.Add("ShapedLowerTriangular", "3x2_k_minus1", I,
        GP([](Graph& g, const Nodes&) { return ShapedLowerTriangular(g, 3, 2, -1); }), {},
        {V(B, {3, 2}, {0, 0, 1, 0, 1, 1})});
}

void AddArithmeticRows(CaseList& L) {
  for (DType d : kNumeric) {
    const bool f = IsFloat(d), s = IsSigned(d);
    L.Add("OnePlus", "values", d, Fn1(OnePlus), {V(d, {3}, {0, 1, 2})}, {V(d, {3}, {1, 2, 3})});
    L.Add("OneMinus", "values", d, Fn1(OneMinus), {V(d, {2}, {0, 1})}, {V(d, {2}, {1, 0})});
    L.Add("MinusOne", "values", d, Fn1(MinusOne), {V(d, {3}, {1, 2, 5})}, {V(d, {3}, {0, 1, 4})});
    L.Add("Inverse", "values", d, Fn1(Inverse), {V(d, {3}, {1, 2, 4})},
          {f ? V(d, {3}, {1, 0.5, 0.25}) : V(d, {3}, {1, 0, 0})});
    L.Add("ClipScalar", "values", d, P([](const Nodes& p) { return ClipScalar(p[0], 2, 7); }),
          {V(d, {3}, {0, 5, 9})}, {V(d, {3}, {2, 5, 7})});
    L.Add("Clip", "nodes", d, P([](const Nodes& p) { return Clip(p[0], p[1], p[2]); }),
          {V(d, {3}, {0, 5, 9}), V(d, {3}, {1, 1, 1}), V(d, {3}, {7, 4, 8})}, {V(d, {3}, {1, 4, 8})});
    L.Add("Mod", "values", d, Fn2(Mod), {V(d, {3}, {7, 8, 9}), V(d, {3}, {2, 3, 9})}, {V(d, {3}, {1, 2, 0})});
    L.Add("LessThan", "values", d, Fn2(LessThan), {V(d, {3}, {1, 2, 3}), V(d, {3}, {2, 2, 2})},
          {V(DType::Bool, {3}, {1, 0, 0})});
    L.Add("GreaterThan", "values", d, Fn2(GreaterThan), {V(d, {3}, {1, 2, 3}), V(d, {3}, {2, 2, 2})},
          {V(DType::Bool, {3}, {0, 0, 1})});
    L.Add("ReduceAllMultiply", "values", d, Fn1(ReduceAllMultiply), {V(d, {2, 2}, {1, 2, 3, 1})}, {S(d, 6)});
    // Signs and indicators: [0, 3] for every dtype, and a negative value for signed ones.
    const Tensor x = s ? V(d, {3}, {-2, 0, 3}) : V(d, {3}, {0, 0, 3});
    const double neg = s ? 1 : 0;
    L.Add("SignPlusOrMinus", "values", d, Fn1(SignPlusOrMinus), {x},
          {s ? V(d, {3}, {-1, 1, 1}) : V(d, {3}, {1, 1, 1})});
    L.Add("PositiveIndicator", "values", d, Fn1(PositiveIndicator), {x}, {V(d, {3}, {0, 0, 1})});
    L.Add("NonNegativeIndicator", "values", d, Fn1(NonNegativeIndicator), {x}, {V(d, {3}, {1 - neg, 1, 1})});
    L.Add("NegativeIndicator", "values", d, Fn1(NegativeIndicator), {x}, {V(d, {3}, {neg, 0, 0})});
    L.Add("NonPositiveIndicator", "values", d, Fn1(NonPositiveIndicator), {x}, {V(d, {3}, {1, 1, 0})});
    const DType B = DType::Bool;
    L.Add("IsPositive", "values", d, Fn1(IsPositive), {x}, {V(B, {3}, {0, 0, 1})});
    L.Add("IsNonNegative", "values", d, Fn1(IsNonNegative), {x}, {V(B, {3}, {1 - neg, 1, 1})});
    L.Add("IsNegative", "values", d, Fn1(IsNegative), {x}, {V(B, {3}, {neg, 0, 0})});
    L.Add("IsNonPositive", "values", d, Fn1(IsNonPositive), {x}, {V(B, {3}, {1, 1, 0})});
    if (f) {
      // -0 counts as non-negative (+1); NaN stays NaN in the numeric indicators.
      const Tensor z = V(d, {2}, {-0.0, kNaN});
      L.Add("SignPlusOrMinus", "minus_zero_nan", d, Fn1(SignPlusOrMinus), {z}, {V(d, {2}, {1, kNaN})});
      L.Add("PositiveIndicator", "minus_zero_nan", d, Fn1(PositiveIndicator), {z}, {V(d, {2}, {0, kNaN})});
      L.Add("IsNonNegative", "minus_zero_nan", d, Fn1(IsNonNegative), {z}, {V(B, {2}, {1, 0})});
    }
    // Norms: sums of |x| and x² over everything (a scalar) or kept axes.
    const Tensor m = s ? V(d, {2, 2}, {1, -2, 3, -4}) : V(d, {2, 2}, {1, 2, 3, 4});
    L.Add("L1Norm", "all", d, P([](const Nodes& p) { return L1Norm(p[0]); }), {m}, {S(d, 10)});
    L.Add("L1Norm", "axis1_kept", d, P([](const Nodes& p) { return L1Norm(p[0], {1}); }), {m},
          {V(d, {2, 1}, {3, 7})});
    L.Add("L2NormSquare", "all", d, P([](const Nodes& p) { return L2NormSquare(p[0]); }), {m}, {S(d, 30)});
    L.Add("L2NormSquare", "axis0_kept", d, P([](const Nodes& p) { return L2NormSquare(p[0], {0}); }), {m},
          {V(d, {1, 2}, {10, 20})});
    // Masked reductions: the masked sum keeping the axis, and the scalar forms.
    const Tensor six = V(d, {2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor mask = V(DType::Bool, {2, 3}, {1, 0, 1, 0, 1, 1});
    L.Add("MaskedReduceAndKeep", "sum_axis1", d,
          P([](const Nodes& p) { return MaskedReduceAndKeep(p[0], p[1], MaskedReduceSum, {1}); }),
          {six, mask}, {V(d, {2, 1}, {4, 11})});
    L.Add("MaskedReduceAllSum", "values", d, Fn2(MaskedReduceAllSum), {six, mask}, {S(d, 15)});
    L.Add("MaskedReduceAllMax", "values", d, Fn2(MaskedReduceAllMax), {six, mask}, {S(d, 6)});
    // Consecutive differences: [1, 3, 6, 10] -> [2, 3, 4], with the first kept in front.
    const Tensor tri = V(d, {4}, {1, 3, 6, 10});
    L.Add("ConsecutiveDifference", "vector", d,
          P([](const Nodes& p) { return ConsecutiveDifference(p[0], 0, false); }), {tri},
          {V(d, {3}, {2, 3, 4})});
    L.Add("ConsecutiveDifference", "preserve_shape_axis0", d,
          P([](const Nodes& p) { return ConsecutiveDifference(p[0], 0, true); }),
          {V(d, {2, 2}, {1, 5, 4, 7})}, {V(d, {2, 2}, {1, 5, 3, 2})});
    L.Add("ScatterSum", "duplicates_add", d,
          P([](const Nodes& p) { return ScatterSum(p[0], p[1], p[2], /*sorted=*/false, /*unique=*/false); }),
          {V(d, {3}, {1, 1, 1}), V(DType::Int32, {3, 1}, {0, 2, 0}), V(d, {3}, {2, 3, 4})},
          {V(d, {3}, {7, 1, 4})});
    // Contractions in GoMLX's forms.
    const Tensor a = V(d, {2, 3}, {1, 2, 3, 4, 5, 6}), bm = V(d, {3, 2}, {1, 0, 0, 1, 1, 1});
    const Tensor ab = V(d, {2, 2}, {4, 5, 10, 11});
    L.Add("DotGeneral", "matmul", d,
          P([](const Nodes& p) { return DotGeneral(p[0], {1}, {}, p[1], {0}, {}); }), {a, bm}, {ab});
    L.Add("EinsumAxes", "matmul", d, P([](const Nodes& p) {
            return EinsumAxes(p[0], p[1], {{1, 0}}, {});
          }),
          {a, bm}, {ab});
    L.Add("EinsumAxes", "batched_rows", d, P([](const Nodes& p) {
            return EinsumAxes(p[0], p[1], {{1, 1}}, {{0, 0}});
          }),
          {a, V(d, {2, 3}, {1, 1, 1, 0, 1, 0})}, {V(d, {2}, {6, 5})});
    L.Add("Dot.MatMul", "matrices", d, P([](const Nodes& p) { return Dot(p[0], p[1]).MatMul(); }), {a, bm},
          {ab});
    L.Add("Dot.Einsum", "equation", d, P([](const Nodes& p) { return Dot(p[0], p[1]).Einsum("ij,jk->ik"); }),
          {a, bm}, {ab});
    // ConcatPool: [1, 4, 1] with window 2 -> [1, 2, 2] (each window's two elements as channels).
    L.Add("ConcatPool", "1d_window2", d, P([](const Nodes& p) { return ConcatPool(p[0]).Window(2).Done(); }),
          {V(d, {1, 4, 1}, {1, 2, 3, 4})}, {V(d, {1, 2, 2}, {1, 2, 3, 4})});
    L.Add("ConcatPool", "1d_two_channels_same", d,
          P([](const Nodes& p) { return ConcatPool(p[0]).Window(2).PadSame().Done(); }),
          {V(d, {1, 2, 2}, {1, 2, 3, 4})}, {V(d, {1, 2, 4}, {1, 2, 3, 4, 3, 4, 0, 0})});
    L.Add("ConcatPool", "1d_channels_first", d,
          P([](const Nodes& p) { return ConcatPool(p[0]).ChannelsFirst().Window(2).Done(); }),
          {V(d, {1, 2, 2}, {1, 2, 3, 4})}, {V(d, {1, 4, 1}, {1, 2, 3, 4})});
  }
  // Ragged2D: {{1, 2, 3}, {4}, {}, {5}} from flat values and sorted row ids.
  for (DType d : kNumeric) {
    const Tensor flat = V(d, {5}, {1, 2, 3, 4, 5}), ids = V(DType::Int32, {5}, {0, 0, 0, 1, 3});
    auto ragged = [](const Nodes& p) { return MakeRagged2D(4, p[0], p[1]); };
    L.Add("Ragged2D.ReduceSumCols", "rows", d,
          P([ragged](const Nodes& p) { return ragged(p).ReduceSumCols(); }), {flat, ids},
          {V(d, {4}, {6, 4, 0, 5})});
    const bool f = IsFloat(d);
    L.Add("Ragged2D.ReduceMaxCols", "empty_row_lowest", d,
          P([ragged](const Nodes& p) { return ragged(p).ReduceMaxCols(); }), {flat, ids},
          {f ? V(d, {4}, {3, 4, -kInf, 5}) : W(d, {4}, {3, 4, MinI(d), 5})});
    L.Add("Ragged2D.ReduceMinCols", "empty_row_highest", d,
          P([ragged](const Nodes& p) { return ragged(p).ReduceMinCols(); }), {flat, ids},
          {f ? V(d, {4}, {1, 4, kInf, 5})
             : (IsUnsigned(d) ? W(d, {4}, {1, 4, -1, 5}) : W(d, {4}, {1, 4, MaxI(d), 5}))});
    if (f) {
      const double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0), s = e1 + e2 + e3;
      L.Add("Ragged2D.Softmax", "rows", d, P([ragged](const Nodes& p) { return ragged(p).Softmax().Flat; }),
            {flat, ids}, {Rounded(d, {5}, {e1 / s, e2 / s, e3 / s, 1, 1})}, Composite(d));
    }
  }
  // Functions and closures: a function called twice, loops and branches over closures, and
  // SortFunc with a comparator closure (ascending by the first input, then descending by the
  // second; stable).
  for (DType d : kNumeric) {
    L.Add("NewFunction.Call", "called_twice", d, GP([d](Graph& g, const Nodes& p) {
            Function axpb = NewFunction(g, "axpb", [d](Graph& fg) {
              Node a = Parameter(fg, "a", Shape(d, {3})), b = Parameter(fg, "b", Shape(d, {}));
              return std::vector<Node>{a * a + b};
            });
            return axpb.Call({axpb.Call({p[0], p[1]})[0], p[1]})[0];
          }),
          {V(d, {3}, {0, 1, 2}), S(d, 1)}, {V(d, {3}, {2, 5, 26})});
    L.Add("While(closures)", "count_to_5", d, GP([d](Graph& g, const Nodes& p) {
            Function cond = NewClosure(g, [d](Graph& fg) {
              Node i = Parameter(fg, "i", Shape(d, {}));
              Parameter(fg, "acc", Shape(d, {2}));
              return std::vector<Node>{LessThan(i, ScalarLike(i, 5))};
            });
            Function body = NewClosure(g, [d](Graph& fg) {
              Node i = Parameter(fg, "i", Shape(d, {})), acc = Parameter(fg, "acc", Shape(d, {2}));
              return std::vector<Node>{OnePlus(i), acc + i};
            });
            return While(cond, body, {p[0], p[1]});
          }),
          {S(d, 0), V(d, {2}, {1, 2})}, {S(d, 5), V(d, {2}, {11, 12})});
    L.Add("If(closures)", "both_branches", d, GP([d](Graph& g, const Nodes& p) {
            Function plus = NewClosure(
                g, [d](Graph& fg) { return std::vector<Node>{OnePlus(Parameter(fg, "x", Shape(d, {2})))}; });
            Function minus = NewClosure(
                g, [d](Graph& fg) { return std::vector<Node>{MinusOne(Parameter(fg, "x", Shape(d, {2})))}; });
            Node t = If(Scalar(g, DType::Bool, true), plus, minus, {p[0]})[0];
            Node f = If(Scalar(g, DType::Bool, false), plus, minus, {p[0]})[0];
            return std::vector<Node>{t, f};
          }),
          {V(d, {2}, {3, 4})}, {V(d, {2}, {4, 5}), V(d, {2}, {2, 3})});
    const Tensor key = V(d, {2, 5}, {3, 1, 2, 1, 3, 0, 0, 0, 0, 0});
    const Tensor tag = V(DType::Int32, {2, 5}, {1, 2, 3, 4, 5, 5, 4, 3, 2, 1});
    L.Add("SortFunc", "two_keys_rows", d, GP([d](Graph& g, const Nodes& p) {
            Function cmp = NewClosure(g, [d](Graph& cg) {
              Node lk = Parameter(cg, "lhs_key", Shape(d, {})), rk = Parameter(cg, "rhs_key", Shape(d, {}));
              Node lt = Parameter(cg, "lhs_tag", Shape(DType::Int32, {})),
                   rt = Parameter(cg, "rhs_tag", Shape(DType::Int32, {}));
              return std::vector<Node>{Or(LessThan(lk, rk), And(Equal(lk, rk), GreaterThan(lt, rt)))};
            });
            return SortFunc(cmp, -1, true, {p[0], p[1]});
          }),
          {key, tag},
          {V(d, {2, 5}, {1, 1, 2, 3, 3, 0, 0, 0, 0, 0}),
           V(DType::Int32, {2, 5}, {4, 2, 3, 5, 1, 5, 4, 3, 2, 1})});
    L.Add("SortFunc", "stable_ties_axis0", d, GP([d](Graph& g, const Nodes& p) {
            Function cmp = NewClosure(g, [d](Graph& cg) {
              Node l = Parameter(cg, "lhs", Shape(d, {})), r = Parameter(cg, "rhs", Shape(d, {}));
              Parameter(cg, "lhs_i", Shape(DType::Int32, {}));
              Parameter(cg, "rhs_i", Shape(DType::Int32, {}));
              return std::vector<Node>{GreaterThan(l, r)};  // Descending; ties keep their order.
            });
            return SortFunc(cmp, 0, false, {p[0], p[1]});
          }),
          {V(d, {4}, {1, 2, 1, 2}), V(DType::Int32, {4}, {0, 1, 2, 3})},
          {V(d, {4}, {2, 2, 1, 1}), V(DType::Int32, {4}, {1, 3, 0, 2})});
  }
  // Bit shifts with C++ amounts.
  for (DType d : kInts) {
    if (IsPacked(d)) continue;
    L.Add("BitwiseShiftLeftScalar", "by2", d,
          P([](const Nodes& p) { return BitwiseShiftLeftScalar(p[0], 2); }), {V(d, {3}, {0, 1, 3})},
          {V(d, {3}, {0, 4, 12})});
    L.Add("BitwiseShiftRightLogicalScalar", "by1", d,
          P([](const Nodes& p) { return BitwiseShiftRightLogicalScalar(p[0], 1); }), {V(d, {3}, {0, 5, 8})},
          {V(d, {3}, {0, 2, 4})});
    L.Add("BitwiseShiftRightArithmeticScalar", "by1", d,
          P([](const Nodes& p) { return BitwiseShiftRightArithmeticScalar(p[0], 1); }),
          {V(d, {3}, {0, 5, 8})}, {V(d, {3}, {0, 2, 4})});
    if (IsSigned(d)) {
      L.Add("BitwiseShiftRightArithmeticScalar", "negative_sign_fill", d,
            P([](const Nodes& p) { return BitwiseShiftRightArithmeticScalar(p[0], 2); }),
            {V(d, {2}, {-8, -1})}, {V(d, {2}, {-2, -1})});
    }
  }
  // NormalizeIndices: negative indices count from the end of the data's axis.
  for (DType d : kInts) {
    if (IsPacked(d)) continue;
    const bool s = IsSigned(d);
    L.Add("NormalizeIndices", "axis1", d, P([](const Nodes& p) { return NormalizeIndices(p[0], p[1], 1); }),
          {V(DType::Float32, {2, 5}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
           s ? V(d, {3}, {-1, 0, -5}) : V(d, {3}, {4, 0, 2})},
          {s ? V(d, {3}, {4, 0, 0}) : V(d, {3}, {4, 0, 2})});
  }
  // Float-only functions.
  for (DType d : kFloats) {
    const Tolerance tol = Composite(d);
    L.Add("MirroredLog1p", "values", d, Fn1(MirroredLog1p), {V(d, {3}, {0, 1, -3})},
          {Rounded(d, {3}, {0, std::log(2.0), -std::log(4.0)})}, tol);
    L.Add("LogAddExp", "values_and_infinities", d, Fn2(LogAddExp),
          {V(d, {5}, {0, 1, -kInf, kInf, kNaN}), V(d, {5}, {0, 1, -kInf, 2, 0})},
          {Rounded(d, {5}, {std::log(2.0), 1 + std::log(2.0), -kInf, kInf, kNaN})}, tol);
    L.Add("Softplus", "values", d, Fn1(Softplus), {V(d, {5}, {0, 1, -kInf, 30, kInf})},
          {Rounded(d, {5}, {std::log(2.0), std::log1p(std::exp(1.0)), 0, 30, kInf})}, tol);
    L.Add("LogAddExp", "one_infinite", d, Fn2(LogAddExp),
          {V(d, {3}, {-kInf, 2, kInf}), V(d, {3}, {0, -kInf, -kInf})}, {V(d, {3}, {0, 2, kInf})}, tol);
    L.Add("Logistic", "zero", d, Fn1(Logistic), {V(d, {1}, {0})}, {V(d, {1}, {0.5})});
    L.Add("Log1P", "zero_and_one", d, Fn1(Log1P), {V(d, {2}, {0, 1})}, {Rounded(d, {2}, {0, std::log(2.0)})},
          OneOp(d));
    L.Add("L2Norm", "all", d, P([](const Nodes& p) { return L2Norm(p[0]); }), {V(d, {2}, {3, 4})}, {S(d, 5)});
    L.Add("L2Norm", "axis1_kept", d, P([](const Nodes& p) { return L2Norm(p[0], {1}); }),
          {V(d, {2, 2}, {3, 4, 0, 0})}, {V(d, {2, 1}, {5, 0})});
    L.Add("L2Normalize", "zero_row_unchanged", d, P([](const Nodes& p) { return L2Normalize(p[0], 1); }),
          {V(d, {2, 2}, {3, 4, 0, 0})}, {Rounded(d, {2, 2}, {0.6, 0.8, 0, 0})}, tol);
    L.Add("L2NormalizeWithEpsilon", "eps1", d,
          P([](const Nodes& p) { return L2NormalizeWithEpsilon(p[0], 1.0, 0); }), {V(d, {2}, {3, 4})},
          {Rounded(d, {2}, {0.5, 4.0 / 6})}, tol);
    L.Add("CosineSimilarity", "zero_vector_gives_0", d,
          P([](const Nodes& p) { return CosineSimilarity(p[0], p[1], 1); }),
          {V(d, {2, 2}, {1, 0, 0, 0}), V(d, {2, 2}, {1, 1, 1, 0})}, {Rounded(d, {2, 1}, {std::sqrt(0.5), 0})},
          tol);
    L.Add("CrossCosineSimilarity", "pairs", d,
          P([](const Nodes& p) { return CrossCosineSimilarity(p[0], p[1], 1, 0); }),
          {V(d, {2, 2}, {1, 0, 0, 2}), V(d, {3, 2}, {1, 0, 0, 1, 0, 0})}, {V(d, {2, 3}, {1, 0, 0, 0, 1, 0})},
          tol);
    L.Add("Variance", "all", d, P([](const Nodes& p) { return Variance(p[0]); }), {V(d, {4}, {1, 2, 3, 4})},
          {S(d, 1.25)}, tol);
    const Tensor sk = V(d, {4}, {1, 2, 3, 10});
    L.Add("ReduceSkewness", "values", d, P([](const Nodes& p) { return ReduceSkewness(p[0]); }), {sk},
          {Rounded(d, {}, {1.0182337649086284})}, tol);
    L.Add("Skewness", "rows", d, P([](const Nodes& p) { return Skewness(p[0], {1}); }),
          {V(d, {2, 4}, {1, 2, 3, 10, 10, 3, 2, 1})},
          {Rounded(d, {2}, {1.0182337649086284, 1.0182337649086284})}, tol);
    const double lse = std::log(std::exp(1.0) + std::exp(3.0));
    L.Add("MaskedLogSoftmax", "masked_is_minus_inf", d,
          P([](const Nodes& p) { return MaskedLogSoftmax(p[0], p[1]); }),
          {V(d, {2, 3}, {1, 2, 3, 5, 6, 7}), V(DType::Bool, {2, 3}, {1, 0, 1, 0, 0, 0})},
          {Rounded(d, {2, 3}, {1 - lse, -kInf, 3 - lse, -kInf, -kInf, -kInf})}, tol);
    // Accumulating half-precision products in float32 and returning float64.
    L.Add("Dot.WithAccumulatorDType", "float32_accumulator_float64_output", d, P([](const Nodes& p) {
            return Dot(p[0], p[1])
                .WithAccumulatorDType(DType::Float32)
                .WithOutputDType(DType::Float64)
                .Product();
          }),
          {V(d, {3}, {1, 2, 3}), V(d, {3}, {4, 5, 6})}, {S(DType::Float64, 32)});
  }
  for (DType B : {DType::Bool}) {
    L.Add("And", "table", B, Fn2(And), {V(B, {4}, {0, 0, 1, 1}), V(B, {4}, {0, 1, 0, 1})},
          {V(B, {4}, {0, 0, 0, 1})});
    L.Add("Or", "table", B, Fn2(Or), {V(B, {4}, {0, 0, 1, 1}), V(B, {4}, {0, 1, 0, 1})},
          {V(B, {4}, {0, 1, 1, 1})});
    L.Add("Not", "table", B, Fn1(Not), {V(B, {2}, {0, 1})}, {V(B, {2}, {1, 0})});
  }
  for (DType d : kAll) {
    L.Add("ConvertType", "to_float32", d, P([](const Nodes& p) { return ConvertType(p[0], DType::Float32); }),
          {V(d, {2}, {1, 0})}, {V(DType::Float32, {2}, {1, 0})});
  }
  // LogicalAll/LogicalAny: nonzero is true, on every unpacked dtype.
  for (DType d : kUnpacked) {
    const Tensor x = V(d, {2, 2}, {1, 0, 1, 1});
    L.Add("LogicalAll", "rows", d, P([](const Nodes& p) { return LogicalAll(p[0], {1}); }), {x},
          {V(DType::Bool, {2}, {0, 1})});
    L.Add("LogicalAny", "all", d, P([](const Nodes& p) { return LogicalAny(p[0]); }), {x},
          {S(DType::Bool, 1)});
    L.Add("ConstAsDType", "vector", d, GP([d](Graph& g, const Nodes&) {
            return ConstAsDType(g, d, std::vector<int>{1, 0});
          }),
          {}, {V(d, {2}, {1, 0})});
  }
}

void AddTotalOrderRows(CaseList& L) {
  const DType B = DType::Bool;
  for (DType d : kUnpacked) {
    const bool f = IsFloat(d);
    if (d == B) {
      const Tensor a = V(B, {3}, {0, 1, 1}), b = V(B, {3}, {1, 1, 0});
      L.Add("EqualTotalOrder", "bool", B, Fn2(EqualTotalOrder), {a, b}, {V(B, {3}, {0, 1, 0})});
      L.Add("NotEqualTotalOrder", "bool", B, Fn2(NotEqualTotalOrder), {a, b}, {V(B, {3}, {1, 0, 1})});
      continue;
    }
    // Plain values compare as usual.
    const Tensor a = V(d, {3}, {1, 2, 3}), b = V(d, {3}, {2, 2, 2});
    L.Add("EqualTotalOrder", "values", d, Fn2(EqualTotalOrder), {a, b}, {V(B, {3}, {0, 1, 0})});
    L.Add("NotEqualTotalOrder", "values", d, Fn2(NotEqualTotalOrder), {a, b}, {V(B, {3}, {1, 0, 1})});
    if (IsComplex(d)) continue;  // Complex numbers have no order.
    L.Add("LessThanTotalOrder", "values", d, Fn2(LessThanTotalOrder), {a, b}, {V(B, {3}, {1, 0, 0})});
    L.Add("LessOrEqualTotalOrder", "values", d, Fn2(LessOrEqualTotalOrder), {a, b}, {V(B, {3}, {1, 1, 0})});
    L.Add("GreaterThanTotalOrder", "values", d, Fn2(GreaterThanTotalOrder), {a, b}, {V(B, {3}, {0, 0, 1})});
    L.Add("GreaterOrEqualTotalOrder", "values", d, Fn2(GreaterOrEqualTotalOrder), {a, b},
          {V(B, {3}, {0, 1, 1})});
    if (!f) continue;
    // -0 < +0; NaN equals itself and is above +inf; -NaN (sign bit set) is below -inf.
    const Tensor x = V(d, {5}, {-0.0, kNaN, -kInf, kInf, -1}), y = V(d, {5}, {0, kNaN, -kInf, kNaN, -kNaN});
    L.Add("EqualTotalOrder", "zeros_nan", d, Fn2(EqualTotalOrder), {x, y}, {V(B, {5}, {0, 1, 1, 0, 0})});
    L.Add("NotEqualTotalOrder", "zeros_nan", d, Fn2(NotEqualTotalOrder), {x, y},
          {V(B, {5}, {1, 0, 0, 1, 1})});
    L.Add("LessThanTotalOrder", "zeros_nan", d, Fn2(LessThanTotalOrder), {x, y},
          {V(B, {5}, {1, 0, 0, 1, 0})});
    L.Add("LessOrEqualTotalOrder", "zeros_nan", d, Fn2(LessOrEqualTotalOrder), {x, y},
          {V(B, {5}, {1, 1, 1, 1, 0})});
    L.Add("GreaterThanTotalOrder", "zeros_nan", d, Fn2(GreaterThanTotalOrder), {x, y},
          {V(B, {5}, {0, 0, 0, 0, 1})});
    L.Add("GreaterOrEqualTotalOrder", "zeros_nan", d, Fn2(GreaterOrEqualTotalOrder), {x, y},
          {V(B, {5}, {0, 1, 1, 0, 1})});
  }
}

void AddShiftRows(CaseList& L) {
  for (DType d : kUnpacked) {
    const bool b = d == DType::Bool;
    const Tensor x = b ? V(d, {2, 3}, {1, 0, 1, 1, 1, 0}) : V(d, {2, 3}, {1, 2, 3, 4, 5, 6});
    const std::vector<double> v = ToDoubles(x);
    const double fill = b ? 0 : 9;
    auto pick = [&](std::vector<int> idx) { return V(d, {2, 3}, Pick(v, idx, fill)); };
    L.Add("ShiftLeft", "last_axis", d, P([fill](const Nodes& p) { return ShiftLeft(p[0], 1, fill); }), {x},
          {pick({1, 2, -1, 4, 5, -1})});
    L.Add("ShiftRight", "last_axis_by2", d, P([fill](const Nodes& p) { return ShiftRight(p[0], 2, fill); }),
          {x}, {pick({-1, -1, 0, -1, -1, 3})});
    L.Add("ShiftWithScalar", "axis0_right", d,
          P([fill](const Nodes& p) { return ShiftWithScalar(p[0], 0, ShiftDirRight, 1, fill); }), {x},
          {pick({-1, -1, -1, 0, 1, 2})});
    L.Add("ShiftWithScalar", "by_zero_is_identity", d,
          P([fill](const Nodes& p) { return ShiftWithScalar(p[0], 1, ShiftDirLeft, 0, fill); }), {x}, {x});
    L.Add("ShiftWithValue", "axis1_left_column_value", d, P([](const Nodes& p) {
            return ShiftWithValue(p[0], 1, ShiftDirLeft, 1, SliceAxis(p[0], 1, AxisElem(0)));
          }),
          {x}, {pick({1, 2, 0, 4, 5, 3})});
    L.Add("Shift", "left_repeats_last", d, P([](const Nodes& p) { return Shift(p[0], -1, ShiftDirLeft, 2); }),
          {x}, {pick({2, 2, 2, 5, 5, 5})});
    L.Add("Shift", "right_repeats_first", d,
          P([](const Nodes& p) { return Shift(p[0], 1, ShiftDirRight, 1); }), {x},
          {pick({0, 0, 1, 3, 3, 4})});
    L.Add("GrowLeft", "axis1", d, P([fill](const Nodes& p) { return GrowLeft(p[0], 1, 1, fill); }), {x},
          {V(d, {2, 4}, Pick(v, {-1, 0, 1, 2, -1, 3, 4, 5}, fill))});
    L.Add("GrowRight", "axis0_by2", d, P([fill](const Nodes& p) { return GrowRight(p[0], 0, 2, fill); }), {x},
          {V(d, {4, 3}, Pick(v, {0, 1, 2, 3, 4, 5, -1, -1, -1, -1, -1, -1}, fill))});
    L.Add("SliceAxis", "middle_column", d,
          P([](const Nodes& p) { return SliceAxis(p[0], -1, AxisRange(1, 2)); }), {x},
          {V(d, {2, 1}, Pick(v, {1, 4}))});
    L.Add("SliceAxis", "from_start_to_end", d, P([](const Nodes& p) {
            return Concatenate(
                {SliceAxis(p[0], 1, AxisRangeFromStart(-2)), SliceAxis(p[0], 1, AxisRangeToEnd(2))}, 1);
          }),
          {x}, {V(d, {2, 2}, Pick(v, {0, 2, 3, 5}))});
    L.Add("ExpandAndBroadcast", "new_middle_axis", d, P([](const Nodes& p) {
            return ExpandAndBroadcast(p[0], {2, 2, 3}, {1});
          }),
          {x}, {V(d, {2, 2, 3}, Pick(v, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}))});
    L.Add("ExpandDims", "before_axes", d, P([](const Nodes& p) {
            return ExpandDims(p[0], {0, 1});
          }),
          {x}, {V(d, {1, 2, 1, 3}, v)});
    L.Add("ReshapeWithShape", "to_3x2", d, P([d](const Nodes& p) {
            return ReshapeWithShape(p[0], Shape(d, {3, 2}));
          }),
          {x}, {V(d, {3, 2}, v)});
    L.Add("TransposeAllDims", "swap", d, P([](const Nodes& p) {
            return TransposeAllDims(p[0], {1, 0});
          }),
          {x}, {V(d, {3, 2}, Pick(v, {0, 3, 1, 4, 2, 5}))});
    L.Add("DynamicShape", "static_dims", d, P([](const Nodes& p) { return DynamicShape(p[0]); }), {x},
          {V(DType::Int64, {2}, {2, 3})});
    L.Add("SchedulingBarrier", "identity", d, P([](const Nodes& p) {
            return SchedulingBarrier(p[0], {Neg(ConvertDType(p[0], DType::Float32))});
          }),
          {x}, {x});
  }
}

}  // namespace

void AddUtilCases(CaseList& L) {
  AddScalarRows(L);
  AddArithmeticRows(L);
  AddTotalOrderRows(L);
  AddShiftRows(L);
}

}  // namespace kiln::conformance::internal
