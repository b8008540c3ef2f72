// The optimizer operators of ONNX's training domain (ai.onnx.preview.training): Adagrad,
// Momentum and Adam, each one update step of its tensors.

#include <fmt/format.h>

#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

/// The number of optimized tensors n of a node whose inputs are R, T and then `groups` lists of n
/// tensors each (X..., G..., and the optimizer's state).
int TensorCount(const Context& c, int groups) {
  const int rest = c.NumInputs() - 2;
  if (rest < groups || rest % groups != 0)
    c.Fail(
        fmt::format("takes R, T and {} lists of equally many tensors, got {} inputs", groups, c.NumInputs()));
  for (int i = 0; i < c.NumInputs(); ++i)
    if (!c.Has(i)) c.Fail(fmt::format("input {} is missing (none is optional)", i));
  return rest / groups;
}

/// The learning rate R and update count T (scalars) as x's dtype.
std::pair<Node, Node> RateAndCount(const Context& c, Node x) {
  Node r = c.In(0), t = c.In(1);
  if (r.rank() != 0 || t.rank() != 0 || !IsFloat(r.dtype()) || !IsInt(t.dtype()))
    c.Fail(
        fmt::format("R must be a float scalar and T an integer scalar, got {} and {}", r.shape(), t.shape()));
  return {ConvertDType(r, x.dtype()), ConvertDType(t, x.dtype())};
}

/// Each tensor of group `k` (0: X, 1: G, ...) for tensor i of n.
Node Member(const Context& c, int n, int k, int i) {
  Node v = c.In(2 + k * n + i), x = c.In(2 + i);
  if (v.shape() != x.shape())
    c.Fail(
        fmt::format("input {} is {}, it must be shaped as X{} {}", 2 + k * n + i, v.shape(), i, x.shape()));
  return v;
}

/// Adagrad: H += (G + λX)², X -= r (G + λX) / (√H + ε) with r = R / (1 + T·decay).
V Adagrad(const Context& c) {
  const int n = TensorCount(c, 3);
  const double decay = c.Float("decay_factor", 0), eps = c.Float("epsilon", 0),
               lambda = c.Float("norm_coefficient", 0);
  V xs, hs;
  for (int i = 0; i < n; ++i) {
    Node x = Member(c, n, 0, i), g = Member(c, n, 1, i), h = Member(c, n, 2, i);
    auto [r, t] = RateAndCount(c, x);
    Node rate = r / (ScalarLike(t, 1) + t * decay);
    Node greg = x * lambda + g;
    Node h_new = h + greg * greg;
    xs.push_back(x - rate * greg / (Sqrt(h_new) + eps));
    hs.push_back(h_new);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

/// Momentum: V = αV + β'(G + λX) (β' = β after the first step, 1 on it), then X -= R·V
/// (standard) or X -= R (G + λX + αV) (nesterov).
V Momentum(const Context& c) {
  const int n = TensorCount(c, 3);
  const double alpha = c.Attr("alpha").f(), beta = c.Attr("beta").f(),
               lambda = c.Attr("norm_coefficient").f();
  const std::string mode = c.String("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    c.Fail(fmt::format("mode {} is not standard or nesterov", mode));
  V xs, vs;
  for (int i = 0; i < n; ++i) {
    Node x = Member(c, n, 0, i), g = Member(c, n, 1, i), v = Member(c, n, 2, i);
    auto [r, t] = RateAndCount(c, x);
    Node beta_t = Where(Greater(t, ScalarLike(t, 0)), ScalarLike(t, beta), ScalarLike(t, 1));
    Node greg = x * lambda + g;
    Node v_new = v * alpha + beta_t * greg;
    xs.push_back(mode == "standard" ? x - r * v_new : x - r * (greg + v_new * alpha));
    vs.push_back(v_new);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

/// Adam: V = αV + (1-α)G', H = βH + (1-β)G'², X -= R' V / (√H + ε) with G' = G + λX and, after
/// the first step, R' = R √(1-β^T) / (1-α^T); then X *= 1 - λ_post.
V Adam(const Context& c) {
  const int n = TensorCount(c, 4);
  const double alpha = c.Float("alpha", 0.9f), beta = c.Float("beta", 0.999f), eps = c.Float("epsilon", 0),
               lambda = c.Float("norm_coefficient", 0), post = c.Float("norm_coefficient_post", 0);
  V xs, vs, hs;
  for (int i = 0; i < n; ++i) {
    Node x = Member(c, n, 0, i), g = Member(c, n, 1, i), v = Member(c, n, 2, i), h = Member(c, n, 3, i);
    auto [r, t] = RateAndCount(c, x);
    Node greg = x * lambda + g;
    Node v_new = v * alpha + greg * (1 - alpha);
    Node h_new = h * beta + greg * greg * (1 - beta);
    Node corrected = r * Sqrt(OneMinus(Pow(ScalarLike(t, beta), t))) / OneMinus(Pow(ScalarLike(t, alpha), t));
    Node rate = Where(Greater(t, ScalarLike(t, 0)), corrected, r);
    Node x_new = x - rate * (v_new / (Sqrt(h_new) + eps));
    xs.push_back(x_new * (1 - post));
    vs.push_back(v_new);
    hs.push_back(h_new);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace

void AddTrainingConverters(std::map<std::string, Converter>& m) {
  m["ai.onnx.preview.training:Adagrad"] = Adagrad;
  m["ai.onnx.preview.training:Momentum"] = Momentum;
  m["ai.onnx.preview.training:Adam"] = Adam;
}

}  // namespace kiln::onnx::internal
