// Graph frontend: elementwise ops (unary, broadcasting binary, comparisons, selection), plus the
// validation, emission and broadcasting helpers every ops_*.cc file shares.

#include <string>
#include <vector>

#include "compute/shape_dims.h"
#include "graph/ops_internal.h"
#include "kiln/compute/shape_inference.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

namespace ops_internal {

using compute::OpType;

void CheckNodes(const char* op, const std::vector<Node>& nodes) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].Ok()) kiln::detail::Throw("{}: operand {} is an invalid (default-constructed) node", op, i);
  }
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Graph& first = nodes[0].graph();
    const Graph& other = nodes[i].graph();
    if (&first != &other) {
      kiln::detail::Throw(
          "{}: operands belong to different graphs: operand 0 to \"{}\", operand {} to \"{}\"{}", op,
          first.name(), i, other.name(),
          first.name() == other.name() ? " (two graphs of the same name)" : "");
    }
  }
}

namespace {

/// Adds the op to `g`, re-raising shape-rule errors under the frontend name `op`.
Node EmitIn(const char* op, Graph& g, OpType type, const std::vector<Node>& operands,
            compute::OpAttributes attrs) {
  try {
    return g.AddOp(type, operands, std::move(attrs));
  } catch (const Error& e) {
    if (compute::OpName(type) == op) throw;
    kiln::detail::Throw("{}: {}", op, e.message());
  }
}

/// Runs the shape rule of `type` on `shapes` without adding anything (errors under `op`).
void CheckRule(const char* op, OpType type, const std::vector<Shape>& shapes) {
  try {
    compute::InferShape(type, shapes, {});
  } catch (const Error& e) {
    if (compute::OpName(type) == op) throw;
    kiln::detail::Throw("{}: {}", op, e.message());
  }
}

}  // namespace

Node Emit(const char* op, OpType type, const std::vector<Node>& operands, compute::OpAttributes attrs) {
  if (operands.empty()) kiln::detail::Throw("{}: no operands", op);
  CheckNodes(op, operands);
  return EmitIn(op, operands[0].graph(), type, operands, std::move(attrs));
}

Node EmitLeaf(const char* op, Graph& g, OpType type, compute::OpAttributes attrs) {
  return EmitIn(op, g, type, {}, std::move(attrs));
}

Shape BroadcastShape(const char* op, const std::vector<Node>& nodes, bool same_dtype) {
  CheckNodes(op, nodes);
  if (same_dtype) {
    for (size_t i = 1; i < nodes.size(); ++i) {
      if (nodes[i].dtype() != nodes[0].dtype()) {
        kiln::detail::Throw("cannot broadcast {} and {} for \"{}\": they have different dtypes",
                            nodes[0].dtype(), nodes[i].dtype(), op);
      }
    }
  }
  std::vector<compute::Axis> dims;
  const Node* ref = nullptr;  // The first non-scalar operand.
  for (const Node& n : nodes) {
    if (n.shape().IsScalar()) continue;
    if (ref == nullptr) {
      ref = &n;
      dims = compute::AxesOf(n.shape());
      continue;
    }
    if (n.rank() != ref->rank()) {
      kiln::detail::Throw(
          "cannot broadcast {} and {} for \"{}\": their ranks differ ({} and {}); kiln does not add axes "
          "implicitly: use ExpandAxes or BroadcastPrefix to give them the same rank",
          ref->shape(), n.shape(), op, ref->rank(), n.rank());
    }
    for (size_t a = 0; a < dims.size(); ++a) {
      const compute::Axis d = compute::AxisOf(n.shape(), static_cast<int64_t>(a));
      if (d.size == 1) continue;
      if (dims[a].size == 1) {
        dims[a] = d;
        continue;
      }
      if (compute::UnifyAxes(dims[a], d, dims[a])) continue;
      kiln::detail::Throw(
          "cannot broadcast {} and {} for \"{}\": axis {} has sizes {} and {} (one must be 1)", ref->shape(),
          n.shape(), op, a, dims[a].size, d.size);
    }
  }
  return compute::ShapeOf(nodes.empty() ? DType::Invalid : nodes[0].dtype(), dims);
}

Node BroadcastTo(const char* op, Node x, const std::vector<int64_t>& dims) {
  CheckNodes(op, {x});
  return BroadcastTo(op, x, Shape(x.dtype(), dims));
}

