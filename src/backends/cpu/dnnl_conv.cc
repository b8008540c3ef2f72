// ConvGeneral (Float32, or BFloat16 on a CPU with bfloat16 instructions) on oneDNN. Any dims layout maps to
// oneDNN's logical N, C, spatial axes through strided memory descriptors (weights as [O, I, spatial] or [G,
// O/G, I/G, spatial]); negative padding crops the input view. Without input dilation it is a forward
// convolution (strides, kernel dilations - 1, low/high padding, feature groups). With input dilation and unit
// strides it is the backward-data convolution of the forward one whose kernel is this one's,
// spatially reversed with its feature roles swapped (the form autodiff emits for input
// gradients); the reversed kernel is copied into per-call scratch, and result rows beyond the
// kernel's reach (padding past it) are zeroed around a cropped view. An ungrouped convolution
// whose kernel is spatially larger than its result (autodiff's kernel-gradient form) runs as a
// backward-weights convolution (input as src with batch and features swapped, kernel as
// diff_dst, result as diff_weights; strides and dilations trade places). Batch groups and other
// forms stay with the reference kernel. oneDNN first gets the user's data layouts (weights in
// its own layout); when that only finds the reference implementation, or (forward) its im2col
// gemm, it picks every layout and the kernel reorders in and out per call (a constant kernel
// only on the first call: its reordered copy is kept). A forward
// convolution takes a contraction epilogue (epilogue.cc): the bias as oneDNN's bias argument,
// Logistic and HardSwish as post-ops, Relu as a loop.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/dnnl_kernels.h"

