// Conformance rows of the collectives: each row runs its program on two or three replicas at once
// (threads of one process, through a ReplicaGroup) and checks every replica's result. Small
// integers keep every dtype exact; the three-replica float rows pin the fixed reduction tree, whose
// order rounds 1 + 2^-p + 2^-p (p: the mantissa bits) to 1 where the other order would not.

#include <cmath>
#include <string>

#include "internal.h"
#include "kiln/graph/collective.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT
using Nodes = std::vector<Node>;

namespace {

using Values = std::vector<double>;

/// Adds a row run on `inputs.size()` replicas (one parameter each) expecting `expected[r]` on
/// replica r.
Case& Replicated(CaseList& L, const std::string& op, const std::string& what, DType dtype,
                 graph::GraphFn build, const std::vector<Tensor>& inputs,
                 const std::vector<Tensor>& expected) {
  Case& c = L.Add(op, what, dtype, std::move(build), inputs, expected);
  c.replicas = static_cast<int>(expected.size());
  return c;
}

void AllReduceRows(CaseList& L, DType d) {
  const Tensor a = V(d, {2, 2}, {1, 6, 3, 0}), b = V(d, {2, 2}, {5, 2, 7, 4});
  const Tensor sum = V(d, {2, 2}, {6, 8, 10, 4}), max = V(d, {2, 2}, {5, 6, 7, 4}),
               min = V(d, {2, 2}, {1, 2, 3, 0});
  Replicated(L, "AllReduce", "sum", d, P([](const Nodes& p) { return AllReduce(p[0], ReduceOp::Sum); }),
             {a, b}, {sum, sum});
  Replicated(L, "AllReduce", "max", d, P([](const Nodes& p) { return AllReduce(p[0], ReduceOp::Max); }),
             {a, b}, {max, max});
  Replicated(L, "AllReduce", "min", d, P([](const Nodes& p) { return AllReduce(p[0], ReduceOp::Min); }),
             {a, b}, {min, min});
  const Tensor c = V(d, {2, 2}, {2, 1, 0, 3}), sum3 = V(d, {2, 2}, {8, 9, 10, 7});
  Replicated(L, "AllReduce", "sum_of_three", d, P([](const Nodes& p) { return AllReduce(p[0]); }), {a, b, c},
             {sum3, sum3, sum3});
  if (IsFloat(d)) {
    const Tensor mean = V(d, {2, 2}, {3, 4, 5, 2});
    Replicated(L, "AllReduce.Mean", "mean", d,
               P([](const Nodes& p) { return AllReduce(p[0], ReduceOp::Mean); }), {a, b}, {mean, mean});
    const Tensor nan = V(d, {2}, {kNaN, 1}), one = V(d, {2}, {2, kInf}), got = V(d, {2}, {kNaN, kInf});
    Replicated(L, "AllReduce", "max_propagates_nan", d,
               P([](const Nodes& p) { return AllReduce(p[0], ReduceOp::Max); }), {nan, one}, {got, got});
  }
  if (d == DType::Float32 || d == DType::Float64) {
    // The tree adds replicas 0 and 1 first: (1 + u) rounds to 1 (a tie to even), then 1 + u is 1
    // again; u + u first would give 1 + 2u.
    const double u = std::ldexp(1.0, d == DType::Float32 ? -24 : -53);
    const Tensor x0 = V(d, {1}, {1}), x1 = V(d, {1}, {u}), x2 = V(d, {1}, {u}), want = V(d, {1}, {1});
    Replicated(L, "AllReduce", "fixed_tree_order", d, P([](const Nodes& p) { return AllReduce(p[0]); }),
               {x0, x1, x2}, {want, want, want});
  }
}

void ReduceScatterRows(CaseList& L, DType d) {
  const Tensor a = V(d, {2, 2}, {1, 2, 3, 4}), b = V(d, {2, 2}, {5, 6, 7, 0});
  Replicated(L, "ReduceScatter", "axis0", d, P([](const Nodes& p) { return ReduceScatter(p[0], 0); }), {a, b},
             {V(d, {1, 2}, {6, 8}), V(d, {1, 2}, {10, 4})});
  Replicated(L, "ReduceScatter", "axis1_max", d,
             P([](const Nodes& p) { return ReduceScatter(p[0], 1, ReduceOp::Max); }), {a, b},
             {V(d, {2, 1}, {5, 7}), V(d, {2, 1}, {6, 4})});
  const Tensor empty = V(d, {2, 0}, {}), half = V(d, {1, 0}, {});
  Replicated(L, "ReduceScatter", "empty", d, P([](const Nodes& p) { return ReduceScatter(p[0], 0); }),
             {empty, empty}, {half, half});
}

void MovementRows(CaseList& L, DType d) {
  const Values s = Seq(d, 8);
  const Tensor a = V(d, {2, 2}, {s[0], s[1], s[2], s[3]}), b = V(d, {2, 2}, {s[4], s[5], s[6], s[7]});
  const Tensor rows = V(d, {4, 2}, s), cols = V(d, {2, 4}, {s[0], s[1], s[4], s[5], s[2], s[3], s[6], s[7]});
  Replicated(L, "AllGather", "axis0", d, P([](const Nodes& p) { return AllGather(p[0], 0); }), {a, b},
             {rows, rows});
  Replicated(L, "AllGather", "axis1", d, P([](const Nodes& p) { return AllGather(p[0], 1); }), {a, b},
             {cols, cols});
  Replicated(L, "CollectiveBroadcast", "from_replica_1", d,
             P([](const Nodes& p) { return CollectiveBroadcast(p[0], 1); }), {a, b, a}, {b, b, b});
}

}  // namespace

void AddCollectiveCatalogue(std::vector<CatalogueEntry>& e) {
  const std::vector<CatalogueEntry> entries = {
      {"AllReduce", {OpType::AllReduce}},
      {"AllReduce.Mean", {OpType::AllReduce}, true},
      {"AllGather", {OpType::AllGather}},
      {"ReduceScatter", {OpType::ReduceScatter}},
      {"CollectiveBroadcast", {OpType::CollectiveBroadcast}},
      {"ReplicaId", {OpType::ReplicaId}, false, false, {DType::Int32}},
  };
  e.insert(e.end(), entries.begin(), entries.end());
}

void AddCollectiveCases(CaseList& L) {
  for (DType d : kNumeric) {
    AllReduceRows(L, d);
    ReduceScatterRows(L, d);
  }
  for (DType d : kUnpacked) MovementRows(L, d);
  Replicated(L, "ReplicaId", "three_replicas", DType::Int32,
             GP([](Graph& g, const Nodes&) { return ReplicaId(g); }), {},
             {S(DType::Int32, 0), S(DType::Int32, 1), S(DType::Int32, 2)});
}

}  // namespace kiln::conformance::internal