Node BroadcastTo(const char* op, Node x, const Shape& target) {
  CheckNodes(op, {x});
  const Shape s = x.shape();  // A copy: references into the graph dangle when it grows.
  const std::vector<int64_t>& dims = target.Dimensions();
  if (s.Dimensions() == dims) return x;
  compute::OpAttributes attrs;
  if (!s.IsScalar()) {
    if (s.Rank() != static_cast<int>(dims.size())) {
      kiln::detail::Throw(
          "{}: cannot broadcast {} to {}: the ranks differ; use ExpandAxes or BroadcastPrefix to add axes",
          op, s, DimsString(dims));
    }
    for (int a = 0; a < s.Rank(); ++a) {
      const int64_t d = s.Dimensions()[static_cast<size_t>(a)];
      const int64_t to = dims[static_cast<size_t>(a)];
      // A dynamic size meeting another is checked when the program runs.
      if (d != 1 && d != to && d != Shape::kDynamic && to != Shape::kDynamic) {
        kiln::detail::Throw("{}: cannot broadcast {} to {}: axis {} has size {} (only size-1 axes broadcast)",
                            op, s, DimsString(dims), a, d);
      }
      attrs.axes.push_back(a);
    }
  }
  for (int64_t d : dims) {
    if (d < 0 && d != Shape::kDynamic)
      kiln::detail::Throw("{}: invalid target dimensions {}", op, DimsString(dims));
  }
  attrs.shape = Shape::MakeDynamic(s.dtype(), dims, target.AxisNames());
  return Emit(op, OpType::BroadcastInDim, {x}, std::move(attrs));
}

Node Binary(const char* op, OpType type, Node a, Node b) {
  const Shape common = BroadcastShape(op, {a, b});
  CheckRule(op, type, {common, common});  // Dtype errors before any broadcast is added.
  return Emit(op, type, {BroadcastTo(op, a, common), BroadcastTo(op, b, common)});
}

}  // namespace ops_internal

using compute::OpType;
using ops_internal::Binary;
using ops_internal::Emit;

// ---- Unary --------------------------------------------------------------------------------------

Node Neg(Node x) { return Emit("Neg", OpType::Neg, {x}); }
Node Abs(Node x) { return Emit("Abs", OpType::Abs, {x}); }
Node Sign(Node x) { return Emit("Sign", OpType::Sign, {x}); }
Node Sqrt(Node x) { return Emit("Sqrt", OpType::Sqrt, {x}); }
Node Rsqrt(Node x) { return Emit("Rsqrt", OpType::Rsqrt, {x}); }
Node Square(Node x) {
  ops_internal::CheckNodes("Square", {x});
  return Binary("Square", OpType::Mul, x, x);
}
Node Reciprocal(Node x) {
  ops_internal::CheckNodes("Reciprocal", {x});
  if (x.dtype() == DType::Bool || IsPacked(x.dtype()))
    kiln::detail::Throw("Reciprocal: needs a numeric dtype, got {}", x.shape());
  return Binary("Reciprocal", OpType::Div, ScalarLike(x, 1), x);
}
Node Exp(Node x) { return Emit("Exp", OpType::Exp, {x}); }
Node Expm1(Node x) { return Emit("Expm1", OpType::Expm1, {x}); }
Node Log(Node x) { return Emit("Log", OpType::Log, {x}); }
Node Log1p(Node x) { return Emit("Log1p", OpType::Log1p, {x}); }
Node Sin(Node x) { return Emit("Sin", OpType::Sin, {x}); }
Node Cos(Node x) { return Emit("Cos", OpType::Cos, {x}); }
Node Tan(Node x) { return Emit("Tan", OpType::Tan, {x}); }
Node Asin(Node x) { return Emit("Asin", OpType::Asin, {x}); }
Node Acos(Node x) { return Emit("Acos", OpType::Acos, {x}); }
Node Atan(Node x) { return Emit("Atan", OpType::Atan, {x}); }
Node Sinh(Node x) { return Emit("Sinh", OpType::Sinh, {x}); }
Node Cosh(Node x) { return Emit("Cosh", OpType::Cosh, {x}); }
Node Tanh(Node x) { return Emit("Tanh", OpType::Tanh, {x}); }
Node Asinh(Node x) { return Emit("Asinh", OpType::Asinh, {x}); }
Node Acosh(Node x) { return Emit("Acosh", OpType::Acosh, {x}); }
Node Atanh(Node x) { return Emit("Atanh", OpType::Atanh, {x}); }
Node Sigmoid(Node x) { return Emit("Sigmoid", OpType::Logistic, {x}); }
Node Erf(Node x) { return Emit("Erf", OpType::Erf, {x}); }
Node Floor(Node x) { return Emit("Floor", OpType::Floor, {x}); }
Node Ceil(Node x) { return Emit("Ceil", OpType::Ceil, {x}); }
Node Round(Node x) { return Emit("Round", OpType::Round, {x}); }
Node IsFinite(Node x) { return Emit("IsFinite", OpType::IsFinite, {x}); }
Node IsNaN(Node x) { return Emit("IsNaN", OpType::IsNaN, {x}); }
Node LogicalNot(Node x) { return Emit("LogicalNot", OpType::LogicalNot, {x}); }
Node BitwiseNot(Node x) { return Emit("BitwiseNot", OpType::BitwiseNot, {x}); }
Node BitCount(Node x) { return Emit("BitCount", OpType::BitCount, {x}); }
Node Clz(Node x) { return Emit("Clz", OpType::Clz, {x}); }
Node Identity(Node x) {
  ops_internal::CheckNodes("Identity", {x});
  return x;
}
Node StopGradient(Node x) { return Emit("StopGradient", OpType::StopGradient, {x}); }

