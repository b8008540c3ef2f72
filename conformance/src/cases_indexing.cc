// Rows for gathers, scatters, dynamic slices, sorting and scans (graph/gather.h, graph/sort.h),
// and the primitive probes of the Indexing and SortScan families. Expected values are written by
// hand (movement rows pick from Seq()). Every index dtype is tried with hostile start indices:
// clamped in gathers and dynamic slices, dropped in scatters.

#include <limits>

#include "internal.h"
#include "kiln/compute/shape_inference.h"
#include "kiln/core/error.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/sort.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

void AddIndexingCatalogue(std::vector<CatalogueEntry>& entries) {
  const std::vector<OpType> sort = {OpType::ArgSort, OpType::Gather};
  entries.push_back({"Gather", {OpType::Gather}});
  entries.push_back({"GatherGeneral", {OpType::Gather}});
  entries.push_back({"GatherSlices", {OpType::Gather}});
  entries.push_back({"TakeAlongAxis", {OpType::Gather}});
  entries.push_back({"Scatter", {OpType::Scatter, OpType::Add}});
  entries.push_back({"ScatterAdd", {OpType::Scatter, OpType::Add}});
  entries.push_back({"ScatterMax", {OpType::Scatter, OpType::Max}});
  entries.push_back({"ScatterMin", {OpType::Scatter, OpType::Min}});
  entries.push_back({"ScatterUpdate", {OpType::Scatter}});
  entries.push_back({"DynamicSlice", {OpType::DynamicSlice}});
  entries.push_back({"DynamicUpdateSlice", {OpType::DynamicUpdateSlice}});
  entries.push_back({"ArgSort", {OpType::ArgSort}});
  entries.push_back({"Sort", sort});
  entries.push_back({"SortWithIndices", sort});
  entries.push_back({"SortMany", sort});
  entries.push_back({"TopK", sort});
  entries.push_back({"BottomK", sort});
  entries.push_back({"TopKMask", {OpType::ArgSort, OpType::Less}});
  entries.push_back({"CumSum", {OpType::CumSum}});
}

bool IndexingPrimitiveAccepts(OpType op, DType dtype) {
  const Shape s(dtype, {2}), one(dtype, {1}), index(DType::Int32, {1, 1}), scalar_index(DType::Int32);
  compute::OpAttributes at;
  std::vector<Shape> in;
  switch (op) {
    case OpType::Gather:
      in = {s, index};
      at.gather.collapsed_slice_dims = {0};
      at.gather.start_index_map = {0};
      at.gather.slice_sizes = {1};
      at.gather.index_vector_dim = 1;
      break;
    case OpType::Scatter:
      in = {s, index, one};
      at.scatter.inserted_window_dims = {0};
      at.scatter.scatter_dims_to_operand_dims = {0};
      at.scatter.index_vector_dim = 1;
      at.reduce_kind = compute::ReduceKind::Set;  // Valid for every dtype Scatter moves.
      break;
    case OpType::DynamicSlice:
      in = {s, scalar_index};
      at.sizes = {1};
      break;
    case OpType::DynamicUpdateSlice:
      in = {s, one, scalar_index};
      break;
    case OpType::ArgSort:
    case OpType::CumSum:
      in = {s};
      at.axis = 0;
      break;
#define KILN_LISTED_Indexing
#define KILN_LISTED_SortScan
#include "kiln/compute/op_cases.inc"
      return false;
  }
  return ShapeRuleAccepts(op, in, at);
}

