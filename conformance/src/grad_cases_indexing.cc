// Gradient rows of the indexing ops: gathers (repeated indices that accumulate, out-of-range
// starts that clamp, the general form with odd axis layouts, an embedding lookup), scatters of
// every combining kind with respect to both the operand and the updates (repeated indices,
// dropped out-of-range updates, distinct values for Max/Min and distinct indices for Set), and
// dynamic slices and updates at in-range and clamped starts, including empty sizes.

#include <cstdint>
#include <limits>

#include "grad_internal.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/sort.h"

namespace kiln::conformance::internal {

namespace {

using graph::AxisRange;

/// An index tensor of T's integer dtype (the rules read every one).
template <typename T>
Tensor Indices(std::vector<int64_t> dims, const std::vector<T>& values) {
  return Tensor::FromFlat(Shape(DTypeOf<T>, std::move(dims)), values);
}

/// Splits a flat tie-free vector into an operand of `x` dims and updates of `u` dims, so no value
/// of one equals a value of the other.
std::vector<Node> SplitDistinct(Node flat, const std::vector<int64_t>& x, const std::vector<int64_t>& u) {
  const int64_t n = Shape(DType::Float64, x).Size(), m = Shape(DType::Float64, u).Size();
  return {graph::Reshape(graph::Slice(flat, {AxisRange(0, n)}), x),
          graph::Reshape(graph::Slice(flat, {AxisRange(n, n + m)}), u)};
}

void AddGatherRows(GradList& L) {
  auto gather = P([](const std::vector<Node>& p) { return graph::Gather(p[0], p[1]); });
  L.Add("Gather/repeated_rows", gather, {L.Rand({5, 3}), I32({4, 1}, {1, 3, 1, 1})});
  L.Add("Gather/clamped_rows", gather, {L.Rand({4, 3}), I32({3, 1}, {2, 7, -3})});
  L.Add("Gather/elements", gather, {L.Rand({3, 4}), I32({5, 2}, {0, 1, 2, 3, 0, 1, 5, -1, 2, 2})});
  L.Add("Gather/batched_indices", gather, {L.Rand({3, 4, 2}), I32({2, 2, 2}, {0, 1, 2, 3, 0, 1, 1, 9})});
  L.Add("Gather/empty_indices", gather, {L.Rand({3, 2}), I32({0, 1}, {})});
  L.Add("Gather/int64_indices", gather, {L.Rand({4, 2}), Indices<int64_t>({3, 1}, {3, 3, 8})});
  L.Add("Gather/uint8_indices", gather, {L.Rand({4, 2}), Indices<uint8_t>({3, 1}, {0, 250, 0})});
  L.Add("Gather/uint64_huge_index", gather,
        {L.Rand({4, 2}), Indices<uint64_t>({2, 1}, {std::numeric_limits<uint64_t>::max(), 1})});
  L.Add("Gather/of_square",
        P([](const std::vector<Node>& p) { return graph::Gather(graph::Square(p[0]), p[1]); }),
        {L.Rand({4, 3}), I32({3, 1}, {2, 2, 5})});
  L.Add("GatherSlices/windows", P([](const std::vector<Node>& p) {
          return graph::GatherSlices(p[0], {0, 1}, p[1], {2, 3});
        }),
        {L.Rand({5, 6}), I32({3, 2}, {1, 2, 4, 5, 1, 2})});
  L.Add("GatherSlices/one_axis_batched",
        P([](const std::vector<Node>& p) { return graph::GatherSlices(p[0], {1}, p[1], {2}); }),
        {L.Rand({3, 5}), I32({2, 2, 1}, {0, 3, -2, 3})});
  L.Add("GatherSlices/empty_size",
        P([](const std::vector<Node>& p) { return graph::GatherSlices(p[0], {0}, p[1], {0}); }),
        {L.Rand({3, 2}), I32({2, 1}, {1, 2})});
  L.Add("GatherGeneral/index_vector_first", P([](const std::vector<Node>& p) {
          // Vectors along axis 0 of [2, 3] address operand axes (2, 0); axis 0 is collapsed.
          return graph::GatherGeneral(p[0], p[1], 0, {0, 2}, {0}, {2, 0}, {1, 3, 2});
        }),
        {L.Rand({4, 3, 5}), I32({2, 3}, {4, 0, 3, 1, 1, 9})});
  L.Add("GatherGeneral/scalar_indices", P([](const std::vector<Node>& p) {
          return graph::GatherGeneral(p[0], p[1], 1, {1}, {0}, {0}, {1, 3});
        }),
        {L.Rand({5, 3}), I32({4}, {4, 0, 4, 6})});
  L.Add("GatherGeneral/uncollapsed_window", P([](const std::vector<Node>& p) {
          return graph::GatherGeneral(p[0], p[1], 1, {0, 2}, {}, {1}, {3, 2});
        }),
        {L.Rand({3, 4}), I32({2, 1}, {3, 1})});
  L.Add("Embedding/lookup", P([](const std::vector<Node>& p) {
          return graph::Gather(p[0], graph::ExpandAxes(p[1], {-1})) * p[2];
        }),
        {L.Rand({6, 4}), I32({2, 3}, {5, 0, 5, 2, 5, 0}), L.Rand({2, 3, 4})});
  L.Add("TakeAlongAxis/axis1",
        P([](const std::vector<Node>& p) { return graph::TakeAlongAxis(p[0], p[1], 1); }),
        {L.Rand({3, 4}), I32({3, 5}, {0, 3, 3, 1, 0, 2, 2, 2, 1, 0, 3, 0, 1, 1, 2})});
  L.Add("TakeAlongAxis/axis0",
        P([](const std::vector<Node>& p) { return graph::TakeAlongAxis(p[0], p[1], 0); }),
        {L.Rand({3, 2}), I32({2, 2}, {2, 0, 2, 2})});
}

void AddScatterRows(GradList& L) {
  auto add = P([](const std::vector<Node>& p) { return graph::ScatterAdd(p[0], p[1], p[2]); });
  L.Add("ScatterAdd/repeated_rows", add, {L.Rand({5, 3}), I32({4, 1}, {0, 2, 0, 4}), L.Rand({4, 3})});
  L.Add("ScatterAdd/dropped_out_of_range", add, {L.Rand({4, 3}), I32({4, 1}, {1, 4, -1, 1}), L.Rand({4, 3})});
  L.Add("ScatterAdd/elements", add,
        {L.Rand({3, 4}), I32({5, 2}, {0, 1, 2, 3, 0, 1, 3, 0, 2, 2}), L.Rand({5})});
  L.Add("ScatterAdd/empty_updates", add, {L.Rand({3, 2}), I32({0, 1}, {}), L.Rand({0, 2})});
  L.Add("ScatterAdd/int64_indices", add, {L.Rand({3, 2}), Indices<int64_t>({2, 1}, {2, -5}), L.Rand({2, 2})});
  L.Add("ScatterAdd/of_products",
        P([](const std::vector<Node>& p) { return graph::ScatterAdd(p[0] * p[0], p[1], p[2] * p[0]); }),
        {L.Rand({3, 2}), I32({3, 1}, {1, 1, 2}), L.Rand({3, 2})});
  L.Add("Scatter/into_zeros", P([](const std::vector<Node>& p) {
          return graph::Scatter(p[0], p[1], Shape(DType::Float64, {4, 2}));
        }),
        {I32({3, 1}, {3, 0, 3}), L.Rand({3, 2})});
  auto update = P([](const std::vector<Node>& p) { return graph::ScatterUpdate(p[0], p[1], p[2]); });
  L.Add("ScatterUpdate/distinct_rows", update, {L.Rand({5, 3}), I32({3, 1}, {3, 0, 4}), L.Rand({3, 3})});
  L.Add("ScatterUpdate/dropped_out_of_range", update,
        {L.Rand({4, 2}), I32({3, 1}, {2, 4, -1}), L.Rand({3, 2})});
  L.Add("ScatterUpdate/elements", update,
        {L.Rand({3, 3}), I32({4, 2}, {0, 0, 2, 1, 1, 2, 0, 2}), L.Rand({4})});
  L.Add("ScatterUpdate/of_products",
        P([](const std::vector<Node>& p) { return graph::ScatterUpdate(p[0] * p[2], p[1], p[2] * p[2]); }),
        {L.Rand({2, 3}), I32({2, 1}, {1, 0}), L.Rand({2, 3})});
  for (const bool is_max : {true, false}) {
    const std::string name = is_max ? "ScatterMax" : "ScatterMin";
    Node (*fn)(Node, Node, Node) = is_max ? static_cast<Node (*)(Node, Node, Node)>(graph::ScatterMax)
                                          : static_cast<Node (*)(Node, Node, Node)>(graph::ScatterMin);
    auto rows = P([fn](const std::vector<Node>& p) {
      std::vector<Node> xu = SplitDistinct(p[0], {4, 3}, {5, 3});
      return fn(xu[0], p[1], xu[1]);
    });
    L.Add(name + "/repeated_rows", rows, {L.Distinct({27}), I32({5, 1}, {0, 2, 0, 3, 2})});
    L.Add(name + "/dropped_out_of_range", rows, {L.Distinct({27}), I32({5, 1}, {1, 4, 1, -2, 3})});
    auto elements = P([fn](const std::vector<Node>& p) {
      std::vector<Node> xu = SplitDistinct(p[0], {3, 3}, {6});
      return fn(xu[0], p[1], xu[1]);
    });
    L.Add(name + "/elements", elements,
          {L.Distinct({15}), I32({6, 2}, {0, 0, 1, 1, 0, 0, 2, 1, 1, 1, 0, 0})});
    L.Add(name + "/of_products", P([fn](const std::vector<Node>& p) {
            std::vector<Node> xu = SplitDistinct(p[0], {3, 2}, {3, 2});
            return fn(xu[0] * p[1], p[2], xu[1] * p[1]);
          }),
          {L.Distinct({12}, 0.5, 1.5), L.Rand({3, 2}, 0.5, 1.5), I32({3, 1}, {1, 1, 0})});
    L.Add(name + "/empty_updates", P([fn](const std::vector<Node>& p) { return fn(p[0], p[1], p[2]); }),
          {L.Rand({3, 2}), I32({0, 1}, {}), L.Rand({0, 2})});
  }
}

void AddDynamicSliceRows(GradList& L) {
  auto slice = [](std::vector<int64_t> sizes) {
    return P([sizes](const std::vector<Node>& p) { return graph::DynamicSlice(p[0], {p[1], p[2]}, sizes); });
  };
  L.Add("DynamicSlice/in_range", slice({2, 2}), {L.Rand({5, 4}), I32({}, {1}), I32({}, {2})});
  L.Add("DynamicSlice/clamped", slice({3, 2}), {L.Rand({5, 4}), I32({}, {4}), I32({}, {-1})});
  L.Add("DynamicSlice/empty", slice({0, 2}), {L.Rand({5, 4}), I32({}, {1}), I32({}, {1})});
  L.Add("DynamicSlice/whole", slice({5, 4}), {L.Rand({5, 4}), I32({}, {3}), I32({}, {0})});
  auto update = P([](const std::vector<Node>& p) {
    return graph::DynamicUpdateSlice(p[0], p[1], {p[2], p[3]});
  });
  L.Add("DynamicUpdateSlice/in_range", update, {L.Rand({5, 4}), L.Rand({2, 3}), I32({}, {1}), I32({}, {1})});
  L.Add("DynamicUpdateSlice/clamped", update, {L.Rand({5, 4}), L.Rand({2, 3}), I32({}, {9}), I32({}, {-2})});
  L.Add("DynamicUpdateSlice/empty_update", update,
        {L.Rand({5, 4}), L.Rand({0, 2}), I32({}, {2}), I32({}, {1})});
  L.Add("DynamicUpdateSlice/of_products", P([](const std::vector<Node>& p) {
          return graph::DynamicUpdateSlice(
              p[0] * p[0], graph::DynamicSlice(p[0], {p[2], p[3]}, {2, 2}) * p[1], {p[3], p[2]});
        }),
        {L.Rand({4, 4}), L.Rand({2, 2}), I32({}, {3}), I32({}, {1})});
}

}  // namespace

void AddIndexingGrads(std::vector<GradCase>& out) {
  GradList L(out, "indexing");
  AddGatherRows(L);
  AddScatterRows(L);
  AddDynamicSliceRows(L);
}

}  // namespace kiln::conformance::internal
