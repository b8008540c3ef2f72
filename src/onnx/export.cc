// Writing kiln models as ONNX: the model function is traced once, its variables become
// initializers, and each primitive becomes ONNX nodes (opset 17). Dynamic axes of the inputs
// become symbolic dimensions; sizes that depend on them are computed in the exported graph from
// the inputs' shapes.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/check.h"
#include "io/atomic_file.h"
#include "kiln/compute/backend.h"
#include "kiln/graph/exec.h"
#include "kiln/graph/ops.h"
#include "kiln/onnx/onnx.h"
#include "model/model_internal.h"
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
  /// Output `k` of the node added last.
  std::string LastOutput(int k) const { return last_->output(k); }
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

/// The permutation that undoes `perm`.
std::vector<int64_t> Inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

/// `x` with its axes permuted as Transpose's `perm` says (no node for the identity).
std::string Permute(Writer& w, const std::string& x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  const std::string out = w.Node("Transpose", {x});
  w.IntsAttr("perm", perm);
  return out;
}

/// A scalar `v` of `dtype`.
std::string Scalar(Writer& w, double v, DType dtype) {
  const std::string out = w.Node("Cast", {w.Initializer(Tensor::FromScalar(v), w.Fresh("scalar"))});
  w.IntAttr("to", internal::OnnxFromDType(dtype));
  return out;
}

/// `x` cast to `dtype` unless it has it.
std::string CastTo(Writer& w, const std::string& x, DType from, DType to) {
  if (from == to) return x;
  const std::string out = w.Node("Cast", {x});
  w.IntAttr("to", internal::OnnxFromDType(to));
  return out;
}

/// `v[i]`, or `fallback` when `v` is empty (kiln's empty attribute lists mean defaults).
int64_t At(const std::vector<int64_t>& v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[i]; }

/// `x` reversed along `axes` (a Slice with step -1).
std::string Flip(Writer& w, const std::string& x, const std::vector<int64_t>& axes) {
  const size_t n = axes.size();
  return w.Node("Slice", {x, w.Ints(std::vector<int64_t>(n, -1)),
                          w.Ints(std::vector<int64_t>(n, std::numeric_limits<int64_t>::min())), w.Ints(axes),
                          w.Ints(std::vector<int64_t>(n, -1))});
}

