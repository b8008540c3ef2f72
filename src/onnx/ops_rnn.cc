// ONNX's recurrent layers: RNN, GRU and LSTM, unrolled over the (static) sequence axis.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "kiln/graph/ops_util.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using namespace kiln::graph;  // NOLINT

// ---- Activations ---------------------------------------------------------------------------

/// One function of the `activations` attribute with the alpha and beta it takes.
struct Activation {
  std::string name;  // Lower case.
  double alpha = 0, beta = 0;
};

/// How many of activation_alpha / activation_beta each function takes, and their defaults
/// (those of the ONNX operators of the same name).
struct ActivationKind {
  const char* name;
  int alphas, betas;
  double alpha, beta;
};
constexpr ActivationKind kActivationKinds[] = {
    {"sigmoid", 0, 0, 0, 0},      {"tanh", 0, 0, 0, 0},
    {"relu", 0, 0, 0, 0},         {"affine", 1, 1, 1, 0},
    {"leakyrelu", 1, 0, 0.01, 0}, {"thresholdedrelu", 1, 0, 1, 0},
    {"scaledtanh", 1, 1, 1, 1},   {"hardsigmoid", 1, 1, 0.2, 0.5},
    {"elu", 1, 0, 1, 0},          {"softsign", 0, 0, 0, 0},
    {"softplus", 0, 0, 0, 0},
};

/// f(x) for one activation.
Node Apply(const Activation& a, Node x) {
  const std::string& n = a.name;
  if (n == "sigmoid") return Sigmoid(x);
  if (n == "tanh") return Tanh(x);
  if (n == "relu") return Max(x, ZerosLike(x));
  if (n == "affine") return x * a.alpha + a.beta;
  if (n == "leakyrelu") return LeakyReluOf(x, a.alpha);
  if (n == "thresholdedrelu") return ThresholdedReluOf(x, a.alpha);
  if (n == "scaledtanh") return Tanh(x * a.beta) * a.alpha;
  if (n == "hardsigmoid") return HardSigmoidOf(x, a.alpha, a.beta);
  if (n == "elu") return EluOf(x, a.alpha);
  if (n == "softsign") return SoftsignOf(x);
  return Softplus(x);  // "softplus", the last one Activations accepts.
}

