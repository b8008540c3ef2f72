// Specialize: a program with dynamic axes made concrete for the shapes of one call, with every
// run-time check of the dynamic axes (names agree, static axes hold, reshapes divide).

#include <algorithm>
#include <map>
#include <string>

#include "compute/shape_dims.h"
#include "compute/shape_rules.h"
#include "core/check.h"
#include "kiln/compute/dynamic.h"
#include "kiln/compute/shape_inference.h"

namespace kiln::compute {

bool IsDynamic(const Program& program) {
  for (const Instruction& inst : program.Instructions()) {
    if (inst.shape.IsDynamic() || inst.attrs.shape.IsDynamic()) return true;
    for (const Shape& s : inst.tuple_shapes)
      if (s.IsDynamic()) return true;
    for (const auto& sub : inst.subprograms)
      if (sub && IsDynamic(*sub)) return true;
  }
  return false;
}

namespace {

class Specializer {
 public:
  Specializer(const Program& program, const std::vector<Shape>& shapes) : p_(program), inputs_(shapes) {
    if (shapes.size() != program.Parameters().size()) {
      detail::Throw("Specialize: {} input shapes for a program of {} parameters", shapes.size(),
                    program.Parameters().size());
    }
  }

  /// The concrete instructions, in order.
  std::vector<Instruction> Run() {
    std::vector<Instruction> out;
    const auto& insts = p_.Instructions();
    out.reserve(insts.size());
    for (size_t id = 0; id < insts.size(); ++id)
      out.push_back(Concrete(static_cast<int>(id), insts[id], out));
    return out;
  }

 private:
  struct Seen {
    int64_t size;
    std::string where;
  };

  std::string Where(int id, const Instruction& inst) const {
    if (inst.op == OpType::Parameter) return fmt::format("input {}", inst.attrs.index);
    return fmt::format("#{} {}", id, OpName(inst.op));
  }

  /// Checks `actual` against the shape the program was built with and binds its axis names.
  void Bind(const std::string& where, const Shape& built, const Shape& actual) {
    if (built.dtype() != actual.dtype() || built.Rank() != actual.Rank()) {
      detail::Throw("{}: has shape {} at run time, but the program was built for {}", where, actual, built);
    }
    for (int a = 0; a < built.Rank(); ++a) {
      const int64_t want = built.Dimensions()[static_cast<size_t>(a)];
      const int64_t got = actual.Dimensions()[static_cast<size_t>(a)];
      if (want != Shape::kDynamic) {
        if (want != got)
          detail::Throw("{}: axis {} has size {} at run time, but the program was built for {} (shape {})",
                        where, a, got, want, built);
        continue;
      }
      const std::string name = built.AxisName(a);
      if (name.empty()) continue;
      auto [it, fresh] = seen_.emplace(name, Seen{got, fmt::format("{} axis {}", where, a)});
      if (!fresh && it->second.size != got) {
        detail::Throw("{}: axis {} \"{}\" has size {}, but {} of the same name has size {}", where, a, name,
                      got, it->second.where, it->second.size);
      }
    }
  }

  /// `s` with its named dynamic axes given their sizes; `fallback(axis)` sizes the others (-1: none).
  template <typename Fallback>
  Shape Resolve(const std::string& where, const Shape& s, Fallback fallback) const {
    std::vector<int64_t> dims = s.Dimensions();
    for (int a = 0; a < s.Rank(); ++a) {
      if (dims[static_cast<size_t>(a)] != Shape::kDynamic) continue;
      const std::string name = s.AxisName(a);
      auto it = name.empty() ? seen_.end() : seen_.find(name);
      dims[static_cast<size_t>(a)] = it != seen_.end() ? it->second.size : fallback(a);
      if (dims[static_cast<size_t>(a)] < 0) {
        detail::Throw(
            "{}: the size of axis {} (\"{}\") of {} is not known when the program runs: no input or earlier "
            "value "
            "has an axis of that name",
            where, a, name, s);
      }
    }
    return Shape(s.dtype(), std::move(dims));
  }

  /// Reshape's target: named axes resolved, one other inferred from the element count.
  Shape ReshapeTarget(const std::string& where, const Shape& target, const Shape& operand) const {
    int unknown = -1;
    Shape partial = Resolve(where, target, [&](int a) {
      if (unknown >= 0) return int64_t{-1};  // A second unknown axis cannot be inferred.
      unknown = a;
      return int64_t{1};
    });
    if (unknown < 0) return partial;
    const int64_t known = partial.Size();
    const int64_t total = operand.Size();
    if (known == 0 || total % known != 0) {
      detail::Throw("{}: cannot reshape {} ({} elements) to {}: {} is not a multiple of {}", where, operand,
                    total, target, total, known);
    }
    std::vector<int64_t> dims = partial.Dimensions();
    dims[static_cast<size_t>(unknown)] = total / known;
    return Shape(target.dtype(), std::move(dims));
  }

