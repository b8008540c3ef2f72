// Gradient rule of DotGeneral, in all its forms: each operand's gradient is another DotGeneral
// of the adjoint with the other operand (contracting the other operand's free axes, batching the
// batch axes), transposed back into the operand's axis order.

#include <algorithm>

#include "graph/autodiff/vjp.h"

namespace kiln::graph::autodiff {

using compute::OpType;
using V = std::vector<Node>;

namespace {

std::vector<int64_t> FreeAxes(int rank, const std::vector<int64_t>& contracting,
                              const std::vector<int64_t>& batch) {
  std::vector<int64_t> free;
  for (int64_t a = 0; a < rank; ++a) {
    if (std::find(contracting.begin(), contracting.end(), a) == contracting.end() &&
        std::find(batch.begin(), batch.end(), a) == batch.end())
      free.push_back(a);
  }
  return free;
}

/// The gradient of the operand `mine` (its contracting and batch axes) given the other operand
/// `other` (its contracting, batch and free axes) and the adjoint of the result, whose axes are
/// [batch..., lhs free..., rhs free...]; `other_free_offset` is where other's free axes start
/// in the adjoint.
Node OperandGradient(Node adjoint, Node other, const Shape& mine, const std::vector<int64_t>& my_contracting,
                     const std::vector<int64_t>& my_batch, const std::vector<int64_t>& other_contracting,
                     const std::vector<int64_t>& other_batch, int64_t other_free_offset) {
  const int nb = static_cast<int>(my_batch.size());
  const std::vector<int64_t> my_free = FreeAxes(mine.Rank(), my_contracting, my_batch);
  const std::vector<int64_t> other_free = FreeAxes(other.rank(), other_contracting, other_batch);
  compute::OpAttributes at;
  for (size_t k = 0; k < other_free.size(); ++k) {
    at.lhs_contracting.push_back(other_free_offset + static_cast<int64_t>(k));
    at.rhs_contracting.push_back(other_free[k]);
  }
  for (int b = 0; b < nb; ++b) {
    at.lhs_batch.push_back(b);
    at.rhs_batch.push_back(other_batch[static_cast<size_t>(b)]);
  }
  // Result axes: [batch..., my free... (the adjoint's), other's contracting axes in ascending order].
  Node r = Prim(OpType::DotGeneral, {adjoint, other}, std::move(at));
  std::vector<int64_t> other_contracting_sorted = other_contracting;
  std::sort(other_contracting_sorted.begin(), other_contracting_sorted.end());
  std::vector<int64_t> perm(static_cast<size_t>(mine.Rank()), 0);
  for (int b = 0; b < nb; ++b) perm[static_cast<size_t>(my_batch[static_cast<size_t>(b)])] = b;
  for (size_t k = 0; k < my_free.size(); ++k)
    perm[static_cast<size_t>(my_free[k])] = nb + static_cast<int64_t>(k);
  for (size_t j = 0; j < my_contracting.size(); ++j) {
    const auto pos =
        std::find(other_contracting_sorted.begin(), other_contracting_sorted.end(), other_contracting[j]) -
        other_contracting_sorted.begin();
    perm[static_cast<size_t>(my_contracting[j])] =
        nb + static_cast<int64_t>(my_free.size()) + static_cast<int64_t>(pos);
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return r;
  compute::OpAttributes tr;
  tr.permutation = perm;
  return Prim(OpType::Transpose, {r}, std::move(tr));
}

V DotRule(const VJPContext& c) {
  const auto& at = c.attrs();
  const Shape& ls = c.OperandShape(0);
  const Shape& rs = c.OperandShape(1);
  const int64_t nb = static_cast<int64_t>(at.lhs_batch.size());
  const int64_t nlf = static_cast<int64_t>(FreeAxes(ls.Rank(), at.lhs_contracting, at.lhs_batch).size());
  Node gl, gr;
  if (c.Needs(0)) {
    gl = OperandGradient(c.Adjoint(), Conj(c.X(1)), ls, at.lhs_contracting, at.lhs_batch, at.rhs_contracting,
                         at.rhs_batch, nb + nlf);
  }
  if (c.Needs(1)) {
    gr = OperandGradient(c.Adjoint(), Conj(c.X(0)), rs, at.rhs_contracting, at.rhs_batch, at.lhs_contracting,
                         at.lhs_batch, nb);
  }
  return {gl, gr};
}

}  // namespace

void RegisterDotRules(RuleTable& t) { t.Set(OpType::DotGeneral, DotRule); }

}  // namespace kiln::graph::autodiff
