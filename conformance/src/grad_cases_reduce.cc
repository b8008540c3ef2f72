// Gradient rows of the reductions: sum, product (with and without zeros), max and min (distinct
// values, so the first arg-max is unique), over one axis, several axes, all axes and none,
// plus the composites built on them (mean, variance, log-sum-exp, masked sums).

#include "grad_internal.h"

namespace kiln::conformance::internal {

namespace {

graph::GraphFn Red(Node (*f)(Node, const std::vector<int>&), std::vector<int> axes) {
  return [f, axes](Graph&, const std::vector<Node>& p) -> std::vector<Node> { return {f(p[0], axes)}; };
}

}  // namespace

void AddReduceGrads(std::vector<GradCase>& out) {
  GradList L(out, "reduce");
  struct Row {
    const char* name;
    Node (*fn)(Node, const std::vector<int>&);
  };
  for (const Row& r : {Row{"ReduceSum", graph::ReduceSum}, Row{"ReduceMax", graph::ReduceMax},
                       Row{"ReduceMin", graph::ReduceMin}, Row{"ReduceProduct", graph::ReduceProduct},
                       Row{"ReduceMean", graph::ReduceMean}, Row{"ReduceLogSumExp", graph::ReduceLogSumExp},
                       Row{"ReduceVariance", graph::ReduceVariance}}) {
    const std::string n = r.name;
    L.Add(n + "/axis0", Red(r.fn, {0}), {L.Distinct({3, 4}, 0.5, 2)});
    L.Add(n + "/axis1", Red(r.fn, {1}), {L.Distinct({3, 4}, -2, -0.5)});
    L.Add(n + "/axes_0_2", Red(r.fn, {0, 2}), {L.Distinct({2, 3, 2}, 0.5, 1.5)});
    L.Add(n + "/all", Red(r.fn, {}), {L.Distinct({2, 3}, 0.5, 1.5)});
    L.Add(n + "/size_one_axis", Red(r.fn, {1}), {L.Distinct({3, 1}, 0.5, 1.5)});
  }
  L.Add("ReduceSum/empty_axis", Red(graph::ReduceSum, {1}), {L.Rand({3, 0})});
  L.Add("ReduceSum/of_empty_rows", Red(graph::ReduceSum, {0}), {L.Rand({0, 3})});
  L.Add("ReduceProduct/one_zero", Red(graph::ReduceProduct, {1}),
        {Tensor::FromFlat(Shape(DType::Float64, {2, 3}), std::vector<double>{0.5, 0, 1.5, 2, -1, 0.7})});
  L.Add("ReduceProduct/two_zeros", Red(graph::ReduceProduct, {1}),
        {Tensor::FromFlat(Shape(DType::Float64, {2, 3}), std::vector<double>{0, 0, 1.5, 2, -1, 0.7})});
  L.Add("MaskedReduceSum/mask", P([](const std::vector<Node>& p) {
          return graph::MaskedReduceSum(p[0], graph::Greater(p[1], graph::ScalarLike(p[1], 0)), {1});
        }),
        {L.Rand({2, 3}), L.Distinct({2, 3})})
      .wrt = {0};
  L.Add("ReduceAllMax/matrix", P([](const std::vector<Node>& p) { return graph::ReduceAllMax(p[0]); }),
        {L.Distinct({3, 3})});
}

}  // namespace kiln::conformance::internal