namespace kiln::compute::cpu {

namespace {

using namespace dnnl_util;
using dnnl::memory;

/// One argument of the convolution: the user's layout, the primitive's and the reorder between.
struct ConvArg {
  int arg = 0;                   ///< DNNL_ARG_* of the main primitive.
  memory::desc user, primitive;  ///< Layouts; a reorder runs when they differ.
  dnnl::primitive reorder;       ///< user -> primitive (inputs) or primitive -> user (output).
  memory::desc reorder_scratchpad;
  bool reordered = false;
  int64_t offset = 0;  ///< Element offset of the view's origin in the user's buffer (cropping).
};

/// The kernel's compiled state.
struct ConvPlan {
  dnnl::primitive primitive;
  memory::desc scratchpad;
  ConvArg input, weights, output;
  /// Backward-data form: the kernel is copied reversed, feature roles swapped, into scratch.
  bool copy_weights = false;
  std::vector<int64_t> copy_dims, copy_strides;
  int64_t copy_offset = 0;
  /// Some result elements lie outside the view oneDNN computes: zero the result first.
  bool zero_output = false;
  int64_t output_bytes = 0;
  int threads = 1;
  /// Element type of operands, bias and result: f32, or bf16 (then without an activation).
  memory::data_type type = memory::data_type::f32;
  /// Forward convolutions only: the bias (operand 2) and the activation post-op.
  Epilogue epilogue;
  memory::desc bias;
  /// Set for a constant kernel that is reordered (not the backward-data form, whose kernel is
  /// copied reversed on every call).
  std::shared_ptr<KeptCopy> weight_cache;
};

/// The oneDNN-side description of the convolution before layouts are chosen.
enum class ConvKind { Forward, BackwardData, BackwardWeights };

struct ConvShape {
  ConvKind kind = ConvKind::Forward;
  std::vector<int64_t> in_dims, in_strides, out_dims, out_strides, w_dims, w_strides;
  int64_t in_offset = 0, out_offset = 0;
  memory::dims strides, dilates, pad_low, pad_high;
};

/// Fills the forward mapping; false when oneDNN cannot express it exactly.
bool MapForward(const OpAttributes& at, const Shape& x, const Shape& k, const Shape& y, ConvShape& cs) {
  const ConvDims& c = at.conv;
  const std::vector<int64_t> xs = DenseStrides(x.Dimensions()), ks = DenseStrides(k.Dimensions()),
                             ys = DenseStrides(y.Dimensions());
  const size_t n = c.input_spatial.size();
  const int64_t groups = at.feature_groups, out_features = Dim(k, c.kernel_output_feature);
  cs.in_dims = {Dim(x, c.input_batch), Dim(x, c.input_feature)};
  cs.in_strides = {xs[static_cast<size_t>(c.input_batch)], xs[static_cast<size_t>(c.input_feature)]};
  if (groups == 1) {
    cs.w_dims = {out_features, Dim(k, c.kernel_input_feature)};
    cs.w_strides = {ks[static_cast<size_t>(c.kernel_output_feature)],
                    ks[static_cast<size_t>(c.kernel_input_feature)]};
  } else {
    const int64_t per_group = out_features / groups;
    cs.w_dims = {groups, per_group, Dim(k, c.kernel_input_feature)};
    cs.w_strides = {per_group * ks[static_cast<size_t>(c.kernel_output_feature)],
                    ks[static_cast<size_t>(c.kernel_output_feature)],
                    ks[static_cast<size_t>(c.kernel_input_feature)]};
  }
  cs.out_dims = {Dim(y, c.output_batch), Dim(y, c.output_feature)};
  cs.out_strides = {ys[static_cast<size_t>(c.output_batch)], ys[static_cast<size_t>(c.output_feature)]};
  for (size_t i = 0; i < n; ++i) {
    const int64_t low = at.padding.empty() ? 0 : at.padding[i].low;
    const int64_t high = at.padding.empty() ? 0 : at.padding[i].high;
    const int64_t in_axis = c.input_spatial[i], stride = xs[static_cast<size_t>(in_axis)];
    // Negative padding crops the input: the view starts later and ends earlier.
    const int64_t crop_low = low < 0 ? -low : 0, crop_high = high < 0 ? -high : 0;
    const int64_t size = Dim(x, in_axis) - crop_low - crop_high;
    if (size <= 0) return false;
    cs.in_offset += crop_low * stride;
    cs.in_dims.push_back(size);
    cs.in_strides.push_back(stride);
    cs.w_dims.push_back(Dim(k, c.kernel_spatial[i]));
    cs.w_strides.push_back(ks[static_cast<size_t>(c.kernel_spatial[i])]);
    cs.out_dims.push_back(Dim(y, c.output_spatial[i]));
    cs.out_strides.push_back(ys[static_cast<size_t>(c.output_spatial[i])]);
    cs.strides.push_back(at.strides.empty() ? 1 : at.strides[i]);
    cs.dilates.push_back((at.kernel_dilations.empty() ? 1 : at.kernel_dilations[i]) - 1);
    cs.pad_low.push_back(low - (low < 0 ? low : 0));
    cs.pad_high.push_back(high - (high < 0 ? high : 0));
  }
  return true;
}

/// Fills the backward-data mapping of an input-dilated convolution (unit strides): oneDNN's
/// diff_dst is this op's input, diff_src its result, and the weights the reversed, role-swapped
/// kernel (copied per call, described by plan's copy fields); false when it does not map.
bool MapBackwardData(const OpAttributes& at, const Shape& x, const Shape& k, const Shape& y, ConvShape& cs,
                     ConvPlan& plan) {
  const ConvDims& c = at.conv;
  const std::vector<int64_t> xs = DenseStrides(x.Dimensions()), ks = DenseStrides(k.Dimensions()),
                             ys = DenseStrides(y.Dimensions());
  const size_t n = c.input_spatial.size();
  const int64_t groups = at.feature_groups, out_features = Dim(k, c.kernel_output_feature);
  const int64_t k_in = Dim(k, c.kernel_input_feature);
  const int64_t s_out = ks[static_cast<size_t>(c.kernel_output_feature)];
  const int64_t s_in = ks[static_cast<size_t>(c.kernel_input_feature)];
  cs.kind = ConvKind::BackwardData;
  // oneDNN's forward view: src = this op's result, dst = this op's input.
  cs.in_dims = {Dim(x, c.input_batch), Dim(x, c.input_feature)};
  cs.in_strides = {xs[static_cast<size_t>(c.input_batch)], xs[static_cast<size_t>(c.input_feature)]};
  cs.out_dims = {Dim(y, c.output_batch), Dim(y, c.output_feature)};
  cs.out_strides = {ys[static_cast<size_t>(c.output_batch)], ys[static_cast<size_t>(c.output_feature)]};
  // Forward weights [G, OC/G = k_in, IC/G = out_features/G, spatial reversed].
  if (groups == 1) {
    plan.copy_dims = {k_in, out_features};
    plan.copy_strides = {s_in, s_out};
  } else {
    const int64_t per_group = out_features / groups;
    plan.copy_dims = {groups, k_in, per_group};
    plan.copy_strides = {per_group * s_out, s_in, s_out};
  }
  plan.copy_offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t stride = at.strides.empty() ? 1 : at.strides[i];
    const int64_t dilation = at.kernel_dilations.empty() ? 1 : at.kernel_dilations[i];
    const int64_t low = at.padding.empty() ? 0 : at.padding[i].low;
    const int64_t high = at.padding.empty() ? 0 : at.padding[i].high;
    const int64_t taps = Dim(k, c.kernel_spatial[i]), reach = (taps - 1) * dilation;
    if (stride != 1) return false;
    // Padding beyond the kernel's reach leaves result rows no tap reaches: they are zero, and
    // oneDNN computes the cropped view of the result in between.
    const int64_t pad_low = reach - low, pad_high = reach - high;
    const int64_t crop_low = pad_low < 0 ? -pad_low : 0, crop_high = pad_high < 0 ? -pad_high : 0;
    const int64_t size = Dim(y, c.output_spatial[i]) - crop_low - crop_high;
    if (size <= 0) return false;
    if (crop_low > 0 || crop_high > 0) plan.zero_output = true;
    const int64_t out_stride = ys[static_cast<size_t>(c.output_spatial[i])];
    cs.out_offset += crop_low * out_stride;
    const int64_t tap_stride = ks[static_cast<size_t>(c.kernel_spatial[i])];
    plan.copy_dims.push_back(taps);
    plan.copy_strides.push_back(-tap_stride);
    plan.copy_offset += (taps - 1) * tap_stride;
    cs.in_dims.push_back(Dim(x, c.input_spatial[i]));
    cs.in_strides.push_back(xs[static_cast<size_t>(c.input_spatial[i])]);
    cs.out_dims.push_back(size);
    cs.out_strides.push_back(out_stride);
    cs.strides.push_back(at.input_dilations.empty() ? 1 : at.input_dilations[i]);
    cs.dilates.push_back(dilation - 1);
    cs.pad_low.push_back(pad_low + crop_low);
    cs.pad_high.push_back(pad_high + crop_high);
  }
  cs.w_dims = plan.copy_dims;
  cs.w_strides = DenseStrides(plan.copy_dims);
  plan.copy_weights = true;
  return true;
}

/// Fills the backward-weights mapping of a forward convolution (no groups) whose kernel is
/// spatially larger than its result, the form autodiff emits for kernel gradients: oneDNN's src
/// is this op's input (batch and feature roles swapped), diff_dst this op's kernel and
/// diff_weights its result; this op's strides become dilations and its kernel dilations strides.
bool MapBackwardWeights(const OpAttributes& at, const Shape& x, const Shape& k, const Shape& y,
                        ConvShape& cs) {
  const ConvDims& c = at.conv;
  const std::vector<int64_t> xs = DenseStrides(x.Dimensions()), ks = DenseStrides(k.Dimensions()),
                             ys = DenseStrides(y.Dimensions());
  const auto stride_of = [](const std::vector<int64_t>& v, int64_t a) { return v[static_cast<size_t>(a)]; };
  cs.kind = ConvKind::BackwardWeights;
  cs.in_dims = {Dim(x, c.input_feature), Dim(x, c.input_batch)};
  cs.in_strides = {stride_of(xs, c.input_feature), stride_of(xs, c.input_batch)};
  cs.w_dims = {Dim(k, c.kernel_input_feature), Dim(k, c.kernel_output_feature)};
  cs.w_strides = {stride_of(ks, c.kernel_input_feature), stride_of(ks, c.kernel_output_feature)};
  cs.out_dims = {Dim(y, c.output_feature), Dim(y, c.output_batch)};
  cs.out_strides = {stride_of(ys, c.output_feature), stride_of(ys, c.output_batch)};
  for (size_t i = 0; i < c.input_spatial.size(); ++i) {
    const int64_t stride = at.strides.empty() ? 1 : at.strides[i];
    const int64_t dilation = at.kernel_dilations.empty() ? 1 : at.kernel_dilations[i];
    const int64_t low = at.padding.empty() ? 0 : at.padding[i].low;
    const int64_t in = Dim(x, c.input_spatial[i]), taps = Dim(k, c.kernel_spatial[i]);
    const int64_t out = Dim(y, c.output_spatial[i]);
    // The high padding that makes oneDNN's diff_dst exactly `taps` long.
    const int64_t high = (taps - 1) * dilation + (out - 1) * stride + 1 - in - low;
    const int64_t crop_low = low < 0 ? -low : 0, crop_high = high < 0 ? -high : 0;
    const int64_t size = in - crop_low - crop_high;
    if (size <= 0) return false;
    cs.in_offset += crop_low * stride_of(xs, c.input_spatial[i]);
    cs.in_dims.push_back(size);
    cs.in_strides.push_back(stride_of(xs, c.input_spatial[i]));
    cs.w_dims.push_back(taps);
    cs.w_strides.push_back(stride_of(ks, c.kernel_spatial[i]));
    cs.out_dims.push_back(out);
    cs.out_strides.push_back(stride_of(ys, c.output_spatial[i]));
    cs.strides.push_back(dilation);
    cs.dilates.push_back(stride - 1);
    cs.pad_low.push_back(low + crop_low);
    cs.pad_high.push_back(high + crop_high);
  }
  return true;
}

/// Moves `pd` from oneDNN's first choice, brgconv, to its direct AVX-512 kernel on the same
/// layouts when it has one. The iterator behind `pd` reads the operation descriptor it was made
/// from, which must still live.
void PreferDirectKernel(dnnl::primitive_desc& pd) {
  if (ImplName(pd).rfind("brgconv", 0) != 0) return;
  dnnl::primitive_desc next = pd;
  while (next.next_impl()) {
    const std::string name = ImplName(next);
    if (name.rfind("jit:avx512", 0) == 0) {
      pd = next;
      return;
    }
    if (IsReference(next) || name.find("gemm") != std::string::npos) return;
  }
}

/// The primitive descriptor for the mapping with the given layouts (user strided or any).
/// `prefer_direct` (forward only): oneDNN's direct kernel over brgconv (PreferDirectKernel).
dnnl::primitive_desc Describe(const ConvShape& cs, const memory::desc& in, const memory::desc& w,
                              const memory::desc& out, const ConvPlan& plan, bool prefer_direct = false) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto algo = dnnl::algorithm::convolution_direct;
  if (cs.kind == ConvKind::Forward) {
    attr.set_post_ops(ActivationPostOps(plan.epilogue));
    const auto prop = dnnl::prop_kind::forward_inference;
    const dnnl::convolution_forward::desc d =
        plan.epilogue.bias ? dnnl::convolution_forward::desc(prop, algo, in, w, plan.bias, out, cs.strides,
                                                             cs.dilates, cs.pad_low, cs.pad_high)
                           : dnnl::convolution_forward::desc(prop, algo, in, w, out, cs.strides, cs.dilates,
                                                             cs.pad_low, cs.pad_high);
    dnnl::primitive_desc pd = dnnl::convolution_forward::primitive_desc(d, attr, Engine());
    if (prefer_direct) PreferDirectKernel(pd);  // While `d` lives.
    return pd;
  }
  if (cs.kind == ConvKind::BackwardWeights) {
    // oneDNN's src is this op's input, diff_dst its kernel, diff_weights its result.
    dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training, algo, in, out, w, cs.strides,
                                        cs.dilates, cs.pad_low, cs.pad_high);
    dnnl::convolution_forward::primitive_desc hint(fwd, Engine());
    dnnl::convolution_backward_weights::desc d(algo, in, out, w, cs.strides, cs.dilates, cs.pad_low,
                                               cs.pad_high);
    return dnnl::convolution_backward_weights::primitive_desc(d, attr, Engine(), hint);
  }
  // oneDNN's forward src is this op's result (diff_src), its dst this op's input (diff_dst).
  dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training, algo, out, w, in, cs.strides,
                                      cs.dilates, cs.pad_low, cs.pad_high);
  dnnl::convolution_forward::primitive_desc hint(fwd, Engine());
  dnnl::convolution_backward_data::desc d(algo, out, w, in, cs.strides, cs.dilates, cs.pad_low, cs.pad_high);
  return dnnl::convolution_backward_data::primitive_desc(d, attr, Engine(), hint);
}

