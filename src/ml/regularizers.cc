// Regularizers: L1 / L2 penalties added to the loss with train::AddLoss.

#include "kiln/ml/regularizers.h"

#include <cmath>
#include <optional>

#include "core/check.h"
#include "kiln/train/trainer.h"

namespace kiln::regularizers {

namespace {

/// Checks the amount (finite, >= 0) and names the regularizer otherwise.
void CheckAmount(const char* fn, double amount) {
  if (!std::isfinite(amount) || amount < 0)
    kiln::detail::Throw("regularizers::{}: amount {} must be finite and >= 0", fn, amount);
}

/// amount·Σ penalty(w) for each variable, added to the loss of scope's graph.
Regularizer Penalty(const char* fn, double amount, graph::Node (*penalty)(graph::Node)) {
  return [fn, amount, penalty](const model::Scope& scope, const std::vector<model::Variable>& vars) {
    graph::Graph* g = scope.graph();
    if (g == nullptr)
      kiln::detail::Throw("regularizers::{}({}): the scope is not bound to a graph being built", fn,
                          scope.Path());
    for (size_t i = 0; i < vars.size(); ++i) {
      const model::Variable& v = vars[i];
      if (!v.Ok()) kiln::detail::Throw("regularizers::{}({}): variable #{} is invalid", fn, scope.Path(), i);
      if (!IsFloat(v.dtype()))
        kiln::detail::Throw("regularizers::{}: variable {} is not float", fn, v.ToString());
      if (amount == 0) continue;
      graph::Node w = v.NodeValue(*g);
      train::AddLoss(scope, graph::ReduceAllSum(penalty(w)) * graph::ScalarLike(w, amount));
    }
  };
}

}  // namespace

Regularizer L1(double amount) {
  CheckAmount("L1", amount);
  return Penalty("L1", amount, [](graph::Node w) { return graph::Abs(w); });
}

Regularizer L2(double amount) {
  CheckAmount("L2", amount);
  return Penalty("L2", amount, [](graph::Node w) { return graph::Square(w); });
}

Regularizer L1L2(double l1, double l2) {
  Regularizer a = L1(l1), b = L2(l2);
  return [a, b](const model::Scope& scope, const std::vector<model::Variable>& vars) {
    a(scope, vars);
    b(scope, vars);
  };
}

Regularizer FromParams(const model::Scope& scope) {
  const double l1 = model::GetParamOr(scope, kParamL1, 0.0);
  const double l2 = model::GetParamOr(scope, kParamL2, 0.0);
  CheckAmount(kParamL1, l1);
  CheckAmount(kParamL2, l2);
  if (l1 > 0 && l2 > 0) return L1L2(l1, l2);
  if (l1 > 0) return L1(l1);
  if (l2 > 0) return L2(l2);
  return {};
}

void RegularizeWeights(const model::Scope& scope) {
  Regularizer reg = FromParams(scope);
  if (!reg) return;
  model::Variable w = scope.InspectVariable("weights");
  if (w.Ok()) reg(scope, {w});
}

}  // namespace kiln::regularizers
