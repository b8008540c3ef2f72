#include "kiln/compute/program.h"

#include <algorithm>
#include <string>

#include "compute/shape_rules.h"
#include "core/check.h"
#include "kiln/compute/shape_inference.h"

namespace kiln::compute {

namespace {

// The attribute slots, named as the OpAttributes fields and the ops.def columns.
enum class Attr {
  index,
  shape,
  literal,
  axis,
  dtype,
  axes,
  permutation,
  starts,
  limits,
  strides,
  padding,
  lhs_contracting,
  rhs_contracting,
  lhs_batch,
  rhs_batch,
  conv,
  window,
  input_dilations,
  kernel_dilations,
  feature_groups,
  batch_groups,
  reduce_kind,
  gather,
  scatter,
  sizes,
  reverse,
  trip_count,
  name,
  values,
  fft_type,
  fft_length,
  replicas
};

struct OpInfo {
  std::string_view name;
  int arity;
  OpCategory category;
  DTypeClass dtypes;
  std::vector<Attr> attrs;
};

const std::vector<OpInfo>& OpTable() {
  static const std::vector<OpInfo> table = {
#define KILN_OP(name, arity, category, dtypes, ...)             \
  {#name, arity, OpCategory::category, DTypeClass::dtypes, [] { \
     using enum Attr;                                           \
     return std::vector<Attr>{__VA_ARGS__};                     \
   }()},
#include "kiln/compute/ops.def"
#undef KILN_OP
  };
  return table;
}

static_assert(kNumOps == 107, "ops.def changed: update the op count, the shape rules and every kernel table");

std::string Ints(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

std::string FormatAttr(Attr a, const OpAttributes& at) {
  switch (a) {
    case Attr::index:
      return fmt::format("index={}", at.index);
    case Attr::shape:
      return fmt::format("shape={}", at.shape);
    case Attr::literal: {
      std::string v = at.literal.ToString();
      if (v.size() > 60) v = v.substr(0, 57) + "...";
      return "value=" + v;
    }
    case Attr::axis:
      return fmt::format("axis={}", at.axis);
    case Attr::dtype:
      return fmt::format("dtype={}", at.dtype);
    case Attr::axes:
      return "axes=" + Ints(at.axes);
    case Attr::permutation:
      return "permutation=" + Ints(at.permutation);
    case Attr::starts:
      return "starts=" + Ints(at.starts);
    case Attr::limits:
      return "limits=" + Ints(at.limits);
    case Attr::strides:
      return "strides=" + Ints(at.strides);
    case Attr::padding: {
      std::vector<std::string> parts;
      for (const auto& p : at.padding) parts.push_back(fmt::format("{}:{}:{}", p.low, p.high, p.interior));
      return fmt::format("padding=[{}]", fmt::join(parts, ", "));
    }
    case Attr::lhs_contracting:
      return "lhs_contracting=" + Ints(at.lhs_contracting);
    case Attr::rhs_contracting:
      return "rhs_contracting=" + Ints(at.rhs_contracting);
    case Attr::lhs_batch:
      return "lhs_batch=" + Ints(at.lhs_batch);
    case Attr::rhs_batch:
      return "rhs_batch=" + Ints(at.rhs_batch);
    case Attr::conv:
      return fmt::format("conv=[b{} f{} s{}]x[i{} o{} s{}]->[b{} f{} s{}]", at.conv.input_batch,
                         at.conv.input_feature, Ints(at.conv.input_spatial), at.conv.kernel_input_feature,
                         at.conv.kernel_output_feature, Ints(at.conv.kernel_spatial), at.conv.output_batch,
                         at.conv.output_feature, Ints(at.conv.output_spatial));
    case Attr::window:
      return "window=" + Ints(at.window);
    case Attr::input_dilations:
      return "input_dilations=" + Ints(at.input_dilations);
    case Attr::kernel_dilations:
      return "kernel_dilations=" + Ints(at.kernel_dilations);
    case Attr::feature_groups:
      return fmt::format("feature_groups={}", at.feature_groups);
    case Attr::batch_groups:
      return fmt::format("batch_groups={}", at.batch_groups);
    case Attr::reduce_kind: {
      static constexpr const char* kNames[] = {"Sum", "Product", "Max", "Min", "Set"};
      return fmt::format("reduce={}", kNames[static_cast<int>(at.reduce_kind)]);
    }
    case Attr::gather:
      return fmt::format(
          "gather=[offset_dims={} collapsed={} start_index_map={} slice_sizes={} index_vector_dim={}]",
          Ints(at.gather.offset_dims), Ints(at.gather.collapsed_slice_dims), Ints(at.gather.start_index_map),
          Ints(at.gather.slice_sizes), at.gather.index_vector_dim);
    case Attr::scatter:
      return fmt::format("scatter=[update_window_dims={} inserted={} to_operand={} index_vector_dim={}]",
                         Ints(at.scatter.update_window_dims), Ints(at.scatter.inserted_window_dims),
                         Ints(at.scatter.scatter_dims_to_operand_dims), at.scatter.index_vector_dim);
    case Attr::sizes:
      return "sizes=" + Ints(at.sizes);
    case Attr::reverse:
      return fmt::format("reverse={}", at.reverse);
    case Attr::trip_count:
      return fmt::format("trip_count={}", at.trip_count);
    case Attr::name:
      return fmt::format("name={}", at.name);
    case Attr::values:
      return "values=" + Ints(at.values);
    case Attr::fft_type: {
      static constexpr const char* kNames[] = {"Forward", "Inverse", "ForwardReal", "InverseReal"};
      return fmt::format("fft_type={}", kNames[static_cast<int>(at.fft_type)]);
    }
    case Attr::fft_length:
      return fmt::format("fft_length={}", at.fft_length);
    case Attr::replicas:
      return fmt::format("replicas={}", at.replicas);
  }
  return "?";
}

bool AttrEqual(Attr a, const OpAttributes& x, const OpAttributes& y) {
  switch (a) {
    case Attr::index:
      return x.index == y.index;
    case Attr::shape:
      return x.shape == y.shape;
    case Attr::literal:
      return x.literal.shape() == y.literal.shape() && x.literal.Equal(y.literal);
    case Attr::axis:
      return x.axis == y.axis;
    case Attr::dtype:
      return x.dtype == y.dtype;
    case Attr::axes:
      return x.axes == y.axes;
    case Attr::permutation:
      return x.permutation == y.permutation;
    case Attr::starts:
      return x.starts == y.starts;
    case Attr::limits:
      return x.limits == y.limits;
    case Attr::strides:
      return x.strides == y.strides;
    case Attr::padding:
      return x.padding == y.padding;
    case Attr::lhs_contracting:
      return x.lhs_contracting == y.lhs_contracting;
    case Attr::rhs_contracting:
      return x.rhs_contracting == y.rhs_contracting;
    case Attr::lhs_batch:
      return x.lhs_batch == y.lhs_batch;
    case Attr::rhs_batch:
      return x.rhs_batch == y.rhs_batch;
    case Attr::conv:
      return x.conv == y.conv;
    case Attr::window:
      return x.window == y.window;
    case Attr::input_dilations:
      return x.input_dilations == y.input_dilations;
    case Attr::kernel_dilations:
      return x.kernel_dilations == y.kernel_dilations;
    case Attr::feature_groups:
      return x.feature_groups == y.feature_groups;
    case Attr::batch_groups:
      return x.batch_groups == y.batch_groups;
    case Attr::reduce_kind:
      return x.reduce_kind == y.reduce_kind;
    case Attr::gather:
      return x.gather == y.gather;
    case Attr::scatter:
      return x.scatter == y.scatter;
    case Attr::sizes:
      return x.sizes == y.sizes;
    case Attr::reverse:
      return x.reverse == y.reverse;
    case Attr::trip_count:
      return x.trip_count == y.trip_count;
    case Attr::name:
      return x.name == y.name;
    case Attr::values:
      return x.values == y.values;
    case Attr::fft_type:
      return x.fft_type == y.fft_type;
    case Attr::fft_length:
      return x.fft_length == y.fft_length;
    case Attr::replicas:
      return x.replicas == y.replicas;
  }
  return false;
}

const OpInfo& Info(OpType op) {
  const auto i = static_cast<size_t>(op);
  if (i >= OpTable().size()) detail::Throw("invalid op code {}", i);
  return OpTable()[i];
}

}  // namespace

std::string_view OpName(OpType op) { return Info(op).name; }

bool AttributesEqual(OpType op, const OpAttributes& a, const OpAttributes& b) {
  for (Attr slot : Info(op).attrs)
    if (!AttrEqual(slot, a, b)) return false;
  return true;
}
int OpArity(OpType op) { return Info(op).arity; }
OpCategory GetOpCategory(OpType op) { return Info(op).category; }
DTypeClass OpDTypeClass(OpType op) { return Info(op).dtypes; }

bool InDTypeClass(DType dtype, DTypeClass dtypes) {
  switch (dtypes) {
    case DTypeClass::Float:
      return IsFloat(dtype);
    case DTypeClass::Bool:
      return dtype == DType::Bool;
    case DTypeClass::Int:
      return IsInt(dtype) && !IsPacked(dtype);
    case DTypeClass::Numeric:
      return (IsFloat(dtype) || IsInt(dtype)) && !IsPacked(dtype);
    case DTypeClass::Complex:
      return IsComplex(dtype);
    case DTypeClass::FloatComplex:
      return IsFloat(dtype) || IsComplex(dtype);
    case DTypeClass::NumericComplex:
      return ((IsFloat(dtype) || IsInt(dtype)) && !IsPacked(dtype)) || IsComplex(dtype);
    case DTypeClass::Unpacked:
      return IsValid(dtype) && !IsStorageOnly(dtype);
    case DTypeClass::Any:
      return IsValid(dtype);
  }
  return false;
}

const std::vector<OpType>& AllOps() {
  static const std::vector<OpType> ops = [] {
    std::vector<OpType> v;
    for (int i = 0; i < kNumOps; ++i) v.push_back(static_cast<OpType>(i));
    return v;
  }();
  return ops;
}

/// "Slice(starts=[0], limits=[2], strides=[1])": the op with its attributes.
std::string FormatOp(OpType op, const OpAttributes& attrs) {
  std::vector<std::string> parts;
  for (Attr a : Info(op).attrs) parts.push_back(FormatAttr(a, attrs));
  if (parts.empty()) return std::string(OpName(op));
  return fmt::format("{}{{{}}}", OpName(op), fmt::join(parts, ", "));
}

Program::Program(std::vector<Instruction> instructions, std::vector<int> outputs, std::vector<bool> donatable)
    : instructions_(std::move(instructions)), outputs_(std::move(outputs)), donatable_(std::move(donatable)) {
  std::vector<int> by_index;
  for (size_t id = 0; id < instructions_.size(); ++id) {
    const Instruction& inst = instructions_[id];
    if (inst.op != OpType::Parameter) continue;
    const auto index = static_cast<size_t>(inst.attrs.index);
    if (inst.attrs.index < 0 || index >= instructions_.size())
      detail::Throw("Program: parameter index {} out of range", inst.attrs.index);
    if (by_index.size() <= index) by_index.resize(index + 1, -1);
    if (by_index[index] != -1) detail::Throw("Program: parameter {} defined twice", index);
    by_index[index] = static_cast<int>(id);
  }
  for (size_t i = 0; i < by_index.size(); ++i) {
    if (by_index[i] == -1) detail::Throw("Program: parameter {} is missing", i);
  }
  parameters_ = std::move(by_index);
  if (donatable_.empty()) donatable_.assign(parameters_.size(), false);
  if (donatable_.size() != parameters_.size()) {
    detail::Throw("Program: {} donation flags for {} parameters", donatable_.size(), parameters_.size());
  }
  for (int out : outputs_) {
    if (out < 0 || static_cast<size_t>(out) >= instructions_.size())
      detail::Throw("Program: output #{} does not exist", out);
  }
}

void Program::Verify() const {
  for (size_t id = 0; id < instructions_.size(); ++id) {
    const Instruction& inst = instructions_[id];
    std::vector<Shape> operand_shapes;
    std::vector<Shape> tuple_operand;
    for (int operand : inst.operands) {
      if (operand < 0 || static_cast<size_t>(operand) >= id) {
        detail::Throw("Program::Verify: #{} {} uses #{}, which is not an earlier instruction", id,
                      OpName(inst.op), operand);
      }
      const Instruction& from = instructions_[static_cast<size_t>(operand)];
      if (from.IsTuple() && inst.op != OpType::GetTupleElement) {
        detail::Throw("Program::Verify: #{} {} uses the tuple #{} directly (read it with GetTupleElement)",
                      id, OpName(inst.op), operand);
      }
      if (inst.op == OpType::GetTupleElement) tuple_operand = from.tuple_shapes;
      operand_shapes.push_back(from.shape);
    }
    const bool tuple_op = IsTupleOp(inst.op);
    if (!tuple_op && (inst.IsTuple() || !inst.subprograms.empty())) {
      detail::Throw("Program::Verify: #{} {} has tuple shapes or sub-programs, which only tuple ops have", id,
                    OpName(inst.op));
    }
    if (tuple_op) {
      std::vector<Shape> inferred;
      try {
        for (size_t k = 0; k < inst.subprograms.size(); ++k) {
          if (inst.subprograms[k]) inst.subprograms[k]->Verify();
        }
        inferred = InferTupleShapes(inst.op, operand_shapes, inst.attrs, inst.subprograms);
      } catch (const Error& e) {
        detail::Throw("Program::Verify: #{}: {}", id, e.message());
      }
      if (inferred != inst.tuple_shapes || inst.shape.Ok()) {
        detail::Throw("Program::Verify: #{} {} has results that do not match its operands and sub-programs",
                      id, OpName(inst.op));
      }
      continue;
    }
    Shape inferred;
    try {
      inferred = inst.op == OpType::GetTupleElement && operand_shapes.size() == 1
                     ? InferTupleElementShape(tuple_operand, inst.attrs)
                     : InferShape(inst.op, operand_shapes, inst.attrs);
    } catch (const Error& e) {
      detail::Throw("Program::Verify: #{}: {}", id, e.message());
    }
    if (inferred != inst.shape) {
      detail::Throw("Program::Verify: #{} {} has shape {} but its operands give {}", id, OpName(inst.op),
                    inst.shape, inferred);
    }
  }
  for (int out : outputs_) {
    if (instructions_[static_cast<size_t>(out)].IsTuple())
      detail::Throw("Program::Verify: output #{} is a tuple (output its elements)", out);
  }
}

std::string Program::ToString() const {
  std::string s = fmt::format("Program ({} parameters, {} instructions, outputs", parameters_.size(),
                              instructions_.size());
  for (int o : outputs_) s += fmt::format(" #{}", o);
  s += ")\n";
  for (size_t id = 0; id < instructions_.size(); ++id) {
    const Instruction& inst = instructions_[id];
    std::vector<std::string> operands;
    for (int o : inst.operands) operands.push_back(fmt::format("#{}", o));
    std::string shape = inst.shape.ToString();
    if (inst.IsTuple()) {
      std::vector<std::string> parts;
      for (const Shape& t : inst.tuple_shapes) parts.push_back(t.ToString());
      shape = fmt::format("({})", fmt::join(parts, ", "));
    }
    s += fmt::format("  #{} = {}({}) -> {}\n", id, FormatOp(inst.op, inst.attrs), fmt::join(operands, ", "),
                     shape);
    for (size_t k = 0; k < inst.subprograms.size(); ++k) {
      std::string sub = inst.subprograms[k]->ToString();
      s += fmt::format("    sub-program {}:\n", k);
      size_t start = 0;
      while (start < sub.size()) {
        size_t end = sub.find('\n', start);
        if (end == std::string::npos) end = sub.size();
        s += "      " + sub.substr(start, end - start) + "\n";
        start = end + 1;
      }
    }
  }
  return s;
}

}  // namespace kiln::compute