/// Fills `a` for the primitive's chosen layout, with a reorder when it is not the user's.
void Finish(ConvArg& a, const memory::desc& chosen, bool is_output) {
  a.primitive = chosen;
  a.reordered = !(chosen == a.user);
  if (!a.reordered) return;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const memory::desc& from = is_output ? chosen : a.user;
  const memory::desc& to = is_output ? a.user : chosen;
  dnnl::reorder::primitive_desc pd(Engine(), from, Engine(), to, attr);
  a.reorder_scratchpad = pd.scratchpad_desc();
  a.reorder = dnnl::reorder(pd);
}

/// Runs the input-side reorder of `a` from `user` into `buffer`; returns what the primitive reads.
const void* ReorderIn(const ConvArg& a, const void* user, uint8_t* buffer, uint8_t* pad,
                      dnnl::stream& stream) {
  if (!a.reordered) return user;
  std::unordered_map<int, memory> args{{DNNL_ARG_FROM, Wrap(a.user, user)},
                                       {DNNL_ARG_TO, Wrap(a.primitive, buffer)}};
  if (a.reorder_scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(a.reorder_scratchpad, pad));
  a.reorder.execute(stream, args);
  return buffer;
}

/// The constant kernel `w` in the primitive's layout, from `cache` (reordered now if not yet).
const void* CachedWeights(const ConvArg& a, KeptCopy& cache, const void* w, uint8_t* pad,
                          dnnl::stream& stream) {
  return cache.Get(w, a.primitive.get_size(), [&](uint8_t* copy) {
    ReorderIn(a, w, copy, pad, stream);
    stream.wait();
  });
}

