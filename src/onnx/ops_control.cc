// ONNX's control flow: If, Loop and Scan, whose subgraph attributes are converted through the
// Context. A condition or trip count known at import builds the subgraphs inline (a branch, the
// unrolled iterations); otherwise kiln's If and While run them as sub-programs.

#include <fmt/format.h>

#include "kiln/graph/control_flow.h"
#include "onnx/convert.h"

namespace kiln::onnx::internal {

namespace {

using V = std::vector<Node>;
using Captured = std::vector<std::pair<std::string, Node>>;
using namespace kiln::graph;  // NOLINT

/// The most iterations unrolled (Loop with scan outputs, Scan): beyond, the graph would be huge.
constexpr int64_t kMaxUnroll = 4096;

/// The nodes of `values`.
V Nodes(const std::vector<Value>& values) {
  V r;
  for (const Value& v : values) r.push_back(v.node);
  return r;
}

/// A condition (a Bool with one element) as a scalar node.
Node ScalarCondition(const Context& c, Node cond, const char* what) {
  if (cond.dtype() != DType::Bool || cond.shape().Size() != 1)
    c.Fail(fmt::format("{} must be a Bool with one element, got {}", what, cond.shape()));
  return cond.rank() == 0 ? cond : Reshape(cond, {});
}

/// A dynamic trip count M (an Int64 with one element) as a scalar node.
Node ScalarTripCount(const Context& c, Node m) {
  if (m.dtype() != DType::Int64 || m.shape().Size() != 1)
    c.Fail(fmt::format("the trip count M must be an Int64 with one element, got {}", m.shape()));
  return m.rank() == 0 ? m : Reshape(m, {});
}

/// A condition's value when known at import.
std::optional<bool> KnownCondition(const Context& c, const Value& cond, const char* what) {
  if (!cond.constant) return std::nullopt;
  const std::vector<double> d = cond.constant->ToDoubles();
  if (d.size() != 1) c.Fail(fmt::format("{} must have one element, got {}", what, cond.constant->shape()));
  return d[0] != 0;
}

/// `parts` (of equal shapes) stacked along a new axis `axis` (negative from the end).
Node StackParts(const Context& c, const V& parts, int64_t axis, const std::string& what) {
  for (const Node& p : parts)
    if (p.shape() != parts[0].shape())
      c.Fail(
          fmt::format("{} changes shape across iterations: {}, then {}", what, parts[0].shape(), p.shape()));
  return Stack(parts, Axis(c, axis, parts[0].rank() + 1));
}

/// `captured` with its nodes replaced by `params` from index `first` on (a sub-program's view).
Captured Rebind(const Captured& captured, const V& params, size_t first) {
  Captured r;
  for (size_t i = 0; i < captured.size(); ++i) r.emplace_back(captured[i].first, params[first + i]);
  return r;
}

// ---- If -------------------------------------------------------------------------------------

/// If(cond): then_branch's outputs when cond holds, else else_branch's.
V If(const Context& c) {
  const ::onnx::GraphProto& then_g = c.GraphAttr("then_branch");
  const ::onnx::GraphProto& else_g = c.GraphAttr("else_branch");
  if (then_g.input_size() != 0 || else_g.input_size() != 0) c.Fail("the branches must take no inputs");
  if (then_g.output_size() != else_g.output_size())
    c.Fail(fmt::format("then_branch gives {} outputs, else_branch {}", then_g.output_size(),
                       else_g.output_size()));
  const Value cond{c.In(0), c.Constant(0)};
  if (const std::optional<bool> k = KnownCondition(c, cond, "the condition")) {
    // Known at import: only the chosen branch, inline (its shapes are free).
    return Nodes(c.Subgraph(*k ? then_g : else_g, c.graph(), {}));
  }
  const Node pred = ScalarCondition(c, cond.node, "the condition");
  const Captured captured = c.Captures({&then_g, &else_g});
  // The predicate goes in the operands too: the branches reach their graph through a parameter.
  V operands = {pred};
  for (const auto& [name, n] : captured) operands.push_back(n);
  std::vector<Shape> then_shapes;
  const V outs = graph::If(
      pred,
      [&](const V& params) {
        V r = Nodes(c.Subgraph(then_g, params[0].graph(), {}, Rebind(captured, params, 1)));
        for (const Node& n : r) then_shapes.push_back(n.shape());
        return r;
      },
      [&](const V& params) {
        V r = Nodes(c.Subgraph(else_g, params[0].graph(), {}, Rebind(captured, params, 1)));
        for (size_t i = 0; i < r.size() && i < then_shapes.size(); ++i)
          if (r[i].shape() != then_shapes[i])
            c.Fail(fmt::format(
                "output {} is {} in then_branch but {} in else_branch: with a condition known only when "
                "the model runs, both branches must give the same shapes",
                i, then_shapes[i], r[i].shape()));
        return r;
      },
      operands);
  return outs;
}

// ---- Loop -----------------------------------------------------------------------------------

/// Loop(M, cond, v_initial...): body(iteration, cond, carried...) -> (cond, carried..., scans...)
/// while cond holds and iteration < M. Unrolled when M is known (scan outputs need that and a
/// condition known at import); otherwise, or from where the condition stops being known, a
/// While over (iteration, cond, M, carried..., captured...).
V Loop(const Context& c) {
  const ::onnx::GraphProto& body = c.GraphAttr("body");
  const int n_carried = std::max(c.NumInputs() - 2, 0);
  if (body.input_size() != n_carried + 2)
    c.Fail(fmt::format("the body takes {} inputs; with {} loop-carried values it must take {}",
                       body.input_size(), n_carried, n_carried + 2));
  const int n_scan = body.output_size() - 1 - n_carried;
  if (n_scan < 0)
    c.Fail(fmt::format("the body gives {} outputs, fewer than the condition and {} loop-carried values",
                       body.output_size(), n_carried));
  Graph& g = c.graph();
  std::optional<int64_t> trips;
  if (c.Has(0) && c.Constant(0)) {
    const std::vector<int64_t> m = c.Ints(0, "trip count M");
    if (m.size() != 1) c.Fail("the trip count M must have one element");
    trips = std::max<int64_t>(m[0], 0);
  }
  Value cond = c.Has(1) ? Value{c.In(1), c.Constant(1)} : Value{Node(), Tensor::FromScalar(true)};
  std::vector<Value> carried;
  for (int i = 2; i < c.NumInputs(); ++i) carried.push_back(Value{c.In(i), c.Constant(i)});
  if (n_scan > 0 && !c.Has(0)) c.Fail("a loop with scan outputs needs a trip count M (it sets their length)");
  if (n_scan > 0 && !trips) KnownInput(c, 0, "trip count M (it sets the length of the scan outputs)");

  // Unrolled, while the trip count and the condition are known.
  int64_t i = 0;
  std::vector<V> scans(static_cast<size_t>(n_scan));
  bool dynamic = !trips || (n_scan == 0 && *trips > kMaxUnroll);
  for (; !dynamic && i < *trips; ++i) {
    const std::optional<bool> k = KnownCondition(c, cond, "the condition");
    if (k && !*k) break;
    if (!k) {
      if (n_scan > 0)
        c.Fail(
            "its condition must be known when the model is imported: the length of its scan outputs "
            "depends on it");
      dynamic = true;
      break;
    }
    if (i >= kMaxUnroll)
      c.Fail(fmt::format("it runs over {} iterations with scan outputs: kiln unrolls at most that many",
                         kMaxUnroll));
    std::vector<Value> in = {Value{Node(), Tensor::FromScalar<int64_t>(i)}, cond};
    in.insert(in.end(), carried.begin(), carried.end());
    const std::vector<Value> out = c.Subgraph(body, g, in);
    cond = out[0];
    carried.assign(out.begin() + 1, out.begin() + 1 + n_carried);
    for (int s = 0; s < n_scan; ++s)
      scans[static_cast<size_t>(s)].push_back(out[static_cast<size_t>(1 + n_carried + s)].node);
  }
  V result;
  if (!dynamic) {
    result = Nodes(carried);
    for (int s = 0; s < n_scan; ++s) {
      V& parts = scans[static_cast<size_t>(s)];
      if (parts.empty()) {
        // No iteration: an empty stack of the shape one iteration gives (built, then unused).
        std::vector<Value> in = {Value{Node(), Tensor::FromScalar<int64_t>(0)}, cond};
        in.insert(in.end(), carried.begin(), carried.end());
        const Node one = c.Subgraph(body, g, in)[static_cast<size_t>(1 + n_carried + s)].node;
        std::vector<AxisRangeSpec> none(static_cast<size_t>(one.rank() + 1), AxisRange());
        none[0] = AxisRange(0, 0);
        result.push_back(graph::Slice(InsertAxes(one, {0}), none));
      } else {
        result.push_back(StackParts(c, parts, 0, fmt::format("scan output {}", s)));
      }
    }
    return result;
  }

  // A While from iteration i: state (iteration, cond, M?, carried..., captured...).
  const Captured captured = c.Captures({&body});
  V state = {Scalar(g, DType::Int64, i),
             cond.node.Ok() ? ScalarCondition(c, cond.node, "the condition") : Const(g, *cond.constant)};
  const bool has_m = c.Has(0);
  if (has_m) {
    state.push_back(trips ? Scalar(g, DType::Int64, *trips) : ScalarTripCount(c, c.In(0)));
  }
  const size_t first_carried = state.size();
  for (const Value& v : carried) state.push_back(v.node);
  const size_t first_captured = state.size();
  for (const auto& [name, n] : captured) state.push_back(n);
  const V final_state = While(
      [&](const V& s) { return has_m ? LogicalAnd(s[1], Less(s[0], s[2])) : s[1]; },
      [&](const V& s) {
        std::vector<Value> in = {Value{s[0], std::nullopt}, Value{s[1], std::nullopt}};
        for (size_t k = first_carried; k < first_captured; ++k) in.push_back(Value{s[k], std::nullopt});
        const std::vector<Value> out =
            c.Subgraph(body, s[0].graph(), in, Rebind(captured, s, first_captured));
        V next = {AddScalar(s[0], 1), ScalarCondition(c, out[0].node, "the body's condition output")};
        if (has_m) next.push_back(s[2]);
        for (int k = 0; k < n_carried; ++k) {
          const Node v = out[static_cast<size_t>(1 + k)].node;
          const Shape& want = s[first_carried + static_cast<size_t>(k)].shape();
          if (v.shape() != want)
            c.Fail(fmt::format(
                "loop-carried value {} changes from {} to {} in an iteration: a loop whose trip count or "
                "condition is known only when the model runs keeps its shapes",
                k, want, v.shape()));
          next.push_back(v);
        }
        next.insert(next.end(), s.begin() + static_cast<std::ptrdiff_t>(first_captured), s.end());
        return next;
      },
      state);
  return V(final_state.begin() + static_cast<std::ptrdiff_t>(first_carried),
           final_state.begin() + static_cast<std::ptrdiff_t>(first_captured));
}

// ---- Scan -----------------------------------------------------------------------------------

/// One scan, unrolled: body(states..., slices...) -> (states..., scan outputs...) over `length`
/// slices of `inputs` along `in_axes` (from the end where `in_reverse`); the scan outputs stacked
/// along `out_axes` (in reverse where `out_reverse`). Returns the final states, then the stacks.
V UnrolledScan(const Context& c, const ::onnx::GraphProto& body, std::vector<Value> states, const V& inputs,
               const std::vector<int>& in_axes, const std::vector<bool>& in_reverse, int64_t length,
               const std::vector<int64_t>& out_axes, const std::vector<bool>& out_reverse) {
  const size_t n_states = states.size(), n_out = out_axes.size();
  std::vector<V> scans(n_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Value> in = states;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const int64_t at = in_reverse[k] ? length - 1 - t : t;
      std::vector<AxisRangeSpec> r(static_cast<size_t>(inputs[k].rank()), AxisRange());
      r[static_cast<size_t>(in_axes[k])] = AxisRange(at, at + 1);
      in.push_back(Value{Squeeze(graph::Slice(inputs[k], r), {in_axes[k]}), std::nullopt});
    }
    const std::vector<Value> out = c.Subgraph(body, c.graph(), in);
    states.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n_states));
    for (size_t k = 0; k < n_out; ++k) scans[k].push_back(out[n_states + k].node);
  }
  V result = Nodes(states);
  for (size_t k = 0; k < n_out; ++k) {
    if (out_reverse[k]) std::reverse(scans[k].begin(), scans[k].end());
    result.push_back(StackParts(c, scans[k], out_axes[k], fmt::format("scan output {}", k)));
  }
  return result;
}