/// The activations of every direction, `defaults.size()` per direction: the attribute's (names
/// matched ignoring case; one direction's list serves both of a bidirectional layer) or the
/// defaults. activation_alpha / activation_beta are consumed in order by the functions that take
/// them; those not given keep their operator's default.
std::vector<Activation> Activations(const Context& c, const std::vector<std::string>& defaults, int dirs) {
  std::vector<std::string> names;
  if (c.HasAttr("activations")) {
    for (const std::string& s : c.Attr("activations").strings()) names.push_back(s);
  } else {
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  const size_t per = defaults.size(), want = per * static_cast<size_t>(dirs);
  if (names.size() != want && names.size() != per)
    c.Fail(fmt::format("activations lists {} functions, expected {} ({} per direction)", names.size(), want,
                       per));
  const std::vector<float> alphas = c.FloatList("activation_alpha"), betas = c.FloatList("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> acts;
  for (const std::string& name : names) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    const auto* kind = std::find_if(std::begin(kActivationKinds), std::end(kActivationKinds),
                                    [&](const ActivationKind& k) { return lower == k.name; });
    if (kind == std::end(kActivationKinds))
      c.Fail(
          fmt::format("activation \"{}\" is not supported (Sigmoid, Tanh, Relu, Affine, LeakyRelu, "
                      "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                      name));
    Activation a{lower, kind->alpha, kind->beta};
    if (kind->alphas > 0 && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (kind->betas > 0 && next_beta < betas.size()) a.beta = betas[next_beta++];
    acts.push_back(a);
  }
  while (acts.size() < want) acts.push_back(acts[acts.size() - per]);  // The one list for both directions.
  return acts;
}

// ---- The unrolled recurrence, shared by the three ops ----------------------------------------

/// v [n] as a row [1, n], to add to a batch of rows.
Node Row(Node v) { return Reshape(v, {1, -1}); }

/// x [..., k] · mᵀ for m [n, k]: [..., n].
Node TimesTransposed(Node x, Node m) { return DotGeneral(x, {x.rank() - 1}, {}, m, {1}, {}); }

/// Piece `i` of `parts` equal ones along the last axis of x [B, parts*H].
Node Gate(Node x, int i, int parts) { return Split(x, x.rank() - 1, parts)[static_cast<size_t>(i)]; }

/// What one direction's step needs besides its input: the recurrence weights and bias, the
/// peepholes (LSTM) and the activations with the clip before them.
struct Direction {
  Node r;                  // R for this direction: [gates*H, H].
  std::optional<Node> rb;  // Its recurrence bias Rb: [gates*H].
  std::optional<Node> p;   // LSTM's peepholes (i, o, f): [3H].
  std::vector<Activation> acts;
  std::optional<double> clip;

  /// Activation k of this direction, its input clipped to [-clip, clip] when clip is given.
  Node Act(size_t k, Node x) const {
    if (clip) x = Clip(x, -*clip, *clip);
    return Apply(acts.at(k), x);
  }
  /// h · Rᵀ + Rb over R's gates [first, first + count) of `gates`.
  Node Recur(Node h, int first, int count, int gates) const {
    const int64_t hidden = h.shape().Dimensions().back();
    const AxisRangeSpec rows = AxisRange(first * hidden, (first + count) * hidden);
    const bool all = first == 0 && count == gates;
    Node y = TimesTransposed(h, all ? r : SliceAxis(r, 0, rows));
    if (rb) y = y + Row(all ? *rb : SliceAxis(*rb, 0, rows));
    return y;
  }
};

/// One time step of a cell: from xw = x_t · Wᵀ + Wb [B, gates*H] and the states (h, and c for
/// LSTM), the new states.
using Step = V (*)(const Context& c, const Direction& d, Node xw, const V& states);

/// Each batch entry's sequence length: known at import (then steps every entry covers need no
/// mask), or a graph value.
struct Lengths {
  std::optional<Node> lens;  // [B, 1] integers; none: every entry has the full length.
  int64_t covered = 0;       // Steps below this are within every entry's length.

  /// True [B, 1] where step t is within the entry's length; none where all are.
  std::optional<Node> Mask(int64_t t) const {
    if (!lens || t < covered) return std::nullopt;
    return Less(ScalarLike(*lens, t), *lens);
  }
};

Lengths SequenceLengths(const Context& c, int64_t steps, int64_t batch) {
  Lengths l;
  l.covered = steps;
  if (!c.Has(4)) return l;
  if (c.Constant(4)) {
    const std::vector<int64_t> lens = c.Ints(4, "sequence_lens");
    if (batch != Shape::kDynamic && static_cast<int64_t>(lens.size()) != batch)
      c.Fail(fmt::format("sequence_lens has {} entries for a batch of {}", lens.size(), batch));
    for (int64_t n : lens)
      if (n < 0 || n > steps) c.Fail(fmt::format("sequence length {} is outside [0, {}]", n, steps));
    l.covered = lens.empty() ? steps : *std::min_element(lens.begin(), lens.end());
    if (l.covered < steps) l.lens = Reshape(Const(c.graph(), lens), {-1, 1});
    return l;
  }
  Node lens = c.In(4);
  if (lens.rank() != 1) c.Fail(fmt::format("sequence_lens {} must have rank 1", lens.shape()));
  l.covered = 0;
  l.lens = Reshape(lens, {-1, 1});
  return l;
}

/// Input i [dirs, ...] at direction d.
Node AtDirection(Node x, int d) { return Squeeze(SliceAxis(x, 0, AxisElem(d)), {0}); }

/// The most time steps the recurrence is unrolled over (each adds a few nodes per direction).
constexpr int64_t kMaxUnrolledSteps = 4096;

/// RNN, GRU and LSTM: checks the inputs, runs `step` over the time axis in each direction and
/// assembles Y [T, dirs, B, H], Y_h [dirs, B, H] and (LSTM, `states` 2) Y_c, in the layout asked.
V Recurrent(const Context& c, int gates, int states, const std::vector<std::string>& default_acts,
            Step step) {
  const int64_t layout = c.Int("layout", 0);
  if (layout != 0 && layout != 1) c.Fail(fmt::format("layout {} is not 0 or 1", layout));
  Node x = c.In(0), w = c.In(1), r = c.In(2);
  if (x.rank() != 3) c.Fail(fmt::format("X {} must have rank 3", x.shape()));
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64 && x.dtype() != DType::Float16 &&
      x.dtype() != DType::BFloat16)
    c.Fail(fmt::format("X must be a float tensor, got {}", x.dtype()));
  if (layout == 1) x = Transpose(x, 0, 1);  // [T, B, I].
  const std::string direction = c.String("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.Fail(fmt::format("direction \"{}\" is not forward, reverse or bidirectional", direction));
  const int dirs = direction == "bidirectional" ? 2 : 1;
  if (w.rank() != 3 || r.rank() != 3)
    c.Fail(fmt::format("W {} and R {} must have rank 3", w.shape(), r.shape()));
  const int64_t r_hidden = r.shape().Dimensions()[2];
  if (r_hidden == Shape::kDynamic) c.Fail(fmt::format("R {} must have a static hidden size", r.shape()));
  const int64_t hidden = c.Int("hidden_size", r_hidden);
  if (hidden < 1 || hidden != r_hidden)
    c.Fail(fmt::format("hidden_size {} must be at least 1 and match R {}", hidden, r.shape()));
  // The bias width 2*gates*H; it bounds the other products of the hidden size.
  const int64_t bias_width = CheckedProduct(c, 2 * gates, hidden, "the gate rows of W, R and B");
  const int64_t gate_rows = bias_width / 2;
  const std::vector<int64_t> steps_batch_in = x.shape().Dimensions();
  const int64_t steps = steps_batch_in[0], batch = steps_batch_in[1];
  if (steps == Shape::kDynamic) c.Fail("the sequence length must be static to unroll the recurrence");
  if (steps < 1 || steps > kMaxUnrolledSteps)
    c.Fail(fmt::format("the sequence length {} is outside [1, {}], the steps kiln unrolls", steps,
                       kMaxUnrolledSteps));
  if (w.shape().Dimensions() != std::vector<int64_t>{dirs, gate_rows, steps_batch_in[2]} ||
      r.shape().Dimensions() != std::vector<int64_t>{dirs, gate_rows, hidden})
    c.Fail(fmt::format("W {} and R {} do not fit {} direction(s), {} gates of hidden size {} and input {}",
                       w.shape(), r.shape(), dirs, gates, hidden, steps_batch_in[2]));
  std::optional<Node> bias;
  if (c.Has(3)) {
    bias = c.In(3);
    if (bias->shape().Dimensions() != std::vector<int64_t>{dirs, bias_width})
      c.Fail(fmt::format("B {} is not [{}, {}]", bias->shape(), dirs, bias_width));
  }
  // Initial states [dirs, B, H] (in layout 1 [B, dirs, H]); zeros when not given.
  std::vector<std::optional<Node>> initial(static_cast<size_t>(states));
  for (int s = 0; s < states; ++s) {
    if (!c.Has(5 + s)) continue;
    Node init = c.In(5 + s);
    if (init.rank() != 3) c.Fail(fmt::format("initial state {} must have rank 3", init.shape()));
    if (layout == 1) init = Transpose(init, 0, 1);
    initial[static_cast<size_t>(s)] = init;
  }
  std::optional<Node> peepholes;
  if (states == 2 && c.Has(7)) {
    peepholes = c.In(7);
    if (peepholes->shape().Dimensions() != std::vector<int64_t>{dirs, 3 * hidden})
      c.Fail(fmt::format("P {} is not [{}, {}]", peepholes->shape(), dirs, 3 * hidden));
  }
  const std::vector<Activation> acts = Activations(c, default_acts, dirs);
  std::optional<double> clip;
  if (c.HasAttr("clip")) {
    clip = c.Float("clip", 0);
    if (!(*clip > 0)) c.Fail(fmt::format("clip {} is not positive", *clip));
  }
  const Lengths lengths = SequenceLengths(c, steps, batch);

  std::vector<Node> ys, finals[2];
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    Direction dir{AtDirection(r, d), std::nullopt, std::nullopt, {}, clip};
    const auto per = default_acts.size();
    dir.acts.assign(acts.begin() + static_cast<std::ptrdiff_t>(per * static_cast<size_t>(d)),
                    acts.begin() + static_cast<std::ptrdiff_t>(per * static_cast<size_t>(d + 1)));
    if (peepholes) dir.p = AtDirection(*peepholes, d);
    // Every step's input projection at once: X · Wᵀ + Wb, [T, B, gates*H].
    Node xw = TimesTransposed(x, AtDirection(w, d));
    if (bias) {
      Node b = AtDirection(*bias, d);
      xw = xw + Reshape(SliceAxis(b, 0, AxisRange(0, gate_rows)), {1, 1, -1});
      dir.rb = SliceAxis(b, 0, AxisRange(gate_rows, bias_width));
    }
    std::vector<Node> xs;
    for (int64_t t = 0; t < steps; ++t) xs.push_back(Squeeze(SliceAxis(xw, 0, AxisElem(t)), {0}));
    V state;
    for (int s = 0; s < states; ++s) {
      const auto& init = initial[static_cast<size_t>(s)];
      // Zeros [B, H] taken from xw's shape, so a dynamic batch works too (steps >= 1).
      state.push_back(init ? AtDirection(*init, d) : ZerosLike(SliceAxis(xs[0], 1, AxisRange(0, hidden))));
    }
    std::vector<Node> y(static_cast<size_t>(steps), state[0]);
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = reverse ? steps - 1 - i : i;
      V next = step(c, dir, xs[static_cast<size_t>(t)], state);
      // Past an entry's length its state stays and its output is zero.
      if (std::optional<Node> mask = lengths.Mask(t)) {
        for (size_t s = 0; s < state.size(); ++s) state[s] = Where(*mask, next[s], state[s]);
        y[static_cast<size_t>(t)] = Where(*mask, next[0], ZerosLike(next[0]));
      } else {
        state = next;
        y[static_cast<size_t>(t)] = next[0];
      }
    }
    ys.push_back(Stack(y, 0));  // [T, B, H].
    for (int s = 0; s < states; ++s) finals[s].push_back(state[static_cast<size_t>(s)]);
  }
  Node y = Stack(ys, 1);  // [T, dirs, B, H].
  if (layout == 1) y = TransposeAllAxes(y, {2, 0, 1, 3});
  V out = {y};
  for (int s = 0; s < states; ++s) {
    Node f = Stack(finals[s], 0);  // [dirs, B, H].
    out.push_back(layout == 1 ? Transpose(f, 0, 1) : f);
  }
  return out;
}

