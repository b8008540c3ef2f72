// While, ForLoop, If, OptimizationBarrier and Composite: sub-programs from lambdas, tuple ops in the graph.

#include "kiln/graph/control_flow.h"

#include "core/check.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

namespace {

std::vector<Shape> ShapesOf(const char* fn, const std::vector<Node>& nodes) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].Ok()) kiln::detail::Throw("{}: value {} is an invalid (default-constructed) node", fn, i);
    shapes.push_back(nodes[i].shape());
  }
  return shapes;
}

Graph& GraphOf(const char* fn, const std::vector<Node>& nodes) {
  if (nodes.empty() || !nodes[0].Ok()) kiln::detail::Throw("{}: needs at least one value", fn);
  return nodes[0].graph();
}

}  // namespace

std::shared_ptr<const compute::Program> BuildSubprogram(const std::string& name,
                                                        const std::vector<Shape>& parameter_shapes,
                                                        const SubFn& fn) {
  Graph child(name);
  std::vector<Node> params;
  for (const Shape& s : parameter_shapes) params.push_back(child.Parameter(s));
  std::vector<Node> outputs;
  try {
    outputs = fn(params);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].Ok() || &outputs[i].graph() != &child) {
        kiln::detail::Throw(
            "output {} is not a node of the sub-program (nodes of the enclosing graph cannot be "
            "used inside: pass them in the state or operands)",
            i);
      }
    }
    if (child.HasCustomGradients()) {
      kiln::detail::Throw(
          "IdentityWithCustomGradient inside a sub-program is not supported (the override would be lost "
          "when the sub-program is differentiated): apply it outside the loop or branch");
    }
    return child.Build(outputs);
  } catch (const Error& e) {
    // The hint only where a node of the enclosing graph was used inside.
    const bool foreign = e.message().find("belongs to graph") != std::string::npos ||
                         e.message().find("different graphs") != std::string::npos ||
                         e.message().find("not a node of the sub-program") != std::string::npos;
    if (foreign) {
      kiln::detail::Throw(
          "{}: {} (a sub-program sees only its parameters: everything it needs goes in the "
          "loop state or the operands)",
          name, e.message());
    }
    kiln::detail::Throw("{}: {}", name, e.message());
  }
}

std::vector<Node> While(const std::function<Node(const std::vector<Node>&)>& cond, const SubFn& body,
                        const std::vector<Node>& initial_state) {
  Graph& g = GraphOf("While", initial_state);
  const std::vector<Shape> shapes = ShapesOf("While", initial_state);
  auto c = BuildSubprogram("While condition", shapes,
                           [&](const std::vector<Node>& s) { return std::vector<Node>{cond(s)}; });
  auto b = BuildSubprogram("While body", shapes, body);
  compute::OpAttributes attrs;
  attrs.trip_count = -1;
  return g.AddTupleOp(compute::OpType::While, initial_state, attrs, {c, b});
}

std::vector<Node> ForLoop(int64_t n,
                          const std::function<std::vector<Node>(Node, const std::vector<Node>&)>& body,
                          const std::vector<Node>& initial_state) {
  Graph& g = GraphOf("ForLoop", initial_state);
  if (n < 0 || n > INT32_MAX) kiln::detail::Throw("ForLoop: trip count {} is not in [0, 2^31)", n);
  std::vector<Node> state = {Scalar(g, DType::Int32, 0)};
  state.insert(state.end(), initial_state.begin(), initial_state.end());
  const std::vector<Shape> shapes = ShapesOf("ForLoop", state);
  auto c = BuildSubprogram("ForLoop condition", shapes, [n](const std::vector<Node>& s) {
    return std::vector<Node>{Less(s[0], Scalar(s[0].graph(), DType::Int32, n))};
  });
  auto b = BuildSubprogram("ForLoop body", shapes, [&](const std::vector<Node>& s) {
    std::vector<Node> inner(s.begin() + 1, s.end());
    std::vector<Node> next = body(s[0], inner);
    next.insert(next.begin(), Add(s[0], Scalar(s[0].graph(), DType::Int32, 1)));
    return next;
  });
  compute::OpAttributes attrs;
  attrs.trip_count = n;
  std::vector<Node> out = g.AddTupleOp(compute::OpType::While, state, attrs, {c, b});
  return std::vector<Node>(out.begin() + 1, out.end());
}

std::vector<Node> If(Node pred, const SubFn& true_fn, const SubFn& false_fn,
                     const std::vector<Node>& operands) {
  if (!pred.Ok()) kiln::detail::Throw("If: the predicate is an invalid (default-constructed) node");
  const std::vector<Shape> shapes = ShapesOf("If", operands);
  auto t = BuildSubprogram("If true branch", shapes, true_fn);
  auto f = BuildSubprogram("If false branch", shapes, false_fn);
  std::vector<Node> all = {pred};
  all.insert(all.end(), operands.begin(), operands.end());
  return pred.graph().AddTupleOp(compute::OpType::If, all, {}, {t, f});
}

std::vector<Node> OptimizationBarrier(const std::vector<Node>& values) {
  Graph& g = GraphOf("OptimizationBarrier", values);
  return g.AddTupleOp(compute::OpType::OptimizationBarrier, values, {}, {});
}

std::vector<Node> Composite(const std::string& name, const std::vector<int64_t>& values,
                            const std::vector<Node>& operands, const SubFn& decomposition) {
  if (name.empty()) kiln::detail::Throw("Composite: the name is empty");
  Graph& g = GraphOf("Composite", operands);
  const std::vector<Shape> shapes = ShapesOf("Composite", operands);
  auto body = BuildSubprogram("Composite " + name, shapes, decomposition);
  compute::OpAttributes attrs;
  attrs.name = name;
  attrs.values = values;
  return g.AddTupleOp(compute::OpType::Composite, operands, attrs, {body});
}

}  // namespace kiln::graph
