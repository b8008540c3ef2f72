// Gradient rows of DotGeneral in its forms (vector·vector, matrix·vector, matrix·matrix,
// batched, several contracting axes, axes in unusual positions, empty contraction) and of the
// frontends on it (MatMul with broadcast batches, Einsum).

#include "grad_internal.h"

namespace kiln::conformance::internal {

void AddDotGrads(std::vector<GradCase>& out) {
  GradList L(out, "dot");
  auto product = P([](const std::vector<Node>& p) { return graph::Dot(p[0], p[1]).Product(); });
  L.Add("DotGeneral/vector_vector", product, {L.Rand({4}), L.Rand({4})});
  L.Add("DotGeneral/matrix_vector", product, {L.Rand({3, 4}), L.Rand({4})});
  L.Add("DotGeneral/matrix_matrix", product, {L.Rand({2, 3}), L.Rand({3, 4})});
  L.Add("DotGeneral/batched", product, {L.Rand({2, 2, 3}), L.Rand({2, 3, 2})});
  L.Add("DotGeneral/general_two_contracting", P([](const std::vector<Node>& p) {
          // a[k1, b, i, k2] · c[k2, j, b, k1] -> [b, i, j]
          return graph::Dot(p[0], p[1]).General({0, 3}, {1}, {3, 0}, {2});
        }),
        {L.Rand({2, 3, 2, 3}), L.Rand({3, 2, 3, 2})});
  L.Add("DotGeneral/outer",
        P([](const std::vector<Node>& p) { return graph::Dot(p[0], p[1]).General({}, {}, {}, {}); }),
        {L.Rand({2, 3}), L.Rand({2})});
  L.Add("DotGeneral/empty_contraction", product, {L.Rand({2, 0}), L.Rand({0, 3})});
  L.Add("MatMul/broadcast_batch", P([](const std::vector<Node>& p) { return graph::MatMul(p[0], p[1]); }),
        {L.Rand({2, 1, 2, 3}), L.Rand({3, 3, 2})});
  L.Add("Einsum/bij_bjk",
        P([](const std::vector<Node>& p) { return graph::Einsum("bij,bjk->bik", p[0], p[1]); }),
        {L.Rand({2, 2, 3}), L.Rand({2, 3, 2})});
  L.Add("Einsum/transposed_out",
        P([](const std::vector<Node>& p) { return graph::Einsum("ij,kj->ki", p[0], p[1]); }),
        {L.Rand({2, 3}), L.Rand({4, 3})});
  L.Add("DotGeneral/same_operand",
        P([](const std::vector<Node>& p) { return graph::Dot(p[0], p[0]).Product(); }), {L.Rand({3, 3})});
}

void AddSmoothRowGrads(std::vector<GradCase>& out) {
  // The value table's rows marked smooth (grad_epsilon), at their own points, in Float64.
  for (const Case& c : Cases()) {
    if (c.grad_epsilon <= 0 || c.dtype != DType::Float64) continue;
    GradCase g;
    g.name = "value_row:" + c.name;
    g.build = c.build;
    g.inputs = c.inputs;
    g.epsilon = c.grad_epsilon;
    g.tolerance = 1e-5;
    out.push_back(std::move(g));
  }
}

}  // namespace kiln::conformance::internal
