// Graph frontend: contractions (Dot, DotProduct, MatMul, Einsum), all lowered to DotGeneral with
// BroadcastInDim, ReduceSum, Reshape and Transpose around it where needed.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "compute/shape_dims.h"
#include "graph/ops_internal.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using compute::OpType;
using ops_internal::CheckNodes;
using ops_internal::Emit;

namespace {

/// Validates two contraction operands: valid, one graph, one dtype (errors name `op`).
void CheckOperands(const char* op, Node a, Node b) {
  CheckNodes(op, {a, b});
  if (a.dtype() != b.dtype())
    kiln::detail::Throw("{}: cannot multiply {} and {}: they have different dtypes", op, a.shape(),
                        b.shape());
}

/// A DotGeneral node; errors name `op`.
Node DotGeneral(const char* op, Node a, Node b, std::vector<int64_t> a_contracting,
                std::vector<int64_t> b_contracting, std::vector<int64_t> a_batch,
                std::vector<int64_t> b_batch) {
  compute::OpAttributes attrs;
  attrs.lhs_contracting = std::move(a_contracting);
  attrs.rhs_contracting = std::move(b_contracting);
  attrs.lhs_batch = std::move(a_batch);
  attrs.rhs_batch = std::move(b_batch);
  return Emit(op, OpType::DotGeneral, {a, b}, std::move(attrs));
}

/// 0, 1, ..., n - 1.
std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < n; ++i) r.push_back(i);
  return r;
}

using compute::MayBeEqual;

/// x broadcast to `dims`, x's axes mapped to the trailing axes (left-padding with new axes).
Node BroadcastTrailing(const char* op, Node x, const std::vector<compute::Axis>& dims) {
  const Shape target = compute::ShapeOf(x.dtype(), dims);
  if (x.shape() == target) return x;
  compute::OpAttributes attrs;
  const int64_t offset = static_cast<int64_t>(dims.size()) - x.rank();
  for (int a = 0; a < x.rank(); ++a) attrs.axes.push_back(offset + a);
  attrs.shape = target;
  return Emit(op, OpType::BroadcastInDim, {x}, std::move(attrs));
}

// ---- Dot ------------------------------------------------------------------------------------------

Node ProductOf(Node a_, Node b_) {
  const char* op = "Dot";
  CheckOperands(op, a_, b_);
  const Shape sa = a_.shape(), sb = b_.shape();
  const int ra = sa.Rank(), rb = sb.Rank();
  const auto fail = [&](const std::string& why) {
    kiln::detail::Throw("Dot: cannot multiply {} and {}: {}", sa, sb, why);
  };
  if (ra == 0 || rb == 0) fail("Dot(a, b).Product() needs operands of rank 1 or more (use Mul for scalars)");
  const int64_t ka = sa.Dim(-1), kb = rb == 1 ? sb.Dim(0) : sb.Dim(-2);
  const bool plain = ra <= 2 && rb <= 2;
  const bool batched = ra >= 3 && rb == ra;
  if (!plain && !batched) {
    fail(fmt::format(
        "ranks {} and {} make neither a vector/matrix product nor a batched product of equal ranks "
        "(use MatMul to broadcast batch axes, or Dot(a, b).General)",
        ra, rb));
  }
  if (!MayBeEqual(ka, kb))
    fail(fmt::format("the contracted axes differ in size ({} in the first, {} in the second)", ka, kb));
  if (plain) return DotGeneral(op, a_, b_, {ra - 1}, {rb == 1 ? 0 : rb - 2}, {}, {});
  for (int i = 0; i < ra - 2; ++i) {
    if (!MayBeEqual(sa.Dim(i), sb.Dim(i)))
      fail(fmt::format("batch axis {} differs ({} and {}); use MatMul to broadcast batch axes", i, sa.Dim(i),
                       sb.Dim(i)));
  }
  return DotGeneral(op, a_, b_, {ra - 1}, {rb - 2}, Range(ra - 2), Range(rb - 2));
}

