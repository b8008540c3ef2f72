#pragma once
/// @file
/// Collective ops: values exchanged between the replicas of a program (every device of every
/// process of a data-parallel run; see compute/replicas.h). A graph's replica count is
/// Graph::Replicas(); with one replica each op is the identity (AllGather and ReduceScatter
/// included). Reductions fold the replicas' values in one fixed tree over replica ids, so every
/// replica gets bit-identical results, reproducible from run to run.
///
///   Node g = graph::AllReduce(grad, graph::ReduceOp::Mean);  // the mean over every replica

#include "kiln/graph/graph.h"

namespace kiln::graph {

/// How AllReduce and ReduceScatter combine the replicas' values.
enum class ReduceOp {
  Sum,   ///< Adds.
  Mean,  ///< Adds, then divides by the replica count (float dtypes only).
  Max,   ///< Keeps the largest (NaN propagates).
  Min,   ///< Keeps the smallest (NaN propagates).
};

/// Every replica gets `op` of all replicas' `x` (same shape on each). Gradient: the same
/// reduction of the adjoints for Sum and Mean; for Max and Min the adjoint's sum flows to the
/// replicas whose value was the result (split evenly between ties).
Node AllReduce(Node x, ReduceOp op = ReduceOp::Sum);
/// The replicas' `x` concatenated along `axis` in replica order (axis grows Replicas() times).
/// Gradient: each replica's block of the adjoints' sum (ReduceScatter Sum).
Node AllGather(Node x, int axis = 0);
/// `op` of all replicas' `x`, of which replica r keeps block r of `axis` (whose size must divide
/// by Replicas()). Gradient (Sum, Mean): AllGather of the adjoints.
Node ReduceScatter(Node x, int axis = 0, ReduceOp op = ReduceOp::Sum);
/// Replica `root`'s `x` on every replica. Gradient: the adjoints' sum on `root`, zero elsewhere.
Node CollectiveBroadcast(Node x, int root = 0);
/// The running replica's id, a scalar Int32 from 0 to Replicas()-1 (replica r is device
/// r / W of process r mod W, for W processes): the index of its block in AllGather's result.
Node ReplicaId(Graph& g);

}  // namespace kiln::graph
