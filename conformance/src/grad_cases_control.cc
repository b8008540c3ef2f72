// Gradient rows of the control ops: ForLoop (a While with a static trip count: products and tanh
// over several steps, values passed in the state, n = 0 and n = 1, nested loops, an If inside
// the body, empty state values), If (each branch taken, a value only one branch uses, a
// non-float result, a loop inside a branch) and OptimizationBarrier.

#include "grad_internal.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/gradient.h"

namespace kiln::conformance::internal {

namespace {

using Nodes = std::vector<Node>;

// x <- tanh(x * w + 0.1 i) for i = 0 .. n-1, with w passed through the state.
graph::GraphFn TanhSteps(int64_t n) {
  return P([n](const Nodes& p) {
    Nodes r = graph::ForLoop(
        n,
        [](Node i, const Nodes& s) {
          Node t = graph::ConvertDType(i, DType::Float64) * 0.1;
          return Nodes{graph::Tanh(s[0] * s[1] + graph::BroadcastToShape(t, s[0].shape())), s[1]};
        },
        {p[0], p[1]});
    return Nodes{r[0]};
  });
}

// (acc, x) <- (acc * x + x, sin(x) * y) over n steps, y in the state; both results out.
graph::GraphFn ProductSteps(int64_t n) {
  return P([n](const Nodes& p) {
    Nodes r = graph::ForLoop(n,
                             [](Node, const Nodes& s) {
                               return Nodes{s[0] * s[1] + s[1], graph::Sin(s[1]) * s[2], s[2]};
                             },
                             {p[0], p[1], p[2]});
    return Nodes{r[0], r[1]};
  });
}

// The predicate p[k] > 0 of an Int32 scalar input.
Node Positive(const Nodes& p, size_t k) { return graph::Greater(p[k], graph::ScalarLike(p[k], 0)); }

// If (p[2] > 0): x * y (both values) else sin(x) (y unused).
graph::GraphFn OneSidedIf() {
  return P([](const Nodes& p) {
    return graph::If(
        Positive(p, 2), [](const Nodes& v) { return Nodes{v[0] * v[1]}; },
        [](const Nodes& v) { return Nodes{graph::Sin(v[0])}; }, {p[0], p[1]});
  });
}

// If (p[2] > 0) over (x, y, an Int32 value): float and integer results from both branches.
graph::GraphFn TwoBranchIf() {
  return P([](const Nodes& p) {
    Node count = graph::ScalarLike(p[2], 3);
    return graph::If(
        Positive(p, 2),
        [](const Nodes& v) {
          return Nodes{graph::Tanh(v[0]) * v[1], v[1] * v[1], v[2] + v[2]};
        },
        [](const Nodes& v) {
          return Nodes{v[0] * v[0] * v[1], graph::Exp(v[1]), v[2]};
        },
        {p[0], p[1], count});
  });
}

}  // namespace

void AddControlGrads(std::vector<GradCase>& out) {
  GradList L(out, "control");
  L.Add("ForLoop/tanh_steps", TanhSteps(4), {L.Rand({3}), L.Rand({3})});
  L.Add("ForLoop/tanh_steps_matrix", TanhSteps(3), {L.Rand({2, 3}), L.Rand({2, 3})});
  L.Add("ForLoop/product_steps", ProductSteps(5), {L.Rand({2, 2}), L.Rand({2, 2}), L.Rand({2, 2})});
  L.Add("ForLoop/product_steps_scalar", ProductSteps(3), {L.Rand({}), L.Rand({}), L.Rand({})});
  L.Add("ForLoop/zero_steps", ProductSteps(0), {L.Rand({3}), L.Rand({3}), L.Rand({3})});
  L.Add("ForLoop/one_step", ProductSteps(1), {L.Rand({3}), L.Rand({3}), L.Rand({3})});
  L.Add("ForLoop/empty_values", P([](const Nodes& p) {
          Nodes r = graph::ForLoop(3,
                                   [](Node, const Nodes& s) {
                                     return Nodes{s[0] * 2.0, graph::Tanh(s[1]) * s[2], s[2]};
                                   },
                                   {p[0], p[1], p[2]});
          return Nodes{r[0], r[1]};
        }),
        {L.Rand({0, 3}), L.Rand({2}), L.Rand({2})});
  L.Add("ForLoop/nested", P([](const Nodes& p) {
          Nodes r = graph::ForLoop(3,
                                   [](Node, const Nodes& s) {
                                     Nodes inner =
                                         graph::ForLoop(2,
                                                        [](Node, const Nodes& t) {
                                                          return Nodes{graph::Tanh(t[0] * t[1]), t[1] + t[0]};
                                                        },
                                                        {s[0], s[1]});
                                     return Nodes{inner[0] + s[0], inner[1]};
                                   },
                                   {p[0], p[1]});
          return Nodes{r[0] * r[1]};
        }),
        {L.Rand({2}), L.Rand({2})});
  L.Add("ForLoop/if_in_body", P([](const Nodes& p) {
          Nodes r = graph::ForLoop(4,
                                   [](Node i, const Nodes& s) {
                                     Node even = graph::Equal(graph::Rem(i, graph::ScalarLike(i, 2)),
                                                              graph::ScalarLike(i, 0));
                                     return graph::If(
                                         even,
                                         [](const Nodes& v) {
                                           return Nodes{graph::Sin(v[0]) * v[1], v[1]};
                                         },
                                         [](const Nodes& v) {
                                           return Nodes{v[0] * v[1], v[1] * 0.5};
                                         },
                                         s);
                                   },
                                   {p[0], p[1]});
          return Nodes{r[0], r[1]};
        }),
        {L.Rand({3}), L.Rand({3})});
  L.Add("ForLoop/bool_in_state", P([](const Nodes& p) {
          Node flag = graph::Greater(p[0], graph::ScalarLike(p[0], 0));
          Nodes r = graph::ForLoop(4,
                                   [](Node, const Nodes& s) {
                                     Node x = graph::Where(s[0], graph::Sin(s[1]), s[1] * s[2]);
                                     return Nodes{graph::LogicalNot(s[0]), x, s[2]};
                                   },
                                   {flag, p[0], p[1]});
          return Nodes{r[1]};
        }),
        {L.Rand({4}), L.Rand({4})});
  L.Add("ForLoop/checkpointed", P([](const Nodes& p) {
          Node x = graph::Checkpoint(p[0]);
          Nodes r = graph::ForLoop(3,
                                   [](Node, const Nodes& s) {
                                     return Nodes{graph::Tanh(s[0] * s[1]), s[1] * 1.5};
                                   },
                                   {x, p[1]});
          return Nodes{graph::StopCheckpoint(r[0] * r[1])};
        }),
        {L.Rand({3}), L.Rand({3})});
  L.Add("If/true_branch", OneSidedIf(), {L.Rand({2, 3}), L.Rand({2, 3}), I32({}, {1})});
  L.Add("If/false_branch", OneSidedIf(), {L.Rand({2, 3}), L.Rand({2, 3}), I32({}, {0})});
  L.Add("If/mixed_results_true", TwoBranchIf(), {L.Rand({3}), L.Rand({3}), I32({}, {1})});
  L.Add("If/mixed_results_false", TwoBranchIf(), {L.Rand({3}), L.Rand({3}), I32({}, {-1})});
  L.Add("If/loop_in_branch", P([](const Nodes& p) {
          return graph::If(
              Positive(p, 2),
              [](const Nodes& v) {
                return graph::ForLoop(
                    3,
                    [](Node, const Nodes& s) {
                      return Nodes{graph::Tanh(s[0]) * s[1], s[1]};
                    },
                    v);
              },
              [](const Nodes& v) {
                return Nodes{v[0], v[1]};
              },
              {p[0], p[1]});
        }),
        {L.Rand({2}), L.Rand({2}), I32({}, {1})});
  L.Add("If/loop_in_other_branch", P([](const Nodes& p) {
          return graph::If(
              Positive(p, 2),
              [](const Nodes& v) {
                return graph::ForLoop(
                    3,
                    [](Node, const Nodes& s) {
                      return Nodes{graph::Tanh(s[0]) * s[1], s[1]};
                    },
                    v);
              },
              [](const Nodes& v) {
                return Nodes{v[0], v[1] * v[0]};
              },
              {p[0], p[1]});
        }),
        {L.Rand({2}), L.Rand({2}), I32({}, {0})});
  L.Add("If/empty_value", OneSidedIf(), {L.Rand({0, 2}), L.Rand({0, 2}), I32({}, {1})});
  L.Add("OptimizationBarrier/values", P([](const Nodes& p) {
          Nodes r = graph::OptimizationBarrier({p[0], graph::Sin(p[1]), p[2]});
          return Nodes{r[0] * r[1], r[1], graph::ConvertDType(r[2], DType::Float64)};
        }),
        {L.Rand({2, 3}), L.Rand({2, 3}), I32({2}, {4, 5})});
  // Two results, an integer operand (no gradient) and a product inside: the gradient is the
  // decomposition's, through a Composite "<name>.vjp".
  L.Add("Composite/decomposition", P([](const Nodes& p) {
          return graph::Composite("test.mixed", {1, 2}, {p[0], p[1], p[2]}, [](const Nodes& v) {
            Node scaled = v[1] * graph::ConvertDType(v[2], v[1].dtype());
            return Nodes{graph::MatMul(v[0], scaled), graph::Sin(v[0])};
          });
        }),
        {L.Rand({2, 3}), L.Rand({3, 2}), I32({3, 2}, {1, -2, 3, 0, 2, 1})});
}

}  // namespace kiln::conformance::internal
