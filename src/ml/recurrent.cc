// layers::LSTM and layers::GRU: PyTorch's recurrent cells, unrolled over the sequence.

#include "kiln/ml/recurrent.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "kiln/ml/initializers.h"

namespace kiln::layers {

RecurrentBuilder& RecurrentBuilder::Direction(RnnDirection direction) {
  direction_ = direction;
  return *this;
}

RecurrentBuilder& RecurrentBuilder::Lengths(Node lengths) {
  lengths_ = lengths;
  return *this;
}

RecurrentBuilder& RecurrentBuilder::InitialState(Node h0, Node c0) {
  h0_ = h0;
  c0_ = c0;
  return *this;
}

RecurrentBuilder& RecurrentBuilder::UseBias(bool use_bias) {
  bias_ = use_bias;
  return *this;
}

namespace {

using graph::AxisElem;
using graph::AxisRange;

// Columns [k·h, (k+1)·h) of a [batch, gates·h] node: gate k.
Node Gate(Node x, int k, int64_t h) { return graph::Slice(x, {AxisRange(), AxisRange(k * h, (k + 1) * h)}); }

}  // namespace

RnnResult RecurrentBuilder::Done() const {
  const bool lstm = cell_ == Cell::kLSTM;
  const std::string what = fmt::format("layers::{}({})", lstm ? "LSTM" : "GRU", scope_.Path());
  if (!x_.Ok()) kiln::detail::Throw("{}: x is an invalid node", what);
  if (x_.rank() != 3 || !IsFloat(x_.dtype()))
    kiln::detail::Throw("{}: x {} must be float [batch, seq, features]", what, x_.shape());
  if (x_.shape().IsDynamic())
    kiln::detail::Throw("{}: x {} has a dynamic axis; the sequence is unrolled, so its shape must be static",
                        what, x_.shape());
  if (hidden_ < 1) kiln::detail::Throw("{}: hidden size {} is below 1", what, hidden_);
  graph::Graph& g = x_.graph();
  const DType dt = x_.dtype();
  const int64_t batch = x_.shape().Dim(0), seq = x_.shape().Dim(1), features = x_.shape().Dim(2);
  const int64_t h = hidden_;
  const int gates = lstm ? 4 : 3;
  const int dirs = direction_ == RnnDirection::kBidirectional ? 2 : 1;
  const Shape state_shape(dt, {dirs, batch, h});
  auto check_state = [&](Node s, const char* name) {
    if (s.Ok() && s.shape() != state_shape)
      kiln::detail::Throw("{}: initial state {} is {}, not {}", what, name, s.shape(), state_shape);
  };
  check_state(h0_, "h0");
  if (c0_.Ok() && !lstm) kiln::detail::Throw("{}: a GRU has no cell state (c0)", what);
  check_state(c0_, "c0");
  Node valid_len;
  if (lengths_.Ok()) {
    if (!IsInt(lengths_.dtype()) || lengths_.shape().Dimensions() != std::vector<int64_t>{batch})
      kiln::detail::Throw("{}: lengths {} must be integers [{}]", what, lengths_.shape(), batch);
    valid_len = graph::ConvertDType(lengths_, DType::Int64);
  }
  model::Scope scope = scope_;
  if (!scope.GetInitializer()) {
    const double k = 1.0 / std::sqrt(static_cast<double>(h));
    scope = scope.WithInitializer(initializers::RandomUniform(-k, k));
  }

  std::vector<Node> outputs, last_h, last_c;
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction_ == RnnDirection::kReverse || d == 1;
    const std::string suffix = reverse ? "_l0_reverse" : "_l0";
    Node w_ih = scope.VariableWithShape("weight_ih" + suffix, Shape(dt, {gates * h, features})).NodeValue(g);
    Node w_hh = scope.VariableWithShape("weight_hh" + suffix, Shape(dt, {gates * h, h})).NodeValue(g);
    // The input projections of every step at once: [batch, seq, gates·h].
    Node xw = graph::Einsum("bsf,gf->bsg", x_, w_ih);
    Node b_hh;
    if (bias_) {
      Node b_ih = scope.VariableWithShape("bias_ih" + suffix, Shape(dt, {gates * h})).NodeValue(g);
      b_hh = scope.VariableWithShape("bias_hh" + suffix, Shape(dt, {gates * h})).NodeValue(g);
      xw = xw + graph::BroadcastToDims(graph::Reshape(b_ih, {1, 1, gates * h}), {batch, seq, gates * h});
      b_hh = graph::BroadcastToDims(graph::Reshape(b_hh, {1, gates * h}), {batch, gates * h});
    }
    Node hs = h0_.Ok() ? graph::Reshape(graph::Slice(h0_, {AxisElem(d)}), {batch, h})
                       : graph::Zeros(g, Shape(dt, {batch, h}));
    Node cs;
    if (lstm)
      cs = c0_.Ok() ? graph::Reshape(graph::Slice(c0_, {AxisElem(d)}), {batch, h})
                    : graph::Zeros(g, Shape(dt, {batch, h}));
    std::vector<Node> steps(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; ++i) {
      const int64_t t = reverse ? seq - 1 - i : i;
      Node xt = graph::Reshape(graph::Slice(xw, {AxisRange(), AxisElem(t)}), {batch, gates * h});
      Node hw = graph::Einsum("bh,gh->bg", hs, w_hh);
      if (bias_) hw = hw + b_hh;
      Node new_h, new_c;
      if (lstm) {
        Node z = xt + hw;
        Node in = graph::Sigmoid(Gate(z, 0, h)), forget = graph::Sigmoid(Gate(z, 1, h));
        Node cand = graph::Tanh(Gate(z, 2, h)), out = graph::Sigmoid(Gate(z, 3, h));
        new_c = forget * cs + in * cand;
        new_h = out * graph::Tanh(new_c);
      } else {
        Node r = graph::Sigmoid(Gate(xt, 0, h) + Gate(hw, 0, h));
        Node upd = graph::Sigmoid(Gate(xt, 1, h) + Gate(hw, 1, h));
        Node n = graph::Tanh(Gate(xt, 2, h) + r * Gate(hw, 2, h));
        new_h = (graph::OnesLike(upd) - upd) * n + upd * hs;
      }
      if (valid_len.Ok()) {
        // Steps past a sequence's length keep its state and output zeros.
        Node valid = graph::BroadcastToDims(
            graph::Reshape(graph::Greater(valid_len, graph::Scalar(g, DType::Int64, t)), {batch, 1}),
            {batch, h});
        steps[static_cast<size_t>(t)] = graph::Where(valid, new_h, graph::ZerosLike(new_h));
        hs = graph::Where(valid, new_h, hs);
        if (lstm) cs = graph::Where(valid, new_c, cs);
      } else {
        steps[static_cast<size_t>(t)] = new_h;
        hs = new_h;
        if (lstm) cs = new_c;
      }
    }
    outputs.push_back(graph::Stack(steps, 1));
    last_h.push_back(hs);
    if (lstm) last_c.push_back(cs);
  }
  RnnResult result;
  result.outputs = dirs == 1 ? outputs[0] : graph::Concatenate(outputs, 2);
  result.last_hidden = graph::Stack(last_h, 0);
  if (lstm) result.last_cell = graph::Stack(last_c, 0);
  return result;
}

}  // namespace kiln::layers
