// ONNX's contractions, softmax and reductions.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "kiln/graph/gather.h"
#include "kiln/graph/sort.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

V MatMulOp(const Context& c) { return {MatMul(c.In(0), c.In(1))}; }

V Gemm(const Context& c) {
  Node a = c.In(0), b = c.In(1);
  if (c.Int("transA", 0) != 0) a = Transpose(a, 0, 1);
  if (c.Int("transB", 0) != 0) b = Transpose(b, 0, 1);
  Node y = MatMul(a, b);
  const double alpha = c.Float("alpha", 1.0f), beta = c.Float("beta", 1.0f);
  if (alpha != 1) y = y * alpha;
  if (c.Has(2)) {
    Node bias = c.In(2);
    if (beta != 1) bias = bias * beta;
    auto [p, q] = SameRank(y, bias);
    y = p + q;
  }
  return {y};
}

/// Einsum of one operand: the letters missing from the output are summed, the rest transposed
/// into the output's order (`in` has no repeated letter: diagonals are taken before).
Node EinsumOne(const Context& c, Node x, const std::string& in, const std::string& out) {
  if (static_cast<int>(in.size()) != x.rank())
    c.Fail(fmt::format("subscripts \"{}\" do not match rank {}", in, x.rank()));
  std::vector<int> summed;
  std::string kept;
  for (size_t i = 0; i < in.size(); ++i) {
    if (out.find(in[i]) == std::string::npos) {
      summed.push_back(static_cast<int>(i));
    } else {
      kept += in[i];
    }
  }
  if (!summed.empty()) x = ReduceSum(x, summed);
  std::vector<int> perm;
  for (char ch : out) {
    const size_t p = kept.find(ch);
    if (p == std::string::npos) c.Fail(fmt::format("output subscript '{}' is not an input subscript", ch));
    perm.push_back(static_cast<int>(p));
  }
  return perm.empty() ? x : TransposeAllAxes(x, perm);
}

/// x with the axes of each letter repeated in `term` replaced by their diagonal (one axis, first
/// in x); `term` becomes x's new subscripts.
Node TakeDiagonals(const Context& c, Node x, std::string& term) {
  if (static_cast<int>(term.size()) != x.rank())
    c.Fail(fmt::format("subscripts \"{}\" do not match rank {}", term, x.rank()));
  for (;;) {
    size_t p = 0, q = std::string::npos;
    for (; p < term.size() && q == std::string::npos; ++p) q = term.find(term[p], p + 1);
    if (q == std::string::npos) return x;
    --p;
    const std::vector<int64_t> dims = x.shape().Dimensions();
    const int64_t n = dims[p];
    if (n == Shape::kDynamic || dims[q] != n)
      c.Fail(fmt::format(
          "subscript '{}' labels axes of sizes {} and {} of {}: a diagonal needs equal static sizes", term[p],
          dims[p], dims[q], x.shape()));
    // Axes p and q first, then the diagonal's elements gathered by index pairs (i, i).
    std::vector<int> perm = {static_cast<int>(p), static_cast<int>(q)};
    std::string rest;
    for (size_t i = 0; i < term.size(); ++i) {
      if (i == p || i == q) continue;
      perm.push_back(static_cast<int>(i));
      rest += term[i];
    }
    // The index pairs [n, 2] (row i holds i, i), built in the graph (n may be large).
    x = graph::Gather(TransposeAllAxes(x, perm), Iota(c.graph(), Shape(DType::Int64, {n, 2}), 0));
    term = term[p] + rest;
  }
}

