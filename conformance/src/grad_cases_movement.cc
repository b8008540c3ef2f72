// Gradient rows of the data-movement ops: reshape, transpose, broadcast, concatenate, slice
// (strided, empty), pad (edge, negative, interior, and the fill value), reverse and the
// composites on them (stack, split, squeeze, insert axes).

#include "grad_internal.h"

namespace kiln::conformance::internal {

using graph::AxisRange;

void AddMovementGrads(std::vector<GradCase>& out) {
  GradList L(out, "movement");
  L.Add("Reshape/matrix", P([](const std::vector<Node>& p) {
          return graph::Reshape(p[0], {3, 2});
        }),
        {L.Rand({2, 3})});
  L.Add("Reshape/to_scalar", P([](const std::vector<Node>& p) { return graph::Reshape(p[0], {}); }),
        {L.Rand({1, 1})});
  L.Add("Transpose/swap", P([](const std::vector<Node>& p) { return graph::Transpose(p[0], 0, 1); }),
        {L.Rand({2, 3})});
  L.Add("TransposeAllAxes/rank3", P([](const std::vector<Node>& p) {
          return graph::TransposeAllAxes(p[0], {2, 0, 1});
        }),
        {L.Rand({2, 3, 4})});
  L.Add("BroadcastPrefix/new_axes", P([](const std::vector<Node>& p) {
          return graph::BroadcastPrefix(p[0], {2, 2});
        }),
        {L.Rand({3})});
  L.Add("BroadcastToDims/size_one_axes", P([](const std::vector<Node>& p) {
          return graph::BroadcastToDims(p[0], {3, 2, 4});
        }),
        {L.Rand({1, 2, 1})});
  L.Add("BroadcastToDims/scalar", P([](const std::vector<Node>& p) {
          return graph::BroadcastToDims(p[0], {2, 3});
        }),
        {L.Rand({})});
  L.Add("Concatenate/axis1", P([](const std::vector<Node>& p) {
          return graph::Concatenate({p[0], p[1], p[0]}, 1);
        }),
        {L.Rand({2, 2}), L.Rand({2, 3})});
  L.Add("Concatenate/with_empty", P([](const std::vector<Node>& p) {
          return graph::Concatenate({p[0], p[1]}, 0);
        }),
        {L.Rand({0, 2}), L.Rand({3, 2})});
  L.Add("Stack/axis1", P([](const std::vector<Node>& p) {
          return graph::Stack({p[0], p[1]}, 1);
        }),
        {L.Rand({2, 3}), L.Rand({2, 3})});
  L.Add("Split/parts", P([](const std::vector<Node>& p) { return graph::Split(p[0], 1, 2); }),
        {L.Rand({2, 4})});
  L.Add("Slice/range", P([](const std::vector<Node>& p) {
          return graph::Slice(p[0], {AxisRange(1, 3), AxisRange(0, 2)});
        }),
        {L.Rand({4, 3})});
  L.Add("Slice/strided", P([](const std::vector<Node>& p) {
          return graph::Slice(p[0],
                              {graph::AxisRangeSpec{0, 5, 2, false}, graph::AxisRangeSpec{1, 4, 3, false}});
        }),
        {L.Rand({5, 4})});
  L.Add("Slice/empty", P([](const std::vector<Node>& p) { return graph::Slice(p[0], {AxisRange(2, 2)}); }),
        {L.Rand({4, 2})});
  L.Add("Pad/edges", P([](const std::vector<Node>& p) {
          return graph::Pad(p[0], p[1], {{1, 2, 0}, {0, 1, 0}});
        }),
        {L.Rand({2, 3}), L.Rand({})});
  L.Add("Pad/negative_and_interior", P([](const std::vector<Node>& p) {
          return graph::Pad(p[0], p[1], {{-1, 2, 1}, {1, -2, 2}});
        }),
        {L.Rand({3, 4}), L.Rand({})});
  L.Add("Reverse/axes", P([](const std::vector<Node>& p) {
          return graph::Reverse(p[0], {0, 1});
        }),
        {L.Rand({2, 3})});
  L.Add("Squeeze/InsertAxes",
        P([](const std::vector<Node>& p) { return graph::InsertAxes(graph::Squeeze(p[0]), {0}); }),
        {L.Rand({1, 3, 1})});
}

}  // namespace kiln::conformance::internal
