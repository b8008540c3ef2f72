// Inlining sub-programs into a graph, and the vector-Jacobian product of a sub-program as a new
// sub-program (used by the gradient rules of If and While).

#include "graph/autodiff/subprogram.h"

#include "core/check.h"
#include "graph/autodiff/vjp.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/gradient.h"
#include "kiln/graph/ops.h"

namespace kiln::graph::autodiff {

namespace {

/// Checks that `args` fit the parameters of `program` and belong to `g`.
void CheckArguments(Graph& g, const compute::Program& program, const std::vector<Node>& args) {
  if (args.size() != program.Parameters().size()) {
    kiln::detail::Throw("InlineProgram: {} arguments for a sub-program of {} parameters", args.size(),
                        program.Parameters().size());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].Ok() || &args[i].graph() != &g)
      kiln::detail::Throw("InlineProgram: argument {} is not a node of graph \"{}\"", i, g.name());
    const Shape& want = program.ParameterShape(static_cast<int>(i));
    if (args[i].shape() != want) {
      kiln::detail::Throw("InlineProgram: argument {} has shape {}, the sub-program's parameter {}", i,
                          args[i].shape(), want);
    }
  }
}

}  // namespace

std::vector<Node> InlineProgram(Graph& g, const compute::Program& program, const std::vector<Node>& args) {
  CheckArguments(g, program, args);
  const std::vector<compute::Instruction>& insts = program.Instructions();
  std::vector<Node> value(insts.size());
  std::vector<std::vector<Node>> tuple(insts.size());
  for (size_t id = 0; id < insts.size(); ++id) {
    const compute::Instruction& inst = insts[id];
    std::vector<Node> operands;
    for (int o : inst.operands) operands.push_back(value.at(static_cast<size_t>(o)));
    if (inst.op == compute::OpType::Parameter) {
      value[id] = args.at(static_cast<size_t>(inst.attrs.index));
    } else if (inst.IsTuple()) {
      tuple[id] = g.AddTupleOp(inst.op, operands, inst.attrs, inst.subprograms);
    } else if (inst.op == compute::OpType::GetTupleElement) {
      value[id] =
          tuple.at(static_cast<size_t>(inst.operands.at(0))).at(static_cast<size_t>(inst.attrs.index));
    } else {
      value[id] = g.AddOp(inst.op, operands, inst.attrs);
    }
  }
  std::vector<Node> outputs;
  for (int o : program.Outputs()) outputs.push_back(value.at(static_cast<size_t>(o)));
  return outputs;
}

bool PassesThrough(const compute::Program& program, int i) {
  return program.Outputs().at(static_cast<size_t>(i)) == program.Parameters().at(static_cast<size_t>(i));
}

std::shared_ptr<const compute::Program> BuildVJPProgram(const std::string& name,
                                                        const compute::Program& program,
                                                        const std::vector<bool>& with_adjoint,
                                                        const std::vector<bool>& wanted) {
  const size_t num_params = program.Parameters().size();
  const size_t num_outputs = program.Outputs().size();
  if (with_adjoint.size() != num_outputs || wanted.size() != num_params)
    kiln::detail::Throw("{}: the masks do not match the sub-program's signature (a kiln bug)", name);
  std::vector<Shape> shapes;
  bool any = false;
  for (size_t i = 0; i < num_params; ++i) {
    shapes.push_back(program.ParameterShape(static_cast<int>(i)));
    any = any || (wanted[i] && Differentiable(shapes.back().dtype()));
  }
  if (!any) kiln::detail::Throw("{}: no float parameter wants a gradient (a kiln bug)", name);
  for (size_t k = 0; k < num_outputs; ++k)
    if (with_adjoint[k]) shapes.push_back(program.OutputShape(static_cast<int>(k)));
  return BuildSubprogram(name, shapes, [&](const std::vector<Node>& params) {
    Graph& g = params.at(0).graph();
    const std::vector<Node> args(params.begin(), params.begin() + static_cast<std::ptrdiff_t>(num_params));
    const std::vector<Node> outs = InlineProgram(g, program, args);
    std::vector<Node> ys, adjoints, targets;
    size_t next = num_params;
    for (size_t k = 0; k < num_outputs; ++k) {
      if (!with_adjoint[k]) continue;
      ys.push_back(outs[k]);
      adjoints.push_back(params.at(next++));
    }
    for (size_t i = 0; i < num_params; ++i)
      if (wanted[i] && Differentiable(args[i].dtype())) targets.push_back(args[i]);
    if (ys.empty()) {
      std::vector<Node> zeros;
      for (const Node& t : targets) zeros.push_back(ZerosLike(t));
      return zeros;
    }
    return VJP(ys, adjoints, targets);
  });
}

}  // namespace kiln::graph::autodiff