/// ConvGeneral as ONNX Conv, or ConvTranspose for an input-dilated (transposed) convolution.
/// ONNX's layout is channels first ([batch, features, spatial...], kernels [out, in / groups,
/// spatial...]): kiln's axes are transposed into it and the result back.
std::string ConvGeneral(Writer& w, const Instruction& inst, const std::string& x, const std::string& kernel,
                        const Shape& kernel_shape, const std::string& where) {
  const compute::OpAttributes& at = inst.attrs;
  const compute::ConvDims& d = at.conv;
  const size_t n = d.input_spatial.size();
  if (!IsFloat(inst.shape.dtype()))
    detail::Throw("onnx::Export: {}: ConvGeneral of {} (ONNX's Conv takes floats only)", where,
                  inst.shape.dtype());
  if (at.batch_groups != 1)
    detail::Throw(
        "onnx::Export: {}: ConvGeneral with {} batch groups (a kernel gradient) has no ONNX equivalent",
        where, at.batch_groups);
  std::vector<int64_t> in_perm = {d.input_batch, d.input_feature},
                       kernel_perm = {d.kernel_output_feature, d.kernel_input_feature},
                       out_perm = {d.output_batch, d.output_feature};
  in_perm.insert(in_perm.end(), d.input_spatial.begin(), d.input_spatial.end());
  kernel_perm.insert(kernel_perm.end(), d.kernel_spatial.begin(), d.kernel_spatial.end());
  out_perm.insert(out_perm.end(), d.output_spatial.begin(), d.output_spatial.end());
  std::string xt = Permute(w, x, in_perm);
  const std::string kt = Permute(w, kernel, kernel_perm);
  std::vector<int64_t> strides, dilations, input_dilations, low, high;
  bool transposed = false;
  for (size_t i = 0; i < n; ++i) {
    strides.push_back(At(at.strides, i, 1));
    dilations.push_back(At(at.kernel_dilations, i, 1));
    input_dilations.push_back(At(at.input_dilations, i, 1));
    low.push_back(at.padding.empty() ? 0 : at.padding[i].low);
    high.push_back(at.padding.empty() ? 0 : at.padding[i].high);
    transposed = transposed || input_dilations.back() != 1;
  }
  std::string y;
  if (!transposed) {
    // Negative padding crops the input first (ONNX's Pad removes elements for negative pads).
    std::vector<int64_t> crop(2 * n + 4, 0), pads;
    bool cropped = false;
    for (size_t i = 0; i < n; ++i) {
      crop[i + 2] = std::min<int64_t>(low[i], 0);
      crop[n + 4 + i] = std::min<int64_t>(high[i], 0);
      cropped = cropped || low[i] < 0 || high[i] < 0;
    }
    if (cropped) xt = w.Node("Pad", {xt, w.Ints(crop)});
    for (int64_t p : low) pads.push_back(std::max<int64_t>(p, 0));
    for (int64_t p : high) pads.push_back(std::max<int64_t>(p, 0));
    y = w.Node("Conv", {xt, kt});
    w.IntsAttr("strides", strides);
    w.IntsAttr("dilations", dilations);
    w.IntsAttr("pads", pads);
    w.IntAttr("group", at.feature_groups);
  } else {
    // A convolution of the input dilated by s is ConvTranspose with strides s and the kernel
    // flipped, its channel axes swapped, when the convolution itself has unit strides: output
    // o reads input i through tap k' = K-1-k where o = i*s + k*dilation - ((K-1)*dilation - low).
    for (size_t i = 0; i < n; ++i) {
      const int64_t taps = kernel_shape.Dim(static_cast<int>(d.kernel_spatial[i]));
      const int64_t span = (taps - 1) * dilations[i];
      if (strides[i] != 1 || at.feature_groups != 1 || low[i] > span || high[i] > span ||
          taps == Shape::kDynamic)
        detail::Throw(
            "onnx::Export: {}: ConvGeneral with input dilations {} has no exact ConvTranspose equivalent "
            "(that "
            "needs unit strides (got {}), one feature group (got {}), a static kernel and padding at most "
            "the "
            "dilated kernel size - 1 on each side)",
            where, fmt::join(input_dilations, ","), fmt::join(strides, ","), at.feature_groups);
      low[i] = span - low[i];
      high[i] = span - high[i];
    }
    std::vector<int64_t> spatial, swap = {1, 0}, pads = low;
    for (size_t i = 0; i < n; ++i) {
      spatial.push_back(static_cast<int64_t>(i + 2));
      swap.push_back(static_cast<int64_t>(i + 2));
    }
    pads.insert(pads.end(), high.begin(), high.end());
    y = w.Node("ConvTranspose", {xt, Permute(w, Flip(w, kt, spatial), swap)});
    w.IntsAttr("strides", input_dilations);
    w.IntsAttr("dilations", dilations);
    w.IntsAttr("pads", pads);
  }
  return Permute(w, y, Inverse(out_perm));
}

