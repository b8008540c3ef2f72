#pragma once
/// The gradient conformance table: rows that check every differentiable primitive's gradient
/// rule (and composites built on them) against central differences in Float64.
///
/// For a row, the checked function is L(x) = sum_k <out_k, w_k> with fixed random weights w_k,
/// so the whole vector-Jacobian product is checked, not one direction. The gradient built by
/// Gradient() runs on the backend under test; the numeric one runs on `ref` in Float64:
///   dL/dx_j ~ (L(x + e_j eps) - L(x - e_j eps)) / (2 eps).
/// Rows with `second_order` also check the Hessian-vector product (the gradient of
/// <Gradient(L), v> for a random v) against central differences of the gradient along v, which
/// shows that the gradient graphs are themselves differentiable.
///
///   kiln::conformance::GradReport r = kiln::conformance::CheckGradients(backend);
///   if (!r.Ok()) std::cerr << kiln::conformance::GradFailureReport(r);

#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "kiln/compute/backend.h"
#include "kiln/compute/program.h"
#include "kiln/core/tensor.h"
#include "kiln/graph/exec.h"

namespace kiln::conformance {

/// One gradient row.
struct GradCase {
  /// Unique name: "<function>/<what>", e.g. "Tanh/random", "DotGeneral/batched".
  std::string name;
  /// Builds the function: parameters (one per input) in, outputs out (float outputs count).
  graph::GraphFn build;
  /// Inputs: Float64 values (random ones drawn by the table with a fixed seed), or integer
  /// tensors (indices) that are not differentiated.
  std::vector<Tensor> inputs;
  /// The inputs the gradient is taken with respect to (empty: every float input).
  std::vector<int> wrt;
  /// Central-difference step.
  double epsilon = 1e-6;
  /// An element passes when |autodiff - numeric| <= tolerance * (1 + |numeric|).
  double tolerance = 1e-6;
  /// Also check the Hessian-vector product (with tolerance * 10).
  bool second_order = true;
};

/// The table (built once; values are reproducible).
const std::vector<GradCase>& GradCases();

struct GradResult {
  std::string name;
  bool passed = false;
  /// The mismatching elements or the error thrown.
  std::string message;
  /// Primitives of the row's function that the gradient flowed through.
  std::vector<compute::OpType> primitives;
};

struct GradReport {
  std::string backend;
  std::vector<GradResult> results;
  double seconds = 0;
  bool Ok() const;
  /// Primitives covered by at least one passing row.
  std::set<compute::OpType> Covered() const;
};

/// Runs the rows whose name contains `filter` (empty: all): gradients on `backend`, numeric
/// references on `ref`. `log` receives a line per failing row as it happens.
GradReport CheckGradients(const compute::BackendPtr& backend, const std::string& filter = "",
                          std::ostream* log = nullptr);

/// The failing rows, one block each.
std::string GradFailureReport(const GradReport& report);

}  // namespace kiln::conformance