Node GeneralOf(Node a_, Node b_, const std::vector<int>& a_contracting, const std::vector<int>& a_batch,
               const std::vector<int>& b_contracting, const std::vector<int>& b_batch) {
  const char* op = "Dot.General";
  CheckOperands(op, a_, b_);
  const auto norm = [&](const std::vector<int>& axes, Node x) {
    std::vector<int64_t> r;
    for (int a : axes) r.push_back(ops_internal::NormalizeAxis(op, a, x.rank(), x.shape()));
    return r;
  };
  if (a_contracting.size() != b_contracting.size() || a_batch.size() != b_batch.size()) {
    kiln::detail::Throw(
        "Dot.General: for {} and {}: {} and {} contracting axes, {} and {} batch axes (each pair must be "
        "equal)",
        a_.shape(), b_.shape(), a_contracting.size(), b_contracting.size(), a_batch.size(), b_batch.size());
  }
  return DotGeneral(op, a_, b_, norm(a_contracting, a_), norm(b_contracting, b_), norm(a_batch, a_),
                    norm(b_batch, b_));
}

}  // namespace

Node DotBuilder::Finish(const std::function<Node(Node, Node)>& product) const {
  Node a = a_, b = b_;
  if (accumulator_ != DType::Invalid && a.Ok() && b.Ok()) {
    if (a.dtype() != accumulator_) a = ConvertDType(a, accumulator_);
    if (b.dtype() != accumulator_) b = ConvertDType(b, accumulator_);
  }
  Node r = product(a, b);
  const DType out = output_ != DType::Invalid ? output_ : a_.dtype();
  return r.dtype() == out ? r : ConvertDType(r, out);
}

Node DotBuilder::Product() const {
  return Finish([](Node a, Node b) { return ProductOf(a, b); });
}

Node DotBuilder::General(const std::vector<int>& a_contracting, const std::vector<int>& a_batch,
                         const std::vector<int>& b_contracting, const std::vector<int>& b_batch) const {
  return Finish(
      [&](Node a, Node b) { return GeneralOf(a, b, a_contracting, a_batch, b_contracting, b_batch); });
}

Node DotBuilder::MatMul() const {
  return Finish([](Node a, Node b) { return graph::MatMul(a, b); });
}

Node DotBuilder::Einsum(const std::string& equation) const {
  return Finish([&](Node a, Node b) { return graph::Einsum(equation, a, b); });
}

Node DotBuilder::EinsumAxes(const std::vector<std::array<int, 2>>& contracting,
                            const std::vector<std::array<int, 2>>& batch) const {
  return Finish([&](Node a, Node b) { return graph::EinsumAxes(a, b, contracting, batch); });
}

Node DotGeneral(Node lhs, const std::vector<int>& lhs_contracting, const std::vector<int>& lhs_batch,
                Node rhs, const std::vector<int>& rhs_contracting, const std::vector<int>& rhs_batch) {
  return Dot(lhs, rhs).General(lhs_contracting, lhs_batch, rhs_contracting, rhs_batch);
}

Node EinsumAxes(Node lhs, Node rhs, const std::vector<std::array<int, 2>>& contracting,
                const std::vector<std::array<int, 2>>& batch) {
  std::vector<int> lc, rc, lb, rb;
  for (const auto& p : contracting) {
    lc.push_back(p[0]);
    rc.push_back(p[1]);
  }
  for (const auto& p : batch) {
    lb.push_back(p[0]);
    rb.push_back(p[1]);
  }
  return GeneralOf(lhs, rhs, lc, lb, rc, rb);
}

Node DotProduct(Node a, Node b) {
  const char* op = "DotProduct";
  CheckOperands(op, a, b);
  if (a.rank() == 0 || a.shape().Dimensions() != b.shape().Dimensions()) {
    kiln::detail::Throw(
        "DotProduct: cannot multiply {} and {}: they must be vectors (or higher) of equal shapes", a.shape(),
        b.shape());
  }
  const int r = a.rank();
  return DotGeneral(op, a, b, {r - 1}, {r - 1}, Range(r - 1), Range(r - 1));
}

// ---- MatMul ----------------------------------------------------------------------------------------