// ---- The cells --------------------------------------------------------------------------------

/// RNN: H = f(x·Wᵀ + H·Rᵀ + Wb + Rb).
V RnnStep(const Context& /*c*/, const Direction& d, Node xw, const V& s) {
  return {d.Act(0, xw + d.Recur(s[0], 0, 1, 1))};
}

/// GRU, gates z, r, h: z = f(.), r = f(.), the candidate h~ = g(x·Whᵀ + (r ⊙ H)·Rhᵀ + Rbh + Wbh)
/// (with linear_before_reset: g(x·Whᵀ + r ⊙ (H·Rhᵀ + Rbh) + Wbh)), H' = (1 - z) ⊙ h~ + z ⊙ H.
V GruStep(const Context& c, const Direction& d, Node xw, const V& s) {
  Node h = s[0];
  const int64_t hidden = h.shape().Dimensions().back();
  Node zr = SliceAxis(xw, 1, AxisRange(0, 2 * hidden)) + d.Recur(h, 0, 2, 3);
  Node z = d.Act(0, Gate(zr, 0, 2)), reset = d.Act(0, Gate(zr, 1, 2));
  Node candidate = Gate(xw, 2, 3);
  if (c.Int("linear_before_reset", 0) != 0)
    candidate = candidate + reset * d.Recur(h, 2, 1, 3);
  else
    candidate = candidate + d.Recur(reset * h, 2, 1, 3);
  Node hh = d.Act(1, candidate);
  return {(1 - z) * hh + z * h};
}