/// Runs one call: weight copy, reorders in, the convolution, the reorder out.
void RunConv(const ConvPlan& p, ref::Operands in, uint8_t* out) {
  SetThreads(p.threads);
  ScratchLayout layout;
  size_t pad_bytes = p.scratchpad.get_size();
  for (const ConvArg* a : {&p.input, &p.weights, &p.output})
    pad_bytes = std::max(pad_bytes, a->reorder_scratchpad.get_size());
  const size_t pad = layout.Add(pad_bytes);
  const size_t copy_at = p.copy_weights ? layout.Add(p.weights.user.get_size()) : 0;
  const size_t in_at = p.input.reordered ? layout.Add(p.input.primitive.get_size()) : 0;
  const size_t w_at = p.weights.reordered && !p.weight_cache ? layout.Add(p.weights.primitive.get_size()) : 0;
  const size_t out_at = p.output.reordered ? layout.Add(p.output.primitive.get_size()) : 0;
  uint8_t* scratch = Scratch(layout.total);
  const auto element = static_cast<int64_t>(memory::data_type_size(p.type));
  const uint8_t* x = in[0] + p.input.offset * element;
  const uint8_t* w = in[1];
  if (p.copy_weights) {
    StridedCopy(w + p.copy_offset * element, p.copy_dims, p.copy_strides, p.type, scratch + copy_at);
    w = scratch + copy_at;
  }
  dnnl::stream stream(Engine());
  const void* x_ready = ReorderIn(p.input, x, scratch + in_at, scratch + pad, stream);
  const void* w_ready = p.weight_cache ? CachedWeights(p.weights, *p.weight_cache, w, scratch + pad, stream)
                                       : ReorderIn(p.weights, w, scratch + w_at, scratch + pad, stream);
  if (p.zero_output) std::memset(out, 0, static_cast<size_t>(p.output_bytes));
  uint8_t* y_user = out + p.output.offset * element;
  void* y = p.output.reordered ? static_cast<void*>(scratch + out_at) : static_cast<void*>(y_user);
  std::unordered_map<int, memory> args{{p.input.arg, Wrap(p.input.primitive, x_ready)},
                                       {p.weights.arg, Wrap(p.weights.primitive, w_ready)},
                                       {p.output.arg, Wrap(p.output.primitive, y)}};
  if (p.epilogue.bias) args.emplace(DNNL_ARG_BIAS, Wrap(p.bias, in[2]));
  if (p.scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(p.scratchpad, scratch + pad));
  p.primitive.execute(stream, args);
  if (p.output.reordered) {
    std::unordered_map<int, memory> back{{DNNL_ARG_FROM, Wrap(p.output.primitive, y)},
                                         {DNNL_ARG_TO, Wrap(p.output.user, y_user)}};
    if (p.output.reorder_scratchpad.get_size() > 0) {
      back.emplace(DNNL_ARG_SCRATCHPAD, Wrap(p.output.reorder_scratchpad, scratch + pad));
    }
    p.output.reorder.execute(stream, back);
  }
  stream.wait();
  if (p.epilogue.activation == Activation::kRelu) {
    ReluInPlace(reinterpret_cast<float*>(out), p.output_bytes / static_cast<int64_t>(sizeof(float)),
                p.threads);
  }
}