/// Einsum: NumPy's Einstein summation over any number of operands. "..." stands for the axes
/// not labelled (right-aligned across operands), expanded into letters the equation does not
/// use; letters repeated in one operand take its diagonal first; then the operands are contracted
/// left to right, keeping the letters the output or a later operand needs.
V EinsumOp(const Context& c) {
  std::string eq = c.String("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',') {
      terms.emplace_back();
    } else {
      terms.back() += ch;
    }
  }
  const int n = c.NumInputs();
  if (static_cast<int>(terms.size()) != n || n < 1)
    c.Fail(fmt::format("equation \"{}\" has {} operand terms for {} inputs", eq, terms.size(), n));
  // Letters only, with at most one "..." per term.
  auto check = [&](const std::string& term) {
    const size_t dots = term.find("...");
    for (size_t i = 0; i < term.size(); ++i) {
      const bool in_dots = dots != std::string::npos && i >= dots && i < dots + 3;
      if (!in_dots && !std::isalpha(static_cast<unsigned char>(term[i])))
        c.Fail(fmt::format("invalid subscript '{}' in \"{}\"", term[i], eq));
    }
  };
  for (const std::string& t : terms) check(t);
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    check(out);
  }
  // The ellipsis letters: as many as the largest unlabelled rank.
  std::string unused;
  for (char ch = 'A'; ch <= 'z'; ++ch)
    if (std::isalpha(static_cast<unsigned char>(ch)) && eq.find(ch) == std::string::npos) unused += ch;
  std::vector<Node> xs;
  std::vector<int> ell_rank(static_cast<size_t>(n), 0);
  int ell = 0;
  for (int i = 0; i < n; ++i) {
    xs.push_back(c.In(i));
    const std::string& t = terms[static_cast<size_t>(i)];
    if (t.find("...") == std::string::npos) continue;
    const int r = xs.back().rank() - static_cast<int>(t.size() - 3);
    if (r < 0)
      c.Fail(fmt::format("term \"{}\" has more subscripts than input {}'s rank {}", t, i, xs.back().rank()));
    ell_rank[static_cast<size_t>(i)] = r;
    ell = std::max(ell, r);
  }
  if (ell > static_cast<int>(unused.size())) c.Fail("too few unused letters to expand \"...\"");
  const std::string ell_letters = unused.substr(0, static_cast<size_t>(ell));
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis axes, then the letters that appear once, in alphabetical order.
    out = ell_letters;
    for (char ch = 'A'; ch <= 'z'; ++ch)
      if (std::isalpha(static_cast<unsigned char>(ch)) && std::count(lhs.begin(), lhs.end(), ch) == 1)
        out += ch;
  } else if (const size_t d = out.find("..."); d != std::string::npos) {
    out.replace(d, 3, ell_letters);
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (out.find(out[i], i + 1) != std::string::npos)
      c.Fail(fmt::format("output subscript '{}' repeats", out[i]));
  for (int i = 0; i < n; ++i) {
    std::string& t = terms[static_cast<size_t>(i)];
    if (const size_t d = t.find("..."); d != std::string::npos)
      t.replace(d, 3, ell_letters.substr(static_cast<size_t>(ell - ell_rank[static_cast<size_t>(i)])));
    xs[static_cast<size_t>(i)] = TakeDiagonals(c, xs[static_cast<size_t>(i)], t);
  }
  // Contract left to right.
  Node x = xs[0];
  std::string term = terms[0];
  for (int i = 1; i < n; ++i) {
    std::string needed = out;
    for (int j = i + 1; j < n; ++j) needed += terms[static_cast<size_t>(j)];
    std::string next;
    for (char ch : term + terms[static_cast<size_t>(i)])
      if (needed.find(ch) != std::string::npos && next.find(ch) == std::string::npos) next += ch;
    x = Einsum(term + "," + terms[static_cast<size_t>(i)] + "->" + next, x, xs[static_cast<size_t>(i)]);
    term = next;
  }
  return {EinsumOne(c, x, term, out)};
}

/// Softmax-like ops: along `axis` from opset 13, over the axes from `axis` on (the input
/// flattened to 2-D there) before.
template <Node (*F)(Node, const std::vector<int>&)>
V SoftmaxLike(const Context& c) {
  Node x = c.In(0);
  const int rank = x.rank();
  if (c.opset() >= 13) return {F(x, {Axis(c, c.Int("axis", -1), rank)})};
  const int axis = Axis(c, c.Int("axis", 1), rank);
  std::vector<int> axes;
  for (int i = axis; i < rank; ++i) axes.push_back(i);
  return {F(x, axes)};
}

V Hardmax(const Context& c) {
  Node x = c.In(0);
  const int rank = x.rank();
  if (c.opset() < 13) c.Fail("Hardmax before opset 13 is not supported");
  const int axis = Axis(c, c.Int("axis", -1), rank);
  Node idx = ArgMax(x, axis, DType::Int64);
  const int64_t depth = x.shape().Dimensions()[static_cast<size_t>(axis)];
  return {MoveLastAxisTo(OneHot(idx, depth, x.dtype()), axis)};  // The one-hot axis comes last.
}

