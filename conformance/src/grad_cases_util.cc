// Gradient rows of GoMLX's compositions (graph/ops_util.h), the contraction forms (DotGeneral,
// EinsumAxes, the Dot builder's dtypes) and ConcatPool: their gradients come from their
// primitives' rules and are checked here against central differences.

#include "grad_internal.h"
#include "kiln/graph/conv.h"
#include "kiln/graph/function.h"
#include "kiln/graph/ops_util.h"
#include "kiln/graph/ragged.h"

namespace kiln::conformance::internal {

namespace {
using Nodes = std::vector<Node>;
/// A row differentiating f(p[0]).
template <typename F>
graph::GraphFn Of1(F f) {
  return P([f](const Nodes& p) { return f(p[0]); });
}
}  // namespace

void AddUtilGrads(std::vector<GradCase>& out) {
  GradList L(out, "util");
  using namespace kiln::graph;  // NOLINT
  L.Add("OnePlus", Of1([](Node x) { return OnePlus(x) * x; }), {L.Rand({3})});
  L.Add("OneMinus", Of1([](Node x) { return OneMinus(x) * x; }), {L.Rand({3})});
  L.Add("MinusOne", Of1([](Node x) { return MinusOne(x) * x; }), {L.Rand({3})});
  L.Add("Inverse", Of1([](Node x) { return Inverse(x); }), {L.Rand({4}, 0.5, 2)});
  L.Add("MirroredLog1p", Of1([](Node x) { return MirroredLog1p(x); }), {L.Distinct({6}, -3, 3)});
  L.Add("LogAddExp", P([](const Nodes& p) { return LogAddExp(p[0], p[1]); }),
        {L.Rand({2, 3}, -3, 3), L.Rand({2, 3}, -3, 3)});
  L.Add("LogAddExp/broadcast", P([](const Nodes& p) { return LogAddExp(p[0], p[1]); }),
        {L.Rand({2, 3}, -3, 3), L.Rand({1, 3}, -3, 3)});
  L.Add("Softplus", Of1([](Node x) { return Softplus(x); }), {L.Rand({5}, -4, 4)});
  L.Add("ClipScalar", Of1([](Node x) { return ClipScalar(x, -0.5, 0.5); }), {L.Distinct({6}, -1, 1)});
  L.Add("Clip/nodes", P([](const Nodes& p) { return Clip(p[0], ScalarLike(p[0], -0.5), p[1]); }),
        {L.Distinct({5}, -1, 1), L.Rand({5}, 0.6, 1)});
  L.Add("L1Norm/all", Of1([](Node x) { return L1Norm(x); }), {L.Distinct({2, 3}, -1, 1)});
  L.Add("L1Norm/axis_kept", Of1([](Node x) { return L1Norm(x, {0}); }), {L.Distinct({2, 3}, -1, 1)});
  L.Add("L2NormSquare", Of1([](Node x) { return L2NormSquare(x, {1}); }), {L.Rand({2, 3})});
  L.Add("L2Norm/all", Of1([](Node x) { return L2Norm(x); }), {L.Rand({2, 3})});
  L.Add("L2Norm/axes", Of1([](Node x) { return L2Norm(x, {0, 2}); }), {L.Rand({2, 3, 2})});
  L.Add("L2Normalize", Of1([](Node x) { return L2Normalize(x, -1); }), {L.Rand({2, 4})});
  L.Add("L2Normalize/two_axes", Of1([](Node x) { return L2Normalize(x, 0, {1}); }), {L.Rand({2, 3, 2})});
  L.Add("L2NormalizeWithEpsilon", Of1([](Node x) { return L2NormalizeWithEpsilon(x, 0.1, 1); }),
        {L.Rand({3, 3})});
  L.Add("CosineSimilarity", P([](const Nodes& p) { return CosineSimilarity(p[0], p[1], 1); }),
        {L.Rand({3, 4}), L.Rand({3, 4})});
  L.Add("CrossCosineSimilarity", P([](const Nodes& p) { return CrossCosineSimilarity(p[0], p[1], 1, 0); }),
        {L.Rand({2, 3}), L.Rand({4, 3})});
  L.Add("CrossCosineSimilarity/batched",
        P([](const Nodes& p) { return CrossCosineSimilarity(p[0], p[1], -1, 1); }),
        {L.Rand({2, 2, 3}), L.Rand({2, 3, 3})});
  L.Add("Variance", Of1([](Node x) { return Variance(x, {1}); }), {L.Rand({2, 4})});
  L.Add("ReduceSkewness", Of1([](Node x) { return ReduceSkewness(x); }), {L.Distinct({6})});
  L.Add("Skewness/axis", Of1([](Node x) { return Skewness(x, {0}); }), {L.Distinct({5, 2})});
  L.Add("MaskedLogSoftmax", P([](const Nodes& p) {
          // Masked-out positions are -inf; the row is multiplied by the mask (as 0/1) to keep it finite.
          Node mask = Greater(p[1], ScalarLike(p[1], 0));
          Node r = MaskedLogSoftmax(p[0], mask);
          return Where(mask, r, ZerosLike(r));
        }),
        {L.Rand({3, 4}, -2, 2), L.Distinct({3, 4})})
      .wrt = {0};
  L.Add("TakeLowerTriangular", Of1([](Node x) { return TakeLowerTriangular(x, 0); }), {L.Rand({2, 3, 3})});
  L.Add("TakeUpperTriangular", Of1([](Node x) { return TakeUpperTriangular(x, 1); }), {L.Rand({3, 4})});
  L.Add("DiagonalWithValue", Of1([](Node x) { return DiagonalWithValue(x, 3); }), {L.Rand({})});
  L.Add("ShiftWithScalar", Of1([](Node x) { return ShiftWithScalar(x, 0, ShiftDirRight, 1, 0.5); }),
        {L.Rand({3, 2})});
  L.Add("ShiftWithValue", P([](const Nodes& p) { return ShiftWithValue(p[0], -1, ShiftDirLeft, 2, p[1]); }),
        {L.Rand({2, 4}), L.Rand({2, 1})});
  L.Add("Shift/edge", Of1([](Node x) { return Shift(x, 1, ShiftDirLeft, 2); }), {L.Rand({2, 4})});
  L.Add("ShiftLeft", Of1([](Node x) { return ShiftLeft(x, 1, 0); }), {L.Rand({4})});
  L.Add("ShiftRight", Of1([](Node x) { return ShiftRight(x, 3, 1); }), {L.Rand({2, 4})});
  L.Add("GrowLeft", Of1([](Node x) { return GrowLeft(x, 0, 2, 1); }), {L.Rand({2, 3})});
  L.Add("GrowRight", Of1([](Node x) { return GrowRight(x, -1, 1, 0); }), {L.Rand({2, 3})});
  L.Add("ConsecutiveDifference", Of1([](Node x) { return ConsecutiveDifference(x, 1, false); }),
        {L.Rand({2, 4})});
  L.Add("ConsecutiveDifference/preserve", Of1([](Node x) { return ConsecutiveDifference(x, 0, true); }),
        {L.Rand({3, 2})});
  L.Add("SliceAxis", Of1([](Node x) { return SliceAxis(x, 1, AxisRange(1, 3)); }), {L.Rand({2, 4})});
  L.Add("ExpandAndBroadcast", Of1([](Node x) {
          return ExpandAndBroadcast(x, {3, 2, 4}, {0});
        }),
        {L.Rand({2, 1})});
  L.Add("DotGeneral", P([](const Nodes& p) { return DotGeneral(p[0], {2}, {0}, p[1], {1}, {0}); }),
        {L.Rand({2, 3, 4}), L.Rand({2, 4, 2})});
  L.Add("EinsumAxes", P([](const Nodes& p) {
          return EinsumAxes(p[0], p[1], {{0, 1}}, {});
        }),
        {L.Rand({3, 2}), L.Rand({4, 3})});
  L.Add(
      "Dot.WithAccumulatorDType", P([](const Nodes& p) {
        return Dot(p[0], p[1]).WithAccumulatorDType(DType::Float64).WithOutputDType(DType::Float64).MatMul();
      }),
      {L.Rand({2, 3}), L.Rand({3, 2})});
  L.Add("Ragged2D.Softmax", P([](const Nodes& p) {
          return MakeRagged2D(3, p[0],
                              Const(p[0].graph(), Tensor::FromValue(std::vector<int32_t>{0, 0, 1, 1, 1, 2})))
              .Softmax()
              .Flat;
        }),
        {L.Rand({6}, -2, 2)});
  L.Add("Ragged2D.ReduceSumCols", P([](const Nodes& p) {
          return MakeRagged2D(3, p[0] * p[0],
                              Const(p[0].graph(), Tensor::FromValue(std::vector<int32_t>{0, 2, 2})))
              .ReduceSumCols();
        }),
        {L.Rand({3})});
  L.Add("NewFunction.Call", GP([](Graph& g, const Nodes& p) {
          Function f = NewFunction(g, "f", [](Graph& fg) {
            Node v = Parameter(fg, "v", Shape(DType::Float64, {3}));
            return std::vector<Node>{Sin(v) * v};
          });
          return f.Call({f.Call({p[0]})[0]})[0];
        }),
        {L.Rand({3})});
  L.Add("SortFunc", GP([](Graph& g, const Nodes& p) {
          Function cmp = NewClosure(g, [](Graph& cg) {
            Node l = Parameter(cg, "l", Shape(DType::Float64, {})),
                 r = Parameter(cg, "r", Shape(DType::Float64, {}));
            return std::vector<Node>{LessThan(Abs(l), Abs(r))};
          });
          return SortFunc(cmp, 1, true, {p[0] * p[0] * p[0]})[0];
        }),
        {L.Distinct({2, 5})});
  L.Add("ConcatPool", Of1([](Node x) { return ConcatPool(x).Window(2).Strides(1).Done(); }),
        {L.Rand({1, 3, 3, 2})});
  L.Add("ConcatPool/channels_first_same",
        Of1([](Node x) { return ConcatPool(x).ChannelsFirst().Window(2).PadSame().Done(); }),
        {L.Rand({1, 2, 3})});
}

}  // namespace kiln::conformance::internal