/// Whether a convolution has one input channel and no groups (a grayscale image's first layer).
/// brgconv's reduction there (one channel times the kernel's width) is a fraction of a vector, and
/// oneDNN's direct kernel took 0.75-0.80 of its time at batch 8-256 (5x5, 28x28, 32 features,
/// channels last; 128 images: 605-633 against 757-837 us; on oneDNN's blocked layouts 514-606
/// against 630-837), while from 3 input channels neither was faster across runs
/// (docs/performance.md, "The first convolution").
bool OneInputChannel(const OpAttributes& at, const ConvShape& cs) {
  return cs.kind == ConvKind::Forward && at.feature_groups == 1 && cs.in_dims[1] == 1;
}

/// Whether any input dilation exceeds one.
bool InputDilated(const OpAttributes& at) {
  for (int64_t d : at.input_dilations) {
    if (d != 1) return true;
  }
  return false;
}

/// Whether the kernel has more spatial positions than the result (a kernel-gradient form, which
/// oneDNN's backward-weights convolution runs far faster than a forward one).
bool KernelOutgrowsResult(const ConvDims& c, const Shape& k, const Shape& y) {
  int64_t taps = 1, positions = 1;
  for (size_t i = 0; i < c.kernel_spatial.size(); ++i) {
    taps *= Dim(k, c.kernel_spatial[i]);
    positions *= Dim(y, c.output_spatial[i]);
  }
  return taps > positions;
}

}  // namespace

