#pragma once
/// @file
/// The store's random state as layers draw from it (Dropout, DropPath, DropBlock): in a graph
/// built for several replicas (a data-parallel step), each replica draws its own numbers, while
/// the state the store keeps stays the same on every replica.
///
///   graph::Node state = model::RandomStateForDraws(scope);
///   auto [next, u] = graph::RandomUniform(state, shape);
///   model::SetRandomStateAfterDraws(scope, next);

#include "kiln/graph/graph.h"
#include "kiln/model/store.h"

namespace kiln::model {

/// The value of the store's random state (Store::RNGState) in the graph `scope` is bound to. In
/// a graph of several replicas (Graph::Replicas() > 1) its key is mixed with the replica's id
/// (graph::ReplicaId), so replicas draw different numbers from the same stored state.
graph::Node RandomStateForDraws(const Scope& scope);
/// Sets the store's random state to `next`, a state returned by draws from RandomStateForDraws:
/// its counter, with the stored key (so every replica stores the same state).
void SetRandomStateAfterDraws(const Scope& scope, graph::Node next);

}  // namespace kiln::model