Node MatMul(Node a, Node b) {
  const char* op = "MatMul";
  CheckOperands(op, a, b);
  // Copies: a node's shape reference dangles once the graph grows.
  const Shape sa = a.shape(), sb = b.shape();
  if (sa.IsScalar() || sb.IsScalar())
    kiln::detail::Throw("MatMul: cannot multiply {} and {}: scalars are not matrices (use Mul)", sa, sb);
  // A vector is promoted to a matrix ([k] -> [1, k] on the left, [k, 1] on the right).
  const bool a_vector = sa.Rank() == 1, b_vector = sb.Rank() == 1;
  const int64_t ka = sa.Dim(-1), kb = b_vector ? sb.Dim(0) : sb.Dim(-2);
  if (!MayBeEqual(ka, kb)) {
    kiln::detail::Throw("MatMul: cannot multiply {} and {}: the contracted axes differ in size ({} and {})",
                        sa, sb, ka, kb);
  }
  const compute::Axis one{1, ""};
  Node A = a_vector
               ? ops_internal::ReshapeTo(op, a, compute::ShapeOf(sa.dtype(), {one, compute::AxisOf(sa, 0)}))
               : a;
  Node B = b_vector
               ? ops_internal::ReshapeTo(op, b, compute::ShapeOf(sb.dtype(), {compute::AxisOf(sb, 0), one}))
               : b;
  const std::vector<compute::Axis> da = compute::AxesOf(A.shape()), db = compute::AxesOf(B.shape());
  const int na = A.rank() - 2, nb = B.rank() - 2;  // Batch ranks.

  Node result;
  if (nb == 0) {
    // [..., m, k]·[k, n]: no batch axes on the right, DotGeneral gives [..., m, n] directly.
    result = DotGeneral(op, A, B, {A.rank() - 1}, {0}, {}, {});
  } else {
    // Batch axes: left-padded with 1s to the same rank, then size-1 axes broadcast.
    const int n = std::max(na, nb);
    std::vector<compute::Axis> batch(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const int ia = i - (n - na), ib = i - (n - nb);
      const compute::Axis x = ia >= 0 ? da[static_cast<size_t>(ia)] : one;
      const compute::Axis y = ib >= 0 ? db[static_cast<size_t>(ib)] : one;
      compute::Axis both;
      if (x.size != 1 && y.size != 1 && !compute::UnifyAxes(x, y, both)) {
        kiln::detail::Throw(
            "MatMul: cannot broadcast the batch axes of {} and {}: batch axis {} (counting the "
            "batch axes aligned at the right) has sizes {} and {}",
            sa, sb, i, x.size, y.size);
      }
      batch[static_cast<size_t>(i)] = x.size == 1 ? y : y.size == 1 ? x : both;
    }
    std::vector<compute::Axis> ta = batch, tb = batch;
    ta.insert(ta.end(), da.end() - 2, da.end());
    tb.insert(tb.end(), db.end() - 2, db.end());
    A = BroadcastTrailing(op, A, ta);
    B = BroadcastTrailing(op, B, tb);
    result = DotGeneral(op, A, B, {n + 1}, {n}, Range(n), Range(n));
  }
  // Remove the axes the promotion added.
  if (a_vector || b_vector) {
    std::vector<compute::Axis> dims = compute::AxesOf(result.shape());
    if (b_vector) dims.erase(dims.end() - 1);
    if (a_vector) dims.erase(dims.end() - (b_vector ? 1 : 2));
    result = ops_internal::ReshapeTo(op, result, compute::ShapeOf(result.dtype(), dims));
  }
  return result;
}

// ---- Einsum ----------------------------------------------------------------------------------------

namespace {

/// One parsed operand: its labels, one per axis.
struct EinsumSide {
  std::string labels;
  Node node;
};

/// Sums away the axes whose labels appear neither in `other` nor in `out`, dropping their labels.
void SumAwayUnique(const char* op, EinsumSide& side, const std::string& other, const std::string& out) {
  std::vector<int64_t> axes;
  std::string kept;
  for (size_t i = 0; i < side.labels.size(); ++i) {
    const char c = side.labels[i];
    if (other.find(c) == std::string::npos && out.find(c) == std::string::npos) {
      axes.push_back(static_cast<int64_t>(i));
    } else {
      kept += c;
    }
  }
  if (axes.empty()) return;
  side.node = ops_internal::Reduce(op, OpType::ReduceSum, side.node, axes);
  side.labels = kept;
}

/// Positions in `labels` of each label of `which`.
std::vector<int64_t> Positions(const std::string& labels, const std::string& which) {
  std::vector<int64_t> r;
  for (char c : which) r.push_back(static_cast<int64_t>(labels.find(c)));
  return r;
}

}  // namespace