/// The reduced axes of a Reduce* node: attribute `axes` before `input_since`, else input 1; none
/// given means all unless noop_with_empty_axes.
std::vector<int> ReducedAxes(const Context& c, int64_t input_since, bool& noop) {
  std::vector<int64_t> axes =
      c.opset() < input_since ? c.IntList("axes") : (c.Has(1) ? c.Ints(1, "axes") : std::vector<int64_t>{});
  noop = axes.empty() && c.Int("noop_with_empty_axes", 0) != 0;
  std::vector<int> r;
  const int rank = c.In(0).rank();
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) r.push_back(i);
  } else {
    for (int64_t a : axes) r.push_back(Axis(c, a, rank));
  }
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <Red R>
V Reduce(const Context& c) {
  Node x = c.In(0);
  bool noop = false;
  const std::vector<int> axes = ReducedAxes(c, R == Red::Sum ? 13 : 18, noop);
  if (noop) return {x};
  Node y;
  switch (R) {
    case Red::Sum:
      y = ReduceSum(x, axes);
      break;
    case Red::Mean:
      y = ReduceMean(x, axes);
      break;
    case Red::Max:
      y = ReduceMax(x, axes);
      break;
    case Red::Min:
      y = ReduceMin(x, axes);
      break;
    case Red::Prod:
      y = ReduceProduct(x, axes);
      break;
    case Red::L1:
      y = ReduceSum(Abs(x), axes);
      break;
    case Red::L2:
      y = Sqrt(ReduceSum(x * x, axes));
      break;
    case Red::LogSum:
      y = Log(ReduceSum(x, axes));
      break;
    case Red::LogSumExp:
      y = ReduceLogSumExp(x, axes);
      break;
    case Red::SumSquare:
      y = ReduceSum(x * x, axes);
      break;
  }
  if (c.Int("keepdims", 1) == 0) return {y};
  std::vector<int64_t> dims = x.shape().Dimensions();
  for (int a : axes) dims[static_cast<size_t>(a)] = 1;
  if (x.shape().IsDynamic()) {
    for (int a : axes) y = InsertAxes(y, {a});
    return {y};
  }
  return {Reshape(y, dims)};
}

template <bool kMax>
V ArgExtreme(const Context& c) {
  Node x = c.In(0);
  const int axis = Axis(c, c.Int("axis", 0), x.rank());
  Node y;
  if (c.Int("select_last_index", 0) != 0) {
    // The last extreme: the first of the reversed axis, mirrored.
    const int64_t d = x.shape().Dimensions()[static_cast<size_t>(axis)];
    Node r = kMax ? ArgMax(Reverse(x, {axis}), axis, DType::Int64)
                  : ArgMin(Reverse(x, {axis}), axis, DType::Int64);
    y = ScalarLike(r, d - 1) - r;
  } else {
    y = kMax ? ArgMax(x, axis, DType::Int64) : ArgMin(x, axis, DType::Int64);
  }
  if (c.Int("keepdims", 1) != 0) y = InsertAxes(y, {axis});
  return {y};
}

V CumSumOp(const Context& c) {
  Node x = c.In(0);
  const std::vector<int64_t> a = c.Ints(1, "axis");
  if (a.size() != 1) c.Fail("axis must be a scalar");
  const int axis = Axis(c, a[0], x.rank());
  const bool reverse = c.Int("reverse", 0) != 0, exclusive = c.Int("exclusive", 0) != 0;
  Node y = CumSum(x, axis, reverse);
  if (exclusive) y = y - x;
  return {y};
}

V TopKOp(const Context& c) {
  Node x = c.In(0);
  const int64_t k = c.opset() < 10 ? c.Int("k", 0) : c.Ints(1, "k").at(0);
  const int axis = Axis(c, c.Int("axis", -1), x.rank());
  if (c.Int("sorted", 1) == 0) c.Fail("sorted 0 is not supported");
  const bool largest = c.Int("largest", 1) != 0;
  ValuesAndIndices r = largest ? TopK(x, k, axis) : BottomK(x, k, axis);
  return {r.values, ConvertDType(r.indices, DType::Int64)};
}

/// The largest matrices Det unrolls its elimination over (a step per column).
constexpr int64_t kMaxDetSize = 4096;

