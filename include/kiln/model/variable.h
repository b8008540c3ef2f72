#pragma once
/// @file
/// model::Variable: a named, typed value of a model::Store (weights, biases, counters, the
/// random-number state) that outlives graphs and compilations.

#include <memory>
#include <string>

#include "kiln/core/shape.h"
#include "kiln/core/tensor.h"
#include "kiln/graph/graph.h"

namespace kiln::model {

namespace detail {
struct VariableData;
}  // namespace detail

/// A cheap handle to a variable of a Store (copies refer to the same variable).
class Variable {
 public:
  /// An invalid handle (Ok() false).
  Variable() = default;
  /// @cond internal
  // A handle to kiln's own variable state (detail::VariableData is defined inside the library).
  explicit Variable(std::shared_ptr<detail::VariableData> data) : data_(std::move(data)) {}
  /// @endcond

  /// False for a default-constructed handle or a lookup that found nothing.
  bool Ok() const { return data_ != nullptr; }
  /// The full path: "/layer1/weights".
  const std::string& Path() const;
  /// The last path element: "weights".
  std::string Name() const;
  /// The scope path holding it: "/layer1".
  std::string ScopePath() const;
  /// The shape and dtype, fixed when the variable is created (for a mixed-precision handle, the
  /// stored Float32 master's).
  const Shape& shape() const;
  /// The element type (shape().dtype()).
  DType dtype() const { return shape().dtype(); }

  /// The current value. A new variable is initialised first (by its scope's initializer, on the
  /// default backend, advancing the store's random-number state). The handle shares the
  /// variable's data: while a user holds it, executions copy the variable instead of updating
  /// it in place, so the handle never goes stale.
  Tensor Value() const;
  /// Replaces the value (same shape and dtype, else kiln::Error).
  void SetValue(const Tensor& value) const;

  /// Trainable variables get gradients from the trainer: by default float variables are,
  /// others never (setting an integer variable trainable is a kiln::Error).
  bool Trainable() const;
  /// Sets whether the trainer updates the variable; returns *this. kiln::Error for true on a
  /// non-float variable.
  const Variable& SetTrainable(bool trainable) const;

  /// The variable's value in graph `g`, an input of the graph (the same node every time in one
  /// graph; model::Exec feeds it at each call); converted to ComputeDType() where that is set.
  graph::Node NodeValue(graph::Graph& g) const;
  /// Sets the variable's new value, computed by `node` (same shape and dtype, or of the handle's
  /// compute dtype, converted back) in the graph being built: model::Exec stores it back after
  /// each call (in place, when it can).
  void SetNodeValue(graph::Node node) const;

  /// A handle whose NodeValue is this variable's value converted to `compute` (mixed precision:
  /// a Float32 master read as BFloat16 or Float16 by the layers, its gradient converted back);
  /// DType::Invalid gives the plain handle. Scope::VariableWithShape returns such handles when
  /// the scope's "mixed_precision" parameter names the dtype asked for (see
  /// train::Trainer::WithMixedPrecision).
  Variable ComputeAs(DType compute) const;
  /// The dtype NodeValue converts to (DType::Invalid: none).
  DType ComputeDType() const { return compute_; }

  /// "/layer1/weights (Float32)[2, 3]".
  std::string ToString() const;
  /// @cond internal
  const std::shared_ptr<detail::VariableData>& data() const { return data_; }
  /// @endcond

 private:
  std::shared_ptr<detail::VariableData> data_;
  DType compute_ = DType::Invalid;
};

}  // namespace kiln::model
