#pragma once
// Dynamic axes in the shape rules: an axis as (size, name), merging two axes that must be equal,
// names for the sizes ops derive from dynamic ones, and the trial-size inference of the rules
// written for static shapes only.
//
// Every dynamic axis a rule produces has a name: the name of the operand axis it is, or an
// expression of the names it is made of ("batch+3", "batch*seq"). Names are deterministic, so a
// program's shapes re-infer to the same names (Program::Verify), and two axes of the same name
// always have the same size at run time, which compute::Specialize checks.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/compute/program.h"
#include "kiln/core/shape.h"

namespace kiln::compute {

/// One axis of a shape: its size, or Shape::kDynamic with the axis' name.
struct Axis {
  int64_t size = 0;  ///< The size, or Shape::kDynamic.
  std::string name;  ///< The name of a dynamic axis ("" for a static one).
  /// True for a dynamic axis.
  bool Dynamic() const { return size == Shape::kDynamic; }
  /// The size, or the name of a dynamic axis, as shapes print them.
  std::string ToString() const;
};

/// Axis `axis` of `s` (0 <= axis < rank, unchecked).
Axis AxisOf(const Shape& s, int64_t axis);
/// Every axis of `s`.
std::vector<Axis> AxesOf(const Shape& s);
/// A shape of `dtype` with `axes` (names kept on the dynamic ones).
Shape ShapeOf(DType dtype, const std::vector<Axis>& axes);

/// The axis two axes that must be equal give: a static size wins over a dynamic one (checked when
/// the program runs), two dynamic ones keep the first's name. False when both are static and differ.
bool UnifyAxes(const Axis& a, const Axis& b, Axis& out);

/// Sizes that may be equal: equal, or one of them dynamic (then checked when the program runs).
inline bool MayBeEqual(int64_t a, int64_t b) {
  return a == b || a == Shape::kDynamic || b == Shape::kDynamic;
}
/// True when a static axis of `s` is 0: no elements, whatever its dynamic axes.
inline bool KnownEmpty(const Shape& s) {
  for (int64_t d : s.Dimensions())
    if (d == 0) return true;
  return false;
}

/// The size of a dynamic axis derived from others: `expression` in the names it uses ("a+b",
/// "batch*6"). Names that hold operators are put in parentheses.
Axis DerivedAxis(const std::string& expression);
/// `name` as a term of an expression: in parentheses if it holds an operator.
std::string Term(const std::string& name);

/// The element count of a shape as coefficient × product of dynamic axis names (sorted).
struct Monomial {
  int64_t coefficient = 1;         ///< Product of the static sizes.
  std::vector<std::string> names;  ///< Names of the dynamic axes, sorted, with repeats.
};
/// `s`'s element count as a Monomial.
Monomial MonomialOf(const Shape& s);

/// Infers the result of a rule written for static shapes on operands with dynamic axes: runs it
/// twice with every distinct dynamic axis given a distinct trial size, and reads the result's axes:
/// the same size in both runs is static, the trial sizes of one operand axis make that axis, any
/// other is a dynamic axis derived from the op. Throws the rule's error, saying the operands were
/// dynamic. Calls `rule` directly when no operand is dynamic.
Shape InferWithTrialSizes(OpType op, const std::vector<Shape>& operands,
                          const std::function<Shape(const std::vector<Shape>&)>& rule);

}  // namespace kiln::compute
