// Gradient rows of the sorting and scan ops: CumSum along each axis, forwards and reversed,
// with empty and size-1 axes; and the sorts built on ArgSort and a gather (Sort, SortWithIndices,
// SortMany, TopK and BottomK values) on tie-free values.

#include "grad_internal.h"
#include "kiln/graph/sort.h"

namespace kiln::conformance::internal {

namespace {

/// CumSum of the first parameter along `axis`.
graph::GraphFn CumSumFn(int axis, bool reverse) {
  return P([axis, reverse](const std::vector<Node>& p) { return graph::CumSum(p[0], axis, reverse); });
}

/// Sort of the first parameter along `axis`.
graph::GraphFn SortFn(int axis, bool descending) {
  return P([axis, descending](const std::vector<Node>& p) { return graph::Sort(p[0], axis, !descending); });
}

}  // namespace

void AddSortScanGrads(std::vector<GradCase>& out) {
  GradList L(out, "sortscan");
  L.Add("CumSum/axis0", CumSumFn(0, false), {L.Rand({4, 3})});
  L.Add("CumSum/axis1", CumSumFn(1, false), {L.Rand({3, 4})});
  L.Add("CumSum/axis0_reverse", CumSumFn(0, true), {L.Rand({4, 3})});
  L.Add("CumSum/axis1_reverse", CumSumFn(1, true), {L.Rand({3, 4})});
  L.Add("CumSum/rank3_middle", CumSumFn(1, false), {L.Rand({2, 3, 2})});
  L.Add("CumSum/rank3_last_reverse", CumSumFn(-1, true), {L.Rand({2, 2, 3})});
  L.Add("CumSum/vector", CumSumFn(0, false), {L.Rand({5})});
  L.Add("CumSum/size_one_axis", CumSumFn(1, true), {L.Rand({3, 1})});
  L.Add("CumSum/empty_axis", CumSumFn(0, false), {L.Rand({0, 3})});
  L.Add("CumSum/of_square",
        P([](const std::vector<Node>& p) { return graph::CumSum(graph::Square(p[0]), 1); }),
        {L.Rand({2, 4})});
  L.Add("Sort/ascending_last_axis", SortFn(-1, false), {L.Distinct({3, 4})});
  L.Add("Sort/descending_last_axis", SortFn(-1, true), {L.Distinct({3, 4})});
  L.Add("Sort/axis0", SortFn(0, false), {L.Distinct({4, 3})});
  L.Add("Sort/vector", SortFn(0, true), {L.Distinct({6})});
  L.Add("Sort/of_cube", P([](const std::vector<Node>& p) { return graph::Sort(p[0] * p[0] * p[0], 1); }),
        {L.Distinct({2, 5})});
  L.Add("SortWithIndices/values",
        P([](const std::vector<Node>& p) { return graph::SortWithIndices(p[0], 1).values; }),
        {L.Distinct({2, 4})});
  L.Add("SortMany/by_first", P([](const std::vector<Node>& p) {
          return graph::SortMany({p[0], p[1]}, 0);
        }),
        {L.Distinct({4, 2}), L.Rand({4, 2})});
  L.Add("TopK/values", P([](const std::vector<Node>& p) { return graph::TopK(p[0], 2).values; }),
        {L.Distinct({3, 5})});
  L.Add("TopK/axis0", P([](const std::vector<Node>& p) { return graph::TopK(p[0], 3, 0).values; }),
        {L.Distinct({4, 2})});
  L.Add("TopK/k_zero", P([](const std::vector<Node>& p) { return graph::TopK(p[0], 0).values; }),
        {L.Distinct({2, 3})});
  L.Add("BottomK/values", P([](const std::vector<Node>& p) { return graph::BottomK(p[0], 2).values; }),
        {L.Distinct({2, 5})});
}

}  // namespace kiln::conformance::internal