namespace {

const std::vector<DType> kIndexDTypes = {DType::Int8,  DType::Int16,  DType::Int32,  DType::Int64,
                                         DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64};

/// Hostile start indices of dtype `id`: {lowest, -1 (all bits set), a huge positive value}.
std::vector<int64_t> Hostile(DType id) {
  return {MinI(id), -1, IsUnsigned(id) ? static_cast<int64_t>(MaxU(id) >> 1) : MaxI(id)};
}

std::string Lower(DType d) { return std::string(DTypeValueName(d)); }

void AddGatherRows(CaseList& L, DType d) {
  const std::vector<double> v = Seq(d, 12);
  const Tensor x = V(d, {3, 2}, Pick(v, {0, 1, 2, 3, 4, 5}));
  auto gather = P([](const std::vector<Node>& p) { return Gather(p[0], p[1]); });
  L.Add("Gather", "rows", d, gather, {x, V(DType::Int32, {3, 1}, {2, 0, 1})},
        {V(d, {3, 2}, Pick(v, {4, 5, 0, 1, 2, 3}))});
  L.Add("Gather", "elements", d, gather, {x, V(DType::Int64, {2, 2}, {1, 0, 2, 1})},
        {V(d, {2}, Pick(v, {2, 5}))});
  for (DType id : kIndexDTypes) {
    // Clamped: negative starts read row 0, huge ones the last row.
    const bool u = IsUnsigned(id);
    L.Add("Gather", "clamped_" + Lower(id), d, gather, {x, W(id, {3, 1}, Hostile(id))},
          {V(d, {3, 2}, Pick(v, {0, 1, u ? 4 : 0, u ? 5 : 1, 4, 5}))});
    L.Add("DynamicSlice", "clamped_" + Lower(id), d, P([](const std::vector<Node>& p) {
            return DynamicSlice(p[0], {p[1], p[2]}, {2, 2});
          }),
          {V(d, {3, 3}, Pick(v, {0, 1, 2, 3, 4, 5, 6, 7, 8})), W(id, {}, {Hostile(id)[0]}), W(id, {}, {-1})},
          {V(d, {2, 2}, Pick(v, u ? std::vector<int>{1, 2, 4, 5} : std::vector<int>{0, 1, 3, 4}))});
    L.Add("DynamicUpdateSlice", "clamped_" + Lower(id), d, P([](const std::vector<Node>& p) {
            return DynamicUpdateSlice(p[0], p[1], {p[2], p[3]});
          }),
          {V(d, {3, 3}, Pick(v, {0, 1, 2, 3, 4, 5, 6, 7, 8})), V(d, {1, 2}, Pick(v, {9, 10})),
           W(id, {}, {Hostile(id)[2]}), W(id, {}, {-1})},
          {V(d, {3, 3},
             Pick(v, u ? std::vector<int>{0, 1, 2, 3, 4, 5, 6, 9, 10}
                       : std::vector<int>{0, 1, 2, 3, 4, 5, 9, 10, 8}))});
    // Skipped: every window out of range is dropped (unsigned: index 0 is valid).
    L.Add("ScatterUpdate", "skipped_" + Lower(id), d,
          P([](const std::vector<Node>& p) { return ScatterUpdate(p[0], p[1], p[2]); }),
          {V(d, {4}, Pick(v, {0, 1, 2, 3})), W(id, {3, 1}, Hostile(id)), V(d, {3}, Pick(v, {4, 5, 6}))},
          {V(d, {4}, Pick(v, {u ? 4 : 0, 1, 2, 3}))});
  }
  // Column gather through the general form: out[r][b] = x[r][idx[b]] (5 clamps to 1).
  L.Add("GatherGeneral", "columns", d, P([](const std::vector<Node>& p) {
          return GatherGeneral(p[0], p[1], 1, {0}, {1}, {1}, {3, 1});
        }),
        {x, V(DType::Uint8, {2, 1}, {1, 0})}, {V(d, {3, 2}, Pick(v, {1, 0, 3, 2, 5, 4}))});
  L.Add("GatherGeneral", "scalar_indices_clamped", d, P([](const std::vector<Node>& p) {
          return GatherGeneral(p[0], p[1], 1, {1}, {0}, {0}, {1, 2});
        }),
        {x, V(DType::Int32, {2}, {1, 5})}, {V(d, {2, 2}, Pick(v, {2, 3, 4, 5}))});
  L.Add(
      "GatherSlices", "clamped", d,
      P([](const std::vector<Node>& p) { return GatherSlices(p[0], {1}, p[1], {3}); }),
      {V(d, {2, 4}, Pick(v, {0, 1, 2, 3, 4, 5, 6, 7})), W(DType::Int16, {3, 1}, {1, 2, MinI(DType::Int16)})},
      {V(d, {3, 2, 3}, Pick(v, {1, 2, 3, 5, 6, 7, 1, 2, 3, 5, 6, 7, 0, 1, 2, 4, 5, 6}))});
  L.Add("GatherSlices", "two_axes", d, P([](const std::vector<Node>& p) {
          return GatherSlices(p[0], {1, 0}, p[1], {2, 1});
        }),
        {V(d, {2, 4}, Pick(v, {0, 1, 2, 3, 4, 5, 6, 7})), V(DType::Int64, {2}, {2, 1})},
        {V(d, {1, 2}, Pick(v, {6, 7}))});
  auto take = P([](const std::vector<Node>& p) { return TakeAlongAxis(p[0], p[1], 1); });
  L.Add("TakeAlongAxis", "axis1", d, take, {x, V(DType::Int32, {3, 1}, {1, 0, 1})},
        {V(d, {3, 1}, Pick(v, {1, 2, 5}))});
  L.Add("TakeAlongAxis", "clamped", d, take, {x, V(DType::Int64, {3, 2}, {-5, 99, 1, 0, 0, 0})},
        {V(d, {3, 2}, Pick(v, {0, 1, 3, 2, 4, 4}))});
  // Set with duplicates: the last in index order wins; a two-axis window row.
  L.Add("ScatterUpdate", "duplicates_last_wins", d,
        P([](const std::vector<Node>& p) { return ScatterUpdate(p[0], p[1], p[2]); }),
        {V(d, {4}, Pick(v, {0, 1, 2, 3})), V(DType::Int32, {4, 1}, {1, 3, 1, -1}),
         V(d, {4}, Pick(v, {4, 5, 6, 7}))},
        {V(d, {4}, Pick(v, {0, 6, 2, 5}))});
  L.Add("ScatterUpdate", "rows", d,
        P([](const std::vector<Node>& p) { return ScatterUpdate(p[0], p[1], p[2]); }),
        {x, V(DType::Uint16, {2, 1}, {2, 0}), V(d, {2, 2}, Pick(v, {6, 7, 8, 9}))},
        {V(d, {3, 2}, Pick(v, {8, 9, 2, 3, 6, 7}))});
  L.Add("DynamicSlice", "middle", d, P([](const std::vector<Node>& p) {
          return DynamicSlice(p[0], {p[1], p[2]}, {2, 2});
        }),
        {V(d, {3, 3}, Pick(v, {0, 1, 2, 3, 4, 5, 6, 7, 8})), S(DType::Int32, 1), S(DType::Int64, 0)},
        {V(d, {2, 2}, Pick(v, {3, 4, 6, 7}))});
  L.Add("DynamicUpdateSlice", "corner", d, P([](const std::vector<Node>& p) {
          return DynamicUpdateSlice(p[0], p[1], {p[2], p[3]});
        }),
        {V(d, {3, 3}, Pick(v, {0, 1, 2, 3, 4, 5, 6, 7, 8})), V(d, {2, 1}, Pick(v, {9, 10})),
         S(DType::Int32, 1), S(DType::Uint8, 2)},
        {V(d, {3, 3}, Pick(v, {0, 1, 2, 3, 4, 9, 6, 7, 10}))});
}

void AddScatterRows(CaseList& L, DType d) {
  auto fn = [](Node (*f)(Node, Node, Node)) {
    return P([f](const std::vector<Node>& p) { return f(p[0], p[1], p[2]); });
  };
  const Tensor x = V(d, {4}, {5, 1, 3, 2}), dup = V(DType::Int32, {5, 1}, {1, 1, 2, 0, 9});
  const Tensor up = V(d, {5}, {0, 6, 2, 4, 7});
  L.Add("ScatterAdd", "duplicates_add", d, fn(ScatterAdd), {x, dup, up}, {V(d, {4}, {9, 7, 5, 2})});
  L.Add("ScatterMax", "duplicates", d, fn(ScatterMax), {x, dup, up}, {V(d, {4}, {5, 6, 3, 2})});
  L.Add("ScatterMin", "duplicates", d, fn(ScatterMin), {x, dup, up}, {V(d, {4}, {4, 0, 2, 2})});
  const Tensor hostile = W(DType::Int64, {3, 1}, {MinI(DType::Int64), MaxI(DType::Int64), 3});
  const Tensor three = V(d, {3}, {1, 1, 1});
  L.Add("ScatterAdd", "skipped_int64", d, fn(ScatterAdd), {x, hostile, three}, {V(d, {4}, {5, 1, 3, 3})});
  L.Add("ScatterMax", "skipped_uint32", d, fn(ScatterMax),
        {x, W(DType::Uint32, {3, 1}, {-1, 4, 1}), V(d, {3}, {9, 9, 4})}, {V(d, {4}, {5, 4, 3, 2})});
  L.Add("ScatterMin", "skipped_int8", d, fn(ScatterMin),
        {x, W(DType::Int8, {3, 1}, {-128, 127, 3}), V(d, {3}, {0, 0, 1})}, {V(d, {4}, {5, 1, 3, 1})});
  L.Add("Scatter", "rows_add_up", d, P([](const std::vector<Node>& p) {
          return Scatter(p[0], p[1], Shape(p[1].dtype(), {3, 2}));
        }),
        {V(DType::Int32, {4, 1}, {0, 2, 0, -1}), V(d, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
        {V(d, {3, 2}, {6, 8, 0, 0, 3, 4})});
  if (IsFloat(d)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    L.Add("ScatterMax", "nan_propagates", d, fn(ScatterMax),
          {x, V(DType::Int32, {1, 1}, {2}), V(d, {1}, {nan})}, {V(d, {4}, {5, 1, nan, 2})});
  }
}

void AddSortRows(CaseList& L, DType d) {
  const Tensor x = V(d, {5}, {3, 1, 2, 1, 0});
  auto argsort = [](int axis, bool desc) {
    return P([axis, desc](const std::vector<Node>& p) { return ArgSort(p[0], axis, !desc); });
  };
  L.Add("ArgSort", "stable_ties", d, argsort(0, false), {x}, {V(DType::Int32, {5}, {4, 1, 3, 2, 0})});
  L.Add("ArgSort", "descending_stable", d, argsort(0, true), {x}, {V(DType::Int32, {5}, {0, 2, 1, 3, 4})});
  L.Add("ArgSort", "axis0", d, argsort(0, false), {V(d, {3, 2}, {2, 1, 0, 1, 2, 0})},
        {V(DType::Int32, {3, 2}, {1, 2, 0, 0, 2, 1})});
  if (IsFloat(d)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const Tensor f = V(d, {6}, {1, nan, -0.0, 0, nan, -1});
    L.Add("ArgSort", "nan_last_zeros_stable", d, argsort(0, false), {f},
          {V(DType::Int32, {6}, {5, 2, 3, 0, 1, 4})});
    L.Add("ArgSort", "descending_nan_first", d, argsort(-1, true), {f},
          {V(DType::Int32, {6}, {1, 4, 0, 2, 3, 5})});
    L.Add("Sort", "nan_last", d, P([](const std::vector<Node>& p) { return Sort(p[0], 0); }),
          {V(d, {4}, {1, nan, -1, 0})}, {V(d, {4}, {-1, 0, 1, nan})});
  } else if (IsSigned(d)) {
    L.Add("ArgSort", "extremes", d, argsort(0, false), {W(d, {4}, {MaxI(d), MinI(d), 0, -1})},
          {V(DType::Int32, {4}, {1, 3, 2, 0})});
  } else {
    L.Add("ArgSort", "extremes", d, argsort(0, true), {W(d, {3}, {-1, 0, 5})},
          {V(DType::Int32, {3}, {0, 2, 1})});
  }
  L.Add("Sort", "ascending", d, P([](const std::vector<Node>& p) { return Sort(p[0], 0); }), {x},
        {V(d, {5}, {0, 1, 1, 2, 3})});
  L.Add("Sort", "descending_rows", d, P([](const std::vector<Node>& p) { return Sort(p[0], 1, false); }),
        {V(d, {2, 3}, {1, 3, 2, 0, 0, 4})}, {V(d, {2, 3}, {3, 2, 1, 4, 0, 0})});
  L.Add("SortWithIndices", "descending", d, P([](const std::vector<Node>& p) {
          auto r = SortWithIndices(p[0], 0, false);
          return std::vector<Node>{r.values, r.indices};
        }),
        {V(d, {4}, {2, 0, 2, 1})}, {V(d, {4}, {2, 2, 1, 0}), V(DType::Int32, {4}, {0, 2, 3, 1})});
  L.Add("SortMany", "by_first", d, P([](const std::vector<Node>& p) {
          return SortMany({p[0], p[1], p[2]}, 0);
        }),
        {V(d, {4}, {2, 0, 2, 1}), V(DType::Int32, {4}, {10, 11, 12, 13}), V(DType::Bool, {4}, {1, 0, 0, 1})},
        {V(d, {4}, {0, 1, 2, 2}), V(DType::Int32, {4}, {11, 13, 10, 12}), V(DType::Bool, {4}, {0, 1, 1, 0})});
  const Tensor m = V(d, {2, 4}, {1, 3, 3, 2, 0, 0, 5, 0});
  L.Add("TopK", "ties_lower_index_first", d, P([](const std::vector<Node>& p) {
          auto r = TopK(p[0], 2);
          return std::vector<Node>{r.values, r.indices};
        }),
        {m}, {V(d, {2, 2}, {3, 3, 5, 0}), V(DType::Int32, {2, 2}, {1, 2, 2, 0})});
  L.Add("TopK", "axis0", d, P([](const std::vector<Node>& p) {
          auto r = TopK(p[0], 1, 0);
          return std::vector<Node>{r.values, r.indices};
        }),
        {m}, {V(d, {1, 4}, {1, 3, 5, 2}), V(DType::Int32, {1, 4}, {0, 0, 1, 0})});
  L.Add("BottomK", "ties_lower_index_first", d, P([](const std::vector<Node>& p) {
          auto r = BottomK(p[0], 2);
          return std::vector<Node>{r.values, r.indices};
        }),
        {m}, {V(d, {2, 2}, {1, 2, 0, 0}), V(DType::Int32, {2, 2}, {0, 3, 0, 1})});
  // The positions TopK picks: rows {1, 3, 3, 2} and {0, 0, 5, 0} with k = 2, ties to the lower index.
  L.Add("TopKMask", "ties_lower_index_first", d,
        P([](const std::vector<Node>& p) { return TopKMask(p[0], 2); }), {m},
        {V(DType::Bool, {2, 4}, {0, 1, 1, 0, 1, 0, 1, 0})});
  L.Add("TopKMask", "axis0_k_beyond_size", d,
        P([](const std::vector<Node>& p) { return TopKMask(p[0], 5, 0); }), {m},
        {V(DType::Bool, {2, 4}, {1, 1, 1, 1, 1, 1, 1, 1})});
  // CumSum.
  const Tensor c = V(d, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto cumsum = [](int axis, bool reverse) {
    return P([axis, reverse](const std::vector<Node>& p) { return CumSum(p[0], axis, reverse); });
  };
  L.Add("CumSum", "axis1", d, cumsum(1, false), {c}, {V(d, {2, 3}, {1, 3, 6, 4, 9, 15})});
  L.Add("CumSum", "axis1_reverse", d, cumsum(-1, true), {c}, {V(d, {2, 3}, {6, 5, 3, 15, 11, 6})});
  L.Add("CumSum", "axis0", d, cumsum(0, false), {c}, {V(d, {2, 3}, {1, 2, 3, 5, 7, 9})});
  L.Add("CumSum", "axis0_reverse", d, cumsum(0, true), {c}, {V(d, {2, 3}, {5, 7, 9, 4, 5, 6})});
  if (IsInt(d)) {
    // Integers wrap: the maximum plus one is the minimum.
    L.Add("CumSum", "wraps", d, cumsum(0, false), {W(d, {2}, {IsSigned(d) ? MaxI(d) : -1, 1})},
          {W(d, {2}, {IsSigned(d) ? MaxI(d) : -1, IsSigned(d) ? MinI(d) : 0})});
  }
}

}  // namespace

void AddIndexingCases(CaseList& L) {
  for (DType d : kUnpacked) AddGatherRows(L, d);
  for (DType d : kNumeric) {
    AddScatterRows(L, d);
    AddSortRows(L, d);
  }
}

}  // namespace kiln::conformance::internal
