// Writing kiln models as ONNX: the model function is traced once, its variables become
// initializers, and each primitive becomes ONNX nodes (opset 17). Dynamic axes of the inputs
// become symbolic dimensions; sizes that depend on them are computed in the exported graph from
// the inputs' shapes.

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/check.h"
#include "io/atomic_file.h"
#include "kiln/compute/backend.h"
#include "kiln/graph/exec.h"
#include "kiln/graph/ops.h"
#include "kiln/onnx/onnx.h"
#include "onnx/proto.h"

namespace kiln::onnx {

namespace {

using compute::Instruction;
using compute::OpType;

constexpr int64_t kOpset = 17;

/// Builds the GraphProto node by node.
class Writer {
 public:
  Writer(::onnx::GraphProto& g, const std::vector<Shape>& inputs) : g_(g), inputs_(inputs) {}

  /// A fresh value name.
  std::string Fresh(const std::string& hint) { return fmt::format("{}_{}", hint, next_++); }

  /// Adds node `op` reading `ins`, returns its (first) output's name.
  std::string Node(const std::string& op, const std::vector<std::string>& ins, int outputs = 1) {
    ::onnx::NodeProto* n = g_.add_node();
    n->set_op_type(op);
    n->set_name(Fresh(op));
    for (const std::string& i : ins) n->add_input(i);
    std::string first;
    for (int k = 0; k < outputs; ++k) {
      const std::string o = Fresh(op + "_out");
      n->add_output(o);
      if (k == 0) first = o;
    }
    last_ = n;
    return first;
  }
  void IntAttr(const std::string& name, int64_t v) {
    auto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  void IntsAttr(const std::string& name, const std::vector<int64_t>& v) {
    auto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  void StringAttr(const std::string& name, const std::string& v) {
    auto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  /// An initializer holding `t`.
  std::string Initializer(const Tensor& t, const std::string& name) {
    *g_.add_initializer() = internal::TensorToProto(t, name);
    return name;
  }
  std::string Ints(const std::vector<int64_t>& v) { return Initializer(Tensor::FromValue(v), Fresh("ints")); }

  /// A 1-D Int64 tensor of `shape`'s dimensions: static ones as constants, dynamic ones read
  /// from the shape of the input that has an axis of that name.
  std::string Dims(const Shape& shape, const std::string& op) {
    if (!shape.IsDynamic()) return Ints(shape.Dimensions());
    std::vector<std::string> parts;
    for (int a = 0; a < shape.Rank(); ++a) {
      if (shape.Dim(a) != Shape::kDynamic) {
        parts.push_back(Ints({shape.Dim(a)}));
        continue;
      }
      parts.push_back(DynamicDim(shape.AxisName(a), op));
    }
    const std::string out = Node("Concat", parts);
    IntAttr("axis", 0);
    return out;
  }

  /// A [1] Int64 tensor with the size of the dynamic axis `name` of an input.
  std::string DynamicDim(const std::string& name, const std::string& op) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      for (int a = 0; a < inputs_[i].Rank(); ++a) {
        if (inputs_[i].Dim(a) == Shape::kDynamic && inputs_[i].AxisName(a) == name) {
          const std::string s = Node("Shape", {fmt::format("input_{}", i)});
          IntAttr("start", a);
          IntAttr("end", a + 1);
          return s;
        }
      }
    }
    detail::Throw(
        "onnx::Export: {} needs the size of the dynamic axis \"{}\", which no input has (derived axes "
        "are not exported yet)",
        op, name);
  }

 private:
  ::onnx::GraphProto& g_;
  const std::vector<Shape>& inputs_;
  ::onnx::NodeProto* last_ = nullptr;
  int next_ = 0;
};

void SetValueInfo(::onnx::ValueInfoProto* v, const std::string& name, const Shape& shape) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(internal::OnnxFromDType(shape.dtype()));
  auto* sh = tt->mutable_shape();
  for (int a = 0; a < shape.Rank(); ++a) {
    auto* d = sh->add_dim();
    if (shape.Dim(a) == Shape::kDynamic) {
      d->set_dim_param(shape.AxisName(a));
    } else {
      d->set_dim_value(shape.Dim(a));
    }
  }
}

/// The einsum equation of a DotGeneral: result axes [batch..., lhs free..., rhs free...].
std::string EinsumEquation(const Instruction& inst, int lhs_rank, int rhs_rank) {
  const auto& at = inst.attrs;
  std::string l(static_cast<size_t>(lhs_rank), '?'), r(static_cast<size_t>(rhs_rank), '?'), out;
  char next = 'a';
  for (size_t i = 0; i < at.lhs_batch.size(); ++i) {
    l[static_cast<size_t>(at.lhs_batch[i])] = r[static_cast<size_t>(at.rhs_batch[i])] = next;
    out += next++;
  }
  for (size_t i = 0; i < at.lhs_contracting.size(); ++i)
    l[static_cast<size_t>(at.lhs_contracting[i])] = r[static_cast<size_t>(at.rhs_contracting[i])] = next++;
  for (char& ch : l)
    if (ch == '?') out += (ch = next++);
  for (char& ch : r)
    if (ch == '?') out += (ch = next++);
  return l + "," + r + "->" + out;
}

}  // namespace

void Export(const model::Store& store, const ExportFn& fn, const std::vector<Shape>& input_shapes,
            const std::string& path) {
  if (!fn) detail::Throw("onnx::Export: {}: empty model function", path);
  graph::Graph g("onnx export");
  std::vector<graph::Node> params;
  for (const Shape& s : input_shapes) params.push_back(g.Parameter(s));
  const std::vector<graph::Node> outputs = fn(store.RootScope(), std::any(), params);
  // Which parameters are variables: each variable's value node in this graph.
  std::map<int, model::Variable> variable_of;
  for (const model::Variable& v : store.Variables()) {
    const graph::Node n = v.NodeValue(g);
    if (g.instruction(n.id()).op == OpType::Parameter) variable_of.emplace(n.id(), v);
  }
  // The nodes the outputs need, in order.
  std::vector<bool> needed(static_cast<size_t>(g.NumNodes()), false);
  for (const graph::Node& o : outputs) needed[static_cast<size_t>(o.id())] = true;
  for (int id = g.NumNodes() - 1; id >= 0; --id)
    if (needed[static_cast<size_t>(id)])
      for (int o : g.instruction(id).operands) needed[static_cast<size_t>(o)] = true;

  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("kiln");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  ::onnx::GraphProto& gp = *model.mutable_graph();
  gp.set_name("kiln");
  Writer w(gp, input_shapes);
  std::map<int, std::string> name;  // Node id -> ONNX value name.
  for (size_t i = 0; i < params.size(); ++i) {
    name[params[i].id()] = fmt::format("input_{}", i);
    SetValueInfo(gp.add_input(), name[params[i].id()], input_shapes[i]);
  }
  for (int id = 0; id < g.NumNodes(); ++id) {
    if (!needed[static_cast<size_t>(id)] || name.count(id) != 0) continue;
    const Instruction& inst = g.instruction(id);
    const std::string op(compute::OpName(inst.op));
    auto in = [&](size_t k) { return name.at(inst.operands.at(k)); };
    auto in_shape = [&](size_t k) { return g.instruction(inst.operands.at(k)).shape; };
    std::string out;
    switch (inst.op) {
      case OpType::Parameter: {
        auto v = variable_of.find(id);
        if (v == variable_of.end())
          detail::Throw("onnx::Export: parameter {} is neither an input nor a variable", id);
        std::string n = v->second.Path();
        if (!n.empty() && n[0] == '/') n.erase(0, 1);
        out = w.Initializer(v->second.Value(), n);
        break;
      }
      case OpType::Constant:
        out = w.Initializer(inst.attrs.literal, w.Fresh("const"));
        break;
      case OpType::Iota: {
        if (inst.shape.IsDynamic())
          detail::Throw("onnx::Export: {}: Iota of the dynamic shape {} is not exported yet", path,
                        inst.shape);
        // A static Iota is a constant: computed here.
        static const compute::BackendPtr ref = compute::NewWithConfig("ref");
        const Tensor t = graph::ExecOnce(ref, [&](graph::Graph& s) {
          return std::vector<graph::Node>{graph::Iota(s, inst.shape, static_cast<int>(inst.attrs.axis))};
        })[0];
        out = w.Initializer(t, w.Fresh("iota"));
        break;
      }
      case OpType::Neg:
      case OpType::Abs:
      case OpType::Sqrt:
      case OpType::Exp:
      case OpType::Log:
      case OpType::Tanh:
      case OpType::Floor:
      case OpType::Ceil:
      case OpType::Sin:
      case OpType::Cos:
      case OpType::Erf:
      case OpType::Sign:
      case OpType::Tan:
      case OpType::Asin:
      case OpType::Acos:
      case OpType::Atan:
      case OpType::Sinh:
      case OpType::Cosh:
      case OpType::Asinh:
      case OpType::Acosh:
      case OpType::Atanh:
      case OpType::IsNaN:
        out = w.Node(op, {in(0)});
        break;
      case OpType::Logistic:
        out = w.Node("Sigmoid", {in(0)});
        break;
      case OpType::Round:
        out = w.Node("Round", {in(0)});
        break;
      case OpType::Rsqrt:
        out = w.Node("Reciprocal", {w.Node("Sqrt", {in(0)})});
        break;
      case OpType::StopGradient:
        out = w.Node("Identity", {in(0)});
        break;
      case OpType::LogicalNot:
        out = w.Node("Not", {in(0)});
        break;
      case OpType::Add:
      case OpType::Sub:
      case OpType::Mul:
      case OpType::Div:
      case OpType::Pow:
      case OpType::Max:
      case OpType::Min:
      case OpType::Equal:
      case OpType::Less:
      case OpType::LessOrEqual:
      case OpType::Greater:
      case OpType::GreaterOrEqual:
        out = w.Node(op, {in(0), in(1)});
        break;
      case OpType::NotEqual:
        out = w.Node("Not", {w.Node("Equal", {in(0), in(1)})});
        break;
      case OpType::LogicalAnd:
        out = w.Node("And", {in(0), in(1)});
        break;
      case OpType::LogicalOr:
        out = w.Node("Or", {in(0), in(1)});
        break;
      case OpType::LogicalXor:
        out = w.Node("Xor", {in(0), in(1)});
        break;
      case OpType::Where:
        out = w.Node("Where", {in(0), in(1), in(2)});
        break;
      case OpType::ConvertDType:
        out = w.Node("Cast", {in(0)});
        w.IntAttr("to", internal::OnnxFromDType(inst.attrs.dtype));
        break;
      case OpType::Reshape:
        out = w.Node("Reshape", {in(0), w.Dims(inst.shape, op)});
        break;
      case OpType::Transpose:
        out = w.Node("Transpose", {in(0)});
        w.IntsAttr("perm", inst.attrs.permutation);
        break;
      case OpType::BroadcastInDim: {
        // The operand's axes in their result positions, the others of size 1, then expanded.
        const Shape x = in_shape(0);
        std::vector<int64_t> aligned(static_cast<size_t>(inst.shape.Rank()), 1);
        bool dynamic = false;
        for (size_t k = 0; k < inst.attrs.axes.size(); ++k) {
          aligned[static_cast<size_t>(inst.attrs.axes[k])] = x.Dim(static_cast<int>(k));
          dynamic = dynamic || x.Dim(static_cast<int>(k)) == Shape::kDynamic;
        }
        std::string r = in(0);
        if (dynamic) {
          // Keep dynamic operand axes as they are (0 copies the input's size in Reshape only
          // where positions match): insert the size-1 axes with Unsqueeze instead.
          std::vector<int64_t> inserted;
          for (int a = 0; a < inst.shape.Rank(); ++a)
            if (std::find(inst.attrs.axes.begin(), inst.attrs.axes.end(), a) == inst.attrs.axes.end())
              inserted.push_back(a);
          if (!inserted.empty()) r = w.Node("Unsqueeze", {r, w.Ints(inserted)});
        } else if (x.Rank() != inst.shape.Rank() || x.Dimensions() != aligned) {
          r = w.Node("Reshape", {r, w.Ints(aligned)});
        }
        out = w.Node("Expand", {r, w.Dims(inst.shape, op)});
        break;
      }
      case OpType::ReduceSum:
        out = w.Node("ReduceSum", {in(0), w.Ints(inst.attrs.axes)});
        w.IntAttr("keepdims", 0);
        break;
      case OpType::ReduceMax:
      case OpType::ReduceMin:
      case OpType::ReduceProduct:
        out = w.Node(inst.op == OpType::ReduceMax   ? "ReduceMax"
                     : inst.op == OpType::ReduceMin ? "ReduceMin"
                                                    : "ReduceProd",
                     {in(0)});
        w.IntsAttr("axes", inst.attrs.axes);
        w.IntAttr("keepdims", 0);
        break;
      case OpType::DotGeneral:
        out = w.Node("Einsum", {in(0), in(1)});
        w.StringAttr("equation", EinsumEquation(inst, in_shape(0).Rank(), in_shape(1).Rank()));
        break;
      case OpType::Concatenate: {
        std::vector<std::string> ins;
        for (size_t k = 0; k < inst.operands.size(); ++k) ins.push_back(in(k));
        out = w.Node("Concat", ins);
        w.IntAttr("axis", inst.attrs.axis);
        break;
      }
      case OpType::Slice: {
        std::vector<int64_t> axes;
        for (size_t a = 0; a < inst.attrs.starts.size(); ++a) axes.push_back(static_cast<int64_t>(a));
        out = w.Node("Slice", {in(0), w.Ints(inst.attrs.starts), w.Ints(inst.attrs.limits), w.Ints(axes),
                               w.Ints(inst.attrs.strides)});
        break;
      }
      default:
        detail::Throw("onnx::Export: {}: the primitive {} has no ONNX equivalent in kiln's exporter yet",
                      path, op);
    }
    name[id] = out;
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string out_name = fmt::format("output_{}", k);
    ::onnx::NodeProto* n = gp.add_node();
    n->set_op_type("Identity");
    n->set_name(out_name);
    n->add_input(name.at(outputs[k].id()));
    n->add_output(out_name);
    SetValueInfo(gp.add_output(), out_name, outputs[k].shape());
  }
  const std::string bytes = model.SerializeAsString();
  io::WriteFileAtomically(
      path, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

}  // namespace kiln::onnx
