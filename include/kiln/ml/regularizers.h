#pragma once
/// @file
/// Regularizers (kiln::regularizers): penalties on variables added to the training loss through
/// train::AddLoss, so train::Trainer differentiates them with the loss.
///
///   model::Scope s = scope.In("dense");
///   Node y = layers::Dense(s, x, true, 64);
///   regularizers::L2(1e-4)(s, {s.InspectVariable("weights")});   // explicit
///   // layers::Dense and layers::Convolution apply "l1_regularization" / "l2_regularization"
///   // to their weights by themselves (RegularizeWeights).

#include <functional>
#include <vector>

#include "kiln/model/store.h"

namespace kiln::regularizers {

/// Adds a penalty on `vars` to the loss of the graph `scope` is bound to.
using Regularizer = std::function<void(const model::Scope& scope, const std::vector<model::Variable>& vars)>;

/// Hyperparameter keys (GoMLX's names): the amounts of L1 and L2 regularization.
inline constexpr const char* kParamL1 = "l1_regularization";  ///< The amount of L1 (FromParams).
inline constexpr const char* kParamL2 = "l2_regularization";  ///< The amount of L2 (FromParams).

/// amount·Σ|w| over every element of every variable (its gradient: amount·sign(w)).
Regularizer L1(double amount);
/// amount·Σw² over every element of every variable (its gradient: 2·amount·w).
Regularizer L2(double amount);
/// L1(l1) and L2(l2) together.
Regularizer L1L2(double l1, double l2);

/// The regularizer set by the hyperparameters kParamL1 / kParamL2 seen from `scope` (searched up
/// to the root), or an empty function when neither is set to a positive amount.
Regularizer FromParams(const model::Scope& scope);
/// Applies FromParams(scope) to the variable "weights" of `scope` (as a layer such as
/// layers::Dense creates it; biases are not regularized). Does nothing when no amount is set or
/// the scope has no "weights".
void RegularizeWeights(const model::Scope& scope);

}  // namespace kiln::regularizers
