// Shape rules of the control-flow ops: While, If, OptimizationBarrier, Composite (tuple results)
// and GetTupleElement. The sub-programs' signatures must match the operands exactly.

#include <string>

#include "compute/shape_rules.h"
#include "core/check.h"

namespace kiln::compute {

namespace {

std::string ShapesText(const std::vector<Shape>& shapes) {
  std::vector<std::string> parts;
  for (const Shape& s : shapes) parts.push_back(s.ToString());
  return fmt::format("({})", fmt::join(parts, ", "));
}

std::vector<Shape> ParameterShapes(const Program& p) {
  std::vector<Shape> v;
  for (size_t i = 0; i < p.Parameters().size(); ++i) v.push_back(p.ParameterShape(static_cast<int>(i)));
  return v;
}

std::vector<Shape> OutputShapes(const Program& p) {
  std::vector<Shape> v;
  for (size_t i = 0; i < p.Outputs().size(); ++i) v.push_back(p.OutputShape(static_cast<int>(i)));
  return v;
}

void CheckValues(OpType op, const std::vector<Shape>& values, const char* what) {
  for (size_t i = 0; i < values.size(); ++i) {
    const Shape& s = values[i];
    if (!s.Ok())
      FailShape(op,
                fmt::format("{} {} has an invalid shape (a tuple must go through GetTupleElement)", what, i));
    if (IsStorageOnly(s.dtype()))
      FailShape(op, fmt::format("{} {} is of the storage-only dtype {}", what, i, s.dtype()));
  }
}

const Program& Sub(OpType op, const std::vector<std::shared_ptr<const Program>>& subs, size_t k,
                   const char* name) {
  if (!subs[k]) FailShape(op, fmt::format("the {} sub-program is null", name));
  return *subs[k];
}

void CheckParameters(OpType op, const Program& p, const std::vector<Shape>& want, const char* name) {
  const std::vector<Shape> got = ParameterShapes(p);
  if (got != want) {
    FailShape(op, fmt::format("the {} takes {} but is given {}", name, ShapesText(got), ShapesText(want)));
  }
}

}  // namespace

bool IsTupleOp(OpType op) {
  return op == OpType::While || op == OpType::If || op == OpType::OptimizationBarrier ||
         op == OpType::Composite;
}

Shape ControlShape(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs) {
  (void)operands;
  (void)attrs;
  if (op == OpType::GetTupleElement) FailShape(op, "the operand must be a tuple-producing instruction");
  FailShape(op, "produces a tuple: add it with Graph::AddTupleOp (shapes from InferTupleShapes)");
}

std::vector<Shape> InferTupleShapes(OpType op, const std::vector<Shape>& operands, const OpAttributes& attrs,
                                    const std::vector<std::shared_ptr<const Program>>& subprograms) {
  const size_t want_subs = op == OpType::OptimizationBarrier ? 0 : op == OpType::Composite ? 1 : 2;
  if (!IsTupleOp(op)) FailShape(op, "is not a tuple-producing op");
  if (subprograms.size() != want_subs)
    FailShape(op, fmt::format("takes {} sub-programs, got {}", want_subs, subprograms.size()));
  if (operands.empty()) FailShape(op, "needs at least one operand");
  switch (op) {
    case OpType::While: {
      CheckValues(op, operands, "state value");
      if (attrs.trip_count < -1) FailShape(op, fmt::format("trip_count {} is negative", attrs.trip_count));
      const Program& cond = Sub(op, subprograms, 0, "condition");
      const Program& body = Sub(op, subprograms, 1, "body");
      CheckParameters(op, cond, operands, "condition");
      CheckParameters(op, body, operands, "body");
      const std::vector<Shape> c = OutputShapes(cond);
      if (c.size() != 1 || c[0] != Shape(DType::Bool)) {
        FailShape(op, fmt::format("the condition must return one scalar Bool, it returns {}", ShapesText(c)));
      }
      const std::vector<Shape> b = OutputShapes(body);
      if (b != operands) {
        FailShape(op, fmt::format("the body must return the state's shapes {}, it returns {}",
                                  ShapesText(operands), ShapesText(b)));
      }
      return operands;
    }
    case OpType::If: {
      if (operands[0] != Shape(DType::Bool))
        FailShape(op, fmt::format("the predicate must be a scalar Bool, got {}", operands[0]));
      const std::vector<Shape> values(operands.begin() + 1, operands.end());
      CheckValues(op, values, "value");
      const Program& t = Sub(op, subprograms, 0, "true branch");
      const Program& f = Sub(op, subprograms, 1, "false branch");
      CheckParameters(op, t, values, "true branch");
      CheckParameters(op, f, values, "false branch");
      const std::vector<Shape> a = OutputShapes(t), b = OutputShapes(f);
      if (a.empty()) FailShape(op, "the branches return nothing");
      if (a != b) {
        FailShape(op, fmt::format("the branches return different shapes: {} (true) and {} (false)",
                                  ShapesText(a), ShapesText(b)));
      }
      CheckValues(op, a, "branch result");
      return a;
    }
    case OpType::OptimizationBarrier:
      CheckValues(op, operands, "operand");
      return operands;
    case OpType::Composite: {
      if (attrs.name.empty()) FailShape(op, "has no name");
      for (size_t i = 0; i < operands.size(); ++i)
        if (!operands[i].Ok())
          FailShape(op, fmt::format(
                            "operand {} has an invalid shape (a tuple must go through GetTupleElement)", i));
      const Program& body = Sub(op, subprograms, 0, "decomposition");
      CheckParameters(op, body, operands, fmt::format("decomposition of {}", attrs.name).c_str());
      const std::vector<Shape> r = OutputShapes(body);
      if (r.empty()) FailShape(op, fmt::format("the decomposition of {} returns nothing", attrs.name));
      CheckValues(op, r, "result");
      return r;
    }
    case OpType::GetTupleElement:
#define KILN_LISTED_Control
#include "kiln/compute/op_cases.inc"
      break;
  }
  FailShape(op, "is not a tuple-producing op");
}

Shape InferTupleElementShape(const std::vector<Shape>& tuple_shapes, const OpAttributes& attrs) {
  const OpType op = OpType::GetTupleElement;
  if (tuple_shapes.empty()) FailShape(op, "the operand must be a tuple-producing instruction");
  if (attrs.index < 0 || attrs.index >= static_cast<int64_t>(tuple_shapes.size())) {
    FailShape(
        op, fmt::format("index {} out of range for a tuple of {} values", attrs.index, tuple_shapes.size()));
  }
  return tuple_shapes[static_cast<size_t>(attrs.index)];
}

}  // namespace kiln::compute