/// Det: the determinant of each [M, M] matrix of x [..., M, M], by Gaussian elimination with
/// partial pivoting unrolled over the M columns (M must be static).
V Det(const Context& c) {
  Node a = c.In(0);
  const int r = a.rank();
  if (r < 2 || !IsFloat(a.dtype()))
    c.Fail(fmt::format("the input must be float matrices [..., M, M], got {}", a.shape()));
  const int64_t m = a.shape().Dimensions()[static_cast<size_t>(r - 1)];
  if (m == Shape::kDynamic || a.shape().Dimensions()[static_cast<size_t>(r - 2)] != m)
    c.Fail(fmt::format("the input must be square matrices of a static size, got {}", a.shape()));
  if (m == 0) return {OnesLike(ReduceSum(a, {r - 2, r - 1}))};  // The empty product: 1 per matrix.
  if (m > kMaxDetSize)
    c.Fail(fmt::format("matrices of size {} are beyond the {} columns Det unrolls", m, kMaxDetSize));
  std::optional<Node> det;  // The product of the pivots so far, its sign flipped by each swap.
  for (int64_t k = 0; k < m; ++k) {
    // a holds the rows still to eliminate, [..., m - k, m]; column k picks the pivot row.
    const int64_t rows = m - k;
    Node col = ReduceSum(SliceAxis(a, r - 1, AxisRange(k, k + 1)), {r - 1});  // [..., rows]
    Node p = ArgMax(Abs(col), r - 2);
    Node pick = OneHot(p, rows, a.dtype());  // [..., rows]
    Node first = OneHot(ZerosLike(p), rows, a.dtype());
    Node pivot_row = ReduceSum(InsertAxes(pick, {-1}) * a, {r - 2});  // [..., m]
    Node first_row = ReduceSum(SliceAxis(a, r - 2, AxisRange(0, 1)), {r - 2});
    // Swap the pivot row and row 0 (nothing moves when they are the same row).
    Node diff = InsertAxes(pivot_row - first_row, {r - 2});
    a = a + InsertAxes(first, {-1}) * diff - InsertAxes(pick, {-1}) * diff;
    Node pivot =
        ReduceSum(SliceAxis(InsertAxes(pivot_row, {r - 2}), r - 1, AxisRange(k, k + 1)), {r - 2, r - 1});
    Node signed_pivot = Where(Equal(p, ZerosLike(p)), pivot, -pivot);
    det = det ? *det * signed_pivot : signed_pivot;
    if (k + 1 == m) break;
    // Subtract multiples of the pivot row from the rows below it, then drop the pivot row.
    Node below = SliceAxis(a, r - 2, AxisRange(1, rows));
    Node below_col = SliceAxis(below, r - 1, AxisRange(k, k + 1));  // [..., rows - 1, 1]
    Node safe = Where(Equal(pivot, ZerosLike(pivot)), OnesLike(pivot), pivot);
    Node factor = below_col / InsertAxes(InsertAxes(safe, {-1}), {-1});
    a = below - factor * InsertAxes(pivot_row, {r - 2});
  }
  return {*det};
}

}  // namespace

void AddMathConverters(std::map<std::string, Converter>& m) {
  m["MatMul"] = MatMulOp;
  m["Gemm"] = Gemm;
  m["Einsum"] = EinsumOp;
  m["Softmax"] = SoftmaxLike<graph::Softmax>;
  m["LogSoftmax"] = SoftmaxLike<graph::LogSoftmax>;
  m["Hardmax"] = Hardmax;
  m["ReduceSum"] = Reduce<Red::Sum>;
  m["ReduceMean"] = Reduce<Red::Mean>;
  m["ReduceMax"] = Reduce<Red::Max>;
  m["ReduceMin"] = Reduce<Red::Min>;
  m["ReduceProd"] = Reduce<Red::Prod>;
  m["ReduceL1"] = Reduce<Red::L1>;
  m["ReduceL2"] = Reduce<Red::L2>;
  m["ReduceLogSum"] = Reduce<Red::LogSum>;
  m["ReduceLogSumExp"] = Reduce<Red::LogSumExp>;
  m["ReduceSumSquare"] = Reduce<Red::SumSquare>;
  m["ArgMax"] = ArgExtreme<true>;
  m["ArgMin"] = ArgExtreme<false>;
  m["CumSum"] = CumSumOp;
  m["TopK"] = TopKOp;
  m["Det"] = Det;
}

}  // namespace kiln::onnx::internal