/// ReduceWindow with a max, min or sum: the axes that are pooled (a window, stride, padding or
/// dilation other than the identity's) become the spatial axes of an ONNX [N, C, spatial...]
/// value, the others its batch and channels. Max windows are MaxPool (min: of the negation),
/// sum windows a depthwise Conv with a kernel of ones (exact, unlike AveragePool's scaled mean).
/// Padding holds the reduction's identity, as in kiln.
std::string ReduceWindow(Writer& w, const Instruction& inst, const std::string& x, const Shape& xs,
                         const std::string& where) {
  const compute::OpAttributes& at = inst.attrs;
  const compute::ReduceKind kind = at.reduce_kind;
  if (kind != compute::ReduceKind::Max && kind != compute::ReduceKind::Min &&
      kind != compute::ReduceKind::Sum)
    detail::Throw("onnx::Export: {}: ReduceWindow with a product has no ONNX equivalent", where);
  if (!IsFloat(xs.dtype()))
    detail::Throw("onnx::Export: {}: ReduceWindow of {} (ONNX's MaxPool and Conv take floats only)", where,
                  xs.dtype());
  const int rank = xs.Rank();
  std::vector<int64_t> trivial, pooled;
  for (int a = 0; a < rank; ++a) {
    const auto i = static_cast<size_t>(a);
    const bool padded = !at.padding.empty() && (at.padding[i].low != 0 || at.padding[i].high != 0);
    if (At(at.input_dilations, i, 1) != 1)
      detail::Throw("onnx::Export: {}: ReduceWindow with input (base) dilations has no ONNX equivalent",
                    where);
    const bool pools = At(at.window, i, 1) != 1 || At(at.strides, i, 1) != 1 || padded;
    (pools ? pooled : trivial).push_back(a);
  }
  if (pooled.empty()) return w.Node("Identity", {x});
  // [trivial..., pooled...], then [N, C, pooled...]: size-1 axes added, or leading ones merged.
  std::vector<int64_t> perm = trivial;
  perm.insert(perm.end(), pooled.begin(), pooled.end());
  std::string v = Permute(w, x, perm);
  const size_t t = trivial.size();
  int64_t channels = 1;
  if (t < 2) {
    v = w.Node("Unsqueeze", {v, w.Ints(t == 0 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1})});
  } else {
    channels = xs.Dim(static_cast<int>(trivial.back()));
    if (t > 2) {
      std::vector<int64_t> dims = {-1, channels};
      for (int64_t a : pooled) dims.push_back(xs.Dim(static_cast<int>(a)));
      if (std::count(dims.begin() + 1, dims.end(), Shape::kDynamic) != 0)
        detail::Throw(
            "onnx::Export: {}: ReduceWindow over {} needs static pooled axes and a static last unpooled axis",
            where, xs);
      v = w.Node("Reshape", {v, w.Ints(dims)});
    }
  }
  std::vector<int64_t> window, strides, dilations, pads(2 * pooled.size(), 0),
      explicit_pads(2 * pooled.size() + 4, 0);
  bool pad_explicitly = false;
  for (size_t j = 0; j < pooled.size(); ++j) {
    const auto a = static_cast<size_t>(pooled[j]);
    window.push_back(At(at.window, a, 1));
    strides.push_back(At(at.strides, a, 1));
    dilations.push_back(At(at.kernel_dilations, a, 1));
    if (at.padding.empty()) continue;
    pads[j] = explicit_pads[j + 2] = at.padding[a].low;
    pads[j + pooled.size()] = explicit_pads[j + pooled.size() + 4] = at.padding[a].high;
    // MaxPool takes pads smaller than the window; others (and crops) go through a Pad node.
    for (int64_t p : {at.padding[a].low, at.padding[a].high})
      pad_explicitly = pad_explicitly || p < 0 || p >= window.back();
  }
  if (kind == compute::ReduceKind::Min) v = w.Node("Neg", {v});
  if (pad_explicitly) {
    const double fill = kind == compute::ReduceKind::Sum ? 0.0 : -std::numeric_limits<double>::infinity();
    v = w.Node("Pad", {v, w.Ints(explicit_pads), Scalar(w, fill, xs.dtype())});
    std::fill(pads.begin(), pads.end(), 0);
  }
  if (kind == compute::ReduceKind::Sum) {
    if (channels == Shape::kDynamic)
      detail::Throw("onnx::Export: {}: a sum ReduceWindow over {} needs a static channel axis", where, xs);
    // A depthwise convolution with ones: kernel [C, 1, window...].
    std::vector<int64_t> kernel_dims = {channels, 1};
    kernel_dims.insert(kernel_dims.end(), window.begin(), window.end());
    const std::string ones = w.Node("Expand", {Scalar(w, 1, xs.dtype()), w.Ints(kernel_dims)});
    v = w.Node("Conv", {v, ones});
    w.IntAttr("group", channels);
  } else {
    v = w.Node("MaxPool", {v});
    w.IntsAttr("kernel_shape", window);
  }
  w.IntsAttr("strides", strides);
  w.IntsAttr("dilations", dilations);
  w.IntsAttr("pads", pads);
  if (kind == compute::ReduceKind::Min) v = w.Node("Neg", {v});
  // Back to [trivial..., pooled...] and kiln's axis order.
  if (t < 2) {
    v = w.Node("Squeeze", {v, w.Ints(t == 0 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1})});
  } else if (t > 2) {
    std::vector<int64_t> dims;
    std::vector<std::string> names;
    for (int64_t a : perm) {
      dims.push_back(inst.shape.Dim(static_cast<int>(a)));
      names.push_back(inst.shape.Dim(static_cast<int>(a)) == Shape::kDynamic
                          ? inst.shape.AxisName(static_cast<int>(a))
                          : "");
    }
    v = w.Node("Reshape", {v, w.Dims(Shape::MakeDynamic(inst.shape.dtype(), dims, names), "ReduceWindow")});
  }
  return Permute(w, v, Inverse(perm));
}

