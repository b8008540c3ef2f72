// Graph frontend: ops for dynamic shapes (dimension specs, DimensionSize, DynamicReshape,
// DynamicBroadcastInDim, DynamicIota and their -Like forms).

#include "kiln/graph/dynamic.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "compute/shape_dims.h"
#include "graph/ops_internal.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops.h"

namespace kiln::graph {

using compute::OpType;
using ops_internal::CheckNodes;

std::string DimensionSpec::ToString() const {
  switch (kind) {
    case Kind::Static:
      return std::to_string(size);
    case Kind::Dynamic:
      return name;
    case Kind::Inferred:
      return "?" + name;
  }
  return "?";
}

DimensionSpec StaticDim(int64_t size) {
  if (size < 0) kiln::detail::Throw("StaticDim: size {} is negative", size);
  return DimensionSpec{DimensionSpec::Kind::Static, size, ""};
}

DimensionSpec NamedDynamicDim(const std::string& name) {
  if (name.empty()) kiln::detail::Throw("NamedDynamicDim: the name is empty");
  return DimensionSpec{DimensionSpec::Kind::Dynamic, Shape::kDynamic, name};
}

DimensionSpec InferredDim() { return DimensionSpec{DimensionSpec::Kind::Inferred, Shape::kDynamic, ""}; }

DimensionSpec NamedInferredDim(const std::string& name) {
  if (name.empty()) kiln::detail::Throw("NamedInferredDim: the name is empty");
  return DimensionSpec{DimensionSpec::Kind::Inferred, Shape::kDynamic, name};
}

DimensionSpec DynamicDim(Node size) {
  CheckNodes("DynamicDim", {size});
  const compute::Instruction& inst = size.graph().instruction(size.id());
  if (!inst.shape.IsScalar() || !IsInt(inst.shape.dtype()) || IsPacked(inst.shape.dtype()))
    kiln::detail::Throw("DynamicDim: the size must be a scalar integer node, got {}", inst.shape);
  if (inst.op == OpType::Constant) {
    const Tensor& literal = inst.attrs.literal;
    return StaticDim(DispatchDType(literal.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_integral_v<T>) {
        return static_cast<int64_t>(literal.Item<T>());
      } else {
        return int64_t{0};  // Not reached: the dtype is an integer.
      }
    }));
  }
  // DimensionSize of a dynamic axis: ReduceSum of ones broadcast along that axis.
  if (inst.op == OpType::ReduceSum && inst.operands.size() == 1) {
    const compute::Instruction& ones = size.graph().instruction(inst.operands[0]);
    if (ones.op == OpType::BroadcastInDim && ones.shape.Rank() == 1 && ones.shape.Dim(0) == Shape::kDynamic &&
        !ones.shape.AxisName(0).empty()) {
      return NamedDynamicDim(ones.shape.AxisName(0));
    }
  }
  kiln::detail::Throw(
      "DynamicDim: node {} is not the size of an axis (from DimensionSize); sizes computed from data are not "
      "known before the program runs",
      size.ToString());
}

DimensionSpec DimensionSpecFor(Node x, int axis) {
  CheckNodes("DimensionSpecFor", {x});
  const Shape s = x.shape();
  const int a = ops_internal::NormalizeAxis("DimensionSpecFor", axis, s.Rank(), s);
  if (s.Dim(a) != Shape::kDynamic) return StaticDim(s.Dim(a));
  if (s.AxisName(a).empty())
    kiln::detail::Throw("DimensionSpecFor: axis {} of {} is dynamic but has no name", a, s);
  return NamedDynamicDim(s.AxisName(a));
}

std::vector<DimensionSpec> DimensionSpecsFor(Node x) {
  CheckNodes("DimensionSpecsFor", {x});
  std::vector<DimensionSpec> specs;
  for (int a = 0; a < x.rank(); ++a) specs.push_back(DimensionSpecFor(x, a));
  return specs;
}

Node DimensionSize(Node x, int axis) {
  const DimensionSpec spec = DimensionSpecFor(x, axis);
  Graph& g = x.graph();
  if (spec.kind == DimensionSpec::Kind::Static) return Scalar(g, DType::Int64, spec.size);
  // Ones along the axis, summed: the size once the program runs (a constant after specialisation).
  Node ones = ops_internal::BroadcastTo("DimensionSize", Scalar(g, DType::Int64, 1),
                                        Shape::MakeDynamic(DType::Int64, {Shape::kDynamic}, {spec.name}));
  return ops_internal::Reduce("DimensionSize", OpType::ReduceSum, ones, {0});
}

