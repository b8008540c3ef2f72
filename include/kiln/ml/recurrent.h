#pragma once
/// @file
/// Recurrent layers: LSTM (Hochreiter & Schmidhuber 1997) and GRU (Cho et al. 2014), with
/// PyTorch's equations, weight layout and names, so nn.LSTM / nn.GRU weights load as they are.
///
///   layers::RnnResult r = layers::LSTM(scope.In("lstm"), x, 64).Bidirectional().Lengths(len).Done();
///   // r.outputs [batch, seq, 2 * 64]; r.last_hidden, r.last_cell [2, batch, 64]
///
/// LSTM, per step t (σ the sigmoid, ⊙ the element-wise product):
///   i = σ(W_ii x + b_ii + W_hi h + b_hi)    f = σ(W_if x + b_if + W_hf h + b_hf)
///   g = tanh(W_ig x + b_ig + W_hg h + b_hg) o = σ(W_io x + b_io + W_ho h + b_ho)
///   c' = f ⊙ c + i ⊙ g                      h' = o ⊙ tanh(c')
/// GRU:
///   r = σ(W_ir x + b_ir + W_hr h + b_hr)    z = σ(W_iz x + b_iz + W_hz h + b_hz)
///   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
///   h' = (1 - z) ⊙ n + z ⊙ h
/// Variables (per direction; the reverse one's names end in "_reverse"): "weight_ih_l0"
/// [gates·hidden, features], "weight_hh_l0" [gates·hidden, hidden], "bias_ih_l0" and
/// "bias_hh_l0" [gates·hidden], the gates stacked in PyTorch's order (LSTM i, f, g, o; GRU r, z,
/// n). They start uniform in ±1/√hidden (PyTorch's), or from the scope's initializer if it has one.
///
/// The sequence is unrolled: the graph holds one step per element of the (static) sequence axis.

#include <cstdint>

#include "kiln/graph/ops.h"
#include "kiln/model/store.h"

namespace kiln::layers {

using graph::Node;

/// Which way a recurrent layer reads its sequence.
enum class RnnDirection {
  kForward,        ///< From the first element to the last.
  kReverse,        ///< From the last to the first.
  kBidirectional,  ///< Both; the outputs are concatenated, forward first.
};

/// What a recurrent layer returns.
struct RnnResult {
  Node outputs;      ///< [batch, seq, directions · hidden]: each step's hidden state (zero past a length).
  Node last_hidden;  ///< [directions, batch, hidden]: the hidden state after each sequence's last step.
  Node last_cell;    ///< [directions, batch, hidden]: the LSTM's cell state then (invalid for a GRU).
};

/// Configures an LSTM or GRU on x [batch, seq, features] (float); LSTM() and GRU() make one.
class RecurrentBuilder {
 public:
  /// The cell of the layer.
  enum class Cell { kLSTM, kGRU };
  /// A layer of `cell` with `hidden` units, its variables in `scope`.
  RecurrentBuilder(Cell cell, model::Scope scope, Node x, int64_t hidden)
      : cell_(cell), scope_(std::move(scope)), x_(x), hidden_(hidden) {}
  /// The direction (forward by default).
  RecurrentBuilder& Direction(RnnDirection direction);
  /// Both directions (Direction(kBidirectional)).
  RecurrentBuilder& Bidirectional() { return Direction(RnnDirection::kBidirectional); }
  /// Sequences of different lengths, [batch] integers in [0, seq] (PyTorch's packed sequences):
  /// the steps of example b past lengths[b] leave its state unchanged and output zeros, the
  /// reverse direction starts at each sequence's last step, and the last states are those at
  /// each sequence's end. Lengths outside [0, seq] are clamped.
  RecurrentBuilder& Lengths(Node lengths);
  /// The initial states [directions, batch, hidden] (zeros by default); `c0` for an LSTM only.
  RecurrentBuilder& InitialState(Node h0, Node c0 = Node());
  /// Whether the layer has the bias variables (true by default, as PyTorch's `bias`).
  RecurrentBuilder& UseBias(bool use_bias);
  /// Builds the layer; kiln::Error naming LSTM or GRU and the scope when x is not float
  /// [batch, seq, features] with a static seq axis, hidden < 1, or the lengths or initial states
  /// have other shapes.
  RnnResult Done() const;

 private:
  Cell cell_;
  model::Scope scope_;
  Node x_, lengths_, h0_, c0_;
  int64_t hidden_;
  RnnDirection direction_ = RnnDirection::kForward;
  bool bias_ = true;
};

/// Starts an LSTM of `hidden` units on x [batch, seq, features]; finish with .Done().
inline RecurrentBuilder LSTM(model::Scope scope, Node x, int64_t hidden) {
  return RecurrentBuilder(RecurrentBuilder::Cell::kLSTM, std::move(scope), x, hidden);
}
/// Starts a GRU of `hidden` units on x [batch, seq, features]; finish with .Done().
inline RecurrentBuilder GRU(model::Scope scope, Node x, int64_t hidden) {
  return RecurrentBuilder(RecurrentBuilder::Cell::kGRU, std::move(scope), x, hidden);
}

}  // namespace kiln::layers
