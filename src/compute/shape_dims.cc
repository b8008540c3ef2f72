// Dynamic axes in the shape rules (see shape_dims.h).

#include "compute/shape_dims.h"

#include <algorithm>
#include <map>

#include "core/check.h"
#include "core/checked.h"

namespace kiln::compute {

std::string Axis::ToString() const { return Dynamic() ? name : std::to_string(size); }

Axis AxisOf(const Shape& s, int64_t axis) {
  const int64_t size = s.Dimensions()[static_cast<size_t>(axis)];
  if (size != Shape::kDynamic) return Axis{size, ""};
  return Axis{size, s.AxisName(static_cast<int>(axis))};
}

std::vector<Axis> AxesOf(const Shape& s) {
  std::vector<Axis> axes;
  for (int a = 0; a < s.Rank(); ++a) axes.push_back(AxisOf(s, a));
  return axes;
}

Shape ShapeOf(DType dtype, const std::vector<Axis>& axes) {
  std::vector<int64_t> dims;
  std::vector<std::string> names;
  bool named = false;
  for (const Axis& a : axes) {
    dims.push_back(a.size);
    names.push_back(a.Dynamic() ? a.name : "");
    named = named || !names.back().empty();
  }
  if (!named) return Shape(dtype, std::move(dims));
  return Shape::MakeDynamic(dtype, std::move(dims), std::move(names));
}

bool UnifyAxes(const Axis& a, const Axis& b, Axis& out) {
  if (!a.Dynamic() && !b.Dynamic()) {
    out = a;
    return a.size == b.size;
  }
  if (!a.Dynamic()) {
    out = a;
  } else if (!b.Dynamic()) {
    out = b;
  } else {
    out = a.name.empty() ? b : a;
  }
  return true;
}

std::string Term(const std::string& name) {
  return name.find_first_of("+-*/:() ") == std::string::npos ? name : "(" + name + ")";
}

Axis DerivedAxis(const std::string& expression) { return Axis{Shape::kDynamic, expression}; }

Monomial MonomialOf(const Shape& s) {
  Monomial m;
  for (int a = 0; a < s.Rank(); ++a) {
    const Axis axis = AxisOf(s, a);
    if (axis.Dynamic()) {
      m.names.push_back(axis.name);
    } else {
      m.coefficient =
          kiln::detail::CheckedMul(m.coefficient, axis.size, fmt::format("the element count of {}", s));
    }
  }
  std::sort(m.names.begin(), m.names.end());
  return m;
}

namespace {

// Trial sizes. Large ones: multiples of 2520 (divisibility checks by 1..10 hold), far from the
// sizes a graph spells out, small enough that a product of two dynamic axes and the static ones
// stays far inside int64. Small ones, for rules that compare a dynamic size with a static one
// (an update no larger than its operand). Distinct per axis name and per run.
constexpr int64_t kTrialUnit = 2520;
constexpr int64_t kTrialRunOffset = 64;

/// One way of giving sizes: large or small, names numbered ascending or descending (rules that
/// order two operands' sizes pass one way or the other).
struct TrialPlan {
  bool small;
  bool reversed;
};
constexpr TrialPlan kPlans[] = {{false, false}, {false, true}, {true, false}, {true, true}};

/// The trial size of the name numbered `id` of `count` in `run` (0 or 1) under `plan`.
int64_t TrialSize(const TrialPlan& plan, int run, int64_t id, int64_t count) {
  const int64_t rank = plan.reversed ? count - 1 - id : id;
  if (plan.small) return 2 + 2 * rank + run;
  return kTrialUnit * (4 + rank + run * kTrialRunOffset);
}

}  // namespace

Shape InferWithTrialSizes(OpType op, const std::vector<Shape>& operands,
                          const std::function<Shape(const std::vector<Shape>&)>& rule) {
  bool dynamic = false;
  for (const Shape& s : operands) dynamic = dynamic || s.IsDynamic();
  if (!dynamic) return rule(operands);

  // Number the distinct axis names (an unnamed axis is its own name).
  std::map<std::string, int64_t> ids;
  std::vector<std::string> order;
  std::vector<std::vector<std::string>> keys(operands.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    for (int a = 0; a < operands[i].Rank(); ++a) {
      std::string key;
      if (operands[i].Dimensions()[static_cast<size_t>(a)] == Shape::kDynamic) {
        key = operands[i].AxisName(a);
        if (key.empty()) key = fmt::format("?{}.{}", i, a);
        if (ids.emplace(key, static_cast<int64_t>(order.size())).second) order.push_back(key);
      }
      keys[i].push_back(key);
    }
  }
  const auto count = static_cast<int64_t>(order.size());
  if (count >= kTrialRunOffset)
    detail::Throw("{}: more than {} distinct dynamic axes", OpName(op), kTrialRunOffset);
  const auto run_rule = [&](const TrialPlan& plan, int run) {
    std::vector<Shape> trial;
    for (size_t i = 0; i < operands.size(); ++i) {
      std::vector<int64_t> dims = operands[i].Dimensions();
      for (size_t a = 0; a < dims.size(); ++a) {
        if (!keys[i][a].empty()) dims[a] = TrialSize(plan, run, ids[keys[i][a]], count);
      }
      trial.push_back(Shape(operands[i].dtype(), std::move(dims)));
    }
    return rule(trial);
  };
  Shape results[2];
  const TrialPlan* used = nullptr;
  std::string first_error;
  for (const TrialPlan& plan : kPlans) {
    try {
      results[0] = run_rule(plan, 0);
      results[1] = run_rule(plan, 1);
      used = &plan;
      break;
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.message();
    }
  }
  if (used == nullptr) {
    std::vector<std::string> shapes;
    for (const Shape& s : operands) shapes.push_back(s.ToString());
    detail::Throw("{}: on operands with dynamic axes {}: {} (an axis this op needs static may be dynamic)",
                  OpName(op), fmt::join(shapes, ", "), first_error);
  }
  // A check at the other scale catches results two runs leave equal (a size clamped at zero,
  // say); where the rule rejects those sizes it is skipped.
  Shape other;
  try {
    other = run_rule(TrialPlan{!used->small, used->reversed}, 0);
  } catch (const Error&) {
    other = Shape();
  }
  if (results[0].Rank() != results[1].Rank() || results[0].dtype() != results[1].dtype()) {
    detail::Throw("{}: its result's rank depends on the size of a dynamic axis", OpName(op));
  }
  std::vector<Axis> axes;
  for (int a = 0; a < results[0].Rank(); ++a) {
    const int64_t d0 = results[0].Dimensions()[static_cast<size_t>(a)];
    const int64_t d1 = results[1].Dimensions()[static_cast<size_t>(a)];
    const bool other_differs =
        other.Ok() && other.Rank() == results[0].Rank() && other.Dimensions()[static_cast<size_t>(a)] != d0;
    if (d0 == d1 && !other_differs) {
      axes.push_back(Axis{d0, ""});
      continue;
    }
    Axis axis = DerivedAxis(fmt::format("{}.{}({})", OpName(op), a, fmt::join(order, ",")));
    for (size_t k = 0; k < order.size(); ++k) {
      const auto id = static_cast<int64_t>(k);
      if (d0 == TrialSize(*used, 0, id, count) && d1 == TrialSize(*used, 1, id, count)) {
        axis.name = order[k][0] == '?' ? "" : order[k];
      }
    }
    axes.push_back(axis);
  }
  return ShapeOf(results[0].dtype(), axes);
}

}  // namespace kiln::compute