Node DynamicShape(Node x) {
  ops_internal::CheckNodes("DynamicShape", {x});
  if (x.rank() == 0) return Const(x.graph(), Tensor::FromShape(Shape(DType::Int64, {0})));
  std::vector<Node> sizes;
  for (int a = 0; a < x.rank(); ++a) sizes.push_back(DimensionSize(x, a));
  return Stack(sizes, 0);
}

Shape ShapeFromSpecs(DType dtype, const std::vector<DimensionSpec>& specs) {
  std::vector<compute::Axis> axes;
  for (size_t i = 0; i < specs.size(); ++i) {
    const DimensionSpec& s = specs[i];
    switch (s.kind) {
      case DimensionSpec::Kind::Static:
        axes.push_back(compute::Axis{s.size, ""});
        break;
      case DimensionSpec::Kind::Dynamic:
        axes.push_back(compute::DerivedAxis(s.name));
        break;
      case DimensionSpec::Kind::Inferred:
        kiln::detail::Throw("ShapeFromSpecs: axis {} is inferred, which only DynamicReshape takes", i);
    }
  }
  return compute::ShapeOf(dtype, axes);
}

namespace {

std::string SpecsString(const std::vector<DimensionSpec>& specs) {
  std::vector<std::string> parts;
  for (const DimensionSpec& s : specs) parts.push_back(s.ToString());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

/// The inferred axis of a reshape of `x` to `specs` (the Inferred one at `at`): static when the
/// element counts divide whatever the sizes, the remaining axis name when one is left, else a
/// dynamic axis named by the spec or by the quotient, sized when the program runs.
compute::Axis InferAxis(const Shape& x, const std::vector<DimensionSpec>& specs, size_t at) {
  compute::Monomial total = compute::MonomialOf(x);
  int64_t known = 1;
  std::vector<std::string> known_names;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (i == at) continue;
    if (specs[i].kind == DimensionSpec::Kind::Static) {
      known *= specs[i].size;
    } else {
      known_names.push_back(specs[i].name);
    }
  }
  std::vector<std::string> rest = total.names;
  bool divides = known != 0 && total.coefficient % known == 0;
  for (const std::string& n : known_names) {
    auto it = std::find(rest.begin(), rest.end(), n);
    if (it == rest.end()) {
      divides = false;
      break;
    }
    rest.erase(it);
  }
  const std::string& name = specs[at].name;
  if (divides) {
    const int64_t coefficient = total.coefficient / known;
    if (rest.empty()) return compute::Axis{coefficient, ""};
    if (name.empty() && coefficient == 1 && rest.size() == 1) return compute::DerivedAxis(rest[0]);
    if (name.empty()) {
      std::vector<std::string> terms;
      if (coefficient != 1) terms.push_back(std::to_string(coefficient));
      for (const std::string& n : rest) terms.push_back(compute::Term(n));
      return compute::DerivedAxis(fmt::format("{}", fmt::join(terms, "*")));
    }
    return compute::DerivedAxis(name);
  }
  if (!x.IsDynamic() && known_names.empty()) {
    kiln::detail::Throw(
        "DynamicReshape: cannot reshape {} ({} elements) to {}: the inferred axis does not divide", x,
        x.Size(), SpecsString(specs));
  }
  if (!name.empty()) return compute::DerivedAxis(name);
  std::vector<std::string> terms;
  for (const DimensionSpec& s : specs)
    if (s.kind != DimensionSpec::Kind::Inferred) terms.push_back(compute::Term(s.ToString()));
  std::vector<std::string> all;
  if (total.coefficient != 1) all.push_back(std::to_string(total.coefficient));
  for (const std::string& n : total.names) all.push_back(compute::Term(n));
  return compute::DerivedAxis(fmt::format("({})/({})", fmt::join(all, "*"), fmt::join(terms, "*")));
}

}  // namespace

