// The store's random state for draws: per-replica keys in replicated graphs (a key mixed with the
// replica id), the stored key kept after the draws.

#include "kiln/model/random_state.h"

#include "core/check.h"
#include "kiln/graph/collective.h"
#include "kiln/graph/ops.h"
#include "kiln/model/variable.h"

namespace kiln::model {

namespace {

graph::Graph& GraphOf(const Scope& scope, const char* what) {
  if (scope.graph() == nullptr)
    kiln::detail::Throw("model::{}: the scope is not bound to a graph being built", what);
  return *scope.graph();
}

}  // namespace

graph::Node RandomStateForDraws(const Scope& scope) {
  graph::Graph& g = GraphOf(scope, "RandomStateForDraws");
  graph::Node state = scope.store().RNGState().NodeValue(g);
  if (g.Replicas() == 1) return state;
  // [key, counter_hi, counter_lo]: the key xor (replica + 1) times the golden-ratio constant.
  graph::Node id = graph::ConvertDType(graph::ReplicaId(g), DType::Uint64);
  graph::Node salt = (id + graph::Scalar(g, DType::Uint64, uint64_t{1})) *
                     graph::Scalar(g, DType::Uint64, uint64_t{0x9E3779B97F4A7C15ULL});
  graph::Node key =
      graph::BitwiseXor(graph::Slice(state, {graph::AxisRange(0, 1)}), graph::Reshape(salt, {1}));
  return graph::Concatenate({key, graph::Slice(state, {graph::AxisRange(1, 3)})}, 0);
}

void SetRandomStateAfterDraws(const Scope& scope, graph::Node next) {
  graph::Graph& g = GraphOf(scope, "SetRandomStateAfterDraws");
  Variable rng = scope.store().RNGState();
  if (g.Replicas() > 1) {
    graph::Node stored = rng.NodeValue(g);
    next = graph::Concatenate(
        {graph::Slice(stored, {graph::AxisRange(0, 1)}), graph::Slice(next, {graph::AxisRange(1, 3)})}, 0);
  }
  rng.SetNodeValue(next);
}

}  // namespace kiln::model