/// XLA's general Gather where it is a GatherND: every indexed operand axis is collapsed (slices
/// of size 1 there). The indexed axes are moved first, the index vectors last, the indices
/// clamped into range (kiln clamps; ONNX would wrap negatives or fail), and the result's axes
/// put where the dimension numbers say.
std::string Gather(Writer& w, const Instruction& inst, const std::string& operand, const Shape& os,
                   const std::string& indices, const Shape& is, const std::string& where) {
  const compute::GatherDims& g = inst.attrs.gather;
  std::vector<int64_t> collapsed = g.collapsed_slice_dims, indexed = g.start_index_map;
  std::sort(collapsed.begin(), collapsed.end());
  std::sort(indexed.begin(), indexed.end());
  if (collapsed != indexed)
    detail::Throw(
        "onnx::Export: {}: Gather with collapsed axes [{}] other than its indexed axes [{}] (slices of more "
        "than "
        "one element along an indexed axis) has no ONNX equivalent",
        where, fmt::join(g.collapsed_slice_dims, ","), fmt::join(g.start_index_map, ","));
  // Partial slices of the other axes start at 0: a Slice of the operand.
  std::vector<int64_t> ends, axes;
  for (int a = 0; a < os.Rank(); ++a) {
    const int64_t size = g.slice_sizes[static_cast<size_t>(a)];
    if (std::count(indexed.begin(), indexed.end(), a) == 0 && size != os.Dim(a)) {
      ends.push_back(size);
      axes.push_back(a);
    }
  }
  std::string x = operand;
  if (!axes.empty())
    x = w.Node("Slice", {x, w.Ints(std::vector<int64_t>(axes.size(), 0)), w.Ints(ends), w.Ints(axes)});
  std::vector<int64_t> perm = g.start_index_map, limits;
  for (int a = 0; a < os.Rank(); ++a)
    if (std::count(indexed.begin(), indexed.end(), a) == 0) perm.push_back(a);
  for (int64_t a : g.start_index_map) {
    if (os.Dim(static_cast<int>(a)) == Shape::kDynamic)
      detail::Throw("onnx::Export: {}: Gather along the dynamic axis {} of {}", where, a, os);
    limits.push_back(os.Dim(static_cast<int>(a)) - 1);
  }
  x = Permute(w, x, perm);
  // Indices as Int64 [batch..., k], clamped to [0, size - 1] per entry.
  std::string idx = CastTo(w, indices, is.dtype(), DType::Int64);
  const int64_t ivd = g.index_vector_dim;
  if (ivd == is.Rank()) {
    idx = w.Node("Unsqueeze", {idx, w.Ints({ivd})});
  } else if (ivd != is.Rank() - 1) {
    std::vector<int64_t> to_last;
    for (int a = 0; a < is.Rank(); ++a)
      if (a != ivd) to_last.push_back(a);
    to_last.push_back(ivd);
    idx = Permute(w, idx, to_last);
  }
  idx = w.Node("Max", {w.Node("Min", {idx, w.Ints(limits)}),
                       w.Initializer(Tensor::FromScalar<int64_t>(0), w.Fresh("zero"))});
  const std::string gathered = w.Node("GatherND", {x, idx});
  // GatherND gives [batch..., offset...]; the dimension numbers put the offset axes at offset_dims.
  const int rank = inst.shape.Rank();
  const int64_t batch = rank - static_cast<int64_t>(g.offset_dims.size());
  std::vector<int64_t> out_perm;
  int64_t next_batch = 0, next_offset = batch;
  for (int a = 0; a < rank; ++a) {
    const bool offset = std::count(g.offset_dims.begin(), g.offset_dims.end(), a) != 0;
    out_perm.push_back(offset ? next_offset++ : next_batch++);
  }
  return Permute(w, gathered, out_perm);
}

}  // namespace

