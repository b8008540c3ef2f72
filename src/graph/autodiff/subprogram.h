#pragma once
// Sub-programs in the backward pass: inlining a compute::Program into a Graph, and building the
// vector-Jacobian product of a sub-program as a new sub-program (the gradients of If branches
// and While bodies are built from these).

#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/program.h"
#include "kiln/graph/graph.h"

namespace kiln::graph::autodiff {

/// Re-emits the instructions of `program` into `g` (with Graph::AddOp / AddTupleOp), its
/// parameter i replaced by `args[i]` (of the parameter's shape); returns the output nodes.
std::vector<Node> InlineProgram(Graph& g, const compute::Program& program, const std::vector<Node>& args);

/// True when output i of `program` is its parameter i unchanged (a loop-invariant state value
/// of a While body).
bool PassesThrough(const compute::Program& program, int i);

/// The vector-Jacobian product of `program` as a sub-program named `name`. Its parameters are
/// the program's parameters followed by one adjoint per output k with `with_adjoint[k]` (of the
/// output's shape; the others count as zero); its outputs are the adjoints of the parameters i
/// with `wanted[i]` (float ones only), in order. At least one parameter must be wanted.
std::shared_ptr<const compute::Program> BuildVJPProgram(const std::string& name,
                                                        const compute::Program& program,
                                                        const std::vector<bool>& with_adjoint,
                                                        const std::vector<bool>& wanted);

}  // namespace kiln::graph::autodiff