  Instruction Concrete(int id, const Instruction& inst, const std::vector<Instruction>& done) {
    Instruction c = inst;
    const std::string where = Where(id, inst);
    std::vector<Shape> operands;
    std::vector<Shape> tuple_operand;
    for (int o : inst.operands) {
      operands.push_back(done[static_cast<size_t>(o)].shape);
      if (inst.op == OpType::GetTupleElement) tuple_operand = done[static_cast<size_t>(o)].tuple_shapes;
    }
    OpAttributes& at = c.attrs;
    if (inst.op == OpType::Parameter) {
      const Shape& given = inputs_[static_cast<size_t>(inst.attrs.index)];
      Bind(where, inst.shape, given);
      at.shape = given;
      c.shape = given;
      return c;
    }
    // The ops whose attributes hold sizes.
    if (inst.op == OpType::Iota) {
      at.shape = Resolve(where, at.shape, [](int) { return int64_t{-1}; });
    } else if (inst.op == OpType::Reshape) {
      at.shape = ReshapeTarget(where, at.shape, operands[0]);
    } else if (inst.op == OpType::BroadcastInDim) {
      at.shape = Resolve(where, at.shape, [&](int a) {
        for (size_t i = 0; i < at.axes.size(); ++i)
          if (at.axes[i] == a) return operands[0].Dimensions()[i];
        return int64_t{-1};
      });
      // A dynamic axis is never broadcast (gradients rely on it): it must have the target's size.
      const Shape& built = p_.Instructions()[static_cast<size_t>(inst.operands[0])].shape;
      for (size_t i = 0; i < at.axes.size() && i < operands[0].Dimensions().size(); ++i) {
        const int64_t got = operands[0].Dimensions()[i], want = at.shape.Dim(static_cast<int>(at.axes[i]));
        if (built.Dim(static_cast<int>(i)) == Shape::kDynamic && got != want) {
          detail::Throw(
              "{}: dynamic axis {} of the operand has size {} at run time, but the target axis {} has {} "
              "(dynamic axes do not broadcast)",
              where, i, got, at.axes[i], want);
        }
      }
    } else if (inst.op == OpType::Slice) {
      for (size_t a = 0; a < at.limits.size() && a < operands[0].Dimensions().size(); ++a) {
        if (at.limits[a] == Shape::kDynamic) at.limits[a] = operands[0].Dimensions()[a];
      }
    }
    try {
      if (IsTupleOp(inst.op)) {
        // Sub-programs with dynamic axes are specialised to the values they are given: the
        // state (While) or the values after the predicate (If).
        for (auto& sub : c.subprograms) {
          if (!sub || !IsDynamic(*sub)) continue;
          const size_t skip = inst.op == OpType::If ? 1 : 0;
          std::vector<Shape> given(operands.begin() + static_cast<long>(std::min(skip, operands.size())),
                                   operands.end());
          sub = Specialize(*sub, given);
        }
        c.tuple_shapes = InferTupleShapes(inst.op, operands, at, c.subprograms);
        if (c.tuple_shapes.size() != inst.tuple_shapes.size())
          detail::Throw("{} results where the program was built with {}", c.tuple_shapes.size(),
                        inst.tuple_shapes.size());
      } else if (inst.op == OpType::GetTupleElement) {
        c.shape = InferTupleElementShape(tuple_operand, at);
      } else {
        c.shape = InferShape(inst.op, operands, at);
      }
    } catch (const Error& e) {
      detail::Throw("{} at run time: {}", where, e.message());
    }
    for (size_t k = 0; k < c.tuple_shapes.size(); ++k) Bind(where, inst.tuple_shapes[k], c.tuple_shapes[k]);
    if (!inst.IsTuple()) Bind(where, inst.shape, c.shape);
    return c;
  }

  const Program& p_;
  const std::vector<Shape>& inputs_;
  std::map<std::string, Seen> seen_;
};

}  // namespace

std::shared_ptr<const Program> Specialize(const Program& program, const std::vector<Shape>& shapes) {
  Specializer s(program, shapes);
  return std::make_shared<const Program>(s.Run(), program.Outputs(), program.Donatable());
}

}  // namespace kiln::compute