void Export(const model::Store& store, const ExportFn& fn, const std::vector<Shape>& input_shapes,
            const std::string& path) {
  if (!fn) detail::Throw("onnx::Export: {}: empty model function", path);
  graph::Graph g("onnx export");
  std::vector<graph::Node> params;
  for (const Shape& s : input_shapes) params.push_back(g.Parameter(s));
  const std::vector<graph::Node> outputs = fn(store.RootScope(), std::any(), params);
  // Which parameters are variables: those the function read, as the model package recorded them.
  // A function that updates variables (training-mode statistics) has no ONNX inference form.
  std::map<int, model::Variable> variable_of;
  if (const model::detail::GraphState* state = model::detail::FindState(g)) {
    if (!state->updates.empty())
      detail::Throw(
          "onnx::Export: {}: the model function updates variable {} (SetNodeValue); export the inference "
          "form (training off)",
          path, state->updates.front().first->path);
    for (size_t i = 0; i < state->inputs.size() && i < state->input_nodes.size(); ++i)
      variable_of.emplace(state->input_nodes[i].id(), model::Variable(state->inputs[i]));
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
      case OpType::Round:
        out = w.Node(op, {in(0)});
        break;
      case OpType::Logistic:
        out = w.Node("Sigmoid", {in(0)});
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
      case OpType::Expm1:  // Without ONNX's expm1/log1p: less precise for |x| near 0.
        out = w.Node("Sub", {w.Node("Exp", {in(0)}), Scalar(w, 1, inst.shape.dtype())});
        break;
      case OpType::Log1p:
        out = w.Node("Log", {w.Node("Add", {in(0), Scalar(w, 1, inst.shape.dtype())})});
        break;
      case OpType::IsFinite:
        out = w.Node("Not", {w.Node("Or", {w.Node("IsInf", {in(0)}), w.Node("IsNaN", {in(0)})})});
        break;
      case OpType::Rem:  // C's remainder: the dividend's sign (ints and floats).
        out = w.Node("Mod", {in(0), in(1)});
        w.IntAttr("fmod", 1);
        break;
      case OpType::ArgMax:
      case OpType::ArgMin:
        // The first extreme index (as kiln), Int64 cast to the result dtype.
        out = w.Node(op, {in(0)});
        w.IntAttr("axis", inst.attrs.axis);
        w.IntAttr("keepdims", 0);
        out = CastTo(w, out, DType::Int64, inst.shape.dtype());
        break;
      case OpType::Pad: {
        // Constant padding; negative pads crop (as ONNX's Pad does).
        const auto& padding = inst.attrs.padding;
        std::vector<int64_t> pads(2 * padding.size());
        for (size_t a = 0; a < padding.size(); ++a) {
          if (padding[a].interior != 0)
            detail::Throw("onnx::Export: {}: Pad with interior padding (axis {}) has no ONNX equivalent",
                          path, a);
          pads[a] = padding[a].low;
          pads[a + padding.size()] = padding[a].high;
        }
        out = w.Node("Pad", {in(0), w.Ints(pads), in(1)});
        break;
      }
      case OpType::Reverse:
        out = Flip(w, in(0), inst.attrs.axes);
        break;
      case OpType::ConvGeneral:
        out = ConvGeneral(w, inst, in(0), in(1), in_shape(1), path);
        break;
      case OpType::ReduceWindow:
        out = ReduceWindow(w, inst, in(0), in_shape(0), path);
        break;
      case OpType::Gather:
        out = Gather(w, inst, in(0), in_shape(0), in(1), in_shape(1), path);
        break;
      case OpType::CumSum:
        out = w.Node("CumSum",
                     {in(0), w.Initializer(Tensor::FromScalar<int64_t>(inst.attrs.axis), w.Fresh("axis"))});
        w.IntAttr("reverse", inst.attrs.reverse ? 1 : 0);
        break;
      case OpType::ArgSort: {
        // A full TopK: sorted, ties by the lower index first, so stable as kiln's (NaN aside).
        const int64_t size = in_shape(0).Dim(static_cast<int>(inst.attrs.axis));
        if (size == Shape::kDynamic)
          detail::Throw("onnx::Export: {}: ArgSort along the dynamic axis {} of {}", path, inst.attrs.axis,
                        in_shape(0));
        w.Node("TopK", {in(0), w.Ints({size})}, 2);
        w.IntAttr("axis", inst.attrs.axis);
        w.IntAttr("largest", inst.attrs.reverse ? 1 : 0);
        w.IntAttr("sorted", 1);
        out = CastTo(w, w.LastOutput(1), DType::Int64, inst.shape.dtype());
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
  internal::WriteMessage(model, path, "onnx::Export");
}

}  // namespace kiln::onnx