Node DynamicReshape(Node x, const std::vector<DimensionSpec>& specs) {
  CheckNodes("DynamicReshape", {x});
  const Shape s = x.shape();
  std::vector<compute::Axis> axes;
  int inferred = -1;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].kind == DimensionSpec::Kind::Inferred) {
      if (inferred >= 0)
        kiln::detail::Throw("DynamicReshape: axes {} and {} are both inferred for {} (at most one can be)",
                            inferred, i, s);
      inferred = static_cast<int>(i);
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (static_cast<int>(i) == inferred) {
      axes.push_back(InferAxis(s, specs, i));
    } else if (specs[i].kind == DimensionSpec::Kind::Static) {
      axes.push_back(compute::Axis{specs[i].size, ""});
    } else {
      axes.push_back(compute::DerivedAxis(specs[i].name));
    }
  }
  return ops_internal::ReshapeTo("DynamicReshape", x, compute::ShapeOf(x.dtype(), axes));
}

Node DynamicReshapeLike(Node x, Node ref) {
  CheckNodes("DynamicReshapeLike", {x, ref});
  return DynamicReshape(x, DimensionSpecsFor(ref));
}

Node ReshapeLike(Node x, Node ref) { return DynamicReshapeLike(x, ref); }

Node DynamicBroadcastInDim(Node x, const std::vector<int>& axes, const std::vector<DimensionSpec>& specs) {
  CheckNodes("DynamicBroadcastInDim", {x});
  compute::OpAttributes attrs;
  attrs.shape = ShapeFromSpecs(x.dtype(), specs);
  for (int a : axes) attrs.axes.push_back(a);
  return ops_internal::Emit("DynamicBroadcastInDim", OpType::BroadcastInDim, {x}, std::move(attrs));
}

Node DynamicBroadcastLike(Node x, Node ref) {
  CheckNodes("DynamicBroadcastLike", {x, ref});
  return ops_internal::BroadcastTo("DynamicBroadcastLike", x, ref.shape());
}

Node BroadcastLike(Node x, Node ref) { return DynamicBroadcastLike(x, ref); }

Node DynamicBroadcastToShape(Node x, const Shape& shape) {
  if (!shape.Ok()) kiln::detail::Throw("DynamicBroadcastToShape: invalid target shape");
  return ops_internal::BroadcastTo("DynamicBroadcastToShape", x, shape);
}

Node DynamicPad(Node x, Node fill, const std::vector<DimensionSpec>& specs) {
  const char* op = "DynamicPad";
  CheckNodes(op, {x, fill});
  const Shape s = x.shape();
  if (!fill.shape().IsScalar() || fill.dtype() != x.dtype())
    kiln::detail::Throw("{}: the fill value must be a scalar {} (x is {}), got {}", op, x.dtype(), s,
                        fill.shape());
  if (static_cast<int>(specs.size()) > s.Rank())
    kiln::detail::Throw("{}: {} sizes given for {}, which has {} axes", op, specs.size(), s, s.Rank());
  std::vector<DimensionSpec> target = DimensionSpecsFor(x);
  bool dynamic = s.IsDynamic();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].kind == DimensionSpec::Kind::Inferred)
      kiln::detail::Throw("{}: axis {} cannot be inferred, give its size", op, i);
    target[i] = specs[i];
    dynamic = dynamic || specs[i].kind == DimensionSpec::Kind::Dynamic;
  }
  if (!dynamic) {
    std::vector<compute::PadAxis> padding;
    for (int a = 0; a < s.Rank(); ++a) {
      const int64_t high = target[static_cast<size_t>(a)].size - s.Dim(a);
      if (high < 0)
        kiln::detail::Throw("{}: axis {} of {} is longer than its target size {}", op, a, s,
                            target[static_cast<size_t>(a)].size);
      padding.push_back({0, high, 0});
    }
    return Pad(x, fill, padding);
  }
  // The fill broadcast to the target, with x written at its start.
  Node base = DynamicBroadcastInDim(fill, {}, target);
  std::vector<Node> starts(static_cast<size_t>(s.Rank()), Scalar(x.graph(), DType::Int64, 0));
  return DynamicUpdateSlice(base, x, starts);
}

Node DynamicIota(Graph& g, DType dtype, int axis, const std::vector<DimensionSpec>& specs) {
  return Iota(g, ShapeFromSpecs(dtype, specs), axis);
}

Node IotaLike(Node ref, int axis) {
  CheckNodes("IotaLike", {ref});
  return Iota(ref.graph(), ref.shape(), axis);
}

}  // namespace kiln::graph
