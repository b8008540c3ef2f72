// Stateless nn functions: Dense, LayerNorm, RMSNorm, BatchNormInference, Softcap, Dropout.

#include "kiln/ml/nn.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "kiln/graph/random.h"

namespace kiln::nn {

namespace {

void CheckX(const char* fn, Node x) {
  if (!x.Ok()) kiln::detail::Throw("nn::{}: x is an invalid node", fn);
  if (!IsFloat(x.dtype())) kiln::detail::Throw("nn::{}: x {} must be float", fn, x.shape());
}

/// `axes` of x made non-negative, sorted, without repeats; kiln::Error naming `fn` otherwise.
std::vector<int> NormAxes(const char* fn, Node x, const std::vector<int>& axes) {
  if (axes.empty()) kiln::detail::Throw("nn::{}: no axes given for x {}", fn, x.shape());
  std::vector<int> out;
  for (int a : axes) {
    const int n = a < 0 ? a + x.rank() : a;
    if (n < 0 || n >= x.rank())
      kiln::detail::Throw("nn::{}: axis {} is out of range for x {}", fn, a, x.shape());
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    kiln::detail::Throw("nn::{}: axes repeat an axis of x {}", fn, x.shape());
  return out;
}

/// A scale/offset parameter shaped to broadcast against x: x's rank as given, or the
/// dimensions of `axes` (sorted) reshaped to x's rank with 1 on the other axes.
Node ParamFor(const char* fn, const char* what, Node p, Node x, const std::vector<int>& axes) {
  if (p.dtype() != x.dtype())
    kiln::detail::Throw("nn::{}: {} {} must have x's dtype ({})", fn, what, p.shape(), x.dtype());
  std::vector<int64_t> want;
  for (int a : axes) want.push_back(x.shape().Dim(a));
  if (p.shape().Dimensions() != want) {
    if (p.rank() == x.rank()) return p;  // x's rank: the broadcasting rule decides
    kiln::detail::Throw(
        "nn::{}: {} {} must have the dimensions [{}] of the normalised axes of x {}, or x's rank", fn, what,
        p.shape(), fmt::join(want, ", "), x.shape());
  }
  std::vector<int64_t> dims(static_cast<size_t>(x.rank()), 1);
  for (int a : axes) dims[static_cast<size_t>(a)] = x.shape().Dim(a);
  return graph::Reshape(p, dims);
}

Node KeptMean(Node x, const std::vector<int>& axes) {
  return graph::ReduceAndKeep(
      x, [](Node v, const std::vector<int>& ax) { return graph::ReduceMean(v, ax); }, axes);
}

Node ScaleAndShift(const char* fn, Node y, Node x, Node gamma, Node beta, const std::vector<int>& axes) {
  if (gamma.Ok()) y = y * ParamFor(fn, "gamma", gamma, x, axes);
  if (beta.Ok()) y = y + ParamFor(fn, "beta", beta, x, axes);
  return y;
}

}  // namespace

Node Dense(Node x, Node weights, Node bias, const std::function<Node(Node)>& activation) {
  CheckX("Dense", x);
  if (!weights.Ok()) kiln::detail::Throw("nn::Dense: weights is an invalid node");
  if (x.rank() < 1 || weights.rank() < 1 || x.shape().Dimensions().back() != weights.shape().Dim(0)) {
    kiln::detail::Throw("nn::Dense: x {} and weights {} do not fit: weights must be [x's last axis, out...]",
                        x.shape(), weights.shape());
  }
  // [lead..., in] x [in, out...] -> [lead..., out...].
  Node y = graph::Dot(x, weights).General({x.rank() - 1}, {}, {0}, {});
  if (bias.Ok()) {
    const std::vector<int64_t> out(weights.shape().Dimensions().begin() + 1,
                                   weights.shape().Dimensions().end());
    if (bias.shape().Dimensions() != out)
      kiln::detail::Throw("nn::Dense: bias {} must be [{}] (the weights' output axes)", bias.shape(),
                          fmt::join(out, ", "));
    // Size-1 leading axes broadcast on the add (x's leading axes may be dynamic).
    y = y + graph::InsertAxes(bias, std::vector<int>(static_cast<size_t>(x.rank() - 1), 0));
  }
  return activation ? activation(y) : y;
}

Node LayerNorm(Node x, const std::vector<int>& axes, Node gamma, Node beta, double epsilon) {
  CheckX("LayerNorm", x);
  const std::vector<int> ax = NormAxes("LayerNorm", x, axes);
  Node centred = x - KeptMean(x, ax);
  Node y = centred * graph::Rsqrt(KeptMean(centred * centred, ax) + epsilon);
  return ScaleAndShift("LayerNorm", y, x, gamma, beta, ax);
}

Node RMSNorm(Node x, const std::vector<int>& axes, Node gamma, double epsilon) {
  CheckX("RMSNorm", x);
  const std::vector<int> ax = NormAxes("RMSNorm", x, axes);
  Node y = x * graph::Rsqrt(KeptMean(x * x, ax) + epsilon);
  return ScaleAndShift("RMSNorm", y, x, gamma, Node(), ax);
}

Node BatchNormInference(Node x, Node mean, Node variance, Node gamma, Node beta, double epsilon,
                        int feature_axis) {
  CheckX("BatchNormInference", x);
  if (!mean.Ok() || !variance.Ok())
    kiln::detail::Throw("nn::BatchNormInference: mean and variance are required");
  const std::vector<int> ax = NormAxes("BatchNormInference", x, {feature_axis});
  Node m = ParamFor("BatchNormInference", "mean", mean, x, ax);
  Node v = ParamFor("BatchNormInference", "variance", variance, x, ax);
  Node y = (x - m) * graph::Rsqrt(v + epsilon);
  return ScaleAndShift("BatchNormInference", y, x, gamma, beta, ax);
}

Node Softcap(Node x, double cap) {
  CheckX("Softcap", x);
  if (!(cap > 0)) kiln::detail::Throw("nn::Softcap: cap {} must be > 0", cap);
  return graph::Tanh(x / cap) * cap;
}

Node Dropout(Node x, Node& rng_state, double rate, bool training) {
  CheckX("Dropout", x);
  if (!(rate >= 0 && rate < 1)) kiln::detail::Throw("nn::Dropout: rate {} is not in [0, 1)", rate);
  if (!training || rate == 0) return x;
  if (!rng_state.Ok()) kiln::detail::Throw("nn::Dropout: rng_state is an invalid node");
  auto [next, u] = graph::RandomUniform(rng_state, x.shape());
  rng_state = next;
  Node keep = graph::GreaterOrEqual(u, graph::ScalarLike(u, rate));
  return graph::Where(keep, x * (1 / (1 - rate)), graph::ZerosLike(x));
}

}  // namespace kiln::nn