/// LSTM, gates i, o, f, c with peepholes P (i, o, f): i = f(. + Pi ⊙ C), f = f(. + Pf ⊙ C) (or
/// 1 - i with input_forget), C' = f ⊙ C + i ⊙ g(.), o = f(. + Po ⊙ C'), H' = o ⊙ h(C').
V LstmStep(const Context& c, const Direction& d, Node xw, const V& s) {
  Node h = s[0], cell = s[1];
  const V g = Split(xw + d.Recur(h, 0, 4, 4), 1, 4);
  Node pi = g[0], po = g[1], pf = g[2], pc = g[3];
  std::optional<V> p;
  if (d.p) p = Split(Row(*d.p), 1, 3);
  if (p) pi = pi + (*p)[0] * cell;
  Node i = d.Act(0, pi);
  Node f = c.Int("input_forget", 0) != 0 ? 1 - i : d.Act(0, p ? pf + (*p)[2] * cell : pf);
  Node next_cell = f * cell + i * d.Act(1, pc);
  if (p) po = po + (*p)[1] * next_cell;
  Node o = d.Act(0, po);
  return {o * d.Act(2, next_cell), next_cell};
}

V Rnn(const Context& c) { return Recurrent(c, 1, 1, {"Tanh"}, RnnStep); }
V Gru(const Context& c) { return Recurrent(c, 3, 1, {"Sigmoid", "Tanh"}, GruStep); }
V Lstm(const Context& c) { return Recurrent(c, 4, 2, {"Sigmoid", "Tanh", "Tanh"}, LstmStep); }

}  // namespace

void AddRnnConverters(std::map<std::string, Converter>& m) {
  m["RNN"] = Rnn;
  m["GRU"] = Gru;
  m["LSTM"] = Lstm;
}

}  // namespace kiln::onnx::internal