KernelChoice MakeDnnlConv(int threads, const Instruction& inst, const std::vector<Shape>& operands,
                          const Epilogue* epilogue, bool constant_kernel) {
  const OpAttributes& at = inst.attrs;
  const Shape &x = operands.at(0), &k = operands.at(1), &y = inst.shape;
  const size_t n = at.conv.input_spatial.size();
  if (n < 1 || n > 3 || at.batch_groups != 1 || at.feature_groups < 1) return {};
  // Empty results, inputs or kernels are left to the reference kernel.
  if (y.Size() == 0 || x.Size() == 0 || k.Size() == 0) return {};
  auto plan = std::make_shared<ConvPlan>();
  plan->threads = threads;
  const std::optional<memory::data_type> element_type =
      ContractionType(x, k, y, epilogue != nullptr && epilogue->activation != Activation::kNone);
  if (!element_type) return {};
  const memory::data_type type = plan->type = *element_type;
  ConvShape cs;
  bool mapped = false;
  if (InputDilated(at)) {
    mapped = MapBackwardData(at, x, k, y, cs, *plan);
  } else {
    if (at.feature_groups == 1 && KernelOutgrowsResult(at.conv, k, y)) {
      mapped = MapBackwardWeights(at, x, k, y, cs);
    }
    if (!mapped) {
      cs = ConvShape();
      mapped = MapForward(at, x, k, y, cs);
    }
  }
  if (!mapped) return {};
  if (epilogue != nullptr) {
    // Only the forward primitive has a bias and post-ops; the bias runs along oneDNN's C axis.
    if (cs.kind != ConvKind::Forward || (epilogue->bias && epilogue->axis != at.conv.output_feature))
      return {};
    plan->epilogue = *epilogue;
    plan->bias = StridedDesc({cs.out_dims[1]}, {1}, type);  // The bias has the operands' type.
  }
  // Created for the team size it runs with (some implementations split work by it).
  const ThreadScope scope(threads);
  try {
    plan->input.user = StridedDesc(cs.in_dims, cs.in_strides, type);
    plan->input.offset = cs.in_offset;
    plan->weights.user = StridedDesc(cs.w_dims, cs.w_strides, type);
    plan->output.user = StridedDesc(cs.out_dims, cs.out_strides, type);
    plan->output.offset = cs.out_offset;
    plan->output_bytes = y.ByteSize();
    // First the user's data layouts (weights in oneDNN's choice), then every layout oneDNN's. A
    // backward-weights convolution's weights argument is the result's gradient (as large as the
    // activations): its result, the weights' gradient, is the small one left to oneDNN.
    const bool direct = OneInputChannel(at, cs);
    dnnl::primitive_desc pd =
        cs.kind == ConvKind::BackwardWeights
            ? Describe(cs, plan->input.user, plan->weights.user, AnyDesc(cs.out_dims, type), *plan)
            : Describe(cs, plan->input.user, AnyDesc(cs.w_dims, type), plan->output.user, *plan, direct);
    if (IsReference(pd)) {
      pd = Describe(cs, AnyDesc(cs.in_dims, type), AnyDesc(cs.w_dims, type), AnyDesc(cs.out_dims, type),
                    *plan, direct);
    } else if (cs.kind == ConvKind::Forward && ImplName(pd).find("gemm") != std::string::npos) {
      // On the user's layouts oneDNN fell back to im2col and a matrix product (channels-first
      // data, as imported ONNX models have): its direct kernels on its own blocked layouts are
      // faster even with the reorders in and out (PP-OCR models, bench/onnx_vs_ort.py: 1.6x to
      // 1.7x at batch 1).
      dnnl::primitive_desc blocked = Describe(cs, AnyDesc(cs.in_dims, type), AnyDesc(cs.w_dims, type),
                                              AnyDesc(cs.out_dims, type), *plan, direct);
      if (ImplName(blocked).find("gemm") == std::string::npos && !IsReference(blocked)) pd = blocked;
    }
    // A BFloat16 convolution oneDNN only has a reference kernel for is widened instead (widen.cc).
    if (type == memory::data_type::bf16 && IsReference(pd)) return {};
    const bool bwd_data = cs.kind == ConvKind::BackwardData,
               bwd_weights = cs.kind == ConvKind::BackwardWeights;
    plan->input.arg = bwd_data ? DNNL_ARG_DIFF_DST : DNNL_ARG_SRC;
    plan->weights.arg = bwd_weights ? DNNL_ARG_DIFF_DST : DNNL_ARG_WEIGHTS;
    plan->output.arg = bwd_data ? DNNL_ARG_DIFF_SRC : bwd_weights ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_DST;
    Finish(plan->input, pd.query_md(dnnl::query::exec_arg_md, plan->input.arg), false);
    Finish(plan->weights, pd.query_md(dnnl::query::exec_arg_md, plan->weights.arg), false);
    Finish(plan->output, pd.query_md(dnnl::query::exec_arg_md, plan->output.arg), true);
    // The copied (reversed) kernel of the backward-data form is rebuilt per call: not cached.
    if (constant_kernel && plan->weights.reordered && !plan->copy_weights)
      plan->weight_cache = std::make_shared<KeptCopy>();
    plan->scratchpad = pd.scratchpad_desc();
    plan->primitive = dnnl::primitive(pd);
    std::string name = std::string(bwd_data      ? "dnnl.conv_bwd_data["
                                   : bwd_weights ? "dnnl.conv_bwd_weights["
                                                 : "dnnl.conv[") +
                       ImplName(pd) + "]";
    if (plan->input.reordered || plan->output.reordered) name += "(reorder)";
    if (plan->weight_cache) name += "(weights kept)";
    if (epilogue != nullptr) name += "+post[" + epilogue->ToString() + "]";
    return GuardedDnnlKernel("ConvGeneral", std::move(name), plan->threads > 1,
                             [plan](ref::Operands in, uint8_t* out) { RunConv(*plan, in, out); });
  } catch (const dnnl::error&) {
    return {};
  }
}

}  // namespace kiln::compute::cpu