// ---- Binary --------------------------------------------------------------------------------------

Node Add(Node a, Node b) { return Binary("Add", OpType::Add, a, b); }
Node Sub(Node a, Node b) { return Binary("Sub", OpType::Sub, a, b); }
Node Mul(Node a, Node b) { return Binary("Mul", OpType::Mul, a, b); }
Node Div(Node a, Node b) { return Binary("Div", OpType::Div, a, b); }
Node Rem(Node a, Node b) { return Binary("Rem", OpType::Rem, a, b); }
Node Pow(Node a, Node b) { return Binary("Pow", OpType::Pow, a, b); }
Node Max(Node a, Node b) { return Binary("Max", OpType::Max, a, b); }
Node Min(Node a, Node b) { return Binary("Min", OpType::Min, a, b); }
Node Atan2(Node y, Node x) { return Binary("Atan2", OpType::Atan2, y, x); }
Node LogicalAnd(Node a, Node b) { return Binary("LogicalAnd", OpType::LogicalAnd, a, b); }
Node LogicalOr(Node a, Node b) { return Binary("LogicalOr", OpType::LogicalOr, a, b); }
Node LogicalXor(Node a, Node b) { return Binary("LogicalXor", OpType::LogicalXor, a, b); }
Node BitwiseAnd(Node a, Node b) { return Binary("BitwiseAnd", OpType::BitwiseAnd, a, b); }
Node BitwiseOr(Node a, Node b) { return Binary("BitwiseOr", OpType::BitwiseOr, a, b); }
Node BitwiseXor(Node a, Node b) { return Binary("BitwiseXor", OpType::BitwiseXor, a, b); }
namespace {
/// A bit shift: `bits` converted to a's dtype first (GoMLX's rule).
Node Shift(const char* op, OpType type, Node a, Node bits) {
  ops_internal::CheckNodes(op, {a, bits});
  if (bits.dtype() != a.dtype() && IsInt(a.dtype()) && IsInt(bits.dtype()))
    bits = ConvertDType(bits, a.dtype());
  return Binary(op, type, a, bits);
}
}  // namespace

Node BitwiseShiftLeft(Node a, Node bits) { return Shift("BitwiseShiftLeft", OpType::ShiftLeft, a, bits); }
Node BitwiseShiftRightArithmetic(Node a, Node bits) {
  return Shift("BitwiseShiftRightArithmetic", OpType::ShiftRightArithmetic, a, bits);
}
Node BitwiseShiftRightLogical(Node a, Node bits) {
  return Shift("BitwiseShiftRightLogical", OpType::ShiftRightLogical, a, bits);
}

// ---- Comparisons and selection ---------------------------------------------------------------------

Node Equal(Node a, Node b) { return Binary("Equal", OpType::Equal, a, b); }
Node NotEqual(Node a, Node b) { return Binary("NotEqual", OpType::NotEqual, a, b); }
Node Less(Node a, Node b) { return Binary("Less", OpType::Less, a, b); }
Node LessOrEqual(Node a, Node b) { return Binary("LessOrEqual", OpType::LessOrEqual, a, b); }
Node Greater(Node a, Node b) { return Binary("Greater", OpType::Greater, a, b); }
Node GreaterOrEqual(Node a, Node b) { return Binary("GreaterOrEqual", OpType::GreaterOrEqual, a, b); }

Node IsZero(Node x) {
  ops_internal::CheckNodes("IsZero", {x});
  return Binary("IsZero", OpType::Equal, x, ScalarLike(x, 0));
}

Node Where(Node cond, Node onTrue, Node onFalse) {
  ops_internal::CheckNodes("Where", {cond, onTrue, onFalse});
  if (cond.dtype() != DType::Bool)
    kiln::detail::Throw("Where: the condition must be Bool, got {}", cond.shape());
  // The GoMLX dtype message for the two branches, then the shapes of all three.
  ops_internal::BroadcastShape("Where", {onTrue, onFalse});
  const Shape dims = ops_internal::BroadcastShape("Where", {cond, onTrue, onFalse}, false);
  return Emit(
      "Where", OpType::Where,
      {ops_internal::BroadcastTo("Where", cond, dims), ops_internal::BroadcastTo("Where", onTrue, dims),
       ops_internal::BroadcastTo("Where", onFalse, dims)});
}

Node Clamp(Node lo, Node x, Node hi) {
  ops_internal::CheckNodes("Clamp", {lo, x, hi});
  return Binary("Clamp", OpType::Max, lo, Binary("Clamp", OpType::Min, x, hi));
}

}  // namespace kiln::graph