/// A list attribute of `n` values (`fallback` each when absent).
std::vector<int64_t> PerInput(const Context& c, const std::string& name, size_t n, int64_t fallback) {
  std::vector<int64_t> v = c.IntList(name, std::vector<int64_t>(n, fallback));
  if (v.size() != n) c.Fail(fmt::format("attribute {} has {} values, expected {}", name, v.size(), n));
  return v;
}

/// Whether a direction attribute's value means reverse (0 forward, 1 reverse).
bool Reverse(const Context& c, const std::string& name, int64_t d) {
  if (d != 0 && d != 1) c.Fail(fmt::format("attribute {} has value {} (0 or 1 expected)", name, d));
  return d == 1;
}

/// Scan: opset 8 takes (sequence_lens?, states..., inputs...) with a batch axis 0 and the scan
/// axis 1; opset 9 takes (states..., inputs...) scanned along scan_input_axes.
V Scan(const Context& c) {
  const ::onnx::GraphProto& body = c.GraphAttr("body");
  const int64_t n_in = c.Int("num_scan_inputs", -1);
  const bool batched = c.opset() < 9;
  const int first = batched ? 1 : 0;
  if (n_in < 1 || n_in > c.NumInputs())
    c.Fail(fmt::format("num_scan_inputs {} does not fit its {} inputs", n_in, c.NumInputs()));
  const int64_t n_states = c.NumInputs() - first - n_in;
  if (n_states < 0) c.Fail(fmt::format("num_scan_inputs {} does not fit its {} inputs", n_in, c.NumInputs()));
  if (body.input_size() != n_states + n_in)
    c.Fail(fmt::format("the body takes {} inputs, expected {} states and {} scan inputs", body.input_size(),
                       n_states, n_in));
  const int64_t n_out = body.output_size() - n_states;
  if (n_out < 0)
    c.Fail(fmt::format("the body gives {} outputs, fewer than its {} states", body.output_size(), n_states));
  const size_t ni = static_cast<size_t>(n_in), no = static_cast<size_t>(n_out);
  std::vector<Value> states;
  for (int64_t k = 0; k < n_states; ++k) {
    const int i = first + static_cast<int>(k);
    states.push_back(Value{c.In(i), c.Constant(i)});
  }
  V inputs;
  for (int64_t k = 0; k < n_in; ++k) inputs.push_back(c.In(first + static_cast<int>(n_states + k)));
  std::vector<bool> in_reverse, out_reverse(no, false);
  std::vector<int> in_axes;
  std::vector<int64_t> out_axes(no, 0);
  if (batched) {
    for (int64_t d : PerInput(c, "directions", ni, 0)) in_reverse.push_back(Reverse(c, "directions", d));
    in_axes.assign(ni, 0);  // Of each batch element's slice.
  } else {
    for (int64_t d : PerInput(c, "scan_input_directions", ni, 0))
      in_reverse.push_back(Reverse(c, "scan_input_directions", d));
    const std::vector<int64_t> axes = PerInput(c, "scan_input_axes", ni, 0);
    for (size_t k = 0; k < ni; ++k) in_axes.push_back(Axis(c, axes[k], inputs[k].rank()));
    const std::vector<int64_t> dirs = PerInput(c, "scan_output_directions", no, 0);
    for (size_t k = 0; k < no; ++k) out_reverse[k] = Reverse(c, "scan_output_directions", dirs[k]);
    out_axes = PerInput(c, "scan_output_axes", no, 0);
  }
  // The sequence length: the scan axis (1 with a batch axis) of every input, static.
  const int seq_axis_offset = batched ? 1 : 0;
  int64_t length = -1;
  for (size_t k = 0; k < ni; ++k) {
    if (inputs[k].rank() < (batched ? 2 : 1))
      c.Fail(fmt::format("scan input {} ({}) has no {}sequence axis", k, inputs[k].shape(),
                         batched ? "batch and " : ""));
    const int64_t n = inputs[k].shape().Dimensions()[static_cast<size_t>(in_axes[k] + seq_axis_offset)];
    if (n == Shape::kDynamic) c.Fail(fmt::format("scan input {} has a dynamic sequence axis", k));
    if (length >= 0 && n != length)
      c.Fail(fmt::format("scan inputs have sequence lengths {} and {}", length, n));
    length = n;
  }
  if (length < 1) c.Fail("the sequence is empty");
  if (length > kMaxUnroll)
    c.Fail(
        fmt::format("the sequence has {} elements: kiln unrolls Scan over at most {}", length, kMaxUnroll));
  if (!batched)
    return UnrolledScan(c, body, states, inputs, in_axes, in_reverse, length, out_axes, out_reverse);

  // Opset 8: each batch element on its own, the results stacked along the batch axis.
  if (c.Has(0)) {
    for (int64_t l : c.Ints(0, "sequence_lens"))
      if (l != length)
        c.Fail(fmt::format("sequence_lens {} differs from the sequence length {}: not supported", l, length));
  }
  const int64_t batch = inputs[0].shape().Dimensions()[0];
  if (batch == Shape::kDynamic || batch < 1)
    c.Fail(fmt::format("the batch axis of {} must be static and non-empty", inputs[0].shape()));
  for (const Node& in : inputs)
    if (in.shape().Dimensions()[0] != batch)
      c.Fail(fmt::format("scan inputs have batch sizes {} and {}", batch, in.shape().Dimensions()[0]));
  if (batch > kMaxUnroll / length)
    c.Fail(fmt::format("{} batch elements of {} steps: kiln unrolls Scan over at most {} in all", batch,
                       length, kMaxUnroll));
  auto element = [](Node x, int64_t b) {
    std::vector<AxisRangeSpec> r(static_cast<size_t>(x.rank()), AxisRange());
    r[0] = AxisRange(b, b + 1);
    return Squeeze(graph::Slice(x, r), {0});
  };
  std::vector<V> per_batch(static_cast<size_t>(n_states + n_out));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> s;
    for (const Value& v : states) {
      if (v.node.rank() < 1 || v.node.shape().Dimensions()[0] != batch)
        c.Fail(fmt::format("state {} must have the batch axis first ({}), got {}", s.size(), batch,
                           v.node.shape()));
      s.push_back(Value{element(v.node, b), std::nullopt});
    }
    V x;
    for (const Node& in : inputs) x.push_back(element(in, b));
    const V r = UnrolledScan(c, body, s, x, in_axes, in_reverse, length, out_axes, out_reverse);
    for (size_t k = 0; k < r.size(); ++k) per_batch[k].push_back(r[k]);
  }
  V result;
  for (size_t k = 0; k < per_batch.size(); ++k)
    result.push_back(StackParts(c, per_batch[k], 0, fmt::format("output {}", k)));
  return result;
}

}  // namespace

void AddControlConverters(std::map<std::string, Converter>& m) {
  m["If"] = If;
  m["Loop"] = Loop;
  m["Scan"] = Scan;
}

}  // namespace kiln::onnx::internal