Node Einsum(const std::string& equation, Node a, Node b) {
  const std::string name = fmt::format("Einsum(\"{}\")", equation);
  const char* op = name.c_str();
  CheckOperands(op, a, b);
  std::string eq;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  }
  const size_t arrow = eq.find("->");
  if (arrow == std::string::npos)
    kiln::detail::Throw("{}: the equation needs an explicit output after \"->\" (e.g. \"ij,jk->ik\")", op);
  const std::string inputs = eq.substr(0, arrow), out = eq.substr(arrow + 2);
  const size_t comma = inputs.find(',');
  if (comma == std::string::npos || inputs.find(',', comma + 1) != std::string::npos)
    kiln::detail::Throw("{}: the equation needs exactly two operands separated by ',' before \"->\"", op);
  EinsumSide sides[2] = {{inputs.substr(0, comma), a}, {inputs.substr(comma + 1), b}};

  // Labels: letters only, no repeats within one term, each axis labelled once.
  const auto check_term = [&](const std::string& term, const char* what) {
    for (size_t i = 0; i < term.size(); ++i) {
      const char c = term[i];
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        kiln::detail::Throw(
            "{}: invalid character '{}' in the {} (labels are letters; \"...\" is not supported)", op, c,
            what);
      }
      if (term.find(c, i + 1) != std::string::npos) {
        kiln::detail::Throw(
            "{}: label '{}' repeats in the {} \"{}\" (traces and diagonals are not supported)", op, c, what,
            term);
      }
    }
  };
  check_term(sides[0].labels, "first operand");
  check_term(sides[1].labels, "second operand");
  check_term(out, "output");
  for (int s = 0; s < 2; ++s) {
    const EinsumSide& side = sides[s];
    if (static_cast<int>(side.labels.size()) != side.node.rank()) {
      kiln::detail::Throw("{}: operand {} is {} of rank {}, but its term \"{}\" has {} labels", op, s,
                          side.node.shape(), side.node.rank(), side.labels, side.labels.size());
    }
  }
  for (char c : out) {
    if (sides[0].labels.find(c) == std::string::npos && sides[1].labels.find(c) == std::string::npos)
      kiln::detail::Throw("{}: output label '{}' appears in no operand", op, c);
  }
  for (size_t i = 0; i < sides[0].labels.size(); ++i) {
    const size_t j = sides[1].labels.find(sides[0].labels[i]);
    if (j == std::string::npos) continue;
    const int64_t d0 = a.shape().Dim(static_cast<int>(i)), d1 = b.shape().Dim(static_cast<int>(j));
    if (!MayBeEqual(d0, d1)) {
      kiln::detail::Throw("{}: label '{}' has size {} in {} and {} in {}", op, sides[0].labels[i], d0,
                          a.shape(), d1, b.shape());
    }
  }

  SumAwayUnique(op, sides[0], sides[1].labels, out);
  SumAwayUnique(op, sides[1], sides[0].labels, out);
  const std::string &la = sides[0].labels, &lb = sides[1].labels;
  std::string batch, contracted, free_a, free_b;
  for (char c : out) {
    if (la.find(c) != std::string::npos && lb.find(c) != std::string::npos) batch += c;
  }
  for (char c : la) {
    if (lb.find(c) == std::string::npos) {
      free_a += c;
    } else if (out.find(c) == std::string::npos) {
      contracted += c;
    }
  }
  for (char c : lb) {
    if (la.find(c) == std::string::npos) free_b += c;
  }
  Node result = DotGeneral(op, sides[0].node, sides[1].node, Positions(la, contracted),
                           Positions(lb, contracted), Positions(la, batch), Positions(lb, batch));
  const std::string labels = batch + free_a + free_b;
  if (labels == out) return result;
  compute::OpAttributes attrs;
  attrs.permutation = Positions(labels, out);
  return Emit(op, OpType::Transpose, {result}, std::move(attrs));
}

}  // namespace kiln::graph
